"""Deleting a memory scrubs it at once: its text, vectors and metadata, the text in every revision of its history
and in its events' extraction summaries; the history still says who deleted it and when. `?hard=true` deletes
the row and its history."""

from __future__ import annotations

import pytest
from django.db import connection

from apps.memories.models import ContextEvent, Memory, MemoryRevision

pytestmark = pytest.mark.django_db

MARKER = "Zanzibarquill"  # a word only the deleted memory holds


def _memory_of(api, tenant) -> Memory:
    body = {"contact_id": "ana", "conversation_id": "ana-chat", "role": "user", "message_id": "ana-1"}
    assert (
        api.post("/api/v1/ingest", {**body, "message": f"My cat {MARKER} is a tabby."}, format="json").status_code
        == 202
    )
    memory = Memory.objects.get(tenant=tenant, memory_type="fact", content__contains=MARKER)
    # an edit and a pin: more revisions that hold the text
    edited = f"Has a cat named {MARKER}, a tabby"
    assert api.patch(f"/api/v1/memories/{memory.pk}", {"content": edited}, format="json").status_code == 200
    assert api.patch(f"/api/v1/memories/{memory.pk}", {"is_pinned": True}, format="json").status_code == 200
    assert _rows_holding(MARKER, "memories_memoryrevision", memory) >= 3
    return memory


def _rows_holding(text: str, table: str, memory: Memory) -> int:
    """Rows of the memory (its own row, or its revisions) whose text holds `text` (the episode of the same
    message keeps it: it was not deleted)."""
    column = "id" if table == "memories_memory" else "memory_id"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {table} t WHERE t.{column} = %s AND t::text ILIKE %s", [memory.pk, f"%{text}%"]
        )
        return int(cursor.fetchone()[0])


def test_a_deleted_memory_loses_its_text_vectors_and_historys_text_at_once(api, tenant, issued_key):
    memory = _memory_of(api, tenant)
    assert memory.embedding is not None and memory.source_event_ids

    assert api.delete(f"/api/v1/memories/{memory.pk}").status_code == 204

    memory.refresh_from_db()
    assert memory.deleted_at is not None and memory.deletion_reason == "deleted"
    assert (memory.content, memory.content_hash, memory.index_terms, memory.metadata) == ("", "", "", {})
    assert memory.embedding is None and memory.context_embedding is None and memory.context_vector is None
    assert _rows_holding(MARKER, "memories_memory", memory) == 0
    assert _rows_holding(MARKER, "memories_memoryrevision", memory) == 0
    # the extraction summary the ingest answered: without the text (the message itself is the ledger's)
    event = ContextEvent.objects.get(pk=memory.source_event_ids[0])
    summary = next(item for item in event.result["memories"] if item["id"] == str(memory.pk))
    assert "content" not in summary and summary["memory_type"] == "fact"
    assert MARKER in event.content
    # the history still explains: created, edited, pinned, deleted by this key, with no text
    history = list(memory.revisions.order_by("created_at", "id"))
    assert [revision.action for revision in history] == ["created", "edited", "pinned", "deleted"]
    deleted = history[-1]
    assert deleted.actor == f"api_key:{issued_key.prefix}"
    assert "scrubbed" in deleted.note and deleted.before["memory_type"] == "fact" and deleted.before["is_pinned"]
    assert all("content" not in revision.before and "content" not in revision.after for revision in history)
    # out of every read at once
    assert api.get(f"/api/v1/memories/{memory.pk}").status_code == 404
    found = api.post("/api/v1/memories/search", {"query": f"cat {MARKER}", "contact_id": "ana"}, format="json")
    assert all(hit["id"] != str(memory.pk) for hit in found.json()["results"])


def test_a_hard_delete_takes_the_row_and_its_history(api, tenant):
    memory = _memory_of(api, tenant)
    assert api.delete(f"/api/v1/memories/{memory.pk}?hard=maybe").status_code == 400
    assert Memory.objects.filter(pk=memory.pk, deleted_at__isnull=True).exists()

    assert api.delete(f"/api/v1/memories/{memory.pk}?hard=true").status_code == 204

    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert not MemoryRevision.objects.filter(memory_id=memory.pk).exists()
    assert (
        _rows_holding(MARKER, "memories_memory", memory)
        == _rows_holding(MARKER, "memories_memoryrevision", memory)
        == 0
    )
    assert api.delete(f"/api/v1/memories/{memory.pk}?hard=true").status_code == 404


def test_a_memory_deleted_before_can_be_hard_deleted(api, tenant):
    memory = _memory_of(api, tenant)
    assert api.delete(f"/api/v1/memories/{memory.pk}").status_code == 204
    assert api.delete(f"/api/v1/memories/{memory.pk}").status_code == 404
    assert api.delete(f"/api/v1/memories/{memory.pk}?hard=true").status_code == 204
    assert not Memory.objects.filter(pk=memory.pk).exists()
