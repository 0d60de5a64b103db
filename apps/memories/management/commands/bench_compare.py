"""Compare two `bench_retrieval --details` files question by question (no database).

For every dataset and phase both files hold (or the one `--phase` names): per group (the whole set, LoCoMo's
tune and report halves) and category, the metric at k before and after, the questions won and lost, how many
questions' first evidence moved up or down within the top k, and MRR@k (apps/memories/benchmarks/compare.py).
A change is judged on all of it: a gain at k with the first evidence lower in more questions than higher is a
trade, not progress (docs/benchmarks.md, "Session 61").
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.memories.benchmarks import compare, datasets


class Command(BaseCommand):
    help = "Diagnostic: two retrieval runs' details compared question by question (won, lost, ranks, MRR)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("before", help="a `bench_retrieval --details` JSON file: the run before the change")
        parser.add_argument("after", help="the same for the run after it")
        parser.add_argument("--phase", help="only this phase (fresh, settled, in_process, …)")
        parser.add_argument("--k", type=int, default=10, help="the cut-off (default 10; at most 25)")

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["k"] <= datasets.DETAIL_DEPTH:
            raise CommandError(f"--k must be between 1 and {datasets.DETAIL_DEPTH} (what a details line keeps)")
        before, after = self._read(options["before"]), self._read(options["after"])
        printed = 0
        for name, phases in before.items():
            for phase, lines in phases.items():
                if options["phase"] and phase != options["phase"]:
                    continue
                other = after.get(name, {}).get(phase)
                if not isinstance(lines, list) or not isinstance(other, list):
                    continue
                try:
                    groups = compare.table(name, lines, other, k=options["k"])
                except (KeyError, TypeError) as error:
                    raise CommandError(f"{name} · {phase}: not a details line ({error!r} missing or wrong)") from error
                if groups:
                    self.stdout.write(compare.render(name, phase, groups, k=options["k"]) + "\n")
                    printed += 1
        if not printed:
            raise CommandError("the two files share no dataset and phase with questions to compare")

    @staticmethod
    def _read(path: str) -> dict[str, Any]:
        try:
            with open(path) as file:
                data = json.load(file)
        except (OSError, json.JSONDecodeError) as error:
            raise CommandError(f"cannot read {path}: {error}") from error
        if not isinstance(data, dict) or not all(isinstance(phases, dict) for phases in data.values()):
            raise CommandError(f"{path} is not a `bench_retrieval --details` file")
        return data
