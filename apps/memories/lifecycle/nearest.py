"""Each memory's nearest neighbour of the same type, exactly, for deferred consolidation's near-duplicate merge.

`lifecycle/deferred.near_duplicates_merge` needs, for every memory of a conversation, its most similar current
memory of the same type and scope. One HNSW probe per memory costs ~8–10 ms in a table shared with other
tenants (the scope's filters ride the index's iterative scan), so a conversation of long messages — a few
hundred chunks — took 12 s of the worker (docs/benchmarks.md, "Session 23"). For a scope of a few thousand
memories one matrix product over their embeddings gives the same pairs exactly, in milliseconds.

    similarity(a, b) = a·b / (|a| |b|)         (1 − pgvector's cosine distance)

Pure (no Django): numpy only.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

BLOCK = 512  # query rows per matrix product: a block × a scope of 5,000 is 10 MB of float32


@dataclass(frozen=True)
class Row:
    id: Hashable
    memory_type: str
    vector: np.ndarray


def nearest_pairs(queries: Sequence[Row], scope: Sequence[Row]) -> list[tuple[Hashable, Hashable, float]]:
    """(query id, its nearest scope memory of the same type other than itself, their cosine similarity) for
    each query, in the queries' order; a query whose type has no other memory in the scope has no pair.
    Ties go to the earlier scope row."""
    by_type: dict[str, list[int]] = {}
    for index, item in enumerate(scope):
        by_type.setdefault(item.memory_type, []).append(index)
    unit = {index: _unit(item.vector) for index, item in enumerate(scope)}
    found: dict[int, tuple[Hashable, float]] = {}
    for memory_type, members in by_type.items():
        matrix = np.stack([unit[index] for index in members])
        ids = [scope[index].id for index in members]
        column_of = {memory_id: column for column, memory_id in enumerate(ids)}
        wanted = [position for position, query in enumerate(queries) if query.memory_type == memory_type]
        for start in range(0, len(wanted), BLOCK):
            block = wanted[start : start + BLOCK]
            similarities = np.stack([_unit(queries[position].vector) for position in block]) @ matrix.T
            for row, position in enumerate(block):
                own = column_of.get(queries[position].id)
                if own is not None:
                    similarities[row, own] = -np.inf
            best = np.argmax(similarities, axis=1)
            for row, position in enumerate(block):
                value = similarities[row, best[row]]
                if np.isfinite(value):
                    found[position] = (ids[int(best[row])], float(value))
    return [(queries[position].id, *found[position]) for position in range(len(queries)) if position in found]


def _unit(vector: np.ndarray) -> np.ndarray:
    values = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(values))
    return values / norm if norm > 0 else values
