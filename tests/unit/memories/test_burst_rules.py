"""Which messages are one burst (apps/memories/lifecycle/burst_rules.py), pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apps.memories.lifecycle.burst_rules import BURST_SECONDS, LedgerTurn, bursts, joined

T0 = datetime(2024, 5, 1, 20, tzinfo=UTC)


def _turns(*spec: tuple[str, int]) -> list[LedgerTurn]:
    return [
        LedgerTurn(sequence=index, speaker=speaker, occurred_at=T0 + timedelta(seconds=at))
        for index, (speaker, at) in enumerate(spec, start=1)
    ]


def test_one_speakers_consecutive_messages_seconds_apart_are_a_burst():
    turns = _turns(("Sam", 0), ("Sam", 20), ("Sam", 40), ("Ava", 60), ("Sam", 80), ("Ava", 90), ("Ava", 100))
    assert bursts(turns) == [[1, 2, 3], [6, 7]]


def test_a_long_pause_or_a_message_without_a_speaker_ends_a_burst():
    turns = _turns(("Sam", 0), ("Sam", BURST_SECONDS + 1), ("Sam", BURST_SECONDS + 30))
    assert bursts(turns) == [[2, 3]]
    assert bursts(_turns(("", 0), ("", 10), ("", 20))) == []  # roles only: whose turn it is is not known
    assert bursts(_turns(("Sam", 0))) == [] and bursts([]) == []


def test_a_bursts_text_names_its_speaker_once():
    assert joined(["Sam: I went to the concert.", "Sam: Ava came too!"], speaker="Sam") == (
        "Sam: I went to the concert. Ava came too!"
    )
    assert joined(["I went.", "Came too"], speaker="Sam") == "I went. Came too"
