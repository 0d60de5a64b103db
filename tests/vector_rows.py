"""Thousands of memories with random vectors, for the tests of query plans and vector indexes.

Inserted one at a time into the shared HNSW graph, random 384-d vectors cost ~3.5 ms each on a 2-core host (a
fixture of 6,000 took 27 s, ~5 minutes of the suite); with the graph dropped for the insert and built again over
the rows at once, as `bench_latency`'s synthetic load does at scale, about a third of that.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from django.db import connection

from apps.memories.models import Memory
from apps.memories.store.vector_indexes import SHARED_INDEX


def unit_vectors(count: int, seed: int) -> list[list[float]]:
    vectors = np.random.default_rng(seed).normal(size=(count, 384)).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).tolist()


@contextmanager
def shared_vector_index_built_after() -> Iterator[None]:
    """The shared HNSW index dropped for the block and built again after it (from the model's definition, as the
    migrations made it), also when the block fails. No other session may search the table meanwhile."""
    definition = next(index for index in Memory._meta.indexes if index.name == SHARED_INDEX)
    connection.check_constraints()  # in a test's transaction: DDL refuses a table with deferred checks pending
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {SHARED_INDEX}")
    try:
        yield
    finally:
        connection.check_constraints()
        with connection.schema_editor() as editor:
            editor.add_index(Memory, definition)
