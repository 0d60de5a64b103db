"""Edits made by people (API clients, tenant owners in the inspector, operators in admin)."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.core.embeddings import content_hash
from apps.core.exceptions import ApplicationError
from apps.memories import scoring
from apps.memories.extraction.index_words import with_index_words
from apps.memories.models import Memory, MemoryRevision
from apps.memories.models.memory import INDEX_TERMS_LENGTH
from apps.memories.store.revisions import memory_snapshot, revision_record
from apps.memories.store.writing import (
    EMBEDDING_FIELDS,
    Candidate,
    MemoryChange,
    memories_vectors_refresh,
    memories_write,
    memory_supersede,
    with_condition,
)

MAX_MEMORY_CHARS = 4000
MAX_KEY_CHARS = 255


def _validated_content(content: str) -> str:
    content = (content or "").strip()
    if not content:
        raise ApplicationError("content must not be empty.", details={"content": ["This field may not be blank."]})
    if len(content) > MAX_MEMORY_CHARS:
        raise ApplicationError(
            f"content must be at most {MAX_MEMORY_CHARS} characters.",
            details={"content": [f"Ensure this field has no more than {MAX_MEMORY_CHARS} characters."]},
        )
    return content


@transaction.atomic
def memory_edit(
    *,
    memory: Memory,
    actor: str,
    content: str | None = None,
    importance: float | None = None,
    is_pinned: bool | None = None,
) -> Memory:
    """Edit content (re-embedded), importance or pin. Each kind of change is its own revision."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.deleted_at is not None:
        raise ApplicationError("A deleted memory cannot be edited.", code="conflict", status_code=409)
    now = timezone.now()
    if content is not None or importance is not None:
        before = memory_snapshot(memory)
        fields: list[str] = []
        if content is not None:
            content = _validated_content(content)
            if content != memory.content:
                memory.content = content
                memory.content_hash = content_hash(content)
                # its days stay (when it happened did not change), and the question it answered; its places and kinds
                # are the new text's
                memory.index_terms = with_index_words(
                    memory.index_terms,
                    content,
                    limit=INDEX_TERMS_LENGTH,
                    metadata=memory.metadata,
                )
                memories_vectors_refresh([memory])
                fields += ["content", "content_hash", "index_terms", *EMBEDDING_FIELDS]
        if importance is not None:
            if not 0.0 <= importance <= 1.0:
                raise ApplicationError("importance must be between 0 and 1.", details={"importance": ["0..1"]})
            memory.importance = importance
            memory.base_importance = importance
            memory.accessed_at = now  # a person looked at it and set it: the decay clock restarts
            fields += ["importance", "base_importance", "accessed_at"]
        if fields:
            memory.save(update_fields=[*fields, "updated_at"])
            revision_record(memory=memory, action=MemoryRevision.Action.EDITED, actor=actor, before=before)
    if is_pinned is not None and is_pinned != memory.is_pinned:
        before = memory_snapshot(memory)
        memory.is_pinned = is_pinned
        memory.base_importance = memory.importance
        memory.accessed_at = now
        memory.save(update_fields=["is_pinned", "base_importance", "accessed_at", "updated_at"])
        action = MemoryRevision.Action.PINNED if is_pinned else MemoryRevision.Action.UNPINNED
        revision_record(memory=memory, action=action, actor=actor, before=before)
    return memory


# what a deletion by a person empties at once: the text, everything computed from it, the client's metadata
SCRUBBED_FIELDS = ["content", "content_hash", "index_terms", "context_vector", *EMBEDDING_FIELDS]  # with metadata
SCRUBBED_NOTE = "text, vectors and the history's text scrubbed"


