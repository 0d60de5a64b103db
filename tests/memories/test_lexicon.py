"""The per-scope lexicon (document frequencies in Redis), the keyword row budget and the neighbour source."""

from __future__ import annotations

import base64
import json
import random
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.conversations.models import Conversation
from apps.core.embeddings import get_embedder
from apps.core.redis import get_redis
from apps.memories.lifecycle.deferred import conversation_consolidate
from apps.memories.lifecycle.periodic import scope_consolidate
from apps.memories.models import Memory
from apps.memories.retrieval import candidates, lexicon
from apps.memories.retrieval import query as retrieval_query
from apps.memories.retrieval.lexicon import lexicon_key, refresh_lock_key, scope_lexicon_refresh
from apps.memories.retrieval.query import Scope, query_terms, scope_stats
from apps.memories.retrieval.search import memory_search
from tests.conftest import wait_until
from tests.factories import ContactFactory, MemoryFactory
from tests.vector_rows import shared_vector_index_built_after

pytestmark = pytest.mark.django_db

WORDS = ["garden", "tomato", "invoice", "refund", "bicycle", "piano", "lesson", "ferry", "harbour", "kettle"]


def bulk(tenant, contact, contents, **extra):
    """Random vectors: these tests count words, and embedding thousands of texts would only slow them."""
    rng = random.Random(3)
    vectors = [[rng.uniform(-1, 1) for _ in range(384)] for _ in contents]
    return MemoryFactory.bulk(contents, vectors=vectors, tenant=tenant, contact=contact, importance=0.6, **extra)


def corpus(size: int) -> list[str]:
    rng = random.Random(11)
    return [" ".join(rng.sample(WORDS, 3)) + f" note {index}" for index in range(size)]


@pytest.fixture
def contact(tenant):
    return ContactFactory(tenant=tenant, external_id="mira")


@pytest.fixture
def small_lexicon_threshold(monkeypatch):
    monkeypatch.setattr(lexicon, "LEXICON_FROM", 20)
    monkeypatch.setattr(retrieval_query, "LEXICON_FROM", 20)


def test_lexicon_gives_the_same_frequencies_as_counting(tenant, contact, small_lexicon_threshold):
    bulk(tenant, contact, corpus(60))
    bulk(tenant, None, ["tomato at the brain level"] * 3)  # another scope: never counted here
    scope = Scope(tenant, contact, (), False)
    lexemes = query_terms(scope, "tomato piano ferry zebra").lexemes
    counted = scope_stats(scope, lexemes)  # no lexicon yet: counted in SQL
    assert scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk) == 60
    from_lexicon = scope_stats(scope, lexemes)
    assert from_lexicon.total == counted.total == 60
    assert from_lexicon.search_df == counted.search_df | {"zebra": 1}  # unseen word: counts as one
    assert counted.search_df["zebra"] == 0
    assert from_lexicon.search_df["tomato"] == sum("tomato" in text for text in corpus(60))
    assert from_lexicon.average_search_length == pytest.approx(counted.average_search_length)


def test_a_large_scope_without_lexicon_queues_one_refresh(tenant, contact, small_lexicon_threshold):
    bulk(tenant, contact, corpus(30))
    redis = get_redis()
    memory_search(tenant=tenant, contact=contact, query="tomato invoice", top_k=5)
    assert redis.exists(refresh_lock_key(tenant_id=tenant.pk, contact_id=contact.pk))
    queued = [json.loads(item) for item in redis.lrange("celery", 0, -1)]
    assert [item["headers"]["task"] for item in queued] == ["apps.memories.tasks.lexicon_refresh_task"]
    memory_search(tenant=tenant, contact=contact, query="piano lesson", top_k=5)
    assert redis.llen("celery") == 1  # the lock holds back a second refresh


def test_a_small_scope_is_counted_exactly_and_gets_no_lexicon(tenant, contact):
    bulk(tenant, contact, corpus(10))
    memory_search(tenant=tenant, contact=contact, query="tomato invoice", top_k=5)
    assert get_redis().llen("celery") == 0
    assert scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk) == 10
    assert not get_redis().exists(lexicon_key(tenant_id=tenant.pk, contact_id=contact.pk))


