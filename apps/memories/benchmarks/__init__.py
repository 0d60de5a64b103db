"""Benchmark helpers shared by the bench_* management commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.test import override_settings


@contextmanager
def as_in_production() -> Iterator[None]:
    """Measure what production runs: DEBUG off (with DEBUG on, Django logs and formats every SQL statement —
    a query vector is 384 numbers, twice per search — which alone tripled GET /context's p95), any host
    for the in-process test client."""
    with override_settings(DEBUG=False, ALLOWED_HOSTS=["*"]):
        yield
