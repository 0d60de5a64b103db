"""Knowledge base (tenant RAG): documents → semantic chunks → batch embeddings → pgvector."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from apps.core.chunking import semantic_chunks
from apps.core.cleaning import clean_text
from apps.core.embeddings import cache_scope, get_embedder
from apps.core.exceptions import ApplicationError
from apps.core.tokens import count_tokens_batch
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from apps.tenants.models import Tenant

ALLOWED_CONTENT_TYPES = ("text/plain", "text/markdown")


def document_create(
    *, tenant: Tenant, title: str, content: str, actor: str, content_type: str = "text/markdown"
) -> KnowledgeDocument:
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
    chunks = semantic_chunks(cleaned)
    if not chunks:
        raise ApplicationError("Document has no text.", details={"content": ["This field may not be blank."]})
    embedder = get_embedder()
    vectors = embedder.embed_batch(chunks, scopes=cache_scope(tenant_id=tenant.pk, contact_id=None))
    token_counts = count_tokens_batch(chunks)
    with transaction.atomic():
        document = KnowledgeDocument.objects.create(
            tenant=tenant,
            title=title.strip()[:300] or "Untitled",
            content_type=content_type,
            content=cleaned,
            size_bytes=size,
            chunk_count=len(chunks),
            created_by=actor,
        )
        KnowledgeChunk.objects.bulk_create(
            [
                KnowledgeChunk(
                    tenant=tenant,
                    document=document,
                    position=position,
                    content=chunk,
                    token_count=tokens,
                    embedding=vector.tolist(),
                    embedding_model=embedder.name,
                )
                for position, (chunk, tokens, vector) in enumerate(zip(chunks, token_counts, vectors, strict=True))
            ]
        )
    return document


def document_delete(*, document: KnowledgeDocument) -> None:
    document.delete()
