"""Fit the ranker's weights (apps/memories/retrieval/ranker.py) on LoCoMo's tune half and write them.

Ingests conv-26, 30, 41, 42, 43 in process (never the report half, never BEAM: those are only measured, by
`bench_retrieval --via-http`), collects every question's candidates with their features and relevance, fits
the pairwise linear model with a little L2, prints the tune half's R@10 with the hand weights and with the
fitted ones (every question asked again through memory_search), and writes the weights with their provenance
to apps/memories/retrieval/ranker_weights.json (`--out` elsewhere, `--dry-run` nowhere).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import CommandError
from django.utils import timezone

from apps.core.commands import DatabaseCommand
from apps.memories.benchmarks import locomo, ranker_fit
from apps.memories.retrieval import ranker as ranking


class Command(DatabaseCommand):
    help = "Fit the retrieval ranker's weights on LoCoMo's tune half (pairwise logistic, L2) and write them."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--path", default="../shared/data/locomo10.json", help="LoCoMo's JSON file")
        parser.add_argument("--l2", type=float, default=1e-3, help="L2 penalty (on the mean pairwise loss)")
        parser.add_argument(
            "--features",
            default=",".join(ranking.DEFAULT_FEATURES),
            help=f"comma-separated subset of: {', '.join(ranking.FEATURES)}",
        )
        parser.add_argument("--out", default=str(ranking.WEIGHTS_PATH), help="where to write the weights")
        parser.add_argument("--dry-run", action="store_true", help="fit and measure, write nothing")
        parser.add_argument(
            "--cv", action="store_true", help="also leave one tune-half conversation out (R@10 offline)"
        )
        parser.add_argument("--limit", type=int, default=0, help="only the first N tune-half conversations")
        parser.add_argument(
            "--depth",
            type=int,
            default=0,
            help="pair each answer only with the irrelevant candidates among the hand ranking's first N (0: all)",
        )
        parser.add_argument("--save-collected", help="also write the collected candidates to this JSON file")
        parser.add_argument(
            "--from-collected",
            help="fit on candidates a --save-collected run wrote (no ingest; R@10 offline only; writes nothing)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        features = [name for name in options["features"].split(",") if name]
        unknown = set(features) - set(ranking.FEATURES)
        if unknown or not features:
            raise CommandError(f"unknown features {sorted(unknown)}; known: {', '.join(ranking.FEATURES)}")
        path = Path(options["path"])
        if not path.exists():
            raise CommandError(f"{path} not found (the dataset is read from ../shared/data, never copied here)")
        dataset = locomo.load(json.loads(path.read_text()), stamping="session")
        tune = [conversation.id for conversation in dataset.conversations if conversation.id in locomo.TUNE_HALF]
        if options["limit"]:
            tune = tune[: options["limit"]]
        dataset = dataset.subset(tune)  # the tune half only: nothing else is ever fitted on
        if options["from_collected"]:
            self._explore(options, features, tune)
            return
        started = time.perf_counter()
        self.stdout.write(f"fitting on LoCoMo's tune half: {', '.join(tune)} ({len(dataset.questions)} questions)")
        with ranker_fit.ingested(dataset, progress=self._say) as asked:
            before, collected = ranker_fit.ask(asked, ranker=None)
            self._say(f"asked {len(asked)} questions with the hand weights: R@10 {before.mean('R@10')}")
            if options["save_collected"]:
                Path(options["save_collected"]).write_text(json.dumps([item.as_json() for item in collected]))
            groups = [item.group(features, depth=options["depth"]) for item in collected]
            differences, _ = ranking.pairs(groups)
            candidates = sum(len(item.rows) for item in collected)
            self._say(f"{len(differences)} (relevant, irrelevant) pairs over {candidates} candidates")
            weights = ranking.fit(groups, l2=options["l2"])
            fitted = ranking.Ranker(
                version=self._version(features, weights), features=tuple(features), weights=tuple(map(float, weights))
            )
            for name, weight in zip(features, weights, strict=True):
                self.stdout.write(f"  {name:>22} {weight:+.4f}")
            after, _ = ranker_fit.ask(asked, ranker=fitted)
            cv = (
                ranker_fit.cross_validated(collected, features, l2=options["l2"], folds=tune, depth=options["depth"])
                if options["cv"]
                else {}
            )
        self.stdout.write(
            f"tune half R@10: hand {before.mean('R@10')} -> fitted {after.mean('R@10')} "
            f"(R@5 {before.mean('R@5')} -> {after.mean('R@5')}, R@25 {before.mean('R@25')} -> {after.mean('R@25')})"
        )
        for category in dataset.categories:
            self.stdout.write(
                f"  {category:>12}: {before.mean('R@10', categories=[category])} -> "
                f"{after.mean('R@10', categories=[category])}"
            )
        if cv:
            self.stdout.write(
                "leave one conversation out (R@10 offline, fitted on the other four): "
                + ", ".join(f"{key} {value}" for key, value in cv.items())
                + f"; mean {round(float(np.mean(list(cv.values()))), 4)}"
            )
        self.stdout.write(f"done in {time.perf_counter() - started:.0f} s")
        if options["dry_run"]:
            return
        document = ranking.document(
            fitted,
            trained_on={
                "dataset": "LoCoMo (locomo10.json), session stamps, in process",
                "conversations": tune,
                "questions": len(collected),
                "pairs": len(differences),
            },
            model="pairwise logistic (RankNet, linear scorer), Newton's method",
            l2=options["l2"],
            depth=options["depth"],
            tune_half_r10={"hand": before.mean("R@10"), "fitted": after.mean("R@10")},
            date=timezone.now().date().isoformat(),
            command="python manage.py fit_ranker " + " ".join(sys.argv[2:]),
        )
        Path(options["out"]).write_text(json.dumps(document, indent=2) + "\n")
        self.stdout.write(f"wrote {options['out']} (version {fitted.version})")

    def _explore(self, options: dict[str, Any], features: list[str], tune: list[str]) -> None:
        collected = [
            item
            for item in map(ranker_fit.Collected.from_json, json.loads(Path(options["from_collected"]).read_text()))
            if item.question.conversation in tune
        ]
        weights = ranking.fit([item.group(features, depth=options["depth"]) for item in collected], l2=options["l2"])
        for name, weight in zip(features, weights, strict=True):
            self.stdout.write(f"  {name:>22} {weight:+.4f}")
        hand = ranker_fit.offline_recall(collected, features, np.zeros(len(features)))  # the hand order, as collected
        fitted = ranker_fit.offline_recall(collected, features, weights)
        cv = ranker_fit.cross_validated(collected, features, l2=options["l2"], folds=tune, depth=options["depth"])
        by_conversation = {
            held: ranker_fit.offline_recall(
                [item for item in collected if item.question.conversation == held], features, np.zeros(len(features))
            )
            for held in tune
        }
        self.stdout.write("hand, by conversation: " + ", ".join(f"{k} {v}" for k, v in by_conversation.items()))
        self.stdout.write(
            f"offline R@10 on the collected candidates: hand {hand}, fitted {fitted}; leave one conversation out: "
            + ", ".join(f"{key} {value}" for key, value in cv.items())
            + f"; mean {round(float(np.mean(list(cv.values()))), 4)}"
        )

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    @staticmethod
    def _version(features: list[str], weights: np.ndarray) -> str:
        digest = hashlib.sha256(
            json.dumps(dict(zip(features, [round(float(w), 6) for w in weights], strict=True))).encode()
        ).hexdigest()
        return f"{timezone.now().date().isoformat()}-{digest[:8]}"