def _age(key, seconds):
    """Make the lexicon at `key` look `seconds` older."""
    meta = json.loads(get_redis().hget(key, "__meta"))
    meta["computed_at"] -= seconds
    get_redis().hset(key, "__meta", json.dumps(meta))


def test_a_stale_lexicon_is_used_while_it_is_refreshed(tenant, contact, small_lexicon_threshold):
    bulk(tenant, contact, corpus(30))
    scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk)
    _age(lexicon_key(tenant_id=tenant.pk, contact_id=contact.pk), lexicon.LEXICON_MAX_AGE_SECONDS + 1)
    bulk(tenant, contact, corpus(5))  # written since: the stale lexicon still says 30
    scope = Scope(tenant, contact, (), False)
    stats = scope_stats(scope, query_terms(scope, "tomato").lexemes)
    assert stats.total == 30
    assert get_redis().llen("celery") == 1


@pytest.mark.parametrize(("large_from", "queued"), [(50, 1), (20, 0)])
def test_a_mid_sized_scopes_lexicon_is_refreshed_sooner_than_a_large_ones(
    tenant, contact, small_lexicon_threshold, monkeypatch, large_from, queued
):
    monkeypatch.setattr(lexicon, "LARGE_SCOPE_FROM", large_from)
    bulk(tenant, contact, corpus(30))
    scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk)
    _age(lexicon_key(tenant_id=tenant.pk, contact_id=contact.pk), lexicon.MID_SIZED_MAX_AGE_SECONDS + 1)
    scope = Scope(tenant, contact, (), False)
    assert scope_stats(scope, query_terms(scope, "tomato").lexemes).total == 30  # used meanwhile either way
    assert get_redis().llen("celery") == queued  # 30 memories: mid-sized below 50, large from 20


def _consolidate(kind, tenant, contact):
    if kind == "periodic":
        scope_consolidate(tenant=tenant, contact=contact)
        return
    now = timezone.now()
    conversation = Conversation.objects.create(
        tenant=tenant, contact=contact, external_id=f"c-{contact.external_id}", started_at=now, last_message_at=now
    )
    conversation_consolidate(conversation_id=str(conversation.pk))


@pytest.mark.parametrize("kind", ["periodic", "deferred"])
def test_a_consolidation_run_queues_the_refresh_of_its_scopes_lexicon(tenant, contact, small_lexicon_threshold, kind):
    """Consolidation merges, compresses and decays: the searches after it should not count what it changed until
    the lexicon ages out. A scope without a lexicon is counted exactly: nothing to refresh."""
    other = ContactFactory(tenant=tenant, external_id="noor")
    bulk(tenant, contact, corpus(30))
    bulk(tenant, other, corpus(5))
    scope_lexicon_refresh(tenant_id=tenant.pk, contact_id=contact.pk)
    redis = get_redis()
    _consolidate(kind, tenant, other)
    assert redis.llen("celery") == 0
    _consolidate(kind, tenant, contact)
    queued = [json.loads(item) for item in redis.lrange("celery", 0, -1)]
    assert [item["headers"]["task"] for item in queued] == ["apps.memories.tasks.lexicon_refresh_task"]
    _, kwargs, _ = json.loads(base64.b64decode(queued[0]["body"]))
    assert kwargs == {"tenant_id": str(tenant.pk), "contact_id": str(contact.pk)}


def test_keyword_candidates_skip_words_beyond_the_row_budget(tenant, contact, monkeypatch):
    bulk(tenant, contact, [f"weekly garden report {index}" for index in range(40)])
    (rare,) = bulk(tenant, contact, ["the harbour ferry was late"])
    monkeypatch.setattr(candidates, "VECTOR_CANDIDATES", 0)
    monkeypatch.setattr(candidates, "KEYWORD_ROW_BUDGET", 10)
    result = memory_search(tenant=tenant, contact=contact, query="garden harbour", top_k=50)
    assert [item.memory.pk for item in result.results] == [rare.pk]  # 'garden' (40 rows) selects nothing
    monkeypatch.setattr(candidates, "KEYWORD_ROW_BUDGET", 100)
    result = memory_search(tenant=tenant, contact=contact, query="garden harbour", top_k=50)
    assert len(result.results) == 41


