"""Decay, compression, pruning, merging and session flush on a controlled clock (the `now` argument)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.db import connections

from apps.conversations.models import Conversation, Message
from apps.core.embeddings import memory_text
from apps.core.redis import get_redis
from apps.entities.models import Entity
from apps.entities.selectors import entity_list
from apps.memories.dispatch import consolidation_schedule
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.lifecycle import compression, deferred, periodic_steps, summarise
from apps.memories.lifecycle.deferred import (
    conversation_consolidate,
    conversation_recent_bursts_merge,
    near_duplicates_merge,
)
from apps.memories.lifecycle.session_flush import idle_conversations_flush
from apps.memories.models import ConsolidationRun, ContextEvent, Memory, MemoryEntity, MemoryRevision
from apps.memories.retrieval.search import memory_search
from apps.memories.store.merging import burst_join
from apps.memories.store.writing import context_mix
from tests.factories import ContactFactory, MemoryFactory
from tests.redis_keys import redis_clear, redis_keys

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)


@pytest.fixture
def contact(tenant):
    return ContactFactory(tenant=tenant, external_id="arjun", display_name="Arjun")


def make(tenant, contact, content, memory_type="fact", *, importance=0.7, rate=0.003, at=T0, **fields):
    return MemoryFactory(
        tenant=tenant,
        contact=contact,
        memory_type=memory_type,
        content=content,
        importance=importance,
        decay_rate=rate,
        accessed_at=at,
        **fields,
    )


def ingest(tenant, contact_id, text, message_id, at, conversation="conv-1", **extra):
    item = IngestItem(
        contact_id=contact_id,
        conversation_id=conversation,
        message=text,
        message_id=message_id,
        occurred_at=at,
        **extra,
    )
    return ingest_messages(tenant=tenant, items=[item], actor="test")[0]


def test_decay_is_idempotent_and_exact(tenant, contact):
    fact = make(tenant, contact, "Works at Infosys", importance=0.7, rate=0.003)
    episode = make(tenant, contact, "Talked about the weather", "episode", importance=0.5, rate=0.008)
    pinned = make(tenant, contact, "Allergic to peanuts", importance=0.9, rate=0.003, is_pinned=True)
    fresh = make(tenant, contact, "Visited Goa", "episode", importance=0.5, rate=0.008, at=T0 + timedelta(days=15))

    # once at day 17, or at day 10, 12, 17 — same result: 10 decaying days after the 7-day grace
    assert periodic_steps.memories_decay(tenant=tenant, contact=contact, now=T0 + timedelta(days=10)) == 2
    periodic_steps.memories_decay(tenant=tenant, contact=contact, now=T0 + timedelta(days=12))
    periodic_steps.memories_decay(tenant=tenant, contact=contact, now=T0 + timedelta(days=17))
    periodic_steps.memories_decay(tenant=tenant, contact=contact, now=T0 + timedelta(days=17))
    values = dict(
        Memory.objects.filter(pk__in=[fact.pk, episode.pk, pinned.pk, fresh.pk]).values_list("pk", "importance")
    )
    assert values[fact.pk] == pytest.approx(0.67)
    assert values[episode.pk] == pytest.approx(0.42)
    assert values[pinned.pk] == 0.9
    assert values[fresh.pk] == 0.5  # accessed 2 days ago: still in the grace period
    decayed = MemoryRevision.objects.filter(memory=episode, action="decayed")
    assert decayed.exists()
    assert decayed.last().after == {"importance": pytest.approx(0.42)}


def test_access_restarts_the_decay_clock(tenant, contact):
    from apps.memories.retrieval.access import access_flush, access_record

    episode = make(tenant, contact, "Talked about cricket", "episode", importance=0.5, rate=0.008)
    access_record(memory_ids=[episode.pk], at=T0 + timedelta(days=17))
    access_flush()
    episode.refresh_from_db()
    # decayed to 0.42 at the access, which becomes the new anchor
    assert (episode.importance, episode.base_importance, episode.access_count) == (0.42, 0.42, 1)
    assert episode.accessed_at == T0 + timedelta(days=17)
    periodic_steps.memories_decay(tenant=tenant, contact=contact, now=T0 + timedelta(days=20))
    episode.refresh_from_db()
    assert episode.importance == 0.42


def test_a_burst_of_accesses_is_one_use(tenant, contact):
    """Accesses within an hour of the previous one are the same use: 50 searches in a minute count once,
    a use the next day counts again; the latest access time is kept either way."""
    from apps.memories.retrieval import access

    memory = make(tenant, contact, "Plays the violin", "fact", importance=0.7, rate=0.003)
    for second in range(50):
        access.access_record(memory_ids=[memory.pk], at=T0 + timedelta(hours=2, seconds=second))
    assert access.access_flush() == 1
    memory.refresh_from_db()
    assert (memory.access_count, memory.accessed_at) == (1, T0 + timedelta(hours=2, seconds=49))
    access.access_record(memory_ids=[memory.pk], at=T0 + timedelta(hours=2, minutes=30))  # same use
    access.access_record(memory_ids=[memory.pk], at=T0 + timedelta(days=1))  # a new one
    access.access_flush()
    memory.refresh_from_db()
    assert (memory.access_count, memory.accessed_at) == (2, T0 + timedelta(days=1))


@pytest.mark.parametrize(
    ("times", "previous", "expected"),
    [
        ([0.0], None, 1),
        ([0.0, 10.0, 3599.0], None, 1),
        ([0.0, 3600.0], None, 2),
        ([100.0], 0.0, 0),
        ([3600.0], 0.0, 1),
        ([0.0, 1800.0, 3600.0, 5400.0], None, 1),  # used every half hour: one continuing use
    ],
    ids=["first", "burst", "an-hour-apart", "soon-after-the-last", "an-hour-after-the-last", "continuing"],
)
def test_uses_of_access_times(times, previous, expected):
    from apps.memories.retrieval.access import uses

    assert uses(times=times, previous_access=previous) == expected


def test_accesses_are_counted_once_each_with_the_latest_time(tenant, contact):
    from apps.core.redis import get_redis
    from apps.memories.retrieval import access

    first = make(tenant, contact, "Plays the violin", "fact", importance=0.7, rate=0.003)
    second = make(tenant, contact, "Lives in Pune", "fact", importance=0.7, rate=0.003)
    access.access_record(memory_ids=[first.pk, second.pk], at=T0 + timedelta(days=1))
    access.access_record(memory_ids=[first.pk], at=T0 + timedelta(days=3))
    access.access_record(memory_ids=[first.pk], at=T0 + timedelta(days=2))
    redis = get_redis()
    assert redis.llen(access.LOG_KEY) == 3  # one entry per retrieval, whatever its size
    # a flush that died after taking the list: the next one finishes it, and new accesses wait their turn
    redis.rename(access.LOG_KEY, access.FLUSHING_KEY)
    access.access_record(memory_ids=[second.pk], at=T0 + timedelta(days=4))
    lock = redis.lock(access.FLUSH_LOCK_KEY, timeout=60)
    assert lock.acquire(blocking=False)
    assert access.access_flush() == 0  # another flush holds the lock: nothing is counted twice
    lock.release()
    assert access.access_flush() == 2
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.access_count, first.accessed_at) == (3, T0 + timedelta(days=3))
    assert (second.access_count, second.accessed_at) == (1, T0 + timedelta(days=1))
    assert access.access_flush() == 1  # the access recorded meanwhile
    second.refresh_from_db()
    assert (second.access_count, second.accessed_at) == (2, T0 + timedelta(days=4))
    assert access.access_flush() == 0
    assert not redis.exists(access.LOG_KEY, access.FLUSHING_KEY)


def test_prune_only_faded_and_idle(tenant, contact):
    now = T0 + timedelta(days=100)
    faded = make(tenant, contact, "Said hi once", "episode", importance=0.05, at=now - timedelta(days=31))
    recent = make(tenant, contact, "Said hello again", "episode", importance=0.05, at=now - timedelta(days=29))
    pinned = make(tenant, contact, "Said hey", "episode", importance=0.05, at=now - timedelta(days=60), is_pinned=True)
    assert periodic_steps.memories_prune(tenant=tenant, contact=contact, now=now) == 1
    faded.refresh_from_db()
    assert (faded.deletion_reason, faded.deleted_at is not None) == ("pruned", True)
    assert list(faded.revisions.values_list("action", "actor")) == [("pruned", "system")]
    assert Memory.objects.get(pk=recent.pk).deleted_at is None
    assert Memory.objects.get(pk=pinned.pk).deleted_at is None


def test_purge_respects_retention(tenant, contact):
    now = T0 + timedelta(days=400)
    old = make(
        tenant, contact, "Gone long ago", "episode", deleted_at=now - timedelta(days=366), deletion_reason="pruned"
    )
    young = make(
        tenant, contact, "Gone lately", "episode", deleted_at=now - timedelta(days=10), deletion_reason="deleted"
    )
    assert periodic_steps.memories_purge(tenant=tenant, now=now) == 1
    assert not Memory.objects.filter(pk=old.pk).exists()
    assert Memory.objects.filter(pk=young.pk).exists()


def test_superseded_text_is_purged_after_its_retention(tenant, contact):
    """A corrected or merged memory is history for ENGRAM_PURGE_SUPERSEDED_AFTER_DAYS (365) after it stopped
    being true, then purged with its history; the memory that replaced it stays."""
    now = T0 + timedelta(days=800)
    current = make(tenant, contact, "Lives in Mumbai", "fact")
    long_ago = make(tenant, contact, "Lives in Pune", "fact", valid_to=now - timedelta(days=366))
    lately = make(tenant, contact, "Lives in Delhi", "fact", valid_to=now - timedelta(days=300))
    Memory.objects.filter(pk__in=[long_ago.pk, lately.pk]).update(superseded_by=current)
    assert periodic_steps.memories_purge(tenant=tenant, now=now) == 1
    assert set(Memory.objects.filter(tenant=tenant).values_list("content", flat=True)) == {
        "Lives in Mumbai",
        "Lives in Delhi",
    }
    tenant.settings = {"purge_superseded_after_days": 30}
    assert periodic_steps.memories_purge(tenant=tenant, now=now) == 1
    assert list(Memory.objects.filter(tenant=tenant).values_list("content", flat=True)) == ["Lives in Mumbai"]


BRUNO_DAYS = [
    "Bruno went to the vet for his vaccinations",
    "Bruno ate my shoes this morning",
    "Bruno ate my shoes again, unbelievable",
    "Bruno learned a new trick, he can roll over",
    "Took Bruno to the park and he chased pigeons",
    "Bruno got a new blue collar",
]


def test_episodes_sharing_an_entity_become_one_pattern(tenant):
    ingest(tenant, "arjun", "My dog Bruno is a golden retriever", "m0", T0, display_name="Arjun")
    for day, text in enumerate(BRUNO_DAYS, start=1):
        ingest(tenant, "arjun", text, f"m{day}", T0 + timedelta(days=day), conversation=f"c{day}")
    contact = tenant.contacts.get()
    episodes = Memory.objects.filter(tenant=tenant, contact=contact, memory_type="episode")
    # two "ate my shoes" days are two events: episodes only merge when near-verbatim (cosine ≥ 0.97)
    assert episodes.count() == 7
    now = T0 + timedelta(days=10)
    assert compression.episodes_compress(tenant=tenant, contact=contact, now=now, subject="Arjun") == 1
    pattern = Memory.objects.get(tenant=tenant, contact=contact, memory_type="pattern")
    assert pattern.importance == 0.8
    assert pattern.content.startswith("Arjun frequently talks about Bruno (")
    # how often, in how many conversations (each day was its own), and when
    assert ": 7 mentions in 7 conversations between" in pattern.content
    assert "pet:bruno" in {entity.key for entity in pattern.entities.all()}
    compressed = episodes.filter(is_compressed=True)
    assert compressed.count() == 7
    assert set(compressed.values_list("compressed_into", flat=True)) == {pattern.pk}
    assert set(pattern.source_message_ids) == {f"m{i}" for i in range(7)}
    assert set(compressed.first().revisions.values_list("action", flat=True)) >= {"compressed"}
    # compressed episodes leave the query-less listing, and a query still finds them beside their pattern
    results = memory_search(tenant=tenant, contact=contact, query="Bruno shoes", top_k=20).results
    assert pattern.pk in {item.memory.pk for item in results}
    assert any(item.memory.is_compressed for item in results)
    # ... the episodes that say it first: a pattern keeps half its score where no summary is asked for
    ranked = [item.memory.pk for item in results]
    shoes = [item for item in results if "ate my shoes" in item.memory.content]
    summed = next(item for item in results if item.memory.pk == pattern.pk)
    assert summed.pattern_factor == 0.5 and summed.explain()["pattern_factor"] == 0.5
    assert len(shoes) == 2 and all(ranked.index(item.memory.pk) < ranked.index(pattern.pk) for item in shoes)
    assert {item.pattern_factor for item in results if item.memory.pk != pattern.pk} == {1.0}
    recap = memory_search(tenant=tenant, contact=contact, query="Give me a recap of Bruno", top_k=20).results
    assert next(item for item in recap if item.memory.pk == pattern.pk).pattern_factor == 1.0
    listed = memory_search(tenant=tenant, contact=contact, query="", top_k=50).results
    assert not any(item.memory.is_compressed for item in listed)
    # idempotent: nothing left to compress
    assert compression.episodes_compress(tenant=tenant, contact=contact, now=now) == 0


def test_who_said_it_is_not_a_theme(tenant):
    """Every turn of a named speaker links the speaker's entity: compressing by it made one "pattern" of
    everything they ever said (LoCoMo: 411 of a contact's episodes into one) and took them out of context."""
    for day, text in enumerate(TOPICS[:8], start=1):
        ingest(tenant, "pair", text, f"p{day}", T0 + timedelta(days=day), conversation=f"c{day}", speaker="Caroline")
    contact = tenant.contacts.get()
    caroline = Entity.objects.get(tenant=tenant, contact=contact, slug="caroline")
    assert caroline.metadata["role"] == "speaker"
    assert MemoryEntity.objects.filter(entity=caroline, memory__memory_type="episode").count() == 8
    assert compression.episodes_compress(tenant=tenant, contact=contact, now=T0 + timedelta(days=30)) == 0
    assert not Memory.objects.filter(tenant=tenant, is_compressed=True).exists()


def test_fewer_than_five_episodes_stay_raw(tenant):
    for day, text in enumerate(BRUNO_DAYS[:4], start=1):
        ingest(tenant, "arjun", text, f"m{day}", T0 + timedelta(days=day), conversation=f"c{day}")
    contact = tenant.contacts.get()
    assert compression.episodes_compress(tenant=tenant, contact=contact, now=T0 + timedelta(days=30)) == 0
    assert not Memory.objects.filter(tenant=tenant, is_compressed=True).exists()


TOPICS = [
    "We planned the sprint for the payments service and agreed to ship refunds by Friday",
    "My sister Maya is getting married in Jaipur next March",
    "The quarterly report showed revenue of 4.2 million rupees",
    "I started learning the violin with a teacher called Mr Rao",
    "Our team migrated the database from MySQL to PostgreSQL 16",
    "I booked flights to Lisbon for the conference on 12 May",
    "The landlord raised the rent by 8 percent this year",
    "I ran my first half marathon in 2 hours 5 minutes",
    "We adopted a kitten named Pepper from the shelter",
    "The doctor said my vitamin D level is low at 14",
    "I finished reading Sapiens and started Dune",
    "Grandpa turned 90 and we threw a party in Chennai",
]


def test_session_compression_summarises_the_oldest_half(tenant):
    for index, text in enumerate(TOPICS):
        ingest(tenant, "arjun", text, f"s{index}", T0 + timedelta(days=index), conversation=f"session-{index}")
    contact = tenant.contacts.get()
    now = T0 + timedelta(days=40)
    assert compression.sessions_compress(tenant=tenant, contact=contact, now=now, threshold=10) == 5
    summaries = Memory.objects.filter(tenant=tenant, contact=contact, metadata__compression_source=True)
    assert sorted(summaries.values_list("source_session_id", flat=True)) == [f"session-{i}" for i in range(5)]
    first = summaries.get(source_session_id="session-0")
    assert first.memory_type == "fact"
    assert "payments" in first.content and "Friday" in first.content
    assert first.source_message_ids == ["s0"]
    compressed = Memory.objects.filter(tenant=tenant, memory_type="episode", is_compressed=True)
    assert set(compressed.values_list("source_session_id", flat=True)) == {f"session-{i}" for i in range(5)}
    # 7 sessions left: under the threshold, nothing more happens
    assert compression.sessions_compress(tenant=tenant, contact=contact, now=now, threshold=10) == 0
    # the details of a summarised session are still found by a question: its episode is searched
    (top, *_) = memory_search(tenant=tenant, contact=contact, query="Which teacher gives the violin lessons?").results
    assert top.memory.source_message_ids == ("s3",)


def test_near_duplicates_merge_keeps_the_more_specific(tenant, contact):
    vague = make(tenant, contact, "Likes spicy food", "preference", importance=0.7, rate=0.005)
    specific = make(tenant, contact, "Likes spicy food a lot", "preference", importance=0.75, rate=0.005)
    context = [1.0] + [0.0] * 383  # the specific one's context embedding goes where its content goes
    Memory.objects.filter(pk=specific.pk).update(context_embedding=context)
    # ... and so does an instruction's condition, whose embedding the context embedding is
    Memory.objects.filter(pk=vague.pk).update(metadata={"instruction_condition": "dinner"})
    Memory.objects.filter(pk=specific.pk).update(metadata={"instruction_condition": "lunch"})
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 1
    survivor = Memory.objects.get(tenant=tenant, valid_to__isnull=True)
    absorbed = Memory.objects.get(tenant=tenant, valid_to__isnull=False)
    assert survivor.content == "Likes spicy food a lot"
    assert list(survivor.context_embedding) == context
    assert survivor.metadata["instruction_condition"] == "lunch"
    assert survivor.importance == 0.8  # max(0.7, 0.75) + 0.05
    assert absorbed.superseded_by_id == survivor.pk
    assert {vague.pk, specific.pk} == {survivor.pk, absorbed.pk}
    assert survivor.revisions.filter(action="merged").exists()
    assert absorbed.revisions.filter(action="merged", related_memory=survivor).exists()


def test_a_short_reply_is_not_merged_into_the_question_it_answers(tenant, contact, monkeypatch):
    """'Jo: yes (answering Mia: "Coming on Saturday?")' quotes the question, so the two can be near each
    other; merged, the question would survive and the answer ("yes") would be gone from the content."""
    from apps.memories import scoring

    monkeypatch.setattr(scoring, "MERGE_SIMILARITY", 0.3)  # these two stand for a pair above the real 0.92
    question = make(tenant, contact, "Mia: Coming on Saturday?", "episode", source_message_ids=["q1"])
    answer = make(
        tenant,
        contact,
        'Jo: yes (answering Mia: "Coming on Saturday?")',
        "episode",
        source_message_ids=["a1"],
        metadata={"speaker": "Jo", "answers": "q1"},
    )
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 0
    assert Memory.objects.filter(pk__in=[question.pk, answer.pk], valid_to__isnull=True).count() == 2
    Memory.objects.filter(pk=answer.pk).update(metadata={"speaker": "Jo"})  # the same pair, not known as Q and A
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 1


def test_near_duplicates_of_two_speakers_are_not_merged(tenant, contact):
    """Merged, one speaker's words would survive under the other's name."""
    sam = make(tenant, contact, "I love spicy food so much", "episode", metadata={"speaker": "Sam"}, occurred_at=T0)
    evan = make(tenant, contact, "I love spicy food so much!", "episode", metadata={"speaker": "Evan"}, occurred_at=T1)
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 0
    Memory.objects.filter(pk=evan.pk).update(metadata={"speaker": "Sam"})  # one speaker saying it twice
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 1
    assert Memory.objects.get(pk=sam.pk).valid_to is None  # said first: it absorbs the other


def test_of_two_near_duplicates_the_one_said_first_survives_whichever_was_written_first(tenant, contact):
    """Which near-duplicate absorbs the other is decided by when each was said and its place in the ledger,
    not by when the worker wrote its row: the same chat ingested twice consolidates into the same memories."""
    said_first = make(tenant, contact, "Bye, see you tomorrow!", "episode", at=T0, source_sequence=10)
    said_later = make(tenant, contact, "Bye, see you tomorrow!!", "episode", at=T0, source_sequence=11)
    # the row of the turn said later was written first (deferred extraction, a concurrent batch)
    Memory.objects.filter(pk=said_later.pk).update(created_at=T0)
    Memory.objects.filter(pk=said_first.pk).update(created_at=T0 + timedelta(minutes=5))
    assert near_duplicates_merge(tenant=tenant, contact=contact) == 1
    assert Memory.objects.get(pk=said_later.pk).superseded_by_id == said_first.pk
    assert Memory.objects.get(pk=said_first.pk).valid_to is None


def test_two_entities_named_as_often_give_their_theme_to_the_same_one_whatever_the_link_order(tenant, contact):
    """Episodes that name two entities equally often become the theme of one of them: the one whose key sorts
    first, not whichever link the database returned first."""
    at = T0 - timedelta(days=5)
    episodes = [
        make(tenant, contact, text, "episode", at=at + timedelta(hours=index)) for index, text in enumerate(BRUNO_DAYS)
    ]
    bruno = Entity.objects.create(tenant=tenant, contact=contact, entity_type="pet", slug="bruno", display_name="Bruno")
    arlo = Entity.objects.create(tenant=tenant, contact=contact, entity_type="pet", slug="arlo", display_name="Arlo")
    # bruno's links are written (and read back) first
    MemoryEntity.objects.bulk_create([MemoryEntity(memory=episode, entity=bruno) for episode in episodes])
    MemoryEntity.objects.bulk_create([MemoryEntity(memory=episode, entity=arlo) for episode in episodes])
    assert compression.episodes_compress(tenant=tenant, contact=contact, now=T0) == 1
    pattern = Memory.objects.get(tenant=tenant, contact=contact, memory_type="pattern")
    assert "Arlo" in pattern.content and "Bruno" not in pattern.content.split("(")[0]


@pytest.mark.parametrize("session_id", [None, "chat-2"])
def test_nearest_pairs_exact_and_indexed_agree(tenant, contact, monkeypatch, session_id):
    """A scope of up to EXACT_SCOPE_LIMIT memories is paired by one matrix product, a larger one by an HNSW probe
    per memory: the same pairs, in the same order, for the whole scope or one conversation's memories."""
    texts = [
        "Likes spicy food",
        "Likes spicy food a lot",
        "Has a dog called Bruno",
        "Walks Bruno every morning",
        "Works as a nurse in Lyon",
        "Is learning the violin",
        "Prefers tea over coffee",
        "Prefers green tea in the morning",
    ]
    for index, text in enumerate(texts):
        memory_type = "preference" if text.startswith(("Likes", "Prefers")) else "fact"
        make(tenant, contact, text, memory_type, source_session_id=f"chat-{index % 3}")
    # superseded: no one's neighbour
    make(tenant, contact, "Prefers tea over coffee", "preference", source_session_id="chat-2", valid_to=T0)
    other = ContactFactory(tenant=tenant, external_id="lena")
    make(tenant, other, "Likes spicy food a lot", "preference", source_session_id="chat-2")  # another scope

    exact = deferred.nearest_pairs(tenant=tenant, contact=contact, session_id=session_id)
    monkeypatch.setattr(deferred, "EXACT_SCOPE_LIMIT", 0)
    indexed = deferred.nearest_pairs(tenant=tenant, contact=contact, session_id=session_id)
    assert [(memory, neighbour) for memory, neighbour, _ in exact] == [
        (memory, neighbour) for memory, neighbour, _ in indexed
    ]
    assert [value for _, _, value in exact] == pytest.approx([value for _, _, value in indexed], abs=1e-6)
    current = Memory.objects.filter(contact=contact, valid_to__isnull=True)
    asked = current if session_id is None else current.filter(source_session_id=session_id)
    assert {memory for memory, _, _ in exact} == set(asked.values_list("pk", flat=True))
    assert {neighbour for _, neighbour, _ in exact} <= set(current.values_list("pk", flat=True))


def test_deferred_consolidation_links_entities_and_boosts_outcomes(tenant):
    contact = ContactFactory(tenant=tenant, external_id="owner")
    elsewhere = make(tenant, contact, "Went to the park with Bruno on Sunday", "episode", importance=0.5, rate=0.008)
    ingest(tenant, "owner", "I love walking Bruno in the park", "d0", T0 - timedelta(minutes=1), conversation="conv-x")
    ingest(tenant, "owner", "My dog Bruno loves the park", "d1", T0, conversation="conv-x")
    decision = ingest(
        tenant,
        "owner",
        "I will post the Diwali sweets recipe on Monday",
        "d2",
        T0 + timedelta(minutes=1),
        conversation="conv-x",
    )
    boosted_ids = [m["id"] for m in decision.memories]
    before = dict(Memory.objects.filter(pk__in=boosted_ids).values_list("pk", "importance"))
    ingest(
        tenant,
        "owner",
        "The recipe post got 340 views, three times the usual",
        "d3",
        T0 + timedelta(days=3),
        conversation="conv-x",
        metadata={"outcome": "positive", "decision_message_id": "d2"},
    )
    conversation = Conversation.objects.get(tenant=tenant, external_id="conv-x")
    stats = conversation_consolidate(conversation_id=str(conversation.pk))
    # the turn before the dog was introduced joins pet:bruno; a memory of another conversation is left alone
    walking = Memory.objects.filter(tenant=tenant, source_message_ids__contains=["d0"])
    assert walking.count() == 2  # the preference and the episode
    for memory in walking:
        assert MemoryEntity.objects.filter(memory=memory, entity__entity_type="pet", entity__slug="bruno").exists()
    assert not MemoryEntity.objects.filter(memory=elsewhere).exists()
    assert stats["entity_links"] == 2
    assert stats["outcome_boosted"] == len(boosted_ids) > 0
    for memory in Memory.objects.filter(pk__in=boosted_ids):
        assert memory.importance == pytest.approx(min(1.0, before[memory.pk] + 0.1))
    # a second run boosts and links nothing more
    again = conversation_consolidate(conversation_id=str(conversation.pk))
    assert (again["outcome_boosted"], again["entity_links"]) == (0, 0)
    run = ConsolidationRun.objects.filter(kind="deferred").order_by("id").first()
    assert run.status == "done" and run.stats["outcome_boosted"] == len(boosted_ids)


CONCERT = [
    ("Sam", "I went to the concert yesterday.", 0),
    ("Sam", "Ava came too!", 20),
    ("Sam", "We danced until midnight.", 40),
    ("Ava", "Best night of the year, honestly.", 60),
    ("Sam", "Next time we bring Leo.", 400),
    ("Sam", "He loves that band.", 420),
]


def test_a_speakers_burst_of_messages_becomes_one_episode(tenant):
    """One thought sent as several messages in a row is one episode after deferred consolidation: "Ava came
    too!" alone says nothing of the concert (lifecycle/burst_rules.py)."""
    for index, (speaker, text, at) in enumerate(CONCERT, start=1):
        ingest(tenant, "sam", text, f"b{index}", T0 + timedelta(seconds=at), conversation="chat", speaker=speaker)
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    fragment = Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids=["b5"])
    stats = conversation_consolidate(conversation_id=str(conversation.pk))
    assert stats["bursts"] == 3  # b2 and b3 joined b1; b6 joined b5
    episodes = Memory.objects.filter(tenant=tenant, memory_type="episode", valid_to__isnull=True)
    by_first = {memory.source_message_ids[0]: memory for memory in episodes}
    concert = by_first["b1"]
    assert concert.content == "Sam: I went to the concert yesterday. Ava came too! We danced until midnight."
    assert concert.source_message_ids == ["b1", "b2", "b3"]
    assert by_first["b5"].content == "Sam: Next time we bring Leo. He loves that band."
    # its context embedding is the joined text's mixed with the episode before it (Ava's), not the fragment's
    leo = by_first["b5"]
    ava = by_first["b4"]
    expected = context_mix(
        own=np.asarray(leo.embedding),
        own_text=memory_text(content=leo.content, index_terms=leo.index_terms),
        previous=np.asarray(ava.embedding),
        previous_text=memory_text(content=ava.content, index_terms=ava.index_terms),
    )
    assert np.allclose(np.asarray(leo.context_embedding), expected, atol=2e-3)
    assert not np.allclose(np.asarray(leo.context_embedding), np.asarray(fragment.context_embedding), atol=2e-3)
    assert by_first["b4"].source_message_ids == ["b4"]  # the other speaker's turn is its own
    for part in Memory.objects.filter(tenant=tenant, memory_type="episode", valid_to__isnull=False):
        assert part.superseded_by_id in {concert.pk, by_first["b5"].pk}
        assert part.revisions.filter(action="merged", related_memory=part.superseded_by).exists()
    assert concert.revisions.filter(action="merged").count() == 2
    # its keyword context is a whole turn's: the turn before (none), the burst, the turn after (Ava's)
    lexemes = Memory.objects.filter(pk=concert.pk).values_list("context_vector", flat=True).get()
    assert "'danc'" in lexemes and "'honest'" in lexemes and "'leo'" not in lexemes
    # its embedding and keywords are the whole thought's: "who went with Sam" finds the concert and Ava
    contact = tenant.contacts.get()
    top = memory_search(tenant=tenant, contact=contact, query="Who went to the concert with Sam?", top_k=3).results[0]
    assert top.memory.pk == concert.pk
    # a second run joins nothing more
    assert conversation_consolidate(conversation_id=str(conversation.pk))["bursts"] == 0


