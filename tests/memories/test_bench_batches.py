"""The benchmark's client sizes ingest batches by work: a count cap and a character budget."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apps.memories.benchmarks import datasets
from apps.memories.benchmarks.end_to_end import batches, ingest_bodies


def _items(*lengths: int) -> list[dict[str, str]]:
    return [{"message": "x" * length} for length in lengths]


def test_short_turns_are_cut_by_count_only():
    cut = list(batches(_items(*[100] * 450), max_items=200))
    assert [len(chunk) for chunk in cut] == [200, 200, 50]


def test_long_messages_are_cut_by_characters_and_every_message_is_sent_once_in_order():
    items = _items(*[25_000] * 7, 70_000, 10)
    cut = list(batches(items, max_items=200, max_chars=60_000))
    assert [len(chunk) for chunk in cut] == [2, 2, 2, 1, 1, 1]  # one message over the budget goes alone
    assert [item for chunk in cut for item in chunk] == items
    assert all(sum(len(item["message"]) for item in chunk) <= 60_000 or len(chunk) == 1 for chunk in cut)


def test_a_chat_is_sent_under_a_conversation_per_session_or_one_for_the_whole_chat():
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    chat = datasets.Conversation(
        id="conv-1",
        turns=tuple(
            datasets.Turn(id=f"D{s}:{i}", session=s, speaker="Ana", role="user", text="hi", occurred_at=at)
            for s, i in [(1, 1), (1, 2), (2, 1)]
        ),
    )
    per_session = [body["conversation_id"] for body in ingest_bodies(chat)]
    assert per_session == ["conv-1:session_1", "conv-1:session_1", "conv-1:session_2"]
    assert [body["conversation_id"] for body in ingest_bodies(chat, conversation_ids="chat")] == ["conv-1"] * 3
    assert [body["message_id"] for body in ingest_bodies(chat, conversation_ids="chat")] == [
        "conv-1:D1:1",
        "conv-1:D1:2",
        "conv-1:D2:1",
    ]
    with pytest.raises(ValueError):
        ingest_bodies(chat, conversation_ids="visit")
