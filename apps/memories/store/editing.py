"""Edits made by people (API clients, tenant owners in the inspector, operators in admin)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.core.embeddings import content_hash
from apps.core.exceptions import ApplicationError
from apps.memories import scoring
from apps.memories.models import Memory, MemoryRevision
from apps.memories.store.revisions import memory_snapshot, revision_record
from apps.memories.store.writing import (
    EMBEDDING_FIELDS,
    Candidate,
    MemoryChange,
    memories_vectors_refresh,
    memories_write,
    memory_supersede,
)

MAX_MEMORY_CHARS = 4000


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
                memories_vectors_refresh([memory])
                fields += ["content", "content_hash", *EMBEDDING_FIELDS]
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


@transaction.atomic
def memory_delete(*, memory: Memory, actor: str, reason: str = Memory.DELETION_DELETED, note: str = "") -> Memory:
    """Soft delete: out of retrieval and context at once, kept for the audit trail until purged."""
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.deleted_at is not None:
        return memory
    before = memory_snapshot(memory)
    memory.deleted_at = timezone.now()
    memory.deletion_reason = reason
    memory.save(update_fields=["deleted_at", "deletion_reason", "updated_at"])
    action = MemoryRevision.Action.PRUNED if reason == Memory.DELETION_PRUNED else MemoryRevision.Action.DELETED
    revision_record(memory=memory, action=action, actor=actor, before=before, note=note)
    return memory


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
