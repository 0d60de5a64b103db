"""`instances_insert`: bulk_create's rows, their parameters sent apart from the statement (vectors in binary).

Ingest writes its memories, messages, events, interaction logs and revisions with it (issue 29 item 2): the rows
must be the ones bulk_create writes, to the last float16 of a vector."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from django.contrib.postgres.search import SearchVector
from django.db import connection
from django.db.models import Value
from django.test.utils import CaptureQueriesContext

from apps.conversations.models import Conversation, Message
from apps.core import rows
from apps.core.rows import instances_insert
from apps.memories.models import Memory, MemoryRevision
from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _vectors(count: int) -> np.ndarray:
    """Unit vectors, and values where float16's rounding is hardest: subnormals, exact ties between two
    float16s, the largest finite value, negative zero."""
    rng = np.random.default_rng(19)
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bits = np.concatenate([np.arange(0, 2000), np.arange(0x2800, 0x2800 + 2000), np.arange(0x8000, 0x8000 + 2000)])
    halves = bits.astype(np.uint16).view(np.float16).astype(np.float32)  # subnormals, ~0.03–0.1, negatives
    ties = (halves[:-1] + halves[1:]) / 2  # exactly between two neighbours: rounded to the even one
    tiny = rng.uniform(-1e-4, 1e-4, 384).astype(np.float32)  # float16 subnormals below 6.1e-5
    special = np.array([65504.0, -65504.0, -0.0, 0.0, 6e-8, -6e-8, 1e-8], dtype=np.float32)
    edges = np.concatenate([ties, tiny, special])
    for row in range(min(count, len(edges) // 384 + 1)):
        part = edges[row * 384 : (row + 1) * 384]
        vectors[row, : len(part)] = part
    return vectors


def _memory(tenant, contact, vector: np.ndarray, number: int) -> Memory:
    return Memory(
        tenant=tenant,
        contact=contact,
        memory_type="episode",
        content=f"Caroline: I went to the LGBTQ support group yesterday ({number})",
        content_hash=f"{number:064d}",
        embedding=vector.tolist(),
        context_embedding=(vector[::-1] * 0.5).tolist() if number % 3 else None,
        context_vector=SearchVector(Value(f"the support group {number}\nit was powerful"), config="english")
        if number % 2
        else None,
        embedding_model="all-MiniLM-L6-v2",
        importance=0.5 + number / 1000,
        base_importance=0.5,
        decay_rate=0.01,
        accessed_at=AT,
        occurred_at=AT,
        valid_from=AT,
        index_terms="8 May 2023",
        source_session_id="conv-26:session_1",
        source_message_ids=[f"conv-26:D1:{number}", 'it\'s 50% "quoted"'],
        source_event_ids=[uuid.UUID(int=number)],
        source_sequence=number,
        metadata={"polarity": -1, "note": "50% of {braces} and 'quotes'"} if number % 2 else {},
    )


STORED = (
    "memory_type, content, content_hash, embedding::text, context_embedding::text, embedding_model, index_terms, "
    "search_vector::text, scoped_search_vector::text, context_vector::text, importance, "
    "base_importance, decay_rate, access_count, accessed_at, occurred_at, valid_from, valid_to, slot, key, "
    "is_compressed, source_session_id, is_pinned, expires_at, deleted_at, deletion_reason, source_message_ids, "
    "source_sequence, source_event_ids, metadata, created_by, contact_id"
)


def _stored(ids: list[uuid.UUID]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {STORED} FROM memories_memory m JOIN unnest(%s::uuid[]) WITH ORDINALITY AS o(id, n) "
            "ON m.id = o.id ORDER BY o.n",
            [ids],
        )
        return cursor.fetchall()


def test_memories_are_stored_as_bulk_create_stores_them_to_the_last_float16(tenant) -> None:
    contact = ContactFactory(tenant=tenant)
    vectors = _vectors(40)
    by_orm = [_memory(tenant, contact, vector, number) for number, vector in enumerate(vectors)]
    by_rows = [_memory(tenant, contact, vector, number) for number, vector in enumerate(vectors)]
    Memory.objects.bulk_create(by_orm)
    with CaptureQueriesContext(connection) as captured:
        instances_insert(by_rows)
    assert len(captured.captured_queries) == 1  # one statement (and no vector printed into it)
    assert len(captured.captured_queries[0]["sql"]) < 60_000
    assert _stored([memory.pk for memory in by_rows]) == _stored([memory.pk for memory in by_orm])
    assert all(not memory._state.adding for memory in by_rows)


def test_auto_keys_come_back_in_the_rows_order_across_statements(tenant, monkeypatch) -> None:
    """Messages have PostgreSQL's keys (the ledger's order): set on the instances as bulk_create sets them, also
    when the rows need several statements (the parameter limit, made small here)."""
    contact = ContactFactory(tenant=tenant)
    conversation = Conversation.objects.create(
        tenant=tenant, contact=contact, external_id="c1", started_at=AT, last_message_at=AT
    )
    monkeypatch.setattr(rows, "MAX_PARAMETERS", 25)  # two or three messages a statement
    messages = [
        Message(
            tenant=tenant,
            conversation=conversation,
            contact=contact,
            external_id=f"m{number}",
            role="user",
            content=f"turn {number}",
            occurred_at=AT,
        )
        for number in range(7)
    ]
    with CaptureQueriesContext(connection) as captured:
        instances_insert(messages)
    assert len(captured.captured_queries) > 2
    stored = dict(Message.objects.filter(conversation=conversation).values_list("external_id", "pk"))
    assert [message.pk for message in messages] == [stored[f"m{number}"] for number in range(7)]
    assert sorted(stored.values()) == [message.pk for message in messages]  # the ledger's order is the list's


def test_revisions_with_auto_keys_and_json(tenant) -> None:
    memory = _memory(tenant, None, _vectors(1)[0], 1)
    instances_insert([memory])
    revisions = [
        MemoryRevision(memory=memory, tenant_id=tenant.pk, action="created", actor="system", after={"n": n})
        for n in range(3)
    ]
    instances_insert(revisions)
    assert [revision.pk for revision in revisions] == sorted(revision.pk for revision in revisions)
    assert list(MemoryRevision.objects.filter(memory=memory).order_by("pk").values_list("after", flat=True)) == [
        {"n": 0},
        {"n": 1},
        {"n": 2},
    ]


def test_instances_with_and_without_keys_are_refused(tenant) -> None:
    memory = _memory(tenant, None, _vectors(1)[0], 1)
    memory.pk = None
    with pytest.raises(ValueError):
        instances_insert([_memory(tenant, None, _vectors(1)[0], 2), memory])


def test_context_words_as_raw_sql_are_the_search_vector_ingest_wrote_before(tenant) -> None:
    """Ingest gives an episode its context words as `context_tsvector` (SQL sent as it is) instead of a
    SearchVector compiled per row: the stored tsvector is the same."""
    from apps.memories.store.writing import context_tsvector

    words = "Melanie: I'm off to go swimming with the kids.\nCaroline: Sounds fun! 7 May 2023, it's 50% 'done'"
    vectors = _vectors(2)
    by_search_vector, by_raw_sql = _memory(tenant, None, vectors[0], 1), _memory(tenant, None, vectors[1], 3)
    by_search_vector.context_vector = SearchVector(Value(words), config="english")
    by_raw_sql.context_vector = context_tsvector(words)
    Memory.objects.bulk_create([by_search_vector])
    instances_insert([by_raw_sql])
    stored = dict(Memory.objects.filter(tenant=tenant).values_list("pk", "context_vector"))
    assert stored[by_raw_sql.pk] == stored[by_search_vector.pk] and "swim" in stored[by_raw_sql.pk]
