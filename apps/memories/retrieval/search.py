"""Multi-signal hybrid retrieval (read path; nothing is written on the request path): the assembly.

Three round trips, whatever the scope's size (docs/retrieval.md), each in the module of its step:

1. `query.query_terms` — one statement: the query's lexemes (PostgreSQL's own `english` parser and stemmer),
   with the other forms of its irregular verbs ("go": "went", "gone"; inflections.py) and the other spellings
   of its words ("birthday": "bday"; spellings.py), and the scope's entities the query names, each with a
   capped count of its memory links.
2. `query.scope_stats` — document frequencies for BM25: the scope's lexicon in Redis (one HMGET), or counted
   exactly in SQL for a small scope.
3. `candidates.fetch` — one statement: candidates from the vector, keyword, entity, time, condition,
   preference and background sources, unioned so a keyword-only or entity-only hit is never dropped, plus the
   turns next to each candidate episode (neighbour); and
   for every one of them the features (cosine and BM25 computed in PostgreSQL: no vector or tsvector crosses
   the wire) and the few columns a prompt or an API row needs.

Every candidate's features (relevance.normalized's terms, the raw cosines, entity/speaker/time matches,
importance) are scored by the fitted ranker (ranker.py, weights from ranker_weights.json), the usage signals
counted in proportion to its relevance; without one, or for a tenant with its own weights, the hand formula:
`relevance.similarities` turns cosine, BM25 and the context/session/length priors into the similarity signal
and the score is the weighted sum of similarity, recency, importance, access frequency, entity, speaker and
time match
(weights per scope, per tenant). Each signal is computed in its own module (signals/, registered in
signals/__init__.py). Either way three rules multiply the score after it (rerank.factored): a memory outside
every time window the query names (signals/time_window.miss_factor), one of the chunks of a long message
(signals/chunk_share.factor), and a pattern or a session's summary where no summary is asked for
(signals/pattern_share.factor); then the follow-up gains, the condition and advice raises, the optional
cross-encoder (rerank.reranked) and, for a list question, the diversity stage. Results are light
`types.RetrievedMemory` rows, never model objects; the entities of the memories a caller keeps come from
`memory_entities`, one statement for all of them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
from django.db import connection
from django.utils import timezone

from apps.contacts.models import Contact
from apps.core.embeddings import cache_scope, get_embedder
from apps.core.rows import bound_cursor
from apps.core.timing import phase
from apps.memories import scoring
from apps.memories.retrieval import anchors, candidates
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval import relevance as relevance_rules
from apps.memories.retrieval.query import Scope, discriminating, query_terms, scope_stats, surface_names
from apps.memories.retrieval.rerank import RERANK_TOP, factored, rank_key_of, reranked
from apps.memories.retrieval.signals import (
    advice,
    chunk_share,
    condition,
    diversity,
    follow_up,
    pattern_share,
    specificity,
    time_window,
)
from apps.memories.retrieval.signals import speaker as speaker_signal
from apps.memories.retrieval.types import HAND, Background, EntityRef, ScoredMemory, SearchResult
from apps.tenants.models import Tenant

# how many of the ranked candidates become ScoredMemory rows besides the results: the depth the cross-encoder
# (rerank.RERANK_TOP) and the diversity stage (diversity.RERANKED) re-order
HEAD = max(RERANK_TOP, diversity.RERANKED)


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
    background: Background | None = None,
) -> SearchResult:
    """Rank the scope's current memories for `query`. Reads only: access counts are recorded by the caller
    through `access_record` (batched, off the request path). `key_prefix` narrows the scope to the keyed
    records (memory_put) whose key starts with it. `reference_time` is the moment the query's time
    expressions ("last week", "on Friday") count from: the caller's `as_of`, else now. `ranker`: None for
    the one `ranker_for` picks, "hand" for the hand weights, or a given one (the fitter's). `background`: also
    rank the scope's best memories of some types, found by a source of their own (`SearchResult.background`:
    GET /context's stage density beside the query's best matches, one search instead of two)."""
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
    # a question about the speakers is embedded as they would say it: "What did Caroline paint?" is closest to
    # her "I painted a sunrise", "What did Jon say about Gina's store?" to his "your store looks great", not to
    # every turn that greets them by name (signals/speaker.py)
    perspective = speaker_signal.perspective_for(query, [surface_names(query, item) for item in speakers.values()])
    vector = query_vector if query_vector is not None else embed_query(perspective, tenant=tenant, contact=contact)
    windows = time_window.windows(query, reference=reference_time)
    if not windows:
        # "the day after the concert": the day of the event the question names, from the memories (anchors.py)
        windows = anchors.windows(scope, time_window.event_anchors(query))
    stats = scope_stats(scope, terms.lexemes, groups=terms.groups)
    query_entities = discriminating(terms.named, total=stats.total)
    # a request for advice reads the asker's preferences closest to it too (signals/advice.py)
    advice_request = advice.asks_for_advice(query)
    many = diversity.asks_for_many(query)
    found = candidates.fetch(
        scope,
        vector=vector,
        lexemes=terms.lexemes,
        stats=stats,
        entities=query_entities,
        now=now,
        windows=windows,
        preferences=advice_request,
        background=background,
    )
    # a summary covers the long messages and the patterns too: no chunk share, no pattern factor
    summary = chunk_share.asks_for_summary(query)
    if not found:
        return SearchResult(
            results=[],
            query_entities=query_entities,
            candidates=0,
            time_windows=windows,
            summary=summary,
            verbs=tuple(terms.verbs),
            spellings=tuple(terms.spellings),
        )
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
        for candidate in found
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
    # First each candidate's matches and features, then its signals and score. With the fitted ranker its relevance
    # (min-max of its linear score over the candidates) is the similarity signal, the usage signals count in
    # proportion to it (scoring.ranked_score); a memory outside every window the query names keeps its
    # `window_factor` of its score, as with the hand weights (a soft filter: few questions of the development sets
    # name a time, too few to learn it from).
    parts = []
    for candidate, candidate_terms in zip(found, normalized, strict=True):
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
    # Every candidate's signals and score, then the order (rank_key's: score, similarity, id). ScoredMemory rows are
    # built for the head only (the results, and the depth the reranker and the diversity stage re-order), each
    # once (docs/benchmarks.md, "Session 24"); what each feature added (the fitted ranker's contributions) is
    # computed only when an explanation asks for it (ScoredMemory.contributions).
    signals_of: list[scoring.Signals] = []
    scores: list[float] = []
    factors: list[tuple[float, float, float]] = []  # each candidate's (window_factor, chunk_factor, pattern_factor)
    for value, (candidate, _, speaker_match, _, entity_match, time_match, outside_window, _) in zip(
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
        if ranker_version == HAND:
            score = scoring.retrieval_score(signals, weights, outdated=candidate.memory.outdated)
        else:
            outdated = candidate.memory.outdated
            score = scoring.ranked_score(relevance=value, signals=signals, weights=weights, outdated=outdated)
        window_factor = outside_windows if outside_window else 1.0
        chunk_factor = chunk_share.factor(candidate.chunks, summary=summary)
        pattern_factor = pattern_share.factor(
            candidate.memory.memory_type, summary=summary, session_summary=candidate.sums_up_session
        )
        score = factored(score, window_factor=window_factor, chunk_factor=chunk_factor, pattern_factor=pattern_factor)
        signals_of.append(signals)
        scores.append(score)
        factors.append((window_factor, chunk_factor, pattern_factor))
    # an episode that follows a higher turn of its conversation gains a share of the difference, unless the
    # question asks for a list (signals/follow_up.py)
    places = [
        (candidate.session, (candidate.memory.occurred_at, candidate.sequence))
        if candidate.memory.memory_type == scoring.EPISODE and candidate.session and candidate.sequence is not None
        else None
        for candidate in found
    ]
    follow = follow_up.gains(scores, places, [candidate.found_by != ("neighbour",) for candidate in found], many=many)
    scores = [score + gain for score, gain in zip(scores, follow, strict=True)]
    # a standing instruction whose condition the query meets goes first (signals/condition.py)
    met = [condition.is_met(candidate.condition, candidate.context_cosine) for candidate in found]
    # ... and so do the asker's preferences that fit a request for advice (signals/advice.py)
    fits = advice.fitting(
        [candidate.cosine for candidate in found],
        [candidate.memory.memory_type == "preference" and not candidate.condition for candidate in found],
        advice=advice_request,
    )
    scores = condition.raised(scores, [is_met or fit for is_met, fit in zip(met, fits, strict=True)])
    order = sorted(range(len(parts)), key=lambda index: rank_key_of(scores[index], relevance[index], found[index]))

    def scored_at(index: int) -> ScoredMemory:
        candidate, matched, speaker_match, window, _, _, _, row = parts[index]
        window_factor, chunk_factor, pattern_factor = factors[index]
        return ScoredMemory(
            memory=candidate.memory,
            score=scores[index],
            signals=signals_of[index],
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
            pattern_factor=pattern_factor,
            condition=candidate.condition,
            condition_met=met[index],
            advice_fit=fits[index],
            follow_up=round(follow[index], 4),
            features=row,
            ranker_version=ranker_version,
            ranker=fitted if isinstance(fitted, ranking.Ranker) else None,
        )

    head = {index: scored_at(index) for index in order[: max(top_k, HEAD)]}
    scored = list(head.values())
    # the caller's background (GET /context's stage density): the best candidates it admits, in the same order
    behind: list[ScoredMemory] = []
    if background is not None:
        admitted = [index for index in order if background.admits(found[index].memory)][: background.limit]
        behind = [head[index] if index in head else scored_at(index) for index in admitted]
    scored = reranked(query, scored, weights)
    if many:
        sessions = {candidate.memory.pk: candidate.session for candidate in found}
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
    return SearchResult(
        results=results,
        query_entities=query_entities,
        candidates=len(found),
        time_windows=windows,
        speakers=tuple(sorted(speakers)),
        embedded_as=perspective,
        diversified=many,
        summary=summary,
        advice=advice_request,
        verbs=tuple(terms.verbs),
        spellings=tuple(terms.spellings),
        background=behind,
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
            f"SELECT {candidates.MEMORY_COLUMNS} FROM memories_memory m WHERE {scope_sql} "
            "ORDER BY m.occurred_at DESC, m.source_sequence DESC NULLS LAST LIMIT 1",
            {**params, "now": now},
        )
        row = cursor.fetchone()
    if row is None:
        return []
    signals = scoring.Signals(similarity=0.0, recency=1.0, importance=row[3], access_frequency=0.0, entity_match=0.0)
    return [
        ScoredMemory(
            memory=candidates.retrieved(row), score=0.0, signals=signals, cosine=0.0, bm25=0.0, found_by=("last",)
        )
    ]


def _without_query(*, scope: Scope, weights: scoring.Weights, top_k: int, now: datetime) -> SearchResult:
    """No query (a first message, a context preview without text): rank by importance, recency and use."""
    scope_sql, params = scope.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {candidates.MEMORY_COLUMNS} FROM memories_memory m WHERE {scope_sql} "
            "ORDER BY m.importance DESC, m.accessed_at DESC LIMIT %(limit)s",
            {**params, "now": now, "limit": max(top_k, candidates.VECTOR_CANDIDATES)},
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
                memory=(memory := candidates.retrieved(row)),
                score=scoring.retrieval_score(signals, weights, outdated=memory.outdated),
                signals=signals,
                cosine=0.0,
                bm25=0.0,
                found_by=("importance",),
            )
        )
    results.sort(key=lambda item: (-item.score, str(item.memory.pk)))
    return SearchResult(results=results[:top_k], candidates=len(rows))
