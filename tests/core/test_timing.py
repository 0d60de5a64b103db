from __future__ import annotations

import time

import pytest
from django.db import connection

from apps.core.timing import Stopwatch, parse_server_timing, phase, stopwatch


class _Clock:
    """A clock the test moves: wall and processor time advance only when told (no sleep: a loaded machine
    once made a 20 ms sleep last 130 ms and the bound below it fail)."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.processor = 10.0

    def advance(self, wall: float, processor: float = 0.0) -> None:
        self.wall += wall
        self.processor += processor


def test_a_phase_inside_another_is_not_counted_twice(monkeypatch):
    from apps.core import timing

    clock = _Clock()
    monkeypatch.setattr(
        timing,
        "time",
        type("FakeTime", (), {"perf_counter": lambda: clock.wall, "process_time": lambda: clock.processor}),
    )
    watch = Stopwatch()
    watch.enter("write")
    clock.advance(0.02, 0.01)
    watch.enter("embedding")
    clock.advance(0.03, 0.025)
    watch.leave()
    clock.advance(0.005)
    watch.leave()
    assert watch.totals["embedding"] == pytest.approx(0.03)
    assert watch.totals["write"] == pytest.approx(0.025)  # its own 20 + 5 ms, not the 55 ms of the block
    assert watch.cpu["embedding"] == pytest.approx(0.025)
    assert watch.cpu["write"] == pytest.approx(0.01)


@pytest.mark.django_db
def test_sql_of_the_block_is_timed_as_sql_and_nothing_outside_a_stopwatch_is():
    with phase("write"):  # no stopwatch: nothing recorded, nothing raised
        pass
    with stopwatch() as watch, phase("write"), connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(0.03)")
    assert watch.totals["sql"] >= 0.03
    assert watch.totals["write"] < watch.totals["sql"]
    assert watch.elapsed >= watch.totals["sql"]


def test_the_header_reads_back_as_it_was_written():
    watch = Stopwatch()
    watch.totals = {"embedding": 0.0125, "sql": 0.004}
    watch.elapsed = 0.02
    watch.cpu = {"embedding": 0.006, "sql": 0.001}
    watch.elapsed_cpu = 0.009
    assert parse_server_timing(watch.header()) == {"embedding": 12.5, "sql": 4.0, "other": 3.5, "total": 20.0}
    assert parse_server_timing(watch.header(), cpu=True) == {"embedding": 6.0, "sql": 1.0, "other": 2.0, "total": 9.0}
    assert parse_server_timing('cache;desc="x", db;dur=bad, app;dur=1.5') == {"app": 1.5}


def _busy(seconds: float) -> None:
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_a_phase_that_waits_shows_wall_time_without_processor_time():
    """What tells a phase that waited for a core (or for another process) from one that worked: its CPU time,
    exclusive like its wall time, every thread of the process counted."""
    from concurrent.futures import ThreadPoolExecutor

    watch = Stopwatch()
    watch.enter("write")
    time.sleep(0.05)  # waiting: wall time, no processor time
    watch.enter("embedding")
    with ThreadPoolExecutor(max_workers=1) as pool:  # work on another thread of the process counts too
        pool.submit(_busy, 0.05).result()
    watch.leave()
    watch.leave()
    assert watch.cpu["embedding"] >= 0.045
    assert watch.cpu["write"] < 0.02 <= watch.totals["write"]
