"""Retrieval as clients meet it, on a small conversation (the LoCoMo benchmark itself is `bench_retrieval
--via-http`; these are its regressions in miniature): turns that share a timestamp, consolidation, merges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from apps.conversations.models import Conversation
from apps.memories.benchmarks.locomo import ranked_turns, recall_at
from apps.memories.lifecycle.deferred import conversation_consolidate
from apps.memories.models import Memory
from apps.memories.retrieval.access import access_flush
from apps.memories.store.merging import memory_merge

pytestmark = pytest.mark.django_db

SESSIONS = [
    (
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        [
            ("Ana", "Hey Ben! Guess what, I adopted a grey kitten from the shelter on Saturday."),
            ("Ben", "No way! What did you name her?"),
            ("Ana", "Pebble. She sleeps on my keyboard all day."),
            ("Ben", "Ha, here is my news: I signed up for the Lisbon marathon in October."),
            ("Ana", "That is huge. How is the training going?"),
            ("Ben", "Slowly. My knee hurts after the long runs, so I see a physio on Thursdays."),
            ("Ana", "Here is a tip: my cousin swears by swimming for sore knees."),
            ("Ben", "Thanks, I will try the pool near the office."),
        ],
    ),
    (
        datetime(2023, 6, 20, 10, 0, tzinfo=UTC),
        [
            ("Ana", "Pebble knocked my sourdough starter off the shelf this morning."),
            ("Ben", "Oh no, the starter you kept alive for two years?"),
            ("Ana", "Yes, Gertrude the starter. I have to begin again from scratch."),
            ("Ben", "Here is something to cheer you up: the physio says my knee is fine now."),
            ("Ana", "Great! Are you still running Lisbon in October?"),
            ("Ben", "Yes, and I ran 30 km last Sunday without pain."),
            ("Ana", "Here is to you then. I am taking a pottery class on Wednesdays now."),
            ("Ben", "Pottery suits you. Make me a mug?"),
        ],
    ),
]

QUESTIONS = [
    ("What is the name of Ana's kitten?", ["S1:3"]),
    ("Which marathon is Ben training for?", ["S1:4"]),
    ("Why does Ben see a physio?", ["S1:6"]),
    ("What happened to Ana's sourdough starter?", ["S2:1"]),
    ("What is the name of Ana's sourdough starter?", ["S2:3"]),
    ("How far did Ben run without pain?", ["S2:6"]),
    ("What class is Ana taking?", ["S2:7"]),
]


def _messages(contact_id: str, *, tied: bool) -> list[dict]:
    messages = []
    for number, (start, turns) in enumerate(SESSIONS, start=1):
        for index, (speaker, text) in enumerate(turns, start=1):
            at = start if tied else start + timedelta(seconds=30 * index)
            messages.append(
                {
                    "contact_id": contact_id,
                    "conversation_id": f"{contact_id}:s{number}",
                    "message": text,
                    "role": "user",
                    "message_id": f"{contact_id}:S{number}:{index}",
                    "speaker": speaker,
                    "occurred_at": at.isoformat(),
                }
            )
    return messages


def _ingest(api, contact_id: str, *, tied: bool = False, one_by_one: bool = False) -> None:
    messages = _messages(contact_id, tied=tied)
    if one_by_one:
        for message in messages:
            assert api.post("/api/v1/ingest", message, format="json").status_code == 202
    else:
        assert api.post("/api/v1/ingest/batch", {"messages": messages}, format="json").status_code == 202


def _ranked(api, contact_id: str, question: str, top_k: int = 10) -> list[str]:
    response = api.post(
        "/api/v1/memories/search", {"query": question, "contact_id": contact_id, "top_k": top_k}, format="json"
    )
    assert response.status_code == 200, response.content
    prefix = f"{contact_id}:"
    return ranked_turns(
        [source.removeprefix(prefix) for source in row["sources"]] for row in response.json()["results"]
    )


def _recall(api, contact_id: str, k: int) -> float:
    values = [recall_at(_ranked(api, contact_id, question), evidence, k) for question, evidence in QUESTIONS]
    return sum(values) / len(values)


@pytest.mark.parametrize("one_by_one", [False, True], ids=["batch", "one-by-one"])
def test_turns_sharing_one_timestamp_retrieve_what_spread_turns_do(api, one_by_one):
    """LoCoMo stamps every turn of a session with the session's time: the ledger's arrival order must then
    order the turns (context embeddings, neighbour turns, context words) exactly as distinct times would."""
    _ingest(api, "spread", one_by_one=one_by_one)
    _ingest(api, "tied", tied=True, one_by_one=one_by_one)
    for question, _ in QUESTIONS:
        assert _ranked(api, "tied", question) == _ranked(api, "spread", question), question


def test_recall_is_not_lower_after_consolidation_and_usage(api, tenant):
    """What the background does — deferred consolidation of every conversation (merges, entity links) and
    the access counts of the searches — never lowers recall: a settled store answers at least as well."""
    _ingest(api, "c")
    fresh = {k: _recall(api, "c", k) for k in (1, 3, 5)}
    for conversation in Conversation.objects.filter(tenant=tenant):
        conversation_consolidate(conversation_id=str(conversation.pk))
    for _ in range(3):  # the same questions again and again, as a busy client asks them
        _recall(api, "c", 5)
    access_flush()
    settled = {k: _recall(api, "c", k) for k in (1, 3, 5)}
    assert fresh[5] == 1.0  # the fixture is answerable
    for k in (1, 3, 5):
        assert settled[k] >= fresh[k], (k, fresh, settled)


def test_a_merge_keeps_both_sources_and_the_merged_turn_stays_findable(api, tenant):
    _ingest(api, "c")
    kitten = Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids__contains=["c:S1:3"])
    starter = Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids__contains=["c:S2:3"])
    survivor = memory_merge(survivor=kitten, absorbed=starter, actor="test")
    assert survivor is not None
    assert survivor.source_message_ids == ["c:S1:3", "c:S2:3"]
    starter.refresh_from_db()
    assert starter.superseded_by_id == survivor.pk
    # the absorbed turn is still found: through the survivor, which names it among its sources
    assert "S2:3" in _ranked(api, "c", "What is the name of Ana's sourdough starter?", top_k=5)
    # merging again (a concurrent run) writes nothing
    assert memory_merge(survivor=kitten, absorbed=starter, actor="test") is None


def test_neighbour_turns_follow_arrival_order_when_times_tie(api, tenant, monkeypatch):
    """The neighbour source adds the turns just before and after a candidate: with one timestamp for the
    whole session, they are the turns before and after it in the ledger (arrival), not any turn of the same
    time."""
    from apps.contacts.models import Contact
    from apps.memories.retrieval import candidates, search

    monkeypatch.setattr(candidates, "VECTOR_CANDIDATES", 0)  # candidates from the keyword source only
    _ingest(api, "tied", tied=True)
    contact = Contact.objects.get(tenant=tenant, external_id="tied")
    result = search.memory_search(tenant=tenant, contact=contact, query="Gertrude", top_k=10)
    neighbours = {tuple(item.memory.source_message_ids) for item in result.results if item.found_by == ("neighbour",)}
    assert neighbours == {("tied:S2:2",), ("tied:S2:4",)}
    assert ("tied:S2:3",) in {tuple(item.memory.source_message_ids) for item in result.results}
