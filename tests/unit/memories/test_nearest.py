"""Each memory's nearest neighbour of the same type, exactly (apps/memories/lifecycle/nearest.py), pure."""

from __future__ import annotations

import numpy as np
import pytest

from apps.memories.lifecycle import nearest
from apps.memories.lifecycle.nearest import Row


def row(memory_id: str, memory_type: str, *values: float) -> Row:
    return Row(id=memory_id, memory_type=memory_type, vector=np.array(values, dtype=np.float32))


def test_the_nearest_of_the_same_type_other_than_itself():
    scope = [
        row("a", "fact", 1, 0, 0),
        row("b", "fact", 0.9, 0.1, 0),
        row("c", "fact", 0, 1, 0),
        row("p", "preference", 1, 0, 0),  # the closest to "a" in meaning, but another type
        row("q", "preference", 0, 0, 1),
    ]
    pairs = nearest.nearest_pairs(scope, scope)
    assert [(memory, neighbour) for memory, neighbour, _ in pairs] == [
        ("a", "b"),
        ("b", "a"),
        ("c", "b"),
        ("p", "q"),
        ("q", "p"),
    ]
    similarity = dict(((memory, neighbour), value) for memory, neighbour, value in pairs)
    assert similarity[("p", "q")] == pytest.approx(0.0)
    assert similarity[("a", "b")] == pytest.approx(0.9 / np.hypot(0.9, 0.1))


def test_similarity_is_the_cosine_not_the_dot_product():
    # "long" is ten times longer but points further away from "a" than "near" does: a dot product picks it
    scope = [row("a", "fact", 1, 0), row("long", "fact", 10, 3), row("near", "fact", 0.99, 0.141)]
    (pair,) = nearest.nearest_pairs([scope[0]], scope)
    assert pair[1] == "near"
    assert pair[2] == pytest.approx(0.99 / np.hypot(0.99, 0.141))


def test_a_memory_alone_of_its_type_has_no_pair_and_queries_keep_their_order():
    scope = [row("x", "episode", 1, 0), row("a", "fact", 1, 0), row("b", "fact", 0, 1), row("c", "fact", 1, 1)]
    asked = [scope[2], scope[0], scope[1]]
    assert [memory for memory, _, _ in nearest.nearest_pairs(asked, scope)] == ["b", "a"]


def test_blocks_do_not_change_the_pairs(monkeypatch):
    rng = np.random.default_rng(3)
    scope = [Row(id=index, memory_type="ab"[index % 2], vector=rng.normal(size=16)) for index in range(60)]
    whole = nearest.nearest_pairs(scope, scope)
    monkeypatch.setattr(nearest, "BLOCK", 7)
    blocked = nearest.nearest_pairs(scope, scope)
    # the same pairs; the cosines to the last bit only where the BLAS sums a block's products in the same order
    # (an AMD EPYC's did not: 0.26166175405345343 against 0.2616617540534533)
    assert [(memory, neighbour) for memory, neighbour, _ in blocked] == [
        (memory, neighbour) for memory, neighbour, _ in whole
    ]
    assert [value for _, _, value in blocked] == pytest.approx([value for _, _, value in whole], rel=1e-12)
    assert len(whole) == 60
