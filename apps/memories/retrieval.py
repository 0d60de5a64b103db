"""Multi-signal hybrid retrieval (read path; no writes on the request path).

1. Candidates from three indexes, unioned so a keyword-only or entity-only hit is never dropped:
   pgvector HNSW top-N by cosine, PostgreSQL full-text top-N (OR of the query's lexemes, GIN),
   and memories linked to entities named in the query.
2. Relevance joins the two text signals: BM25 over the full-text lexemes (IDF from per-term document
   counts in the scope) blended with cosine similarity — see `relevance()` and docs/retrieval.md.
3. The final score is the weighted sum of relevance (the "similarity" signal), recency, importance,
   access frequency and entity match, with weights per scope, overridable per tenant.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Count, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone
from django.utils.text import slugify
from pgvector.django import CosineDistance

from apps.contacts.models import Contact
from apps.entities.models import Entity
from apps.entities.selectors import entities_named_in
from apps.memories import relevance as relevance_rules
from apps.memories import scoring
from apps.memories.embeddings import get_embedder
from apps.memories.models import Memory, MemoryEntity
from apps.tenants.models import Tenant

VECTOR_CANDIDATES = 50
KEYWORD_CANDIDATES = 50
ENTITY_CANDIDATES = 60
HNSW_EF_SEARCH = 100

# BM25 parameters and the blend of the two text signals (tuned on LoCoMo: docs/benchmarks.md)
BM25_K1 = 1.2
BM25_B = 0.75
BM25_SATURATION = 4.0  # bm25 / (bm25 + s) maps an unbounded BM25 score into [0, 1)
VECTOR_SHARE = 0.5  # relevance = share × cosine + (1 − share) × saturated BM25


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    score: float
    signals: scoring.Signals
    cosine: float
    bm25: float
    found_by: tuple[str, ...]  # "vector", "keyword", "entity"
    matched_entities: tuple[str, ...] = ()

    def explain(self) -> dict[str, Any]:
        return {
            "signals": {
                "similarity": round(self.signals.similarity, 4),
                "recency": round(self.signals.recency, 4),
                "importance": round(self.signals.importance, 4),
                "access_frequency": round(self.signals.access_frequency, 4),
                "entity_match": self.signals.entity_match,
            },
            "cosine": round(self.cosine, 4),
            "bm25": round(self.bm25, 4),
            "found_by": list(self.found_by),
            "matched_entities": list(self.matched_entities),
        }


@dataclass
class SearchResult:
    results: list[ScoredMemory]
    query_entities: list[Entity] = field(default_factory=list)
    candidates: int = 0


def weights_for(*, tenant: Tenant, is_tenant_scope: bool) -> scoring.Weights:
    fallback = scoring.TENANT_WEIGHTS if is_tenant_scope else scoring.CONTACT_WEIGHTS
    overrides = (tenant.settings or {}).get("retrieval_weights", {})
    scoped = overrides.get("tenant" if is_tenant_scope else "contact", {}) if isinstance(overrides, dict) else {}
    return scoring.Weights.from_dict(scoped if isinstance(scoped, dict) else {}, fallback=fallback)


def relevance(*, cosine: float, bm25: float) -> float:
    """The similarity signal: cosine (semantic) blended with saturated BM25 (exact words, names, dates)."""
    keyword = bm25 / (bm25 + BM25_SATURATION) if bm25 > 0 else 0.0
    return scoring.clamp(VECTOR_SHARE * max(cosine, 0.0) + (1 - VECTOR_SHARE) * keyword)


_WORD = re.compile(r"[\w'-]+", re.UNICODE)


def query_slugs(query: str) -> set[str]:
    """Slugs an entity named in the query could have: every word and every pair of adjacent words."""
    words = [re.sub(r"['’]s$", "", word).strip("'-") for word in _WORD.findall(query.replace("’", "'"))]
    words = [word for word in words if len(word) > 1]
    slugs = {slugify(word) for word in words}
    slugs |= {slugify(f"{first} {second}") for first, second in itertools.pairwise(words)}
    return {slug for slug in slugs if slug}


def _scope_q(*, tenant: Tenant, contact: Contact | None, memory_types: Sequence[str], include_compressed: bool) -> Q:
    now = timezone.now()
    condition = (
        Q(tenant=tenant, contact=contact, valid_to__isnull=True, deleted_at__isnull=True)
        & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        & Q(importance__gte=scoring.RETRIEVAL_MIN_IMPORTANCE)
    )
    if not include_compressed:
        condition &= Q(is_compressed=False)
    if memory_types:
        condition &= Q(memory_type__in=list(memory_types))
    return condition


def _query_lexemes(query: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(array_agg(lexeme), '{}') FROM unnest(to_tsvector('english', %s))", [query])
        row = cursor.fetchone()
    return [lexeme for lexeme in (row[0] if row else []) if lexeme]


def _or_tsquery(lexemes: Iterable[str]) -> str:
    # lexemes come from to_tsvector: quote each so ':' or '&' inside can never change the query
    return " | ".join("'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes)


def _parse_tsvector(text: str) -> dict[str, int]:
    """'bruno':3 'dog':2,7 → {'bruno': 1, 'dog': 2} (term frequency = number of positions)."""
    frequencies: dict[str, int] = {}
    for match in re.finditer(r"'((?:[^']|'')*)'(?::([\d,A-D]+))?", text):
        lexeme = match.group(1).replace("''", "'")
        positions = match.group(2)
        frequencies[lexeme] = len(positions.split(",")) if positions else 1
    return frequencies


def _keyword_candidates(
    *, scope_sql: str, scope_params: list[Any], lexemes: list[str], limit: int
) -> dict[Any, dict[str, int]]:
    """Top `limit` memories matching any query lexeme (GIN), with their term frequencies."""
    if not lexemes:
        return {}
    tsquery = _or_tsquery(lexemes)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.search_vector::text FROM memories_memory m WHERE {scope_sql} "
            f"AND m.search_vector @@ %s::tsquery ORDER BY ts_rank_cd(m.search_vector, %s::tsquery, 1) DESC LIMIT %s",
            [*scope_params, tsquery, tsquery, limit],
        )
        return {row[0]: _parse_tsvector(row[1]) for row in cursor.fetchall()}


def _quoted(lexemes: Iterable[str]) -> list[str]:
    return ["'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes]


def bm25(
    *,
    term_frequencies: dict[str, int],
    query_lexemes: Sequence[str],
    document_frequency: dict[str, int],
    total_documents: int,
    average_length: float,
) -> float:
    if not term_frequencies or total_documents == 0:
        return 0.0
    length = sum(term_frequencies.values())
    score = 0.0
    for lexeme in query_lexemes:
        frequency = term_frequencies.get(lexeme, 0)
        if not frequency:
            continue
        df = document_frequency.get(lexeme, 0)
        idf = math.log(1 + (total_documents - df + 0.5) / (df + 0.5))
        norm = frequency + BM25_K1 * (1 - BM25_B + BM25_B * length / (average_length or 1.0))
        score += idf * frequency * (BM25_K1 + 1) / norm
    return score


def _scope_sql(
    *, tenant: Tenant, contact: Contact | None, memory_types: Sequence[str], include_compressed: bool
) -> tuple[str, list[Any]]:
    """The same scope as `_scope_q`, as SQL for the hand-written full-text queries."""
    clauses = [
        "m.tenant_id = %s",
        "m.contact_id = %s" if contact is not None else "m.contact_id IS NULL",
        "m.valid_to IS NULL",
        "m.deleted_at IS NULL",
        "(m.expires_at IS NULL OR m.expires_at > now())",
        "m.importance >= %s",
    ]
    params: list[Any] = [tenant.pk]
    if contact is not None:
        params.append(contact.pk)
    params.append(scoring.RETRIEVAL_MIN_IMPORTANCE)
    if not include_compressed:
        clauses.append("NOT m.is_compressed")
    if memory_types:
        clauses.append("m.memory_type = ANY(%s)")
        params.append(list(memory_types))
    return " AND ".join(clauses), params


def memory_search(
    *,
    tenant: Tenant,
    contact: Contact | None,
    query: str,
    top_k: int = 10,
    memory_types: Sequence[str] = (),
    include_compressed: bool = False,
    now: datetime | None = None,
    query_vector: np.ndarray | None = None,
) -> SearchResult:
    """Rank the scope's current memories for `query`. Reads only: access counts are recorded by the caller
    through `access_record` (batched, off the request path)."""
    now = now or timezone.now()
    is_tenant_scope = contact is None
    weights = weights_for(tenant=tenant, is_tenant_scope=is_tenant_scope)
    scope = _scope_q(tenant=tenant, contact=contact, memory_types=memory_types, include_compressed=include_compressed)
    if not query.strip():
        return _without_query(scope=scope, weights=weights, top_k=top_k, now=now)
    if query_vector is None:
        query_vector = get_embedder().embed_batch([query])[0]
    vector_list = np.asarray(query_vector, dtype=np.float32).tolist()

    found_by: dict[Any, set[str]] = {}
    vector_ids = list(
        Memory.objects.filter(scope, embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector_list))
        .order_by("distance")
        .values_list("id", flat=True)[:VECTOR_CANDIDATES]
    )
    for memory_id in vector_ids:
        found_by.setdefault(memory_id, set()).add("vector")

    lexemes = _query_lexemes(query)
    scope_sql, scope_params = _scope_sql(
        tenant=tenant, contact=contact, memory_types=memory_types, include_compressed=include_compressed
    )
    keyword_tf = _keyword_candidates(
        scope_sql=scope_sql, scope_params=scope_params, lexemes=lexemes, limit=KEYWORD_CANDIDATES
    )
    for memory_id in keyword_tf:
        found_by.setdefault(memory_id, set()).add("keyword")

    query_entities = _discriminating(
        entities_named_in(tenant=tenant, contact=contact, slugs=query_slugs(query)), scope=scope
    )
    entity_ids = [entity.pk for entity in query_entities]
    if entity_ids:
        linked = (
            MemoryEntity.objects.filter(entity_id__in=entity_ids, memory__in=Memory.objects.filter(scope))
            .order_by("-memory__importance")
            .values_list("memory_id", flat=True)[:ENTITY_CANDIDATES]
        )
        for memory_id in linked:
            found_by.setdefault(memory_id, set()).add("entity")

    if not found_by:
        return SearchResult(results=[], query_entities=query_entities, candidates=0)
    for memory_id in _session_neighbours(scope=scope, memory_ids=list(found_by)):
        found_by.setdefault(memory_id, set()).add("neighbour")

    # one query for every candidate: cosine computed in PostgreSQL, the tsvectors as text for BM25;
    # the 384 floats of each embedding never cross the wire
    candidates = list(
        Memory.objects.filter(pk__in=list(found_by))
        .select_related("contact")
        .prefetch_related("entities")
        .defer("search_vector", "context_vector", "embedding")
        .annotate(
            cosine_distance=CosineDistance("embedding", vector_list),
            tsv_text=RawSQL("memories_memory.search_vector::text", []),
            context_text=RawSQL("coalesce(memories_memory.context_vector::text, '')", []),
        )
    )
    search_stats = _document_stats(scope_sql, scope_params, lexemes, column="search_vector") if lexemes else None
    context_stats = _document_stats(scope_sql, scope_params, lexemes, column="context_vector") if lexemes else None

    features: list[relevance_rules.Features] = []
    raw: list[tuple[float, float]] = []
    for memory in candidates:
        term_frequencies = _parse_tsvector(memory.tsv_text)  # type: ignore[attr-defined]
        keyword_score = _bm25_with(search_stats, term_frequencies, lexemes)
        context_score = _bm25_with(context_stats, _parse_tsvector(memory.context_text), lexemes)  # type: ignore[attr-defined]
        cosine = 1.0 - float(memory.cosine_distance if memory.cosine_distance is not None else 1.0)  # type: ignore[attr-defined]
        raw.append((cosine, keyword_score))
        features.append(
            relevance_rules.Features(
                cosine=cosine,
                bm25=keyword_score,
                context_bm25=context_score,
                session=memory.source_session_id,
                lexemes=sum(term_frequencies.values()),
                is_question=memory.content.rstrip().endswith("?"),
            )
        )
    similarity = relevance_rules.similarities(features)

    entity_id_set = set(entity_ids)
    results: list[ScoredMemory] = []
    for memory, (cosine, keyword_score), similarity_signal in zip(candidates, raw, similarity, strict=True):
        matched = tuple(sorted(entity.key for entity in memory.entities.all() if entity.pk in entity_id_set))
        days_since_access = max(0.0, (now - memory.accessed_at).total_seconds() / 86400)
        signals = scoring.Signals(
            similarity=similarity_signal,
            recency=scoring.recency(days_since_access=days_since_access),
            importance=memory.importance,
            access_frequency=scoring.access_frequency(access_count=memory.access_count),
            entity_match=1.0 if matched else 0.0,
        )
        results.append(
            ScoredMemory(
                memory=memory,
                score=scoring.retrieval_score(signals, weights),
                signals=signals,
                cosine=cosine,
                bm25=keyword_score,
                found_by=tuple(s for s in ("vector", "keyword", "entity", "neighbour") if s in found_by[memory.pk]),
                matched_entities=matched,
            )
        )
    results.sort(key=lambda item: (-item.score, -item.signals.similarity, str(item.memory.pk)))
    return SearchResult(results=results[:top_k], query_entities=query_entities, candidates=len(candidates))


@dataclass(frozen=True)
class _CorpusStats:
    document_frequency: dict[str, int]
    total: int
    average_length: float


def _bm25_with(stats: _CorpusStats | None, term_frequencies: dict[str, int], lexemes: list[str]) -> float:
    if stats is None or not term_frequencies:
        return 0.0
    return bm25(
        term_frequencies=term_frequencies,
        query_lexemes=lexemes,
        document_frequency=stats.document_frequency,
        total_documents=stats.total,
        average_length=stats.average_length,
    )


UBIQUITOUS_ENTITY_SHARE = 0.25
UBIQUITY_MIN_SCOPE = 40


def _discriminating(entities: list[Entity], *, scope: Q) -> list[Entity]:
    """Entities named in the query, minus those linked to more than a quarter of the scope's memories
    (the contact's own name, the two speakers of a long chat): like stop words, they match everything
    and tell nothing about this question."""
    if not entities:
        return []
    linked = dict(
        MemoryEntity.objects.filter(entity__in=entities, memory__in=Memory.objects.filter(scope))
        .values("entity_id")
        .annotate(count=Count("memory_id"))
        .values_list("entity_id", "count")
    )
    total = Memory.objects.filter(scope).count()
    if total < UBIQUITY_MIN_SCOPE:
        return entities  # too few memories to call anything ubiquitous
    return [entity for entity in entities if linked.get(entity.pk, 0) <= UBIQUITOUS_ENTITY_SHARE * total]


def _session_neighbours(*, scope: Q, memory_ids: list[Any]) -> set[Any]:
    """The turns just before and after each candidate episode in its conversation (one query)."""
    sessions = set(
        Memory.objects.filter(pk__in=memory_ids, memory_type=scoring.EPISODE)
        .exclude(source_session_id="")
        .values_list("source_session_id", flat=True)
    )
    if not sessions:
        return set()
    rows = list(
        Memory.objects.filter(scope, memory_type=scoring.EPISODE, source_session_id__in=sessions)
        .order_by("source_session_id", "occurred_at", "created_at")
        .values_list("id", "source_session_id")
    )
    wanted = set(memory_ids)
    neighbours: set[Any] = set()
    for index, (memory_id, session) in enumerate(rows):
        if memory_id not in wanted:
            continue
        for other in (index - 1, index + 1):
            if 0 <= other < len(rows) and rows[other][1] == session:
                neighbours.add(rows[other][0])
    return neighbours - wanted


def _without_query(*, scope: Q, weights: scoring.Weights, top_k: int, now: datetime) -> SearchResult:
    """No query (a first message, a context preview without text): rank by importance, recency and use."""
    memories = list(
        Memory.objects.filter(scope)
        .select_related("contact")
        .prefetch_related("entities")
        .defer("search_vector", "embedding")
        .order_by("-importance", "-accessed_at")[: max(top_k, VECTOR_CANDIDATES)]
    )
    results = []
    for memory in memories:
        signals = scoring.Signals(
            similarity=0.0,
            recency=scoring.recency(days_since_access=max(0.0, (now - memory.accessed_at).total_seconds() / 86400)),
            importance=memory.importance,
            access_frequency=scoring.access_frequency(access_count=memory.access_count),
            entity_match=0.0,
        )
        results.append(
            ScoredMemory(
                memory=memory,
                score=scoring.retrieval_score(signals, weights),
                signals=signals,
                cosine=0.0,
                bm25=0.0,
                found_by=("importance",),
            )
        )
    results.sort(key=lambda item: (-item.score, str(item.memory.pk)))
    return SearchResult(results=results[:top_k], candidates=len(memories))


def _document_stats(scope_sql: str, scope_params: list[Any], lexemes: list[str], *, column: str) -> _CorpusStats:
    """Documents in scope, their average length and each lexeme's document frequency, for BM25's IDF.
    The counts per lexeme are separate sub-selects so each can use the GIN index."""
    assert column in ("search_vector", "context_vector")
    df_columns = ", ".join(
        f"(SELECT count(*) FROM memories_memory m WHERE {scope_sql} AND m.{column} @@ %s::tsquery)"
        for _ in lexemes
    )
    params: list[Any] = []
    for lexeme in _quoted(lexemes):
        params += [*scope_params, lexeme]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(m.{column}), coalesce(avg(length(m.{column})), 0) FROM memories_memory m "
            f"WHERE {scope_sql}",
            scope_params,
        )
        total_row = cursor.fetchone()
        cursor.execute(f"SELECT {df_columns}", params)
        df_row = cursor.fetchone()
    assert total_row is not None and df_row is not None
    return _CorpusStats(
        document_frequency={lexeme: int(count) for lexeme, count in zip(lexemes, df_row, strict=True)},
        total=int(total_row[0]),
        average_length=float(total_row[1]),
    )
