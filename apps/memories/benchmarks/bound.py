"""The embedder's bound: how many LoCoMo turns per second the configured embedder alone embeds on this
machine — no database, no HTTP, nothing else — at its best batch size and with every core busy. Ingest
needs at least one embedding per turn, so no ingest can beat it; `bench_load` divides its ingest rate by it.

The sample is fixed (the first turns of the dataset, as ingest embeds a turn's episode: "(8 May 2023)
Caroline: …"), so runs on different days embed the same texts. Every configuration embeds the whole
sample once after a warm-up: batch sizes × {one call with every core's thread (intra-op threads),
one single-thread call per core at once (concurrent callers, what several web workers do)}.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from apps.core.embeddings import Embedder, LocalOnnxEmbedder, get_embedder, memory_text
from apps.memories.benchmarks import locomo
from apps.memories.extraction.dates import format_day

BATCH_SIZES = (4, 8, 16, 32)


def sample_texts(data: list[dict[str, Any]], *, count: int = 320) -> list[str]:
    """The first `count` turns of the dataset as ingest embeds each turn's episode (date, speaker, text)."""
    texts: list[str] = []
    for sample in data:
        for turn in locomo.turns(sample, stamping="spread"):
            said_on = format_day(turn.occurred_at.date())
            texts.append(memory_text(content=f"{turn.speaker}: {turn.text}", index_terms=said_on))
            if len(texts) == count:
                return texts
    return texts


@dataclass(frozen=True)
class Trial:
    batch_size: int
    callers: int  # concurrent embed_batch calls
    threads: int  # intra-op threads of each call (local embedder; 0: not applicable)
    turns_per_second: float
    cpu_ms_per_turn: float = 0.0  # processor time of this process (every thread) per turn

    @property
    def label(self) -> str:
        threads = f" × {self.threads} thread{'s' if self.threads != 1 else ''}" if self.threads else ""
        return f"batch {self.batch_size}, {self.callers} caller{'s' if self.callers != 1 else ''}{threads}"


@dataclass(frozen=True)
class Bound:
    embedder: str
    texts: int
    trials: tuple[Trial, ...]

    @property
    def best(self) -> Trial:
        return max(self.trials, key=lambda trial: trial.turns_per_second)

    @property
    def turns_per_second(self) -> float:
        return self.best.turns_per_second

    def figures(self) -> dict[str, Any]:
        return {
            "embedder": self.embedder,
            "texts": self.texts,
            "turns_per_second": round(self.turns_per_second, 1),
            "best": self.best.label,
            "best_batch_size": self.best.batch_size,
            "best_cpu_ms_per_turn": round(self.best.cpu_ms_per_turn, 2),
            "trials": {trial.label: round(trial.turns_per_second, 1) for trial in self.trials},
        }


def _rate(texts: Sequence[str], embed: Callable[[Sequence[str]], Any], *, callers: int) -> tuple[float, float]:
    """(turns/s, processor ms per turn) of embedding all `texts`, split into `callers` equal shares embedded
    at once. The processor time is this process's (every thread): ingest's embedding phase reports the same
    measure (`cpu-embedding` in Server-Timing), so the two tell more work from waiting for a core."""
    shares = [list(texts[index::callers]) for index in range(callers)]
    embed(shares[0][:8])  # warm-up: load, first-run allocations
    started, cpu_started = time.perf_counter(), time.process_time()
    if callers == 1:
        embed(shares[0])
    else:
        with ThreadPoolExecutor(max_workers=callers) as pool:
            list(pool.map(embed, shares))
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    return len(texts) / seconds, cpu_seconds * 1000 / len(texts)


def embedder_bound(texts: Sequence[str], *, batch_sizes: Sequence[int] = BATCH_SIZES) -> Bound:
    """Measure the configured embedder alone over `texts` (uncached: the inner embedder)."""
    inner: Embedder = get_embedder().inner
    cores = os.cpu_count() or 1
    trials: list[Trial] = []
    measured: set[int] = set()
    for batch_size in batch_sizes:
        if isinstance(inner, LocalOnnxEmbedder):
            # one call with a thread per core, and a one-thread call per core at once (ONNX releases the GIL)
            many_threads = LocalOnnxEmbedder(threads=cores, batch_size=batch_size, callers=1, graph=inner.graph)
            one_thread = LocalOnnxEmbedder(threads=1, batch_size=batch_size, callers=1, graph=inner.graph)
            runs = many_threads.batch_size  # the int8 graph runs one text at a time, whatever is asked
            if runs in measured:
                continue
            measured.add(runs)
            trials.append(Trial(runs, 1, cores, *_rate(texts, many_threads.embed_batch, callers=1)))
            if cores > 1:
                trials.append(Trial(runs, cores, 1, *_rate(texts, one_thread.embed_batch, callers=cores)))
            continue

        def in_batches(share: Sequence[str], size: int = batch_size) -> None:
            for first in range(0, len(share), size):
                inner.embed_batch(list(share[first : first + size]))

        for callers in dict.fromkeys((1, cores)):
            trials.append(Trial(batch_size, callers, 0, *_rate(texts, in_batches, callers=callers)))
    return Bound(embedder=inner.name, texts=len(texts), trials=tuple(trials))
