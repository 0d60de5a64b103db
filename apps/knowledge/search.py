"""Knowledge-base search: pgvector top-N ∪ full-text top-N over a tenant's document chunks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection
from pgvector.django import CosineDistance

from apps.core.embeddings import cache_scope, get_embedder
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from apps.tenants.models import Tenant

CANDIDATES = 30
# cosine blended with saturated keyword rank (chunks are long and few)
BM25_SATURATION = 4.0
VECTOR_SHARE = 0.5
# a document's chunks are searched once it is ready (written with its chunks; models.KnowledgeDocument)
READY = KnowledgeDocument.Status.READY


@dataclass(frozen=True)
class KnowledgeHit:
    chunk_id: int
    document_id: str
    document_title: str
    position: int
    content: str
    token_count: int
    score: float
    cosine: float
    keyword: float
    found_by: tuple[str, ...]


def relevance(*, cosine: float, bm25: float) -> float:
    """Cosine blended with a saturated keyword score."""
    keyword = bm25 / (bm25 + BM25_SATURATION) if bm25 > 0 else 0.0
    return max(0.0, min(1.0, VECTOR_SHARE * max(cosine, 0.0) + (1 - VECTOR_SHARE) * keyword))


def knowledge_search(*, tenant: Tenant, query: str, top_k: int = 5) -> list[KnowledgeHit]:
    if not query.strip():
        return []
    vector = get_embedder().embed_batch([query], scopes=cache_scope(tenant_id=tenant.pk, contact_id=None))[0]
    vector_ids = list(
        KnowledgeChunk.objects.filter(tenant=tenant, embedding__isnull=False, document__status=READY)
        .annotate(distance=CosineDistance("embedding", vector.tolist()))
        .order_by("distance")
        .values_list("id", flat=True)[:CANDIDATES]
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH q AS (SELECT replace(plainto_tsquery('english', %s)::text, '&', '|') AS text) "
            "SELECT c.id, ts_rank_cd(c.search_vector, q.text::tsquery, 1) FROM memories_knowledgechunk c "
            "JOIN memories_knowledgedocument d ON d.id = c.document_id, q "
            "WHERE c.tenant_id = %s AND d.status = %s AND q.text <> '' AND c.search_vector @@ q.text::tsquery "
            "ORDER BY 2 DESC LIMIT %s",
            [query, tenant.pk, READY, CANDIDATES],
        )
        keyword_rank = dict(cursor.fetchall())
    ids = set(vector_ids) | set(keyword_rank)
    if not ids:
        return []
    chunks = list(KnowledgeChunk.objects.filter(pk__in=ids).select_related("document"))
    matrix = np.asarray([chunk.embedding for chunk in chunks], dtype=np.float32)
    cosines = (matrix @ vector).tolist()
    top_rank = max(keyword_rank.values(), default=0.0) or 1.0
    hits = []
    for chunk, cosine in zip(chunks, cosines, strict=True):
        keyword = float(keyword_rank.get(chunk.pk, 0.0)) / top_rank
        found_by = tuple(
            name for name, hit in (("vector", chunk.pk in vector_ids), ("keyword", chunk.pk in keyword_rank)) if hit
        )
        # ts_rank_cd normalised to the best hit stands in for saturated BM25 here (chunks are long and few)
        score = relevance(cosine=cosine, bm25=keyword * 8.0)
        hits.append(
            KnowledgeHit(
                chunk_id=chunk.pk,
                document_id=str(chunk.document_id),
                document_title=chunk.document.title,
                position=chunk.position,
                content=chunk.content,
                token_count=chunk.token_count,
                score=round(score, 6),
                cosine=round(cosine, 4),
                keyword=round(keyword, 4),
                found_by=found_by,
            )
        )
    hits.sort(key=lambda hit: (-hit.score, hit.chunk_id))
    return hits[:top_k]