@transaction.atomic
def memory_delete(
    *, memory: Memory, actor: str, reason: str = Memory.DELETION_DELETED, note: str = "", hard: bool = False
) -> Memory | None:
    """Out of retrieval and context at once. Deleted by a person (`reason` deleted): its text, vectors and
    metadata are emptied, and the text is taken out of its history and of its events' extraction summaries,
    in this transaction; the row and its history stay, so the history still says what kind of memory it was,
    who deleted it and when (a `deleted` revision without the text). `hard`: the row goes with its history
    (None is returned). Pruned by the lifecycle (`reason` pruned): kept whole until the purge."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if hard:
        _summaries_scrub(memory)
        memory.delete()
        return None
    if memory.deleted_at is not None:
        return memory
    before = memory_snapshot(memory)
    memory.deleted_at = timezone.now()
    memory.deletion_reason = reason
    fields = ["deleted_at", "deletion_reason"]
    if reason == Memory.DELETION_PRUNED:
        memory.save(update_fields=[*fields, "updated_at"])
        revision_record(memory=memory, action=MemoryRevision.Action.PRUNED, actor=actor, before=before, note=note)
        return memory
    _summaries_scrub(memory)
    memory.content = memory.content_hash = memory.index_terms = memory.embedding_model = ""
    memory.embedding = memory.context_embedding = memory.context_vector = None
    memory.metadata = {}
    memory.save(update_fields=[*fields, *SCRUBBED_FIELDS, "updated_at"])
    with connection.cursor() as cursor:  # every revision of it, this one's `before` included, loses the text
        cursor.execute(
            "UPDATE memories_memoryrevision SET before = before - 'content', after = after - 'content' "
            "WHERE tenant_id = %s AND memory_id = %s",
            [memory.tenant_id, memory.pk],
        )
    before.pop("content", None)
    after = memory_snapshot(memory)
    after.pop("content", None)
    revision_record(
        memory=memory,
        action=MemoryRevision.Action.DELETED,
        actor=actor,
        before=before,
        after=after,
        note="; ".join(part for part in (note, SCRUBBED_NOTE) if part),
    )
    return memory


def _summaries_scrub(memory: Memory) -> None:
    """The memory's text out of what its source events' extraction answered (`result.memories`)."""
    if not memory.source_event_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_contextevent SET result = jsonb_set(result, '{memories}', ("
            "  SELECT coalesce(jsonb_agg(CASE WHEN item->>'id' = %s THEN item - 'content' ELSE item END), '[]')"
            "  FROM jsonb_array_elements(result->'memories') AS item)) "
            "WHERE tenant_id = %s AND id = ANY(%s::uuid[]) AND jsonb_typeof(result->'memories') = 'array'",
            [str(memory.pk), memory.tenant_id, list(memory.source_event_ids)],
        )


@transaction.atomic
def memory_correct(*, memory: Memory, content: str, actor: str) -> MemoryChange:
    """A person's correction: a new memory supersedes this one (kept in history, out of context)."""
    if not memory.is_current:
        raise ApplicationError("Only a current memory can be corrected.", code="conflict", status_code=409)
    content = _validated_content(content)
    (change,) = memories_write(
        tenant=memory.tenant,
        contact=memory.contact,
        candidates=[
            Candidate(
                memory_type=memory.memory_type,
                content=content,
                slot=memory.slot,
                importance=max(
                    memory.importance,
                    scoring.type_defaults(memory.memory_type, is_tenant_scope=memory.contact_id is None)[0],
                ),
                is_pinned=memory.is_pinned,
                metadata={"corrected_from": str(memory.pk)},
            )
        ],
        occurred_at=timezone.now(),
        actor=actor,
        source_message_ids=memory.source_message_ids,
    )
    memory.refresh_from_db()
    if memory.is_current and change.memory.pk != memory.pk and change.action != "skipped":
        memory_supersede(old=memory, new=change.memory, actor=actor, at=timezone.now(), note="corrected")
    return change


@transaction.atomic
def memory_put(
    *,
    tenant: Any,
    contact: Any,
    key: str,
    content: str,
    memory_type: str,
    actor: str,
    metadata: dict[str, Any] | None = None,
    importance: float | None = None,
    is_pinned: bool | None = None,
) -> MemoryChange:
    """Store a client's record under `key` in its scope (the contact's, or the tenant's without a contact): the
    current memory with that key is edited in place (content re-embedded, metadata and type replaced,
    importance and pin when given; one `edited` revision), else one is created (unpinned unless asked). A keyed
    record is the client's: stored as given (no extraction), never taken for a duplicate of another memory,
    never merged by consolidation, never superseded by a correction.
    Returns the change: `created`, `updated`, or `unchanged` (the same record again)."""
    if not key or len(key) > MAX_KEY_CHARS:
        raise ApplicationError(f"key must be 1 to {MAX_KEY_CHARS} characters.", details={"key": ["1-255 characters."]})
    memory_type = scoring.SEED_TYPE_MAP.get(memory_type, memory_type)
    if memory_type not in scoring.MEMORY_TYPES:
        raise ApplicationError(f"memory_type must be one of {', '.join(scoring.MEMORY_TYPES)} (or a seed type).")
    content = _validated_content(content)
    # a keyed record has no instruction condition (stored as given); the key is Engram's, not the client's
    record = with_condition({"added_by": actor, **(metadata or {})}, "")
    with connection.cursor() as cursor:  # one writer per key: two first puts of a key must not both create
        scope = f"{tenant.pk}:{contact.pk if contact is not None else ''}:{key}"
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"memory-key:{scope}"])
    existing = (
        Memory.objects.select_for_update()
        .filter(tenant=tenant, contact=contact, key=key, deleted_at__isnull=True, valid_to__isnull=True)
        .first()
    )
    if existing is None:
        (change,) = memories_write(
            tenant=tenant,
            contact=contact,
            candidates=[
                Candidate(
                    memory_type=memory_type,
                    content=content,
                    key=key,
                    importance=importance
                    if importance is not None
                    else scoring.type_defaults(memory_type, is_tenant_scope=contact is None)[0],
                    is_pinned=bool(is_pinned),
                    metadata=record,
                )
            ],
            occurred_at=timezone.now(),
            actor=actor,
        )
        return change
    before = memory_snapshot(existing)
    fields: list[str] = []
    if content != existing.content:
        existing.content, existing.content_hash = content, content_hash(content)
        memories_vectors_refresh([existing])
        fields += ["content", "content_hash", *EMBEDDING_FIELDS]
    if memory_type != existing.memory_type:
        existing.memory_type = memory_type
        fields.append("memory_type")
    if record != existing.metadata:
        existing.metadata = record
        fields.append("metadata")
    if importance is not None and importance != existing.importance:
        existing.importance = existing.base_importance = importance
        fields += ["importance", "base_importance"]
    if is_pinned is not None and is_pinned != existing.is_pinned:
        existing.is_pinned = is_pinned
        fields.append("is_pinned")
    if not fields:
        return MemoryChange(memory=existing, action="unchanged")
    existing.accessed_at = timezone.now()
    existing.save(update_fields=[*fields, "accessed_at", "updated_at"])
    revision_record(memory=existing, action=MemoryRevision.Action.EDITED, actor=actor, before=before, note="put by key")
    return MemoryChange(memory=existing, action="updated")
