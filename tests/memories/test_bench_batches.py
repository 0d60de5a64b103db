"""The benchmark's client sizes ingest batches by work: a count cap and a character budget."""

from __future__ import annotations

from apps.memories.benchmarks.end_to_end import batches


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
