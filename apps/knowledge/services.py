"""Knowledge base (tenant RAG): documents → semantic chunks → batch embeddings → pgvector.

An upload is accepted in its request (`document_create`: checked, cleaned, stored `processing`, queued) and
processed on the worker (`document_process`: chunked, embedded, its chunks and `ready` written in one
transaction), so a 2 MB document's embedding (tens of seconds on 2 cores) never holds a web worker."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.chunking import semantic_chunks
from apps.core.cleaning import clean_text
from apps.core.embeddings import cache_scope, get_embedder
from apps.core.exceptions import ApplicationError
from apps.core.tokens import count_tokens_batch
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

ALLOWED_CONTENT_TYPES = ("text/plain", "text/markdown")
# the task's name (apps/knowledge/tasks.py registers it): services queue by name, never importing tasks
DOCUMENT_PROCESS = "apps.knowledge.tasks.document_process_task"
REQUEUE_STALE_DOCUMENTS = "apps.knowledge.tasks.requeue_stale_documents_task"
NOT_QUEUED = "The document could not be queued for processing (the queue is unavailable); upload it again."
GAVE_UP = "The document could not be processed after three attempts; upload it again."


def document_create(
    *, tenant: Tenant, title: str, content: str, actor: str, content_type: str = "text/markdown"
) -> KnowledgeDocument:
    """Store the document `processing` and queue its processing for when the row is committed. Raises 400 for
    a bad content type or a document without text, 413 over MAX_DOCUMENT_BYTES; never chunks or embeds."""
    if content_type not in ALLOWED_CONTENT_TYPES:
        raise ApplicationError(f"content_type must be one of {', '.join(ALLOWED_CONTENT_TYPES)}.")
    size = len(content.encode("utf-8"))
    limit = int(settings.ENGRAM["MAX_DOCUMENT_BYTES"])
    if size > limit:
        raise ApplicationError(
            f"Document is {size} bytes; the limit is {limit} bytes (2 MB).",
            code="too_large",
            status_code=413,
        )
    cleaned = clean_text(content)
    if not cleaned.strip():
        raise ApplicationError("Document has no text.", details={"content": ["This field may not be blank."]})
    document = KnowledgeDocument.objects.create(
        tenant=tenant,
        title=title.strip()[:300] or "Untitled",
        content_type=content_type,
        content=cleaned,
        size_bytes=size,
        created_by=actor,
        status=KnowledgeDocument.Status.PROCESSING,
    )
    transaction.on_commit(lambda: _queue_processing(document))
    return document


def _queue_processing(document: KnowledgeDocument) -> None:
    try:
        current_app.signature(
            DOCUMENT_PROCESS, kwargs={"tenant_id": str(document.tenant_id), "document_id": str(document.pk)}
        ).apply_async()
    except Exception as exc:  # kombu's OperationalError and Redis errors when the broker is unreachable
        logger.warning("Could not queue document %s for processing: %s", document.pk, exc)
        document_fail(document=document, message=NOT_QUEUED)


def document_process(*, document: KnowledgeDocument) -> KnowledgeDocument:
    """Chunk and embed a `processing` document: its chunks and `ready` are written in one transaction, so a
    search never sees half a document. A ready document is left as it is (a redelivered task). Raises
    EmbedderUnavailable (the task retries) and ApplicationError (the task marks the document failed)."""
    if document.status == KnowledgeDocument.Status.READY:
        return document
    chunks = semantic_chunks(document.content)
    if not chunks:
        raise ApplicationError("Document has no text.")
    embedder = get_embedder()
    vectors = embedder.embed_batch(chunks, scopes=cache_scope(tenant_id=document.tenant_id, contact_id=None))
    token_counts = count_tokens_batch(chunks)
    with transaction.atomic():
        locked = KnowledgeDocument.objects.select_for_update().filter(pk=document.pk).first()
        if locked is None or locked.status == KnowledgeDocument.Status.READY:
            return locked or document  # deleted meanwhile, or processed by another delivery
        KnowledgeChunk.objects.filter(document=locked).delete()
        KnowledgeChunk.objects.bulk_create(
            [
                KnowledgeChunk(
                    tenant_id=locked.tenant_id,
                    document=locked,
                    position=position,
                    content=chunk,
                    token_count=tokens,
                    embedding=vector.tolist(),
                    embedding_model=embedder.name,
                )
                for position, (chunk, tokens, vector) in enumerate(zip(chunks, token_counts, vectors, strict=True))
            ]
        )
        locked.chunk_count = len(chunks)
        locked.status = KnowledgeDocument.Status.READY
        locked.status_message = ""
        locked.processed_at = timezone.now()
        locked.save(update_fields=["chunk_count", "status", "status_message", "processed_at", "updated_at"])
    return locked


def document_fail(*, document: KnowledgeDocument, message: str) -> None:
    """Mark a document that could not be processed `failed`, with a message for the client (no internals)."""
    KnowledgeDocument.objects.filter(pk=document.pk).exclude(status=KnowledgeDocument.Status.READY).update(
        status=KnowledgeDocument.Status.FAILED,
        status_message=message[:500],
        processed_at=timezone.now(),
        updated_at=timezone.now(),
    )
    document.refresh_from_db(fields=["status", "status_message", "processed_at"])


STALE_AFTER = timedelta(minutes=10)
MAX_QUEUED = 3


def documents_requeue_stale(*, now: datetime | None = None) -> int:
    """Queue again the documents still `processing` STALE_AFTER after their last change: their task was lost (a
    broker restarted without persistence, a task dropped after killing its worker again and again). A document
    queued MAX_QUEUED times fails instead. A second delivery of a live task is harmless (`document_process`
    leaves a ready document as it is). Returns how many were queued or failed."""
    now = now or timezone.now()
    stale = list(
        KnowledgeDocument.objects.filter(status=KnowledgeDocument.Status.PROCESSING, updated_at__lt=now - STALE_AFTER)
        .order_by("updated_at")
        .only("pk", "tenant_id", "metadata")[:100]
    )
    for document in stale:
        queued = int((document.metadata or {}).get("processing_queued", 1))
        if queued >= MAX_QUEUED:
            document_fail(document=document, message=GAVE_UP)
            continue
        document.metadata = {**(document.metadata or {}), "processing_queued": queued + 1}
        document.save(update_fields=["metadata", "updated_at"])
        _queue_processing(document)
    return len(stale)


def document_delete(*, document: KnowledgeDocument) -> None:
    """Delete the document and its chunks. Its row is locked first: a worker writing the chunks holds that lock
    until it commits, and the deletion's cascade then finds them (collected before, they broke its foreign key)."""
    with transaction.atomic():
        KnowledgeDocument.objects.select_for_update().filter(pk=document.pk).first()
        document.delete()
