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

import dataclasses
import functools
import itertools
import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from apps.entities.models import Entity
from apps.entities.selectors import entities_named_in
from apps.memories import relevance as relevance_rules
from apps.memories import scoring
from apps.memories.embeddings import get_embedder
from apps.memories.models import Memory, MemoryEntity
from apps.memories.services.lexicon import (
    LEXICON_FROM,
    current_scope_sql,
    scope_lexicon_get,
    scope_lexicon_refresh_queue,
)
from apps.tenants.models import Tenant

VECTOR_CANDIDATES = 50
KEYWORD_CANDIDATES = 50
ENTITY_CANDIDATES = 50
# keyword candidates: the query's rarest lexemes, as many as match at most this many memories together
# (ranking a match is a heap visit; a word in thousands of memories tells little and its IDF is low)
KEYWORD_ROW_BUDGET = 1500
DF_CAP = 5000  # exact document frequencies (no lexicon yet) are counted up to this; beyond it IDF barely moves
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


def _idf(df: int, total: int) -> float:
    df = min(df, total)
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


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
        idf = _idf(document_frequency.get(lexeme, 0), total_documents)
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

    @property
    def contact_id(self) -> Any | None:
        return self.contact.pk if self.contact is not None else None

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        """The same scope as `q()`, for the hand-written SQL statements."""
        sql, params = current_scope_sql(tenant_id=self.tenant.pk, contact_id=self.contact_id, alias=alias)
        if not self.include_compressed:
            sql += f" AND NOT {alias}.is_compressed"
        if self.memory_types:
            sql += f" AND {alias}.memory_type = ANY(%s)"
            params.append(list(self.memory_types))
        return sql, params


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


def _scope_stats(scope: _Scope, lexemes: list[str]) -> _Stats:
    """Scope size, average tsvector lengths and the document frequency of each query lexeme: from the
    scope's lexicon when a worker has built one (services.lexicon), else counted in one SQL statement."""
    lexicon = scope_lexicon_get(tenant_id=scope.tenant.pk, contact_id=scope.contact_id, lexemes=lexemes)
    if lexicon is not None:
        return _Stats(
            total=lexicon.total,
            average_search_length=lexicon.average_search_length,
            average_context_length=lexicon.average_context_length,
            search_df=lexicon.search_df,
            context_df=lexicon.context_df,
        )
    scope_sql, scope_params = scope.sql()
    selects = ["totals.total", "totals.search_length", "totals.context_length"]
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
        cursor.execute(
            "SELECT " + ", ".join(selects) + " FROM (SELECT count(*) AS total, "
            "coalesce(avg(length(m.search_vector)), 0) AS search_length, "
            "coalesce(avg(length(m.context_vector)), 0) AS context_length "
            f"FROM memories_memory m WHERE {scope_sql}) totals",
            [*params, *scope_params],
        )
        row = cursor.fetchone()
    assert row is not None
    total = int(row[0])
    if total >= LEXICON_FROM:  # large enough to be worth a lexicon: a worker builds it for the next searches
        scope_lexicon_refresh_queue(tenant_id=scope.tenant.pk, contact_id=scope.contact_id)
    counts = [int(value) for value in row[3:]]
    return _Stats(
        total=total,
        average_search_length=float(row[1]),
        average_context_length=float(row[2]),
        search_df=dict(zip(lexemes, counts[: len(lexemes)], strict=True)),
        context_df=dict(zip(lexemes, counts[len(lexemes) :], strict=True)),
    )


def _keyword_candidates(scope: _Scope, lexemes: list[str], stats: _Stats) -> list[Any]:
    """Top memories matching any selective query lexeme (GIN), ranked by the IDF of the query words they
    hold. Selective: the rarest
    lexemes, taken while together they match at most KEYWORD_ROW_BUDGET memories — a word in thousands
    of memories would drag them all through ranking and tells little (those still count in BM25 for the
    candidates the other sources find)."""
    selective: list[str] = []
    matched = 0
    for lexeme in sorted(lexemes, key=lambda lexeme: stats.search_df.get(lexeme, 0)):
        frequency = stats.search_df.get(lexeme, 0)
        if frequency == 0:
            continue
        if matched + frequency > KEYWORD_ROW_BUDGET:
            break
        selective.append(lexeme)
        matched += frequency
    if not selective:
        return []
    tsquery = " | ".join(_quoted(selective))
    # ranked by the IDF of the query words each match holds (an IDF-weighted coordination level: BM25
    # without term frequency); ts_rank_cd ignored IDF and let a speaker's name crowd out the rare words
    terms = [
        (quoted, _idf(stats.search_df.get(lexeme, 0), stats.total))
        for lexeme, quoted in zip(lexemes, _quoted(lexemes), strict=True)
    ]
    order = " + ".join("(m.search_vector @@ %s::tsquery)::int * %s" for _ in terms)
    order_params = [value for term in terms for value in term]
    scope_sql, scope_params = scope.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM memories_memory m WHERE {scope_sql} AND m.search_vector @@ %s::tsquery "
            f"ORDER BY {order} DESC, m.id LIMIT %s",
            [*scope_params, tsquery, *order_params, KEYWORD_CANDIDATES],
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