@pytest.mark.parametrize(
    ("first", "second", "terms"),
    [
        # joined word by word, '2 January 2026' + '1 January 2026' (what "yesterday" names) became '2 January
        # 2026 1', and "what did Sam do on 1 January?" missed the burst
        ("I went to the concert yesterday.", "Ava came too!", "2 January 2026 1 January 2026"),
        # the places its parts name follow the days, still searched and not embedded (extraction/places.py)
        (
            "I flew to Boston yesterday.",
            "Then on to Rome!",
            "2 January 2026 1 January 2026 | city Massachusetts state USA America Italy Europe European",
        ),
    ],
    ids=["days", "places"],
)
def test_a_joined_burst_keeps_the_days_and_places_its_parts_name(tenant, first, second, terms):
    chat = [("Sam", first, 0), ("Sam", second, 20), ("Ava", "Lucky you!", 40)]
    for index, (speaker, text, at) in enumerate(chat, start=1):
        at = T0 + timedelta(days=1, seconds=at)
        ingest(tenant, "sam", text, f"d{index}", at, conversation="chat", speaker=speaker)
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    assert conversation_consolidate(conversation_id=str(conversation.pk))["bursts"] == 1
    joined = Memory.objects.get(tenant=tenant, memory_type="episode", valid_to__isnull=True, source_message_ids__len=2)
    assert joined.index_terms == terms


