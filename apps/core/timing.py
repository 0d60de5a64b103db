"""Where a request's time goes: named phases, each timed exclusively (a phase inside another is not counted
twice: SQL run while writing memories counts as `sql`, not as `write`).

A `stopwatch()` block collects the phases of the code it runs (this thread, this context), SQL statements
included (a Django execute wrapper). `phase(name)` outside any stopwatch costs a context-variable read and
times nothing, so the hot paths can be marked for good. The ingest endpoints send the result as a
`Server-Timing` header when `ENGRAM["SERVER_TIMING"]` is on (`bench_load` turns it on in the stack it
starts and prints where each ingested message's time goes); off by default, since it tells a client how
long the server's steps took.

Each phase's processor time is counted the same way (the process's CPU seconds, every thread: an embedder's
threads included), and sent as `cpu-<phase>` beside it: a phase whose wall time is well above its CPU time
waited for a core (or for another process, e.g. PostgreSQL), which the wall time alone cannot tell apart
from more work. A sync web worker serves one request at a time, so its process's CPU time is the request's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any

from django.db import connection

CPU_PREFIX = "cpu-"  # a phase's processor time in `Server-Timing`: `cpu-embedding` beside `embedding`


class Stopwatch:
    """Exclusive time per phase name, in seconds (`totals`), its processor time (`cpu`: the process's, every
    thread), and the time of the whole block (`elapsed`, `elapsed_cpu`)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.elapsed = 0.0
        self.elapsed_cpu = 0.0
        # [name, started, cpu started, seconds spent in phases inside it, cpu seconds spent in them]
        self._open: list[list[Any]] = []

    def enter(self, name: str) -> None:
        self._open.append([name, time.perf_counter(), time.process_time(), 0.0, 0.0])

    def leave(self) -> None:
        name, started, cpu_started, inner, inner_cpu = self._open.pop()
        spent = time.perf_counter() - started
        spent_cpu = time.process_time() - cpu_started
        self.totals[name] = self.totals.get(name, 0.0) + spent - inner
        self.cpu[name] = self.cpu.get(name, 0.0) + spent_cpu - inner_cpu
        if self._open:
            self._open[-1][3] += spent
            self._open[-1][4] += spent_cpu

    def header(self) -> str:
        """The `Server-Timing` value: each phase's milliseconds, then `total` (the block) and `other` (the
        block's time in no phase); then the processor milliseconds of each (`cpu-<name>`)."""
        parts = [f"{name};dur={seconds * 1000:.2f}" for name, seconds in sorted(self.totals.items())]
        other = max(0.0, self.elapsed - sum(self.totals.values()))
        parts += [f"other;dur={other * 1000:.2f}", f"total;dur={self.elapsed * 1000:.2f}"]
        parts += [f"{CPU_PREFIX}{name};dur={seconds * 1000:.2f}" for name, seconds in sorted(self.cpu.items())]
        other_cpu = max(0.0, self.elapsed_cpu - sum(self.cpu.values()))
        parts += [
            f"{CPU_PREFIX}other;dur={other_cpu * 1000:.2f}",
            f"{CPU_PREFIX}total;dur={self.elapsed_cpu * 1000:.2f}",
        ]
        return ", ".join(parts)


_current: ContextVar[Stopwatch | None] = ContextVar("engram_stopwatch", default=None)


@contextmanager
def phase(name: str) -> Iterator[None]:
    watch = _current.get()
    if watch is None:
        yield
        return
    watch.enter(name)
    try:
        yield
    finally:
        watch.leave()


def _sql_timed(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    with phase("sql"):
        return execute(sql, params, many, context)


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    """Time the phases of the block, and every SQL statement it runs on the default connection."""
    watch = Stopwatch()
    token = _current.set(watch)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        with connection.execute_wrapper(_sql_timed):
            yield watch
    finally:
        watch.elapsed = time.perf_counter() - started
        watch.elapsed_cpu = time.process_time() - cpu_started
        _current.reset(token)


def parse_server_timing(value: str, *, cpu: bool = False) -> dict[str, float]:
    """`Server-Timing` → {name: milliseconds} (the reverse of `Stopwatch.header`; other metrics ignored): the
    phases' wall time, or with `cpu` their processor time (`cpu-<name>`, under the phase's own name)."""
    found: dict[str, float] = {}
    for metric in value.split(","):
        name, _, rest = metric.strip().partition(";")
        if name.startswith(CPU_PREFIX) != cpu:
            continue
        name = name.removeprefix(CPU_PREFIX) if cpu else name
        for parameter in rest.split(";"):
            key, _, number = parameter.strip().partition("=")
            if key == "dur" and name:
                with suppress(ValueError):
                    found[name] = found.get(name, 0.0) + float(number)
    return found
