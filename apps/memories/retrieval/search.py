"""Multi-signal hybrid retrieval (read path; nothing is written on the request path).

Three round trips, whatever the scope's size (docs/retrieval.md):

1. `query_terms` — one statement: the query's lexemes (PostgreSQL's own `english` parser and stemmer) and
   the scope's entities the query names, each with a capped count of its memory links.
2. `scope_stats` — document frequencies for BM25: the scope's lexicon in Redis (one HMGET), or counted
   exactly in SQL for a small scope.
3. `_candidates` — one statement: candidates from three indexes, unioned so a keyword-only or entity-only
   hit is never dropped (pgvector HNSW top-N by cosine, full-text top-N over the query's selective lexemes,
   memories linked to the entities named), plus the turns next to each candidate episode; and for every
   one of them the features (cosine and BM25 computed in PostgreSQL: no vector or tsvector crosses the
   wire) and the few columns a prompt or an API row needs.

Every candidate's features (relevance.normalized's terms, the raw cosines, entity/speaker/time matches,
importance) are scored by the fitted ranker (ranker.py, weights from ranker_weights.json), the usage signals
counted in proportion to its relevance; without one, or for a tenant with its own weights, the hand formula:
`relevance.similarities` turns cosine, BM25 and the context/session/length priors into the similarity signal
and the score is the weighted sum of similarity, recency, importance, access frequency and entity match
(weights per scope, per tenant). Either way two rules multiply the score after it: a memory outside every
time window the query names (signals/time_window.miss_factor), and one of the chunks of a long message
(signals/chunk_share.factor). Results are light `RetrievedMemory` rows, never model objects; the
entities of the memories a caller keeps come from `memory_entities`, one statement for all of them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import numpy as np
from django.db import connection
from django.utils import timezone

from apps.contacts.models import Contact
from apps.core.embeddings import cache_scope, get_embedder, vector_literal
from apps.core.rows import bound_cursor
from apps.core.timing import phase
from apps.memories import scoring
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval import relevance as relevance_rules
from apps.memories.retrieval import vector_effort
from apps.memories.retrieval.query import (
    Scope,
    Stats,
    discriminating,
    query_terms,
    quoted_lexemes,
    scope_stats,
    surface_names,
)
from apps.memories.retrieval.rerank import factored, rank_key, reranked
from apps.memories.retrieval.signals import chunk_share, diversity, specificity, time_window
from apps.memories.retrieval.signals import speaker as speaker_signal
from apps.memories.retrieval.types import HAND, EntityRef, RetrievedMemory, ScoredMemory, SearchResult
from apps.tenants.models import Tenant

VECTOR_CANDIDATES = 50
KEYWORD_CANDIDATES = 50
ENTITY_CANDIDATES = 50
# keyword candidates: the query's rarest lexemes, as many as match at most this many memories together
# (ranking a match is a heap visit; a word in hundreds of memories tells little and its IDF is low, and the
# vector source covers it). 300 against 1,000, one A/B run at 100k memories (uncached query embeddings):
# candidate statement p50 12.5 -> 9.0 ms, p95 19.3 -> 13.6 ms; LoCoMo R@10 0.7996 -> 0.7997 (the same
# ingested conversations re-asked; 500 gives 0.7996). Earlier 1,500 -> 1,000 had cut p95 36 -> 25 ms.
KEYWORD_ROW_BUDGET = 300
BM25_K1 = 1.2
BM25_B = 0.75

TIME_CANDIDATES = 50
# the time source reads the memories said inside a window the query names; a wider window (a year, "before
# May") would be the whole scope: it only scores
MAX_TIME_SOURCE_WINDOW = timedelta(days=31)
# ... and at most this many of each window, the latest first (the index on the scope's event times stops
# there), before it orders them by meaning: "this week" of a contact with 200,000 memories held ~2,000, read
# and compared one by one (27 ms of an 89 ms request at 1M memories). A window with more memories than this is
# represented by its latest ones; the vector source still searches the whole scope, and the time signal still
# boosts every candidate inside the window. LoCoMo's and BEAM's windows hold fewer (at most 262 and 200 turns
# said within 31 days of one conversation), so their results cannot change.
TIME_ROW_BUDGET = 400
SOURCES = ("vector", "keyword", "entity", "time", "neighbour")
_SOURCE_BITS = {"keyword": 1, "entity": 2, "vector": 4, "neighbour": 8, "time": 16}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _weight_overrides(*, tenant: Tenant, is_tenant_scope: bool) -> dict[str, Any]:
    overrides = (tenant.settings or {}).get("retrieval_weights", {})
    scoped = overrides.get("tenant" if is_tenant_scope else "contact", {}) if isinstance(overrides, dict) else {}
    return scoped if isinstance(scoped, dict) else {}


def weights_for(*, tenant: Tenant, is_tenant_scope: bool) -> scoring.Weights:
    fallback = scoring.TENANT_WEIGHTS if is_tenant_scope else scoring.CONTACT_WEIGHTS
    overrides = _weight_overrides(tenant=tenant, is_tenant_scope=is_tenant_scope)
    return scoring.Weights.from_dict(overrides, fallback=fallback)


def ranker_for(*, tenant: Tenant, is_tenant_scope: bool) -> ranking.Ranker | None:
    """The fitted ranker (ranker.active(): ranker_weights.json, loaded once), or None for the hand weights:
    when the file is absent or invalid, or when the tenant set its own `retrieval_weights` for the scope."""
    if _weight_overrides(tenant=tenant, is_tenant_scope=is_tenant_scope):
        return None
    return ranking.active()


idf = specificity.idf  # BM25's inverse document frequency, shared with the entity specificity


def _selective(lexemes: list[str], stats: Stats) -> list[str]:
    """The lexemes the keyword source searches: the rarest, taken while together they match at most
    KEYWORD_ROW_BUDGET memories — a word in thousands of memories would drag them all through ranking and
    tells little (it still counts in BM25 for the candidates the other sources find)."""
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
    return selective


# The turn just before / after candidate c in its conversation, through memory_session_turn_idx, in ledger
# order (time, then arrival: turns that share a timestamp keep their order). The owner
# is c's own (c is in the scope), not the scope's constants: for a tenant or contact that the planner's
# statistics do not know yet (rows written since the last ANALYZE), a constant is estimated at one row, and
# the planner probed through the lone contact_id (or tenant_id) index instead, scanning the whole contact for
# each candidate: 47 instead of 12 ms per search for a LoCoMo-sized contact. c's columns get the average.
_NEIGHBOUR_TURN = (
    "(SELECT n.id FROM memories_memory n WHERE n.tenant_id = c.tenant_id "
    "AND n.contact_id IS NOT DISTINCT FROM c.contact_id AND {scope} AND n.memory_type = 'episode' "
    "AND n.source_session_id <> '' AND n.source_session_id = c.source_session_id "
    "AND (n.occurred_at, n.source_sequence) {op} (c.occurred_at, c.source_sequence) "
    "ORDER BY n.occurred_at {order}, n.source_sequence {order} LIMIT 1)"
)

# BM25 of one tsvector column against the query's lexemes and their IDFs, in SQL (k1, b as above). Only the
# query's lexemes are unnested: setweight marks them 'A' and ts_filter keeps them (the columns carry no
# weights of their own, all positions are 'D'), not every lexeme of the vector. Both columns for 160 episodes
# whose context_vector holds 16 lexemes: 2.4 -> 1.7 ms, identical values (longer vectors gain more).
_BM25_SQL = (
    "(SELECT coalesce(sum(w.idf * t.tf * {k1_plus_1} / (t.tf + {k1} * (1 - {b} + {b} * "
    "length(m.{column}) / %({average})s))), 0) "
    "FROM unnest(ts_filter(setweight(m.{column}, 'A', %(lexemes)s::text[]), '{{a}}')) u "
    "JOIN unnest(%(lexemes)s::text[], %({idfs})s::float8[]) AS w(lexeme, idf) "
    "ON w.lexeme = u.lexeme CROSS JOIN LATERAL (SELECT coalesce(array_length(u.positions, 1), 1) AS tf) t)"
)

# the columns of a memory the read path hands out, in RetrievedMemory order (times as epoch microseconds and
# days since the last access: no datetime parsing per candidate)
_MEMORY_COLUMNS = (
    "m.id, m.memory_type, m.content, m.importance, "
    "(extract(epoch FROM m.occurred_at) * 1000000)::bigint, m.is_compressed, m.source_message_ids, "
    "m.access_count, extract(epoch FROM (%(now)s - m.accessed_at)) / 86400.0, m.outdated_by_id IS NOT NULL"
)


def _retrieved(row: Sequence[Any]) -> RetrievedMemory:
    return RetrievedMemory(
        pk=row[0],
        memory_type=row[1],
        content=row[2],
        importance=row[3],
        occurred_at=_EPOCH + timedelta(microseconds=row[4]),
        is_compressed=row[5],
        source_message_ids=tuple(row[6] or ()),
        outdated=bool(row[9]),
    )


@dataclass(frozen=True)
class _Candidate:
    memory: RetrievedMemory
    access_count: int
    days_since_access: float
    found_by: tuple[str, ...]
    session: str
    is_question: bool
    cosine: float
    context_cosine: float
    search_length: int
    bm25: float
    context_bm25: float
    matched_entity_ids: tuple[Any, ...]
    speaker: str
    index_terms: str
    chunks: int = 1  # how many chunks its source message was split into (ingest; 1: not split)


def _candidates(
    scope: Scope,
    *,
    vector: np.ndarray,
    lexemes: list[str],
    stats: Stats,
    entities: list[EntityRef],
    now: datetime,
    windows: Sequence[time_window.TimeWindow] = (),
) -> list[_Candidate]:
    """One statement: the keyword, entity and vector candidates, the turns just before and after each
    candidate episode in its conversation (two LATERAL probes of memory_session_turn_idx per candidate),
    and the features and read columns of all of them."""
    scope_sql, params = scope.sql()
    neighbour_scope, _ = scope.sql(alias="n", owner=False)  # the owner comes from the candidate (_NEIGHBOUR_TURN)
    vector_text = vector_literal(vector)
    params |= {
        "now": now,
        "vector": vector_text,
        "lexemes": lexemes,
        "search_idfs": [idf(stats.search_df.get(lexeme, 0), stats.total) for lexeme in lexemes],
        "context_idfs": [idf(stats.context_df.get(lexeme, 0), stats.total) for lexeme in lexemes],
        "search_average": stats.average_search_length or 1.0,
        "context_average": stats.average_context_length or 1.0,
        "entity_ids": [entity.id for entity in entities],
    }
    sources: list[str] = []
    ctes: list[str] = []
    selective = _selective(lexemes, stats)
    if selective and KEYWORD_CANDIDATES > 0:
        # ranked by the IDF of the query words each match holds (an IDF-weighted coordination level: BM25
        # without term frequency); ts_rank_cd ignored IDF and let a speaker's name crowd out the rare words.
        # Matches of the same words tie: the one closer to the query in meaning goes first (by id, a random
        # UUID, before: LoCoMo R@10 0.7988 -> 0.8000 on the same ingest, both halves up; the keyword source
        # +0.2 ms p50 on LoCoMo contacts, +0.01 ms at 100k where few memories match)
        terms = []
        for index, (quoted, weight) in enumerate(zip(quoted_lexemes(lexemes), params["search_idfs"], strict=True)):
            params[f"term_{index}"] = quoted
            params[f"term_idf_{index}"] = weight
            terms.append(f"(m.search_vector @@ %(term_{index})s::tsquery)::int * %(term_idf_{index})s")
        params |= {"keyword_query": " | ".join(quoted_lexemes(selective)), "keyword_limit": KEYWORD_CANDIDATES}
        unowned_sql, _ = scope.sql(owner=False)
        ctes.append(
            f"keyword AS (SELECT m.id FROM memories_memory m WHERE {unowned_sql} "
            f"AND {scope.matching('%(keyword_query)s::tsquery')} "
            f"ORDER BY {' + '.join(terms)} DESC, m.embedding <=> %(vector)s::halfvec, m.id "
            "LIMIT %(keyword_limit)s)"
        )
        sources.append(f"SELECT id, {_SOURCE_BITS['keyword']} AS bit FROM keyword")
    if entities and ENTITY_CANDIDATES > 0:
        params["entity_limit"] = ENTITY_CANDIDATES
        ctes.append(
            "entity AS (SELECT me.memory_id AS id FROM memories_memoryentity me "
            "JOIN memories_memory m ON m.id = me.memory_id "
            f"WHERE me.entity_id = ANY(%(entity_ids)s::uuid[]) AND {scope_sql} "
            "GROUP BY me.memory_id, m.importance ORDER BY m.importance DESC, me.memory_id LIMIT %(entity_limit)s)"
        )
        sources.append(f"SELECT id, {_SOURCE_BITS['entity']} AS bit FROM entity")
    if VECTOR_CANDIDATES > 0:
        params["vector_limit"] = VECTOR_CANDIDATES
        ctes.append(
            f"vector AS (SELECT m.id FROM memories_memory m WHERE {scope_sql} AND m.embedding IS NOT NULL "
            "ORDER BY m.embedding <=> %(vector)s::halfvec LIMIT %(vector_limit)s)"
        )
        sources.append(f"SELECT id, {_SOURCE_BITS['vector']} AS bit FROM vector")
    bounded = [window for window in windows if (window.end - window.start) <= MAX_TIME_SOURCE_WINDOW]
    if bounded and TIME_CANDIDATES > 0:
        # the memories said inside the windows the query names, closest in meaning first (the index on the
        # scope's event times finds them; an open window, "before 2023", is only a signal)
        # (each window's latest TIME_ROW_BUDGET, then the closest in meaning of all of them)
        windowed = []
        for index, window in enumerate(bounded):
            params[f"window_start_{index}"], params[f"window_end_{index}"] = window.start, window.end
            windowed.append(
                f"(SELECT m.id, m.embedding <=> %(vector)s::halfvec AS distance FROM memories_memory m "
                f"WHERE {scope_sql} AND m.occurred_at >= %(window_start_{index})s "
                f"AND m.occurred_at < %(window_end_{index})s AND m.embedding IS NOT NULL "
                "ORDER BY m.occurred_at DESC LIMIT %(time_rows)s)"
            )
        params |= {"time_limit": TIME_CANDIDATES, "time_rows": TIME_ROW_BUDGET}
        ctes.append(
            f"time AS (SELECT w.id FROM ({' UNION ALL '.join(windowed)}) w "
            "GROUP BY w.id ORDER BY min(w.distance), w.id LIMIT %(time_limit)s)"
        )
        sources.append(f"SELECT id, {_SOURCE_BITS['time']} AS bit FROM time")
    if not sources:
        return []
    bm25_columns = {"k1": BM25_K1, "k1_plus_1": BM25_K1 + 1, "b": BM25_B}
    search_bm25 = _BM25_SQL.format(column="search_vector", average="search_average", idfs="search_idfs", **bm25_columns)
    context_bm25 = _BM25_SQL.format(
        column="context_vector", average="context_average", idfs="context_idfs", **bm25_columns
    )
    sql = (
        "WITH "
        + ", ".join(ctes)
        + ", seed AS (SELECT id, bit_or(bit) AS found FROM ("
        + " UNION ALL ".join(sources)
        + ") s GROUP BY id), "
        "neighbour AS (SELECT x.id FROM memories_memory c CROSS JOIN LATERAL ("
        f"{_NEIGHBOUR_TURN.format(scope=neighbour_scope, op='<', order='DESC')} UNION ALL "
        f"{_NEIGHBOUR_TURN.format(scope=neighbour_scope, op='>', order='ASC')}) x "
        "WHERE c.id IN (SELECT id FROM seed) AND c.memory_type = 'episode' AND c.source_session_id <> ''), "
        "candidate AS (SELECT id, found FROM seed UNION ALL "
        f"SELECT DISTINCT id, {_SOURCE_BITS['neighbour']} FROM neighbour WHERE id NOT IN (SELECT id FROM seed)) "
        f"SELECT {_MEMORY_COLUMNS}, k.found, m.source_session_id, right(rtrim(m.content), 1) = '?', "
        "coalesce(1 - (m.embedding <=> %(vector)s::halfvec), 0), "
        "coalesce(1 - (m.context_embedding <=> %(vector)s::halfvec), 1 - (m.embedding <=> %(vector)s::halfvec), 0), "
        "coalesce(length(m.search_vector), 0), "
        f"{search_bm25}, {context_bm25}, "
        "ARRAY(SELECT me.entity_id FROM memories_memoryentity me "
        "      WHERE me.memory_id = m.id AND me.entity_id = ANY(%(entity_ids)s::uuid[])), "
        "coalesce(m.metadata->>'speaker', ''), m.index_terms, "
        "CASE WHEN jsonb_typeof(m.metadata->'chunk') = 'number' THEN m.metadata->>'chunk' END, "
        "CASE WHEN jsonb_typeof(m.metadata->'chunks') = 'number' THEN m.metadata->>'chunks' END "
        "FROM candidate k JOIN memories_memory m ON m.id = k.id"
    )
    # a large scope searches the vector index wider (retrieval/vector_effort.py: its recall, and the plans)
    with bound_cursor() as cursor, vector_effort.searching_at(cursor, vector_effort.ef_search_for(stats.total)):
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        _Candidate(
            memory=_retrieved(row),
            access_count=row[7],
            days_since_access=float(row[8]),
            found_by=tuple(source for source in SOURCES if row[10] & _SOURCE_BITS[source]),
            session=row[11],
            is_question=bool(row[12]),
            cosine=float(row[13]),
            context_cosine=float(row[14]),
            search_length=row[15],
            bm25=float(row[16]),
            context_bm25=float(row[17]),
            matched_entity_ids=tuple(row[18]),
            speaker=row[19],
            index_terms=row[20] or "",
            chunks=chunk_share.split_into(row[21], row[22]),
        )
        for row in rows
    ]


def embed_query(query: str, *, tenant: Tenant, contact: Contact | None) -> np.ndarray:
    """The query's embedding (cached in the scope's namespace). Computed before the search's SQL, not beside
    it: on two cores a concurrent embedding only competes with PostgreSQL for CPU (measured: p95 of GET
    /context 36–38 ms sequential, 42–49 ms overlapped; docs/benchmarks.md)."""
    scope = cache_scope(tenant_id=tenant.pk, contact_id=contact.pk if contact is not None else None)
    with phase("embedding"):
        return get_embedder().embed_batch([query], scopes=scope)[0]


@phase("retrieval")  # Server-Timing: the search's own Python work (its SQL and embedding are phases of their own)
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
    key_prefix: str | None = None,
    reference_time: datetime | None = None,
    ranker: ranking.Ranker | Literal["hand"] | None = None,
) -> SearchResult:
    """Rank the scope's current memories for `query`. Reads only: access counts are recorded by the caller
    through `access_record` (batched, off the request path). `key_prefix` narrows the scope to the keyed
    records (memory_put) whose key starts with it. `reference_time` is the moment the query's time
    expressions ("last week", "on Friday") count from: the caller's `as_of`, else now. `ranker`: None for
    the one `ranker_for` picks, "hand" for the hand weights, or a given one (the fitter's)."""
    now = now or timezone.now()
    reference_time = reference_time or now
    weights = weights_for(tenant=tenant, is_tenant_scope=contact is None)
    fitted = ranker_for(tenant=tenant, is_tenant_scope=contact is None) if ranker is None else ranker
    if not query.strip():
        scope = Scope(tenant, contact, tuple(memory_types), include_compressed, key_prefix)
        return _without_query(scope=scope, weights=weights, top_k=top_k, now=now)
    # A query searches compressed episodes too. Compression (lifecycle/compression.py) sums old sessions and
    # themes up in summaries and patterns, which replace the episodes where no query asks for them (a
    # context without one, the stage's listing); but "what did she do on 8 May?" is answered by the episode,
    # not by a three-sentence summary of the month. Excluded, as the seed spec had it, every question about
    # a session older than the newest ten failed: LoCoMo R@10 0.81 -> 0.09 once the 6-hourly job had run.
    scope = Scope(tenant, contact, tuple(memory_types), include_compressed=True, key_prefix=key_prefix)
    terms = query_terms(scope, query)
    speakers = {item.entity.slug: item for item in terms.named if item.is_speaker}
    # a question about one speaker is embedded as they would say it: "What did Caroline paint?" is closest
    # to her "I painted a sunrise", not to every turn that greets her by name (signals/speaker.py)
    perspective = (
        speaker_signal.perspective(query, names=surface_names(query, next(iter(speakers.values()))))
        if len(speakers) == 1
        else query
    )
    vector = query_vector if query_vector is not None else embed_query(perspective, tenant=tenant, contact=contact)
    windows = time_window.windows(query, reference=reference_time)
    stats = scope_stats(scope, terms.lexemes)
    query_entities = discriminating(terms.named, total=stats.total)
    candidates = _candidates(
        scope,
        vector=vector,
        lexemes=terms.lexemes,
        stats=stats,
        entities=query_entities,
        now=now,
        windows=windows,
    )
    if not candidates:
        return SearchResult(results=[], query_entities=query_entities, candidates=0, time_windows=windows)
    features = [
        relevance_rules.Features(
            cosine=candidate.cosine,
            context_cosine=candidate.context_cosine,
            bm25=candidate.bm25,
            context_bm25=candidate.context_bm25,
            session=candidate.session,
            lexemes=candidate.search_length,
            is_question=candidate.is_question,
        )
        for candidate in candidates
    ]
    normalized = relevance_rules.normalized(features)
    similarity = relevance_rules.similarities(features, normalized)
    keys = {entity.id: entity.key for entity in query_entities}
    entity_weights = {
        item.entity.id: specificity.weight(linked=item.linked, total=stats.total)
        for item in terms.named
        if item.entity.id in keys
    }
    outside_windows = time_window.miss_factor(windows)
    named_speakers = set(speakers)
    # First each candidate's matches and features, then its signals and score, each ScoredMemory built once. With
    # the fitted ranker its relevance (min-max of its linear score over the candidates) is the similarity signal,
    # the usage signals count in proportion to it (scoring.ranked_score); a memory outside every window the query
    # names keeps its `window_factor` of its score, as with the hand weights (a soft filter: few questions of the
    # development sets name a time, too few to learn it from). Building each with the hand score and replacing it
    # (two dataclasses.replace per candidate), and every candidate's contributions when only the results handed
    # out show them, took a third of the search's own Python (docs/benchmarks.md, "Session 19").
    parts = []
    for candidate, candidate_terms in zip(candidates, normalized, strict=True):
        matched = sorted(candidate.matched_entity_ids, key=lambda entity_id: keys[entity_id])
        speaker_match = speaker_signal.match(memory_speaker=candidate.speaker, named_speakers=named_speakers)
        window = (
            time_window.matches(windows, [candidate.memory.occurred_at, *time_window.named_days(candidate.index_terms)])
            if windows
            else None
        )
        entity_match = specificity.combined(entity_weights[entity_id] for entity_id in matched)
        time_match = window.specificity if window is not None else 0.0
        outside_window = bool(windows) and window is None
        row = ranking.candidate_features(
            candidate_terms,
            cosine=candidate.cosine,
            context_cosine=candidate.context_cosine,
            entity_match=entity_match,
            speaker_match=speaker_match,
            time_match=time_match,
            outside_window=outside_window,
            importance=candidate.memory.importance,
        )
        parts.append((candidate, matched, speaker_match, window, entity_match, time_match, outside_window, row))
    relevance = (
        ranking.relevances(fitted, [part[-1] for part in parts]) if isinstance(fitted, ranking.Ranker) else similarity
    )
    ranker_version = fitted.version if isinstance(fitted, ranking.Ranker) else HAND
    scored: list[ScoredMemory] = []
    for value, (candidate, matched, speaker_match, window, entity_match, time_match, outside_window, row) in zip(
        relevance, parts, strict=True
    ):
        signals = scoring.Signals(
            similarity=value,
            recency=scoring.recency(days_since_access=max(0.0, candidate.days_since_access)),
            importance=candidate.memory.importance,
            access_frequency=scoring.access_frequency(access_count=candidate.access_count),
            entity_match=entity_match,
            speaker_match=speaker_match,
            time_match=time_match,
        )
        window_factor = outside_windows if outside_window else 1.0
        if ranker_version == HAND:
            score = scoring.retrieval_score(signals, weights, outdated=candidate.memory.outdated)
        else:
            outdated = candidate.memory.outdated
            score = scoring.ranked_score(relevance=value, signals=signals, weights=weights, outdated=outdated)
        chunk_factor = chunk_share.factor(candidate.chunks)
        score = factored(score, window_factor=window_factor, chunk_factor=chunk_factor)
        scored.append(
            ScoredMemory(
                memory=candidate.memory,
                score=score,
                signals=signals,
                cosine=candidate.cosine,
                bm25=candidate.bm25,
                found_by=candidate.found_by,
                matched_entities=tuple(keys[entity_id] for entity_id in matched),
                context_cosine=candidate.context_cosine,
                entity_weights=tuple(entity_weights[entity_id] for entity_id in matched),
                speaker=candidate.speaker if speaker_match else "",
                time_window=window,
                window_factor=window_factor,
                chunk_factor=chunk_factor,
                features=row,
                ranker_version=ranker_version,
            )
        )
    scored.sort(key=rank_key)
    scored = reranked(query, scored, weights)
    many = diversity.asks_for_many(query)
    if many:
        sessions = {candidate.memory.pk: candidate.session for candidate in candidates}
        scored = [
            dataclasses.replace(placed.item, diversity_penalty=placed.penalty)
            for placed in diversity.diversified(
                scored,
                score=lambda item: item.score,
                session=lambda item: sessions.get(item.memory.pk, ""),
                text=lambda item: item.memory.content,
            )
        ]
    results = scored[:top_k]
    if isinstance(fitted, ranking.Ranker):  # what each feature added, for the explanation of what is handed out
        results = [dataclasses.replace(item, contributions=fitted.contributions(item.features)) for item in results]
    return SearchResult(
        results=results,
        query_entities=query_entities,
        candidates=len(candidates),
        time_windows=windows,
        speakers=tuple(sorted(speakers)),
        diversified=many,
    )


def memory_entities(*, memory_ids: Sequence[Any]) -> dict[Any, list[EntityRef]]:
    """The entities linked to each of `memory_ids` (ids the caller's scoped search returned), one statement."""
    linked: dict[Any, list[EntityRef]] = {memory_id: [] for memory_id in memory_ids}
    if not memory_ids:
        return linked
    with bound_cursor() as cursor:
        cursor.execute(
            "SELECT me.memory_id, e.id, e.entity_type, e.slug, e.display_name, e.metadata "
            "FROM memories_memoryentity me JOIN entities_entity e ON e.id = me.entity_id "
            "WHERE me.memory_id = ANY(%s::uuid[]) ORDER BY e.entity_type, e.slug",
            [list(memory_ids)],
        )
        for memory_id, entity_id, entity_type, slug, display_name, metadata in cursor.fetchall():
            linked[memory_id].append(
                EntityRef(
                    id=entity_id,
                    entity_type=entity_type,
                    slug=slug,
                    display_name=display_name,
                    metadata=json.loads(metadata) if isinstance(metadata, str) else (metadata or {}),
                )
            )
    return linked


def last_episode(*, tenant: Tenant, contact: Contact | None, now: datetime) -> list[ScoredMemory]:
    """The scope's most recent current episode (what the contact last talked about), one statement through
    memory_scope_type_idx; [] when there is none."""
    scope_sql, params = Scope(tenant, contact, (scoring.EPISODE,), False).sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories_memory m WHERE {scope_sql} "
            "ORDER BY m.occurred_at DESC, m.source_sequence DESC NULLS LAST LIMIT 1",
            {**params, "now": now},
        )
        row = cursor.fetchone()
    if row is None:
        return []
    signals = scoring.Signals(similarity=0.0, recency=1.0, importance=row[3], access_frequency=0.0, entity_match=0.0)
    return [ScoredMemory(memory=_retrieved(row), score=0.0, signals=signals, cosine=0.0, bm25=0.0, found_by=("last",))]


def _without_query(*, scope: Scope, weights: scoring.Weights, top_k: int, now: datetime) -> SearchResult:
    """No query (a first message, a context preview without text): rank by importance, recency and use."""
    scope_sql, params = scope.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories_memory m WHERE {scope_sql} "
            "ORDER BY m.importance DESC, m.accessed_at DESC LIMIT %(limit)s",
            {**params, "now": now, "limit": max(top_k, VECTOR_CANDIDATES)},
        )
        rows = cursor.fetchall()
    results = []
    for row in rows:
        signals = scoring.Signals(
            similarity=0.0,
            recency=scoring.recency(days_since_access=max(0.0, float(row[8]))),
            importance=row[3],
            access_frequency=scoring.access_frequency(access_count=row[7]),
            entity_match=0.0,
        )
        results.append(
            ScoredMemory(
                memory=(memory := _retrieved(row)),
                score=scoring.retrieval_score(signals, weights, outdated=memory.outdated),
                signals=signals,
                cosine=0.0,
                bm25=0.0,
                found_by=("importance",),
            )
        )
    results.sort(key=lambda item: (-item.score, str(item.memory.pk)))
    return SearchResult(results=results[:top_k], candidates=len(rows))
