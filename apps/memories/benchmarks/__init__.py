"""Benchmark helpers shared by the bench_* management commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.test import override_settings

HNSW_BYTES_PER_ROW = 2048  # pgvector HNSW, 384 dimensions, m = 16: ~195 MB per 100k memories
HNSW_SLACK_BYTES = 50 * 2**20


@contextmanager
def as_in_production() -> Iterator[None]:
    """Measure what production runs: DEBUG off (with DEBUG on, Django logs and formats every SQL statement —
    a query vector is 384 numbers, twice per search — which alone tripled GET /context's p95), any host
    for the in-process test client."""
    with override_settings(DEBUG=False, ALLOWED_HOSTS=["*"]):
        yield


def hnsw_bloat_note(*, slack_bytes: int = HNSW_SLACK_BYTES) -> str | None:
    """A warning when the HNSW index is much larger than its live rows, else None.

    Bulk deletions (a previous benchmark's tenant) keep their graph, and a new 100k tenant inserted into its
    freed slots searched 40-50% slower until `VACUUM FULL` rebuilt the index (docs/benchmarks.md, session 5):
    bench_latency prints this before measuring. LoCoMo's small scopes, whose rows were there before the
    deletion, searched as fast with the bloated index as after a rebuild (session 8), so bench_retrieval
    does not."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('memory_embedding_hnsw'), "
            "(SELECT count(*) FROM memories_memory WHERE embedding IS NOT NULL)"
        )
        row = cursor.fetchone()
    assert row is not None
    size, rows = int(row[0]), int(row[1])
    if size <= HNSW_BYTES_PER_ROW * 2 * rows + slack_bytes:
        return None
    return (
        f"note: the HNSW index is {size / 2**20:.1f} MB for {rows} embedded memories (bulk deletions keep its "
        "graph); search figures will be slower than on a rebuilt index: VACUUM FULL memories_memory first."
    )