_NEIGHBOUR_TURN = (
    "(SELECT n.id FROM memories_memory n WHERE {scope} AND n.memory_type = 'episode' "
    "AND n.source_session_id <> '' AND n.source_session_id = c.source_session_id "
    "AND (n.occurred_at, n.created_at) {op} (c.occurred_at, c.created_at) "
    "ORDER BY n.occurred_at {order}, n.created_at {order} LIMIT 1)"
)


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
    is_neighbour: bool  # not found by a source itself: the turn before or after a candidate episode


def _candidate_features(scope: _Scope, ids: list[Any], vector_text: str, lexemes: list[str]) -> list[_Candidate]:
    """One statement: the candidates plus the turns just before and after each candidate episode in its
    conversation (two LATERAL probes of memory_session_turn_idx per candidate, whatever the conversation's
    length), and the features of all of them."""
    scope_sql, scope_params = scope.sql(alias="n")
    tf_sql = (
        "(SELECT coalesce(json_object_agg(u.lexeme, coalesce(array_length(u.positions, 1), 1)), '{{}}'::json) "
        "FROM unnest(m.{column}) u WHERE u.lexeme = ANY(%s))"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH seed AS (SELECT unnest(%s::uuid[]) AS id), "
            "neighbour AS (SELECT x.id FROM memories_memory c CROSS JOIN LATERAL ("
            f"{_NEIGHBOUR_TURN.format(scope=scope_sql, op='<', order='DESC')} UNION ALL "
            f"{_NEIGHBOUR_TURN.format(scope=scope_sql, op='>', order='ASC')}) x "
            "WHERE c.id IN (SELECT id FROM seed) AND c.memory_type = 'episode' AND c.source_session_id <> ''), "
            "candidate AS (SELECT id, false AS is_neighbour FROM seed UNION ALL "
            "SELECT DISTINCT id, true FROM neighbour WHERE id NOT IN (SELECT id FROM seed)) "
            "SELECT m.id, m.importance, m.access_count, m.accessed_at, m.source_session_id, "
            "right(rtrim(m.content), 1) = '?', 1 - (m.embedding <=> %s::vector), "
            "coalesce(length(m.search_vector), 0), coalesce(length(m.context_vector), 0), "
            f"{tf_sql.format(column='search_vector')}, {tf_sql.format(column='context_vector')}, k.is_neighbour "
            "FROM candidate k JOIN memories_memory m ON m.id = k.id",
            [ids, *scope_params, *scope_params, vector_text, lexemes, lexemes],
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
            is_neighbour=bool(row[11]),
        )
        for row in rows
    ]


def _as_dict(value: Any) -> dict[str, int]:
    if isinstance(value, str):
        value = json.loads(value)
    return {str(key): int(count) for key, count in (value or {}).items()}


@functools.lru_cache(maxsize=1)
def _embedding_pool() -> ThreadPoolExecutor:
    # created on first use, so a forked worker process builds its own
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="engram-query-embed")


def _embed_query(query: str) -> np.ndarray:
    return get_embedder().embed_batch([query])[0]


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
    # the query is embedded on another core while PostgreSQL answers the keyword and entity side
    pending = _embedding_pool().submit(_embed_query, query) if query_vector is None else None

    lexemes = _query_lexemes(query)
    stats = _scope_stats(scope, lexemes)
    found_by: dict[Any, set[str]] = {}
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
    if pending is not None:
        query_vector = pending.result()
    vector_list = np.asarray(query_vector, dtype=np.float32).tolist()
    vector_ids = (
        Memory.objects.filter(scope.q(), embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector_list))
        .order_by("distance")
        .values_list("id", flat=True)[:VECTOR_CANDIDATES]
    )
    for memory_id in vector_ids:
        found_by.setdefault(memory_id, set()).add("vector")
    if not found_by:
        return SearchResult(results=[], query_entities=query_entities, candidates=0)
    candidates = _candidate_features(scope, list(found_by), "[" + ",".join(map(str, vector_list)) + "]", lexemes)
    for candidate in candidates:
        if candidate.is_neighbour:
            found_by[candidate.id] = {"neighbour"}
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
        Memory.objects.prefetch_related("entities")
        .defer("embedding", "search_vector", "context_vector")
        .in_bulk([candidates[index].id for index in winners])
    )
    for memory in memories.values():
        memory.contact = contact  # every memory of the scope has the scope's contact: no join
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