def test_a_live_chats_closed_bursts_are_joined_seconds_after_the_open_one_is_not(tenant):
    """The worker joins the bursts the latest messages closed (the other speaker answered), not the last one
    (its speaker may go on): that waits for the next message or the deferred consolidation."""
    for index, (speaker, text, at) in enumerate(CONCERT, start=1):
        ingest(tenant, "sam", text, f"b{index}", T0 + timedelta(seconds=at), conversation="chat", speaker=speaker)
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    assert conversation_recent_bursts_merge(conversation_id=str(conversation.pk)) == 2  # b2, b3 into b1
    episodes = Memory.objects.filter(tenant=tenant, memory_type="episode", valid_to__isnull=True)
    assert sorted(memory.source_message_ids for memory in episodes) == [["b1", "b2", "b3"], ["b4"], ["b5"], ["b6"]]
    assert conversation_recent_bursts_merge(conversation_id=str(conversation.pk)) == 0  # nothing new closed
    assert conversation_consolidate(conversation_id=str(conversation.pk))["bursts"] == 1  # b6 into b5, later


def test_a_chat_imported_in_batches_has_every_closed_burst_joined_by_one_run(tenant):
    """A client importing a long chat sends batches faster than the join's debounce: one run reads everything
    since the first message of those batches (the pending key holds its id), not only the last 200 messages."""
    items = [
        IngestItem(
            contact_id="sam",
            conversation_id="chat",
            message=text,
            message_id=f"e{index}",
            speaker=speaker,
            occurred_at=T0 + timedelta(seconds=index),
        )
        for index, (speaker, text) in enumerate(
            [("Sam", "I went to the concert yesterday."), ("Sam", "Ava came too!")]
            + [
                ("Sam" if index % 2 else "Ava", f"Message number {index} about the weather in town")
                for index in range(250)
            ]
        )
    ]
    ingest_messages(tenant=tenant, items=items, actor="test")
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    first = conversation.messages.order_by("id").first()
    assert conversation_recent_bursts_merge(conversation_id=str(conversation.pk)) == 0  # the last 200 only
    assert conversation_recent_bursts_merge(conversation_id=str(conversation.pk), since_message_id=first.pk) == 1
    assert Memory.objects.filter(tenant=tenant, source_message_ids=["e0", "e1"], valid_to__isnull=True).exists()


