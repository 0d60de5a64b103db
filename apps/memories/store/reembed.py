"""Changing the embedding model is a migration path: re-embed every memory (its own and its context
embedding) and knowledge chunk. So is a change of what a memory is indexed with (`index_words_reindex`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.db import transaction
from django.db.models import Q, QuerySet

from apps.core.embeddings import cache_scope, get_embedder
from apps.knowledge.models import KnowledgeChunk
from apps.memories.extraction.index_words import with_index_words
from apps.memories.models import Memory, MemoryRevision
from apps.memories.models.memory import INDEX_TERMS_LENGTH
from apps.memories.store.writing import EMBEDDING_FIELDS, memories_vectors_refresh
from apps.tenants.models import Tenant

BATCH = 256


def _batches(queryset: QuerySet, size: int) -> Iterator[list]:  # type: ignore[type-arg]
    last_pk = None
    while True:
        page = queryset.order_by("pk")
        if last_pk is not None:
            page = page.filter(pk__gt=last_pk)
        rows = list(page[:size])
        if not rows:
            return
        yield rows
        last_pk = rows[-1].pk


def reembed_queryset(*, tenant: Tenant | None = None, everything: bool = False) -> tuple[QuerySet, QuerySet]:  # type: ignore[type-arg]
    model = get_embedder().name
    memory_filter = Q() if everything else ~Q(embedding_model=model) | Q(embedding__isnull=True)
    chunk_filter = Q() if everything else ~Q(embedding_model=model) | Q(embedding__isnull=True)
    memories = Memory.objects.filter(memory_filter)
    chunks = KnowledgeChunk.objects.filter(chunk_filter)
    if tenant is not None:
        memories, chunks = memories.filter(tenant=tenant), chunks.filter(tenant=tenant)
    return memories, chunks


def reembed(
    *,
    tenant: Tenant | None = None,
    everything: bool = False,
    actor: str = "system",
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Re-embed memories and chunks whose model differs from the configured one (or all). Batched, resumable:
    each batch commits on its own, so an interrupted run continues where it stopped."""
    embedder = get_embedder()
    memories, chunks = reembed_queryset(tenant=tenant, everything=everything)
    done = {"memories": 0, "chunks": 0}
    fields = (
        *("pk", "tenant_id", "contact_id", "memory_type", "key"),
        *("content", "index_terms", "metadata", "embedding_model"),
    )
    for batch in _batches(memories.only(*fields), BATCH):
        previous = {memory.pk: memory.embedding_model for memory in batch}
        memories_vectors_refresh(batch)
        with transaction.atomic():
            Memory.objects.bulk_update(batch, EMBEDDING_FIELDS)
            MemoryRevision.objects.bulk_create(
                [
                    MemoryRevision(
                        memory_id=memory.pk,
                        tenant_id=memory.tenant_id,
                        action=MemoryRevision.Action.REEMBEDDED,
                        actor=actor,
                        before={"embedding_model": previous[memory.pk]},
                        after={"embedding_model": embedder.name},
                    )
                    for memory in batch
                ]
            )
        done["memories"] += len(batch)
        if progress:
            progress(len(batch))
    for batch in _batches(chunks.only("pk", "tenant_id", "content"), BATCH):
        chunk_vectors = embedder.embed_batch(
            [chunk.content for chunk in batch],
            scopes=[cache_scope(tenant_id=chunk.tenant_id, contact_id=None) for chunk in batch],
        )
        for chunk, vector in zip(batch, chunk_vectors, strict=True):
            chunk.embedding, chunk.embedding_model = vector.tolist(), embedder.name
        KnowledgeChunk.objects.bulk_update(batch, ["embedding", "embedding_model"])
        done["chunks"] += len(batch)
        if progress:
            progress(len(batch))
    return done


def index_words_reindex(*, tenant: Tenant | None = None, progress: Callable[[int], None] | None = None) -> int:
    """Index every memory with the words its text implies (the places it names, the kinds of what it names:
    extraction/index_words.py), as ingest does since session 36: memories written before carry none. Only
    `index_terms` changes (its full-text entry follows; the embedding does not: these words are not
    embedded). Batched and resumable like `reembed`; returns how many memories changed."""
    memories = Memory.objects.all() if tenant is None else Memory.objects.filter(tenant=tenant)
    changed = 0
    for batch in _batches(memories.only("pk", "content", "index_terms", "metadata"), BATCH * 4):
        updated = []
        for memory in batch:
            terms = with_index_words(
                memory.index_terms, memory.content, limit=INDEX_TERMS_LENGTH, metadata=memory.metadata
            )
            if terms != memory.index_terms:
                memory.index_terms = terms
                updated.append(memory)
        Memory.objects.bulk_update(updated, ["index_terms"])
        changed += len(updated)
        if progress:
            progress(len(batch))
    return changed
