"""Inline extraction time per message (rules only, no database, no embeddings)."""

from __future__ import annotations

import statistics
import time
from argparse import ArgumentParser
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand

from apps.memories.benchmarks.corpus import messages
from apps.memories.extraction import extract, salience


class Command(BaseCommand):
    help = "Benchmark: rules-based extraction time per message (p50/p95), without database or embeddings."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--messages", type=int, default=5000)

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = messages(options["messages"])
        for text in corpus[:200]:  # warm up regex caches
            extract(text)
        timings = []
        for text in corpus:
            started = time.perf_counter()
            result = extract(text)
            for memory in result.memories:
                salience(memory.predicate, has_entity=bool(memory.entities))
            timings.append((time.perf_counter() - started) * 1000)
        self.stdout.write(
            f"inline extraction (clean + rules + entities + salience), {len(corpus)} messages: "
            f"p50 {statistics.median(timings):.3f} ms, p95 {np.percentile(timings, 95):.3f} ms, "
            f"max {max(timings):.3f} ms"
        )