def test_neighbour_turns_come_from_the_same_conversation_only(api, tenant, monkeypatch):
    turns = [
        ("s1", "a1", "We drove up to the lake house on Friday evening"),
        ("s1", "a2", "The ferry to the island was cancelled because of fog"),
        ("s1", "a3", "So we stayed and grilled fish by the water instead"),
        ("s2", "b1", "Work has been busy with the quarterly audit lately"),
    ]
    for conversation, message_id, text in turns:
        body = {
            "contact_id": "mira",
            "conversation_id": conversation,
            "message": text,
            "role": "user",
            "message_id": message_id,
        }
        assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    episodes = {m.source_message_ids[0]: m for m in Memory.objects.filter(tenant=tenant, memory_type="episode")}
    episodes["a3"].deleted_at = timezone.now()
    episodes["a3"].save(update_fields=["deleted_at"])
    monkeypatch.setattr(candidates, "VECTOR_CANDIDATES", 0)
    contact = episodes["a1"].contact
    result = memory_search(tenant=tenant, contact=contact, query="ferry cancelled", top_k=20)
    found = {
        item.memory.source_message_ids[0]: item.found_by
        for item in result.results
        if item.memory.memory_type == "episode"
    }
    assert found["a2"] == ("keyword",)
    assert found["a1"] == ("neighbour",)
    assert "a3" not in found  # deleted: not a neighbour either
    assert "b1" not in found  # another conversation


def _episodes(tenant, contact, sessions: int, turns: int) -> None:
    start = timezone.now() - timedelta(days=30)
    rows = bulk(
        tenant,
        contact,
        [
            f"{WORDS[turn % len(WORDS)]} turn {turn} of {session}"
            for session in range(sessions)
            for turn in range(turns)
        ],
    )
    for index, memory in enumerate(rows):
        memory.memory_type = "episode"
        memory.source_session_id = f"session-{index // turns}"
        memory.occurred_at = start + timedelta(minutes=index)
    Memory.objects.bulk_update(rows, ["memory_type", "source_session_id", "occurred_at"])


def test_a_tenant_the_planner_does_not_know_yet_probes_neighbours_through_the_session_index(tenant, other_tenant):
    """Statistics taken before a tenant's rows exist estimate it (and its contacts) at one row. With the
    scope's tenant and contact as constants in the neighbour probes, the planner then probed through the lone
    contact_id index, scanning the whole contact per candidate (a LoCoMo-sized contact: 47 instead of 12 ms
    per search); with the owner taken from the candidate, it probes through memory_session_turn_idx."""
    with shared_vector_index_built_after():  # 4,000 rows written twice: 8,000 inserts into the graph otherwise
        _episodes(other_tenant, ContactFactory(tenant=other_tenant, external_id="big"), sessions=40, turns=100)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
    contact = ContactFactory(tenant=tenant, external_id="new")
    _episodes(tenant, contact, sessions=4, turns=100)  # written after the statistics
    statements = []

    def capture(execute, sql, params, many, context):
        if sql.startswith("WITH "):
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        result = memory_search(tenant=tenant, contact=contact, query="garden piano", top_k=50)
    assert "neighbour" in {source for item in result.results for source in item.found_by}
    sql, params = statements[-1]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    probes = [line for line in plan.splitlines() if " on memories_memory n" in line]
    assert len(probes) == 2, plan
    assert all("memory_session_turn_idx" in line for line in probes), plan


@pytest.mark.django_db(transaction=True)
@pytest.mark.celery_worker
def test_the_worker_builds_the_lexicon_a_search_asked_for(tenant, contact, celery_worker_process):
    bulk(tenant, contact, corpus(lexicon.LEXICON_FROM))
    memory_search(tenant=tenant, contact=contact, query="tomato invoice", top_k=5)
    key = lexicon_key(tenant_id=tenant.pk, contact_id=contact.pk)
    assert wait_until(lambda: get_redis().exists(key), timeout=30)
    meta = json.loads(get_redis().hget(key, "__meta"))
    assert meta["total"] == lexicon.LEXICON_FROM
    assert not get_redis().exists(refresh_lock_key(tenant_id=tenant.pk, contact_id=contact.pk))
    scope = Scope(tenant, contact, (), False)
    stats = scope_stats(scope, query_terms(scope, "tomato").lexemes)
    assert stats.search_df["tomato"] == sum("tomato" in text for text in corpus(lexicon.LEXICON_FROM))


