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


def test_a_turn_of_several_sentences_is_sent_as_a_burst_of_messages_that_count_as_the_turn():
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    texts = [
        "Hey Mel! Good to see you! How have you been? I went to a support group. It was powerful.",
        "Wow, that's cool!",
    ]
    chat = datasets.Conversation(
        id="conv-1",
        turns=tuple(
            datasets.Turn(id=f"D1:{i}", session=1, speaker="Ana", role="user", text=text, occurred_at=at)
            for i, text in enumerate(texts, start=1)
        ),
    )
    question = datasets.Question(conversation="conv-1", text="q", category="single-hop", evidence=("D1:1",))
    dataset = datasets.Dataset(
        name="Set",
        conversations=(chat,),
        questions=(question,),
        categories=("single-hop",),
        headline=("single-hop",),
        metric="R",
    )
    bursts = datasets.as_bursts(dataset)
    assert bursts.name == "Set-bursts" and bursts.questions == dataset.questions
    turns = bursts.conversations[0].turns
    # five sentences in three messages, in order, as evenly as they divide; one sentence stays one message
    assert [(turn.id, turn.text) for turn in turns] == [
        ("D1:1", "Hey Mel! Good to see you!"),
        ("D1:1#2", "How have you been?"),
        ("D1:1#3", "I went to a support group. It was powerful."),
        ("D1:2", "Wow, that's cool!"),
    ]
    assert all(turn.occurred_at == at and turn.speaker == "Ana" for turn in turns)
    # a retrieved part is its turn: found once, where its first part ranks
    assert datasets.ranked_turns([["D1:1#3"], ["D1:2", "D1:1"]]) == ["D1:1", "D1:2"]
    scores = datasets.Scores()
    scores.add(question, ["D1:2", "D1:1#2", "D1:1"])
    assert scores.rows[0][1]["R@5"] == 1.0 and scores.rows[0][1]["R@10"] == 1.0


def test_a_chat_export_has_a_placeholder_message_after_each_shared_photo():
    """`--export`: a turn that shared a photo is followed by "<Media omitted>" from its speaker, at its time, with an
    id that is never evidence (a retrieved placeholder takes a place in the top k and answers nothing)."""
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turns = (
        datasets.Turn(
            id="D1:1",
            session=1,
            speaker="Ana",
            role="user",
            text="Look! [shares a photo: a bowl]",
            occurred_at=at,
            shares_media=True,
        ),
        datasets.Turn(id="D1:2", session=1, speaker="Mel", role="user", text="So pretty!", occurred_at=at),
    )
    question = datasets.Question(conversation="conv-1", text="q", category="single-hop", evidence=("D1:1",))
    dataset = datasets.Dataset(
        name="Set",
        conversations=(datasets.Conversation(id="conv-1", turns=turns),),
        questions=(question,),
        categories=("single-hop",),
        headline=("single-hop",),
        metric="R",
    )
    export = datasets.as_export(dataset)
    assert export.name == "Set-export" and export.questions == dataset.questions
    assert [(turn.id, turn.speaker, turn.text, turn.occurred_at) for turn in export.conversations[0].turns] == [
        ("D1:1", "Ana", "Look! [shares a photo: a bowl]", at),
        ("D1:1~media", "Ana", "<Media omitted>", at),
        ("D1:2", "Mel", "So pretty!", at),
    ]
    assert datasets.ranked_turns([["D1:1~media"], ["D1:1"]]) == ["D1:1~media", "D1:1"]  # not its turn


@pytest.mark.django_db
def test_two_runs_of_a_long_labelled_mode_get_tenants_of_their_own():
    """`--bursts --export` names its tenant "locomo-export-bursts-session": cut at 50 characters, the slug lost
    its time below the hour, and a second kept run within the hour was refused ("already exists")."""
    from apps.memories.benchmarks.end_to_end import bench_tenant

    label = "locomo-export-bursts-session"
    first, _ = bench_tenant(label=label)
    second, _ = bench_tenant(label=label)
    assert first.slug != second.slug
    assert first.slug.startswith(f"bench-http-{label}-20") and len(first.slug) == len(f"bench-http-{label}-") + 20
    longest, _ = bench_tenant(label="x" * 200)  # the label is cut, never the time
    assert len(longest.slug) == 100 and longest.slug[-21] == "-" and longest.slug[-20:].isdigit()


def test_a_kept_tenant_names_one_conversation_id_per_chat():
    """Session 51 kept a BEAM store sent under one conversation id per chat whose name read like a store of
    one id per session: the label now says so."""
    from apps.memories.benchmarks.end_to_end import run_label

    assert run_label(dataset="BEAM", stamping="session", conversation_ids="session") == "beam-session"
    assert (
        run_label(dataset="LoCoMo-export-bursts", stamping="session", conversation_ids="chat")
        == "locomo-export-bursts-session-ids-per-chat"
    )