@pytest.mark.django_db(transaction=True)  # two connections, each committing its own join
def test_two_joins_of_one_burst_at_once_write_one(tenant):
    """Two runs joining the same burst at once (the burst task and the conversation's consolidation): the
    parts are locked, and the run that gets them second finds them no longer current and writes nothing.
    Planted: without the current-parts check both write, and the first part gets two joins' revisions."""
    contact = ContactFactory(tenant=tenant)
    parts = [
        MemoryFactory(tenant=tenant, contact=contact, memory_type="episode", content=text, source_message_ids=[mid])
        for text, mid in (("we landed in Lisbon", "m1"), ("the hotel is lovely", "m2"))
    ]
    start, joined = threading.Barrier(2), []

    def join() -> None:
        try:
            loaded = Memory.objects.in_bulk([part.pk for part in parts])
            mine = [loaded[part.pk] for part in parts]  # in the burst's order
            start.wait(timeout=10)
            joined.append(
                burst_join(parts=mine, content="we landed in Lisbon the hotel is lovely", context_words="", actor="t")
            )
        finally:
            connections.close_all()

    threads = [threading.Thread(target=join) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(result is None for result in joined) == [False, True]  # one joined, one found nothing to do
    first, second = (Memory.objects.get(pk=part.pk) for part in parts)
    assert first.is_current and first.source_message_ids == ["m1", "m2"]
    assert not second.is_current and second.superseded_by_id == first.pk
    assert MemoryRevision.objects.filter(memory=second, action="merged").count() == 1


def test_a_message_still_being_extracted_ends_a_burst(tenant):
    """A part whose extraction is still pending (queued to the worker) has no episode yet: the burst is not
    joined past it, or the part would stay alone for good."""
    for index, (speaker, text, at) in enumerate(CONCERT, start=1):
        ingest(tenant, "sam", text, f"b{index}", T0 + timedelta(seconds=at), conversation="chat", speaker=speaker)
    ContextEvent.objects.filter(message__external_id="b2").update(extracted_at=None)
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    assert conversation_recent_bursts_merge(conversation_id=str(conversation.pk)) == 0


def test_messages_without_a_speaker_name_are_never_joined(tenant):
    for index, (_, text, at) in enumerate(CONCERT, start=1):
        ingest(tenant, "sam", text, f"r{index}", T0 + timedelta(seconds=at), conversation="chat")
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    assert conversation_consolidate(conversation_id=str(conversation.pk))["bursts"] == 0
    assert not Memory.objects.filter(tenant=tenant, memory_type="episode", valid_to__isnull=False).exists()


def test_a_deactivated_tenant_is_not_consolidated_so_its_deletion_meets_no_worker_locks(tenant):
    """A deletion deactivates the tenant first; the consolidations ingest queued minutes before (and the sweep,
    and the 6-hourly fan-out already queued) then touch nothing of it. Before, each one locked a conversation
    and a contact the cascade was deleting, and the deletion lost six deadlocks in a row (docs/reliability.md)."""
    from apps.memories.lifecycle.scheduling import lost_consolidations_requeue
    from apps.memories.tasks import scope_consolidation_task, tenant_consolidation_task, tenant_purge_task

    an_hour_ago = datetime.now(tz=UTC) - timedelta(hours=1)
    ingest(tenant, "arjun", "I live in Pune and my dog Bruno is a beagle", "a1", an_hour_ago)
    conversation = Conversation.objects.get(tenant=tenant)
    contact = conversation.contact
    redis_clear()  # the countdown task ingest queued is gone: the sweep would queue it again
    type(tenant).objects.filter(pk=tenant.pk).update(is_active=False)  # what tenant_delete does first

    assert conversation_consolidate(conversation_id=str(conversation.pk)) == {}
    assert deferred.conversation_recent_bursts_merge(conversation_id=str(conversation.pk)) == 0
    assert lost_consolidations_requeue() == 0
    assert tenant_consolidation_task.run(tenant_id=str(tenant.pk)) == 0
    assert scope_consolidation_task.run(tenant_id=str(tenant.pk), contact_id=str(contact.pk)) == {}
    assert tenant_purge_task.run(tenant_id=str(tenant.pk)) == 0
    assert not ConsolidationRun.objects.filter(tenant=tenant).exists()
    conversation.refresh_from_db()
    assert conversation.consolidated_at is None  # still due

    # reactivated (an operator's suspension lifted): the sweep finds it due and its consolidation runs
    type(tenant).objects.filter(pk=tenant.pk).update(is_active=True)
    assert lost_consolidations_requeue() == 1
    assert conversation_consolidate(conversation_id=str(conversation.pk)) != {}
    assert ConsolidationRun.objects.filter(tenant=tenant, kind="deferred", status="done").count() == 1


@pytest.mark.django_db(transaction=True)  # autocommit, as the worker runs: a foreign key is checked at commit
def test_a_contact_erased_while_its_conversation_is_consolidated_ends_the_run_without_an_error(tenant, monkeypatch):
    """An erasure that commits between the run's read of its conversation and its first write (its run row)
    left the worker's task failing with an IntegrityError on every such race (seen erasing a contact while 19
    of its conversations were consolidated: 2 of 4 tries). The run now ends as for a conversation already
    gone. The erasure is the real one, committed at that moment."""
    from apps.contacts.services.crud import contact_delete
    from apps.memories.lifecycle import runs

    ingest(tenant, "arjun", "I live in Pune and my dog Bruno is a beagle", "a1", T0)
    conversation = Conversation.objects.get(tenant=tenant)
    real_run_logged = runs.run_logged

    def erased_first(**kwargs):
        contact_delete(contact=conversation.contact, actor="test")  # what the concurrent erasure committed
        return real_run_logged(**kwargs)

    monkeypatch.setattr(deferred, "run_logged", erased_first)
    assert conversation_consolidate(conversation_id=str(conversation.pk)) == {}
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


def test_consolidation_is_debounced_per_conversation(tenant):
    ingest(tenant, "arjun", "hello there, I live in Pune", "a1", T0)
    conversation = Conversation.objects.get(tenant=tenant)
    redis_clear()
    assert consolidation_schedule(conversation=conversation) is True
    assert consolidation_schedule(conversation=conversation) is False
    assert get_redis().ttl(f"engram:consolidate:pending:{conversation.pk}") > 0


def test_idle_conversation_is_flushed(tenant, api):
    now_base = datetime.now(tz=UTC)
    ingest(tenant, "arjun", "I have a cat named Mochi", "f1", now_base - timedelta(minutes=10))
    conversation = Conversation.objects.get(tenant=tenant)
    from apps.conversations.window import window_append

    window_append(conversation=conversation, message=conversation.messages.get())
    assert redis_keys("engram:window:*")
    assert idle_conversations_flush(now=now_base - timedelta(minutes=6)) == 0  # idle only 4 minutes then
    assert idle_conversations_flush(now=now_base) == 1
    assert idle_conversations_flush(now=now_base) == 0  # already flushed
    conversation.refresh_from_db()
    assert conversation.flushed_at == now_base
    assert conversation.status == "open"
    assert redis_keys("engram:window:*") == []
    assert ConsolidationRun.objects.filter(kind="session_flush", status="done").count() == 1


def test_close_api_flushes_and_closes(api, tenant, other_api):
    api.post(
        "/api/v1/ingest",
        {"contact_id": "arjun", "conversation_id": "chat-9", "message": "I love jazz", "role": "user"},
        format="json",
    )
    assert other_api.post("/api/v1/conversations/chat-9/close").status_code == 404
    response = api.post("/api/v1/conversations/chat-9/close")
    assert response.status_code == 200
    assert response.json()["status"] == "closed"
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat-9")
    assert (conversation.status, conversation.closed_at is not None) == ("closed", True)


def test_periodic_job_runs_every_scope_and_logs(tenant, contact):
    from apps.memories.lifecycle.periodic import tenant_consolidate

    make(tenant, contact, "Said hi once", "episode", importance=0.05, at=T0)
    make(tenant, None, "We sell sourdough", "fact", importance=0.7, rate=0.01, at=T0)
    stats = tenant_consolidate(tenant=tenant, now=T0 + timedelta(days=60))
    assert stats["scopes"] == 2
    assert stats["pruned"] == 1
    assert stats["decayed"] >= 1
    brain = Memory.objects.get(tenant=tenant, contact__isnull=True)
    assert brain.importance == 0.2  # 0.7 − 0.01 × 53 days would be 0.17: stated facts stop at the 0.2 floor
    # one run per scope (the contact, the brain) and one purge
    runs = {run.contact_id: run for run in ConsolidationRun.objects.filter(kind="periodic")}
    assert set(runs) == {contact.pk, None} and all(run.status == "done" for run in runs.values())
    assert runs[contact.pk].stats["pruned"] == 1
    assert ConsolidationRun.objects.filter(kind="purge", status="done").count() == 1


def test_entity_typed_later_upgrades_the_bare_name(tenant):
    ingest(tenant, "arjun", "Went hiking with Bruno today", "n1", T0)
    assert Entity.objects.get(tenant=tenant, slug="bruno").entity_type == "name"
    ingest(tenant, "arjun", "My dog Bruno is a beagle", "n2", T0 + timedelta(hours=1))
    bruno = Entity.objects.get(tenant=tenant, slug="bruno")
    assert bruno.entity_type == "pet"
    assert bruno.memories.count() >= 2


def test_session_summaries_decay_like_the_episodes_they_replace(tenant):
    for index, text in enumerate(TOPICS):
        ingest(tenant, "arjun", text, f"s{index}", T0 + timedelta(days=index), conversation=f"session-{index}")
    contact = tenant.contacts.get()
    compression.sessions_compress(tenant=tenant, contact=contact, now=T0 + timedelta(days=40), threshold=10)
    summary = Memory.objects.filter(tenant=tenant, metadata__compression_source=True).first()
    stated = (
        Memory.objects.filter(tenant=tenant, memory_type="fact").exclude(metadata__has_key="compression_source").first()
    )
    assert summary.decay_rate == 0.008
    far = summary.accessed_at + timedelta(days=400)
    periodic_steps.memories_decay(tenant=tenant, contact=contact, now=far)
    summary.refresh_from_db()
    assert summary.importance == 0.0  # no floor: it was derived, not stated
    if stated is not None:
        stated.refresh_from_db()
        assert stated.importance >= 0.2 or stated.importance == stated.base_importance


@pytest.mark.django_db(transaction=True)
def test_a_scope_another_run_holds_is_skipped_not_consolidated_twice(tenant):
    """Two periodic runs of one scope at once (a second beat, an operator's action): the second skips it."""
    from contextlib import contextmanager

    from apps.memories.lifecycle.periodic import scope_consolidate, scope_lock
    from tests.conftest import held_elsewhere

    contact = ContactFactory(tenant=tenant, external_id="held")

    @contextmanager
    def another_run():
        with scope_lock(tenant=tenant, contact=contact) as acquired:
            assert acquired
            yield

    with held_elsewhere(another_run):
        assert scope_consolidate(tenant=tenant, contact=contact, now=T0) == {"skipped_running": 1}
        assert not ConsolidationRun.objects.filter(tenant=tenant).exists()
        # another scope of the tenant is not held
        assert "skipped_running" not in scope_consolidate(tenant=tenant, contact=None, now=T0)
    assert "skipped_running" not in scope_consolidate(tenant=tenant, contact=contact, now=T0)
    assert ConsolidationRun.objects.filter(tenant=tenant, contact=contact, kind="periodic", status="done").count() == 1


def test_accesses_applied_twice_count_once(tenant, contact):
    """A flush that died after writing some batches leaves its list to the next flush, which applies it
    again: the uses it already counted are not counted twice (an access is a use only an hour after the
    memory's previous access, and the first flush moved that to the latest of them)."""
    from apps.memories.retrieval import access

    memory = make(tenant, contact, "Plays the violin", "fact", importance=0.7, rate=0.003)
    times = {str(memory.pk): [(T0 + timedelta(hours=hours)).timestamp() for hours in (1, 3, 5)]}
    access._apply(times)
    memory.refresh_from_db()
    assert (memory.access_count, memory.accessed_at) == (3, T0 + timedelta(hours=5))
    access._apply(times)  # the same list once more, as after a crash mid-flush
    memory.refresh_from_db()
    assert (memory.access_count, memory.accessed_at) == (3, T0 + timedelta(hours=5))


GIG_CHAT = [
    "Calvin: Wow, it's amazing! The crowd at the music festival was so loud",
    "Dave: Wow, the music at the gig was great, it's my favourite band",
    "Calvin: I'm recording new music in the studio, wow",
    "Dave: The music video shoot is next week, it's a big stage",
    "Calvin: Wow, it's a photo of the stage, the music was great",
]
SMALL_TALK = [f"Dave: Wow, it's great, I'm fine, thanks Calvin {day}" for day in range(20)]


def test_a_pattern_names_what_stands_out_not_the_chats_small_talk():
    days = [T0 + timedelta(days=day) for day in range(len(GIG_CHAT))]
    background = summarise.document_frequencies(GIG_CHAT + SMALL_TALK)
    text = summarise.pattern_statement_offline(
        texts=GIG_CHAT,
        dates=days,
        entity_name=None,
        subject="Calvin & Dave",
        sessions=3,
        background=background,
        background_size=len(GIG_CHAT) + len(SMALL_TALK),
    )
    # "music" is in every gig message and nowhere else; "wow" and "it's" are everywhere, and the speakers'
    # names are the subject already
    assert text.startswith("Calvin & Dave repeatedly talk about music, ")
    assert "wow" not in text and "it's" not in text and "calvin" not in text.lower().split("about")[1]
    assert ": 5 mentions in 3 conversations between" in text
    # without a background (an older caller), the most frequent words, contractions still out
    plain = summarise.pattern_statement_offline(texts=GIG_CHAT, dates=days, entity_name=None, subject="Arjun")
    assert plain.startswith("Arjun repeatedly talks about ") and "it's" not in plain


def test_a_cluster_of_a_quarter_of_everything_is_small_talk_not_a_theme():
    import uuid

    import numpy as np

    rng = np.random.default_rng(7)

    def unit(vector):
        return vector / np.linalg.norm(vector)

    greetings, gigs = unit(rng.normal(size=384)), unit(rng.normal(size=384))
    vectors = (
        [unit(greetings + 0.02 * rng.normal(size=384)) for _ in range(15)]  # 15 of 45: a third of the chat
        + [unit(gigs + 0.02 * rng.normal(size=384)) for _ in range(8)]
        + [unit(rng.normal(size=384)) for _ in range(22)]  # unrelated to each other
    )
    episodes = [Memory(pk=uuid.uuid4(), content=f"turn {index}", embedding=v) for index, v in enumerate(vectors)]
    themes = compression._themes(episodes, {})
    assert [len(theme.episodes) for theme in themes] == [8]
    assert {episode.content for episode in themes[0].episodes} == {f"turn {index}" for index in range(15, 23)}


def test_a_word_the_scope_writes_in_lower_case_stops_being_a_name(tenant, contact):
    """One message at a time, "Pottery" opening a sentence reads as a name; the scope's text shows it is a
    word. The periodic run marks it, drops its links, hides it, and later messages do not link it again."""
    ingest(tenant, "arjun", "Pottery is my favourite thing these days.", "p1", T0)
    ingest(tenant, "arjun", "Walked my friend Bruno to the pottery studio.", "p2", T0 + timedelta(minutes=1))
    ingest(tenant, "arjun", "I glazed three bowls at pottery with Bruno.", "p3", T0 + timedelta(minutes=2))
    pottery = Entity.objects.get(tenant=tenant, contact=contact, slug="pottery")
    assert pottery.entity_type == "name" and pottery.memories.exists()

    stats = periodic_steps.periodic_scope_consolidate(tenant=tenant, contact=contact, now=T0 + timedelta(hours=1))

    assert stats["not_names"] == 1
    pottery.refresh_from_db()
    assert pottery.metadata["not_a_name"] == {"lower": 2, "capitalised": 0}
    assert not pottery.memories.exists()
    bruno = Entity.objects.get(tenant=tenant, contact=contact, slug="bruno")
    assert "not_a_name" not in bruno.metadata and bruno.memories.count() >= 2
    assert "name:pottery" not in {entity.key for entity in entity_list(tenant=tenant, contact=contact)}
    found = memory_search(tenant=tenant, contact=contact, query="What about pottery?", top_k=5, now=T0)
    assert all(not item.matched_entities for item in found.results)

    ingest(tenant, "arjun", "Pottery again tonight!", "p4", T0 + timedelta(hours=2))
    pottery.refresh_from_db()
    assert not pottery.memories.exists() and pottery.mention_count == 1
    # the next run counts again: still a word, nothing newly marked
    assert periodic_steps.name_entities_check(tenant=tenant, contact=contact) == 0


def test_the_admin_lists_what_was_found_not_to_be_a_name(tenant, contact):
    from django.urls import reverse

    from tests.factories import UserFactory
    from tests.inspector.conftest import login

    ingest(tenant, "arjun", "Pottery is my thing. Then pottery, more pottery, and Bruno.", "a1", T0)
    assert periodic_steps.name_entities_check(tenant=tenant, contact=contact) == 1
    client = login(UserFactory(username="operator", is_staff=True, is_superuser=True))
    url = reverse("admin:entities_entity_changelist")
    words = client.get(url, {"not_a_name": "yes"}).content.decode()
    names = client.get(url, {"not_a_name": "no"}).content.decode()
    assert "name:pottery" in words and "name:bruno" not in words
    assert "name:bruno" in names and "name:pottery" not in names


def test_a_word_later_written_as_a_name_is_a_name_again(tenant, contact):
    ingest(tenant, "arjun", "Maple is lovely. The maple leaves turned red, maple syrup too.", "m1", T0)
    assert periodic_steps.name_entities_check(tenant=tenant, contact=contact) == 1
    ingest(tenant, "arjun", "I adopted a cat and named her Maple, and Maple loves Tim.", "m2", T0 + timedelta(days=1))
    assert periodic_steps.name_entities_check(tenant=tenant, contact=contact) == 0
    maple = Entity.objects.get(tenant=tenant, contact=contact, slug="maple")
    assert "not_a_name" not in maple.metadata
    assert "name:maple" in {entity.key for entity in entity_list(tenant=tenant, contact=contact)}


def test_a_pattern_never_names_a_persons_alias_as_its_topic():
    texts = [f"Dave: Cal, the guitar solo tonight was something else, show {n}" for n in range(5)]
    others = [f"Dave: the weather is fine today, day {n}" for n in range(10)]
    days = [T0 + timedelta(days=day) for day in range(5)]
    kwargs = dict(
        texts=texts,
        dates=days,
        entity_name=None,
        subject="Calvin & Dave",
        background=summarise.document_frequencies(texts + others),
        background_size=15,
    )

    def topics(statement):
        return statement.split(":")[0].split(" about ")[1].split(", ")

    assert "cal" in topics(summarise.pattern_statement_offline(**kwargs))  # the nickname reads as a word
    named = topics(summarise.pattern_statement_offline(**kwargs, aliases=frozenset({"cal"})))
    assert "cal" not in named and "guitar" in named


def test_small_talk_inside_a_burst_is_passed_over(tenant):
    """A greeting to a name or a laugh between the parts of a burst has no episode (small talk,
    extraction/cleaning.py): the parts around it are still one thought, joined without it."""
    chat = [
        ("Sam", "Hey Ava!", 0),
        ("Sam", "I went to the concert yesterday.", 10),
        ("Sam", "haha", 20),
        ("Sam", "Leo came too!", 30),
        ("Ava", "Sounds amazing, Sam!", 60),
    ]
    for index, (speaker, text, at) in enumerate(chat, start=1):
        ingest(tenant, "sam", text, f"s{index}", T0 + timedelta(seconds=at), conversation="chat", speaker=speaker)
    conversation = Conversation.objects.get(tenant=tenant, external_id="chat")
    assert conversation_consolidate(conversation_id=str(conversation.pk))["bursts"] == 1
    episodes = list(Memory.objects.filter(tenant=tenant, memory_type="episode", valid_to__isnull=True))
    assert [(memory.content, memory.source_message_ids) for memory in episodes] == [
        ("Sam: I went to the concert yesterday. Leo came too!", ["s2", "s4"])
    ]


def _said_in_every_session(tenant, texts: list[str], *, then: str) -> None:
    """Jon says `texts` in each of six daily sessions, then `then` (message id "news") in a seventh; every
    conversation is consolidated."""
    at = T0
    for session in range(6):
        for index, text in enumerate(texts):
            ingest(tenant, "jon", text, f"t{session}-{index}", at, conversation=f"chat-{session}", speaker="Jon")
            at += timedelta(minutes=3)
        at += timedelta(days=1)
    ingest(tenant, "jon", then, "news", at, conversation="chat-6", speaker="Jon")
    for conversation in Conversation.objects.filter(tenant=tenant):
        conversation_consolidate(conversation_id=str(conversation.pk))


def test_thanking_someone_by_name_in_every_session_is_not_a_memory(tenant):
    """On a messaging app one speaker thanks and greets the other by name in every session ("Thanks, Gina!",
    "Hey Gina!"): stored, those fragments became episodes near-duplicates merged into one naming every such
    turn, with the merge's importance boost each time, and it outranked what was said (docs/benchmarks.md,
    Session 33). They are small talk: no memory; the turn with content is one."""
    _said_in_every_session(
        tenant, ["Hey Gina!", "Thanks, Gina!", "Wow Gina, that looks amazing!"], then="My dance studio opens in May."
    )
    current = Memory.objects.filter(tenant=tenant, valid_to__isnull=True, deleted_at__isnull=True)
    assert [memory.source_message_ids for memory in current.filter(memory_type="episode")] == [["news"]]
    contact = tenant.contacts.get()
    results = memory_search(tenant=tenant, contact=contact, query="What did Jon tell Gina?", top_k=5).results
    assert [list(result.memory.source_message_ids) for result in results] == [["news"]]


def test_a_chat_exports_placeholders_are_not_memories(tenant):
    """An exported chat holds a placeholder where a message had no text: a shared photo ("<Media omitted>",
    "image omitted"), a deleted message. Stored, the one in every session became an episode near-duplicates
    merged into one naming every such message, first for any question about a photo (docs/benchmarks.md,
    Session 34). They are no memory; the message is still in the ledger."""
    _said_in_every_session(
        tenant,
        ["<Media omitted>", "\u200eimage omitted", "This message was deleted"],
        then="Here's a photo of my dance studio!",
    )
    current = Memory.objects.filter(tenant=tenant, valid_to__isnull=True, deleted_at__isnull=True)
    assert [memory.source_message_ids for memory in current.filter(memory_type="episode")] == [["news"]]
    assert Message.objects.filter(tenant=tenant).count() == 19
    contact = tenant.contacts.get()
    results = memory_search(tenant=tenant, contact=contact, query="What photo did Jon send?", top_k=5).results
    assert [list(result.memory.source_message_ids) for result in results] == [["news"]]