def test_keyword_candidates_are_ranked_by_the_idf_of_the_words_they_hold(tenant, contact, monkeypatch):
    """The one keyword slot goes to the memory holding the rarest query word, not to the ones holding the most
    query words (ts_rank_cd, a plain count), the closest in meaning or the smallest id: the rare memory holds one
    query word against the others' two, is the farthest from the query and has the largest id. The other
    sources stay on: only the keyword source's own pick (found_by) is asserted, over every candidate."""
    query = "Did Melanie say the kiln cracked?"
    bulk(tenant, contact, [f"Melanie says the weather was fine on day {index}" for index in range(12)])
    (rare,) = bulk(tenant, contact, ["the old kiln at the school"])
    rare_id, opposite = uuid.UUID(int=2**128 - 1), -get_embedder().embed_batch([query])[0]
    Memory.objects.filter(pk=rare.pk).update(id=rare_id, embedding=opposite.tolist())
    monkeypatch.setattr(candidates, "KEYWORD_CANDIDATES", 1)
    result = memory_search(tenant=tenant, contact=contact, query=query, top_k=50)
    # 'melani' and 'say' are in twelve memories, 'kiln' in one: the rare word wins the one slot over two common ones
    assert [item.memory.pk for item in result.results if "keyword" in item.found_by] == [rare_id]


def test_keyword_candidates_come_from_the_scope_asked_only(tenant, other_tenant, contact, monkeypatch):
    """The scoped full-text index matches the scope's own token: the same rare word in another contact, in the
    brain and in another tenant is never a keyword candidate, and the scope's own memory always is."""
    other_contact = ContactFactory(tenant=tenant)
    foreign_contact = ContactFactory(tenant=other_tenant)
    (own,) = bulk(tenant, contact, ["the zeppelin landed at dawn"])
    (brain,) = bulk(tenant, None, ["zeppelin tours are sold out"])
    bulk(tenant, other_contact, ["a zeppelin over the harbour"])
    bulk(other_tenant, foreign_contact, ["zeppelin ride voucher"])
    bulk(other_tenant, None, ["zeppelin souvenir shop"])
    monkeypatch.setattr(candidates, "VECTOR_CANDIDATES", 0)
    found = memory_search(tenant=tenant, contact=contact, query="zeppelin", top_k=50).results
    assert [(item.memory.pk, item.found_by) for item in found] == [(own.pk, ("keyword",))]
    found = memory_search(tenant=tenant, contact=None, query="zeppelin", top_k=50).results
    assert [(item.memory.pk, item.found_by) for item in found] == [(brain.pk, ("keyword",))]


def test_keyword_candidates_holding_the_same_words_go_closest_in_meaning_first(tenant, contact, monkeypatch):
    """A tie in the query words held is broken by cosine to the query, not by id (a random UUID): the far
    memory gets the smallest possible id, so ordering by id alone would take it."""
    texts = {"far": "Kiln Street parking permit renewal is due", "near": "the kiln cracked while firing my clay bowls"}
    vectors = dict(zip(texts, get_embedder().embed_batch(list(texts.values())), strict=True))
    far, near = bulk(tenant, contact, list(texts.values()))
    Memory.objects.filter(pk=far.pk).update(id=uuid.UUID(int=0), embedding=vectors["far"].tolist())
    Memory.objects.filter(pk=near.pk).update(embedding=vectors["near"].tolist())
    # the other sources stay on: only the keyword source's own pick (found_by) is asserted
    monkeypatch.setattr(candidates, "KEYWORD_CANDIDATES", 1)
    result = memory_search(tenant=tenant, contact=contact, query="Tell me about the kiln and my ceramics", top_k=5)
    assert [item.memory.pk for item in result.results if "keyword" in item.found_by] == [near.pk]
