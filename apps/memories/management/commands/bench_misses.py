"""Sort the evidence turns a LoCoMo run missed by what they hold of the reference answer (no database).

Reads a `bench_retrieval --details` file and LoCoMo's JSON; for every phase of the LoCoMo runs in it (or the
one `--phase` names) prints, per category, R@k as scored, R@k with the "covered" misses counted as found, and
the misses sorted into covered / real / inferential, beside the same sorting for k random turns
(apps/memories/benchmarks/misses.py says what each means and why it is a proxy).
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.memories.benchmarks import locomo, misses


class Command(BaseCommand):
    help = "Diagnostic: LoCoMo's missed evidence turns, sorted by what they hold of the reference answer."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--details", required=True, help="a `bench_retrieval --details` JSON file")
        parser.add_argument("--path", default="../shared/data/locomo10.json", help="LoCoMo's JSON file")
        parser.add_argument("--phase", help="only this phase (fresh, settled, reused, in_process)")
        parser.add_argument("--k", type=int, default=10, help="the cut-off (default 10)")
        parser.add_argument("--draws", type=int, default=20, help="random top-k draws for the floor (default 20)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["k"] < 1 or options["draws"] < 1:
            raise CommandError("--k and --draws must be at least 1")
        try:
            with open(options["details"]) as file:
                details = json.load(file)
            with open(options["path"]) as file:
                dataset = locomo.load(json.load(file))
        except (OSError, json.JSONDecodeError) as error:
            raise CommandError(f"cannot read the input: {error}") from error
        runs = {name: phases for name, phases in details.items() if name.lower().startswith("locomo")}
        if not runs:
            raise CommandError(
                f"{options['details']} holds no LoCoMo run (it holds: {', '.join(details) or 'nothing'})"
            )
        shown = 0
        for name, phases in runs.items():
            for phase, lines in phases.items():
                if options["phase"] and phase != options["phase"]:
                    continue
                try:
                    rows = misses.table(dataset, lines, k=options["k"], draws=options["draws"])
                except ValueError as error:
                    raise CommandError(f"{name} {phase}: {error} (a details file of another set?)") from error
                self.stdout.write(f"\n== {name}, {phase}: evidence turns outside the top {options['k']}")
                for line in misses.format_table(rows, k=options["k"]):
                    self.stdout.write(line)
                shown += 1
        if not shown:
            raise CommandError(f"no phase {options['phase']!r} in {options['details']}")
        self.stdout.write(
            "\ncovered: its answer words are all in a top-k turn; real: it holds an answer word no top-k turn "
            "holds; inferential: it holds none. chance: the same for k random turns of the conversation (mean)."
        )
