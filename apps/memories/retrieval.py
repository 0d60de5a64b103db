"""Multi-signal hybrid retrieval (read path; nothing is written on the request path).

1. Candidates from three indexes, unioned so a keyword-only or entity-only hit is never dropped:
   pgvector HNSW top-N by cosine, PostgreSQL full-text top-N (OR of the query's selective lexemes, GIN),
   and memories linked to entities named in the query; plus the turns next to each candidate episode.
2. Features of every candidate come from ONE query (cosine computed in PostgreSQL, the term frequencies
   of the query's lexemes unnested from the tsvectors), so no embedding or document crosses the wire.
3. `relevance.similarities` turns cosine, BM25 (IDF from per-lexeme document counts in the scope) and
   context/session/length priors into the similarity signal; the final score is the weighted sum of
   similarity, recency, importance, access frequency and entity match (weights per scope, per tenant).
4. Only the top_k winners are loaded as model objects (with their entities).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.text import slugify
from pgvector.django import CosineDistance

from apps.contacts.models import Contact
from apps.core.redis import RedisError, get_redis
from apps.entities.models import Entity
from apps.entities.selectors import entities_named_in
from apps.memories import relevance as relevance_rules
from apps.memories import scoring
from apps.memories.embeddings import get_embedder
from apps.memories.models import Memory, MemoryEntity
from apps.tenants.models import Tenant

VECTOR_CANDIDATES = 50
KEYWORD_CANDIDATES = 50
ENTITY_CANDIDATES = 50
# a lexeme in more than this share of the scope selects no candidates (its IDF is near zero anyway)
SELECTIVE_LEXEME_SHARE = 0.2
SELECTIVE_LEXEME_MIN_ROWS = 500  # ranking this many matches is cheap: small scopes use every lexeme
DF_CAP = 5000  # document frequencies are counted up to this; beyond it the IDF barely moves
SCOPE_STATS_TTL_SECONDS = 120
SCOPE_STATS_CACHE_FROM = 1000
UBIQUITOUS_ENTITY_SHARE = 0.25
UBIQUITY_MIN_SCOPE = 40

BM25_K1 = 1.2
BM25_B = 0.75
# the knowledge-base search blends cosine with saturated keyword rank (chunks are long and few)
BM25_SATURATION = 4.0
VECTOR_SHARE = 0.5


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    score: float
    signals: scoring.Signals
    cosine: float
    bm25: float
    found_by: tuple[str, ...]  # "vector", "keyword", "entity", "neighbour" (or "importance" with no query)
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
    """Cosine blended with a saturated keyword score (used by the knowledge-base search)."""
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


def bm25(
    *,
    term_frequencies: dict[str, int],
    query_lexemes: Sequence[str],
    document_frequency: dict[str, int],
    total_documents: int,
    average_length: float,
    length: int | None = None,
) -> float:
    if not term_frequencies or total_documents == 0:
        return 0.0
    length = sum(term_frequencies.values()) if length is None else length
    score = 0.0
    for lexeme in query_lexemes:
        frequency = term_frequencies.get(lexeme, 0)
        if not frequency:
            continue
        df = min(document_frequency.get(lexeme, 0), total_documents)
        idf = math.log(1 + (total_documents - df + 0.5) / (df + 0.5))
        norm = frequency + BM25_K1 * (1 - BM25_B + BM25_B * length / (average_length or 1.0))
        score += idf * frequency * (BM25_K1 + 1) / norm
    return score


@dataclass(frozen=True)
class _Scope:
    tenant: Tenant
    contact: Contact | None
    memory_types: tuple[str, ...]
    include_compressed: bool

    def q(self) -> Q:
        condition = (
            Q(tenant=self.tenant, contact=self.contact, valid_to__isnull=True, deleted_at__isnull=True)
            & (Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
            & Q(importance__gte=scoring.RETRIEVAL_MIN_IMPORTANCE)
        )
        if not self.include_compressed:
            condition &= Q(is_compressed=False)
        if self.memory_types:
            condition &= Q(memory_type__in=list(self.memory_types))
        return condition

    def sql(self) -> tuple[str, list[Any]]:
        """The same scope as `q()`, for the hand-written full-text statements (alias m)."""
        clauses = [
            "m.tenant_id = %s",
            "m.contact_id = %s" if self.contact is not None else "m.contact_id IS NULL",
            "m.valid_to IS NULL",
            "m.deleted_at IS NULL",
            "(m.expires_at IS NULL OR m.expires_at > now())",
            "m.importance >= %s",
        ]
        params: list[Any] = [self.tenant.pk, *([self.contact.pk] if self.contact is not None else [])]
        params.append(scoring.RETRIEVAL_MIN_IMPORTANCE)
        if not self.include_compressed:
            clauses.append("NOT m.is_compressed")
        if self.memory_types:
            clauses.append("m.memory_type = ANY(%s)")
            params.append(list(self.memory_types))
        return " AND ".join(clauses), params

    @property
    def cache_key(self) -> str:
        contact = self.contact.pk if self.contact is not None else "tenant"
        types = ",".join(self.memory_types)
        return f"engram:scope-stats:{self.tenant.pk}:{contact}:{types}:{int(self.include_compressed)}"


@dataclass(frozen=True)
class _Stats:
    total: int
    average_search_length: float
    average_context_length: float
    search_df: dict[str, int]
    context_df: dict[str, int]


def _query_lexemes(query: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(array_agg(lexeme), '{}') FROM unnest(to_tsvector('english', %s))", [query])
        row = cursor.fetchone()
    return [lexeme for lexeme in (row[0] if row else []) if lexeme]


def _quoted(lexemes: Iterable[str]) -> list[str]:
    # lexemes come from to_tsvector: quote each so ':' or '&' inside can never change the query
    return ["'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes]


def _scope_totals(scope: _Scope) -> tuple[int, float, float]:
    """Memories in scope and the average tsvector lengths: cached briefly (they move slowly)."""
    try:
        cached = get_redis().get(scope.cache_key)
    except RedisError:
        cached = None
    if cached:
        total, search_length, context_length = json.loads(cached)
        return int(total), float(search_length), float(context_length)
    scope_sql, params = scope.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(m.search_vector)), 0), "
            f"coalesce(avg(length(m.context_vector)), 0) FROM memories_memory m WHERE {scope_sql}",
            params,
        )
        row = cursor.fetchone()
    assert row is not None
    totals = (int(row[0]), float(row[1]), float(row[2]))
    if totals[0] >= SCOPE_STATS_CACHE_FROM:  # small scopes are counted exactly every time (it is cheap)
        with contextlib.suppress(RedisError):
            get_redis().set(scope.cache_key, json.dumps(totals), ex=SCOPE_STATS_TTL_SECONDS)
    return totals


def _scope_stats(scope: _Scope, lexemes: list[str]) -> _Stats:
    total, search_length, context_length = _scope_totals(scope)
    if not lexemes:
        return _Stats(total, search_length, context_length, {}, {})
    scope_sql, scope_params = scope.sql()
    selects: list[str] = []
    params: list[Any] = []
    for column in ("search_vector", "context_vector"):
        for lexeme in _quoted(lexemes):
            # each count uses the GIN index and stops at DF_CAP rows
            selects.append(
                f"(SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE {scope_sql} "
                f"AND m.{column} @@ %s::tsquery LIMIT {DF_CAP}) capped)"
            )
            params += [*scope_params, lexeme]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(selects), params)
        row = cursor.fetchone()
    assert row is not None
    counts = [int(value) for value in row]
    return _Stats(
        total=total,
        average_search_length=search_length,
        average_context_length=context_length,
        search_df=dict(zip(lexemes, counts[: len(lexemes)], strict=True)),
        context_df=dict(zip(lexemes, counts[len(lexemes) :], strict=True)),
    )


def _keyword_candidates(scope: _Scope, lexemes: list[str], stats: _Stats) -> list[Any]:
    """Top memories matching any selective query lexeme (GIN); a lexeme in a fifth of the scope selects
    nothing by itself (it would drag thousands of rows through ranking), but the three rarest always do."""
    if not lexemes:
        return []
    ranked = sorted(lexemes, key=lambda lexeme: stats.search_df.get(lexeme, 0))
    limit = max(SELECTIVE_LEXEME_SHARE * stats.total, SELECTIVE_LEXEME_MIN_ROWS)
    selective = [lexeme for index, lexeme in enumerate(ranked) if index < 3 or stats.search_df.get(lexeme, 0) <= limit]
    selective = [lexeme for lexeme in selective if stats.search_df.get(lexeme, 0) > 0]
    if not selective:
        return []
    tsquery = " | ".join(_quoted(selective))
    scope_sql, scope_params = scope.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM memories_memory m WHERE {scope_sql} AND m.search_vector @@ %s::tsquery "
            "ORDER BY ts_rank_cd(m.search_vector, %s::tsquery, 1) DESC LIMIT %s",
            [*scope_params, tsquery, tsquery, KEYWORD_CANDIDATES],
        )
        return [row[0] for row in cursor.fetchall()]


def _discriminating(entities: list[Entity], *, scope: _Scope, total: int) -> list[Entity]:
    """Entities named in the query, minus those linked to more than a quarter of the scope's memories
    (the contact's own name, the two speakers of a long chat): like stop words, they match everything
    and tell nothing about this question."""
    if not entities or total < UBIQUITY_MIN_SCOPE:
        return entities
    linked = dict(
        MemoryEntity.objects.filter(entity__in=entities, memory__in=Memory.objects.filter(scope.q()))
        .values("entity_id")
        .annotate(count=Count("memory_id"))
        .values_list("entity_id", "count")
    )
    return [entity for entity in entities if linked.get(entity.pk, 0) <= UBIQUITOUS_ENTITY_SHARE * total]


def _session_neighbours(scope: _Scope, memory_ids: list[Any]) -> set[Any]:
    """The turns just before and after each candidate episode in its conversation (one query)."""
    scope_sql, scope_params = scope.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x.before_id, x.after_id FROM ("
            "SELECT m.id, lag(m.id) OVER w AS before_id, lead(m.id) OVER w AS after_id FROM memories_memory m "
            f"WHERE {scope_sql} AND m.memory_type = 'episode' AND m.source_session_id IN ("
            "SELECT c.source_session_id FROM memories_memory c WHERE c.id = ANY(%s) AND c.memory_type = 'episode' "
            "AND c.source_session_id <> '') "
            "WINDOW w AS (PARTITION BY m.source_session_id ORDER BY m.occurred_at, m.created_at)) x "
            "WHERE x.id = ANY(%s)",
            [*scope_params, memory_ids, memory_ids],
        )
        rows = cursor.fetchall()
    wanted = set(memory_ids)
    return {memory_id for row in rows for memory_id in row if memory_id is not None and memory_id not in wanted}


@dataclass(frozen=True)
class _Candidate:
    id: Any
    importance: float
    access_count: int
    accessed_at: datetime
    session: str
    is_question: bool
    cosine: float
    search_length: int
    context_length: int
    search_tf: dict[str, int]
    context_tf: dict[str, int]


def _candidate_features(ids: list[Any], vector_text: str, lexemes: list[str]) -> list[_Candidate]:
    tf_sql = (
        "(SELECT coalesce(json_object_agg(u.lexeme, coalesce(array_length(u.positions, 1), 1)), '{{}}'::json) "
        "FROM unnest(m.{column}) u WHERE u.lexeme = ANY(%s))"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.importance, m.access_count, m.accessed_at, m.source_session_id, "
            "right(rtrim(m.content), 1) = '?', 1 - (m.embedding <=> %s::vector), "
            "coalesce(length(m.search_vector), 0), coalesce(length(m.context_vector), 0), "
            f"{tf_sql.format(column='search_vector')}, {tf_sql.format(column='context_vector')} "
            "FROM memories_memory m WHERE m.id = ANY(%s)",
            [vector_text, lexemes, lexemes, ids],
        )
        rows = cursor.fetchall()
    return [
        _Candidate(
            id=row[0],
            importance=row[1],
            access_count=row[2],
            accessed_at=row[3],
            session=row[4],
            is_question=bool(row[5]),
            cosine=float(row[6]) if row[6] is not None else 0.0,
            search_length=row[7],
            context_length=row[8],
            search_tf=_as_dict(row[9]),
            context_tf=_as_dict(row[10]),
        )
        for row in rows
    ]


def _as_dict(value: Any) -> dict[str, int]:
    if isinstance(value, str):
        value = json.loads(value)
    return {str(key): int(count) for key, count in (value or {}).items()}


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
    weights = weights_for(tenant=tenant, is_tenant_scope=contact is None)
    scope = _Scope(tenant, contact, tuple(memory_types), include_compressed)
    if not query.strip():
        return _without_query(scope=scope, weights=weights, top_k=top_k, now=now)
    if query_vector is None:
        query_vector = get_embedder().embed_batch([query])[0]
    vector_list = np.asarray(query_vector, dtype=np.float32).tolist()

    lexemes = _query_lexemes(query)
    stats = _scope_stats(scope, lexemes)
    found_by: dict[Any, set[str]] = {}
    vector_ids = list(
        Memory.objects.filter(scope.q(), embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector_list))
        .order_by("distance")
        .values_list("id", flat=True)[:VECTOR_CANDIDATES]
    )
    for memory_id in vector_ids:
        found_by.setdefault(memory_id, set()).add("vector")
    for memory_id in _keyword_candidates(scope, lexemes, stats):
        found_by.setdefault(memory_id, set()).add("keyword")
    query_entities = _discriminating(
        entities_named_in(tenant=tenant, contact=contact, slugs=query_slugs(query)), scope=scope, total=stats.total
    )
    entity_ids = [entity.pk for entity in query_entities]
    if entity_ids:
        linked = (
            MemoryEntity.objects.filter(entity_id__in=entity_ids, memory__in=Memory.objects.filter(scope.q()))
            .order_by("-memory__importance")
            .values_list("memory_id", flat=True)[:ENTITY_CANDIDATES]
        )
        for memory_id in linked:
            found_by.setdefault(memory_id, set()).add("entity")
    if not found_by:
        return SearchResult(results=[], query_entities=query_entities, candidates=0)
    for memory_id in _session_neighbours(scope, list(found_by)):
        found_by.setdefault(memory_id, set()).add("neighbour")

    candidates = _candidate_features(list(found_by), "[" + ",".join(map(str, vector_list)) + "]", lexemes)
    features, keyword_scores = [], []
    for candidate in candidates:
        keyword = bm25(
            term_frequencies=candidate.search_tf,
            query_lexemes=lexemes,
            document_frequency=stats.search_df,
            total_documents=stats.total,
            average_length=stats.average_search_length,
            length=candidate.search_length,
        )
        context = bm25(
            term_frequencies=candidate.context_tf,
            query_lexemes=lexemes,
            document_frequency=stats.context_df,
            total_documents=stats.total,
            average_length=stats.average_context_length,
            length=candidate.context_length,
        )
        keyword_scores.append(keyword)
        features.append(
            relevance_rules.Features(
                cosine=candidate.cosine,
                bm25=keyword,
                context_bm25=context,
                session=candidate.session,
                lexemes=candidate.search_length,
                is_question=candidate.is_question,
            )
        )
    similarity = relevance_rules.similarities(features)
    matched_by_memory: dict[Any, list[str]] = {}
    if entity_ids:
        for memory_id, entity_type, slug in MemoryEntity.objects.filter(
            entity_id__in=entity_ids, memory_id__in=[candidate.id for candidate in candidates]
        ).values_list("memory_id", "entity__entity_type", "entity__slug"):
            matched_by_memory.setdefault(memory_id, []).append(f"{entity_type}:{slug}")

    scored: list[tuple[float, float, str, int]] = []
    signals_by_index: list[scoring.Signals] = []
    for index, (candidate, similarity_signal) in enumerate(zip(candidates, similarity, strict=True)):
        signals = scoring.Signals(
            similarity=similarity_signal,
            recency=scoring.recency(days_since_access=max(0.0, (now - candidate.accessed_at).total_seconds() / 86400)),
            importance=candidate.importance,
            access_frequency=scoring.access_frequency(access_count=candidate.access_count),
            entity_match=1.0 if candidate.id in matched_by_memory else 0.0,
        )
        signals_by_index.append(signals)
        scored.append((-scoring.retrieval_score(signals, weights), -similarity_signal, str(candidate.id), index))
    scored.sort()
    scored = _reranked(query, scored, candidates, signals_by_index, weights)
    winners = [index for *_, index in scored[:top_k]]
    memories = (
        Memory.objects.select_related("contact")
        .prefetch_related("entities")
        .defer("embedding", "search_vector", "context_vector")
        .in_bulk([candidates[index].id for index in winners])
    )
    results = [
        ScoredMemory(
            memory=memories[candidates[index].id],
            score=-scored_row[0],
            signals=signals_by_index[index],
            cosine=candidates[index].cosine,
            bm25=keyword_scores[index],
            found_by=tuple(
                source
                for source in ("vector", "keyword", "entity", "neighbour")
                if source in found_by[candidates[index].id]
            ),
            matched_entities=tuple(sorted(matched_by_memory.get(candidates[index].id, []))),
        )
        for scored_row, index in zip(scored[:top_k], winners, strict=True)
        if candidates[index].id in memories
    ]
    return SearchResult(results=results, query_entities=query_entities, candidates=len(candidates))


RERANK_TOP = 30
logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _cross_encoder() -> Any:
    """The optional reranker model, or None when it cannot be loaded (then the blended score stands)."""
    try:
        from sentence_transformers import CrossEncoder  # type: ignore[import-not-found]

        return CrossEncoder(settings.ENGRAM["RERANKER_MODEL"])
    except Exception as exc:  # not installed, no model files offline, …: fall back, say so once
        logger.warning("Reranker unavailable (%s): using the blended score", exc)
        return None


def _reranked(
    query: str,
    scored: list[tuple[float, float, str, int]],
    candidates: list[_Candidate],
    signals: list[scoring.Signals],
    weights: scoring.Weights,
) -> list[tuple[float, float, str, int]]:
    """With ENGRAM_RERANKER_ENABLED, a cross-encoder's relevance replaces the similarity signal of the top
    candidates (memory-logic.txt §2.5); without the setting or the model, the blended order stands."""
    if not settings.ENGRAM["RERANKER_ENABLED"]:
        return scored
    model = _cross_encoder()
    if model is None:
        return scored
    head, tail = scored[:RERANK_TOP], scored[RERANK_TOP:]
    contents = dict(Memory.objects.filter(pk__in=[candidates[row[3]].id for row in head]).values_list("id", "content"))
    raw = model.predict([(query, contents[candidates[row[3]].id]) for row in head])
    rescored = []
    for row, value in zip(head, raw, strict=True):
        index = row[3]
        similarity = 1.0 / (1.0 + math.exp(-float(value)))
        signals[index] = dataclasses.replace(signals[index], similarity=similarity)
        rescored.append((-scoring.retrieval_score(signals[index], weights), -similarity, row[2], index))
    return sorted(rescored) + tail


def _without_query(*, scope: _Scope, weights: scoring.Weights, top_k: int, now: datetime) -> SearchResult:
    """No query (a first message, a context preview without text): rank by importance, recency and use."""
    memories = list(
        Memory.objects.filter(scope.q())
        .select_related("contact")
        .prefetch_related("entities")
        .defer("search_vector", "context_vector", "embedding")
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
