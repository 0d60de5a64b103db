"""The write path's sample of a scope's recent memories (store/writing.py, `_ScopeSample`): what a candidate is
compared with for duplicates and corrections. Its rows now live in a buffer that grows, and the best match is
found with numpy instead of a loop over the rows: the answers must be the loop's, ties included."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from apps.memories.models import Memory
from apps.memories.store.writing import _ScopeSample

TYPES = ("fact", "preference", "episode")


def _loop_best_match(
    ids: list[Any], types: list[str], polarity: list[int], matrix: np.ndarray, vector: np.ndarray, memory_type: str
) -> tuple[Any, float, int] | None:
    """The loop the sample ran before: the first strictly greater similarity of the type wins."""
    if not ids:
        return None
    similarities = matrix @ vector
    best: tuple[Any, float, int] | None = None
    for index, memory_id in enumerate(ids):
        if types[index] != memory_type:
            continue
        similarity = float(similarities[index])
        if best is None or similarity > best[1]:
            best = (memory_id, similarity, polarity[index])
    return best


def _unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_best_match_is_the_loops_as_memories_are_added() -> None:
    rng = np.random.default_rng(7)
    start = _unit(rng, 30)
    start[10] = start[3]  # equal rows of one type: the first of them is the match
    ids = [uuid.uuid4() for _ in range(30)]
    types = [TYPES[index % 3] for index in range(30)]
    types[10] = types[3]
    polarity = [int(rng.integers(-1, 2)) for _ in range(30)]
    sample = _ScopeSample(list(ids), list(types), list(polarity), start.copy(), start.mean(axis=0))
    rows = start.copy()
    for step in range(60):  # past the buffer's first growth
        for vector in (_unit(rng, 1)[0], rows[3], rows[int(rng.integers(len(rows)))]):
            for memory_type in (*TYPES, "pattern"):  # no pattern in the sample: no match
                assert sample.best_match(vector, memory_type) == _loop_best_match(
                    ids, types, polarity, rows, vector, memory_type
                )
        added = _unit(rng, 1)[0] if step % 4 else rows[int(rng.integers(len(rows)))]  # sometimes a repeat
        memory = Memory(pk=uuid.uuid4(), memory_type=TYPES[step % 3], metadata={"polarity": step % 3 - 1})
        sample.add(memory, added)
        ids.append(memory.pk)
        types.append(memory.memory_type)
        polarity.append(step % 3 - 1)
        rows = np.vstack([rows, added[None, :]])
        assert np.array_equal(sample.matrix, rows)
        assert sample.ids == ids and sample.types == types and sample.polarity == polarity


def test_an_empty_sample_grows_from_nothing() -> None:
    sample = _ScopeSample([], [], [], np.zeros((0, 384), dtype=np.float32), None)
    vector = _unit(np.random.default_rng(1), 1)[0]
    assert sample.best_match(vector, "fact") is None
    memory = Memory(pk=uuid.uuid4(), memory_type="fact", metadata={})
    sample.add(memory, vector)
    assert sample.best_match(vector, "fact") == (memory.pk, float(vector @ vector), 0)
    assert sample.best_match(vector, "episode") is None
    assert np.array_equal(sample.centroid, vector)
