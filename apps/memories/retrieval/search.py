"""Multi-signal hybrid retrieval (read path; nothing is written on the request path).

Three round trips, whatever the scope's size (docs/retrieval.md):

1. `_query_terms` — one statement: the query's lexemes (PostgreSQL's own `english` parser and stemmer) and
   the scope's entities the query names, each with a capped count of its memory links.
2. `_scope_stats` — document frequencies for BM25: the scope's lexicon in Redis (one HMGET), or counted
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
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import numpy as np
from django.db import connection
from django.utils import timezone
from django.utils.text import slugify

from apps.contacts.models import Contact
from apps.core.embeddings import cache_scope, get_embedder, vector_literal
from apps.core.rows import bound_cursor
from apps.core.timing import phase
from apps.memories import scoring
from apps.memories.models.memory import scope_token
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval import relevance as relevance_rules
from apps.memories.retrieval import vector_effort
from apps.memories.retrieval.lexicon import (
    LEXICON_FROM,
    current_scope_sql,
    scope_lexicon_get,
    scope_lexicon_refresh_queue,
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
# An entity named in the query that is linked to more than a quarter of a scope of 40+ memories, or to
# UBIQUITY_LINK_CAP of them (where counting stops), is ignored like a stop word: the contact's own name, the
# two speakers of a long chat, a friend named in hundreds of memories. The cap bounds the heap visits of the
# link count and of the entity source (top 50 by importance of all linked memories). 300 against 2,000, one
# A/B run at 100k (entities linked as ingest links them): GET /context p50 27.1 -> 20.3 ms, p95 34.0 -> 25.0
# ms. LoCoMo cannot change: its scopes hold < 1,200 memories, where 300 links are over a quarter anyway.
UBIQUITOUS_ENTITY_SHARE = 0.25
UBIQUITY_MIN_SCOPE = 40
UBIQUITY_LINK_CAP = 300

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


_WORD = re.compile(r"[\w'-]+", re.UNICODE)


def query_slugs(query: str) -> set[str]:
    """Slugs an entity named in the query could have: every word and every pair of adjacent words."""
    words = [re.sub(r"['’]s$", "", word).strip("'-") for word in _WORD.findall(query.replace("’", "'"))]
    words = [word for word in words if len(word) > 1]
    slugs = {slugify(word) for word in words}
    slugs |= {slugify(f"{first} {second}") for first, second in itertools.pairwise(words)}
    return {slug for slug in slugs if slug}


idf = specificity.idf  # BM25's inverse document frequency, shared with the entity specificity


@dataclass(frozen=True)
class _Scope:
    tenant: Tenant
    contact: Contact | None
    memory_types: tuple[str, ...]
    include_compressed: bool
    key_prefix: str | None = None  # None: every memory; a string: only keyed records whose key starts with it

    @property
    def contact_id(self) -> Any | None:
        return self.contact.pk if self.contact is not None else None

    def sql(self, alias: str = "m", *, owner: bool = True) -> tuple[str, dict[str, Any]]:
        """The scope as SQL with named parameters (one set of values however often a statement repeats it);
        `owner=False` for a statement whose full-text match names the scope itself (`matching`)."""
        sql, params = current_scope_sql(tenant_id=self.tenant.pk, contact_id=self.contact_id, alias=alias, owner=owner)
        if not self.include_compressed:
            sql += f" AND NOT {alias}.is_compressed"
        if self.memory_types:
            sql += f" AND {alias}.memory_type = ANY(%(scope_types)s)"
            params["scope_types"] = list(self.memory_types)
        if self.key_prefix is not None:
            sql += f" AND {alias}.key <> '' AND starts_with({alias}.key, %(scope_key_prefix)s)"
            params["scope_key_prefix"] = self.key_prefix
        params["scope_token"] = scope_token(tenant_id=self.tenant.pk, contact_id=self.contact_id)
        return sql, params

    def matching(self, tsquery: str) -> str:
        """Memory `m` belongs to this scope and its words match `tsquery` (SQL of a tsquery): one scan of the
        scoped full-text index, the scope's own token (`%(scope_token)s`, in `sql()`'s parameters) AND-ed
        with the words."""
        return f"m.scoped_search_vector @@ (%(scope_token)s::tsquery && {tsquery})"


@dataclass(frozen=True)
class _Stats:
    total: int
    average_search_length: float
    average_context_length: float
    search_df: dict[str, int]
    context_df: dict[str, int]


@dataclass(frozen=True)
class _NamedEntity:
    entity: EntityRef
    linked: int  # memory links (to the scope's memories of the searched types), counted up to UBIQUITY_LINK_CAP
    is_speaker: bool = False  # a speaker of the scope's conversations (ingest marks their entity)
    aliases: tuple[str, ...] = ()  # the other names it goes by (slugs), one of which the query may use


@dataclass(frozen=True)
class _Terms:
    lexemes: list[str]
    named: list[_NamedEntity]


def _query_terms(scope: _Scope, query: str) -> _Terms:
    """The query's lexemes and the scope's entities it names (every word and word pair is a possible slug),
    each with its memory links counted up to UBIQUITY_LINK_CAP: one statement. The links are counted from
    the (entity, memory) index alone, superseded or deleted memories included: checking each linked memory
    is current was a heap visit per link (query terms 2.3 -> 0.9 ms p50 at 100k, same A/B run)."""
    scope_sql, params = scope.sql()
    contact_clause = "e.contact_id = %(scope_contact)s" if scope.contact is not None else "e.contact_id IS NULL"
    # a search restricted to some memory types counts only the links to those (a few facts among hundreds
    # of episodes must not make an entity look ubiquitous): the exact count, a heap visit per link
    current = (
        f"JOIN memories_memory m ON m.id = me.memory_id WHERE {scope_sql} AND "
        if scope.memory_types or scope.key_prefix is not None
        else "WHERE "
    )
    with bound_cursor() as cursor:
        cursor.execute(
            "SELECT q.lexemes, e.id, e.entity_type, e.slug, e.linked, e.is_speaker, e.aliases "
            "FROM (SELECT coalesce(array_agg(lexeme), '{}') AS lexemes "
            "      FROM unnest(to_tsvector('english', %(query)s))) q "
            "LEFT JOIN LATERAL (SELECT e.id, e.entity_type, e.slug, "
            "  (SELECT count(*) FROM (SELECT 1 FROM memories_memoryentity me "
            f"     {current}me.entity_id = e.id LIMIT %(link_cap)s) l) AS linked, "
            "  coalesce(e.metadata->>'role', '') = 'speaker' AS is_speaker, e.aliases "
            f"  FROM entities_entity e WHERE e.tenant_id = %(scope_tenant)s AND {contact_clause} "
            "   AND (e.slug = ANY(%(slugs)s) OR e.aliases && %(slugs)s::varchar[])) e ON true",
            {**params, "query": query, "link_cap": UBIQUITY_LINK_CAP, "slugs": sorted(query_slugs(query))},
        )
        rows = cursor.fetchall()
    lexemes = [lexeme for lexeme in (rows[0][0] if rows else []) if lexeme]
    named = [
        _NamedEntity(
            EntityRef(id=row[1], entity_type=row[2], slug=row[3]),
            linked=int(row[4]),
            is_speaker=bool(row[5]),
            aliases=tuple(row[6] or ()),
        )
        for row in rows
        if row[1] is not None
    ]
    return _Terms(lexemes=lexemes, named=named)


def _quoted(lexemes: Sequence[str]) -> list[str]:
    # lexemes come from to_tsvector: quote each so ':' or '&' inside can never change the query
    return ["'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes]


def _scope_stats(scope: _Scope, lexemes: list[str]) -> _Stats:
    """Scope size, average tsvector lengths and the document frequency of each query lexeme: from the
    scope's lexicon when a worker has built one (retrieval.lexicon), else counted in one SQL statement."""
    lexicon = scope_lexicon_get(tenant_id=scope.tenant.pk, contact_id=scope.contact_id, lexemes=lexemes)
    if lexicon is not None:
        return _Stats(
            total=lexicon.total,
            average_search_length=lexicon.average_search_length,
            average_context_length=lexicon.average_context_length,
            search_df=lexicon.search_df,
            context_df=lexicon.context_df,
        )
    # one scan of the scope (already needed for its size and average lengths) counts every lexeme too: a
    # plain aggregate, cheap to plan, where a GIN count per lexeme cost ~1 ms of planning alone
    scope_sql, params = scope.sql()
    params |= {f"lexeme_{index}": lexeme for index, lexeme in enumerate(_quoted(lexemes))}
    filters = [
        f"count(*) FILTER (WHERE m.{column} @@ %(lexeme_{index})s::tsquery)"
        for column in ("search_vector", "context_vector")
        for index in range(len(lexemes))
    ]
    with bound_cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(m.search_vector)), 0), coalesce(avg(length(m.context_vector)), 0)"
            + "".join(f", {count}" for count in filters)
            + f" FROM memories_memory m WHERE {scope_sql}",
            params,
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


def _selective(lexemes: list[str], stats: _Stats) -> list[str]:
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


def _discriminating(named: list[_NamedEntity], *, total: int) -> list[EntityRef]:
    """Entities named in the query, minus the ubiquitous ones: like stop words, they match everything and
    tell nothing about this question."""
    if total < UBIQUITY_MIN_SCOPE:
        return [item.entity for item in named]
    return [
        item.entity
        for item in named
        if item.linked <= UBIQUITOUS_ENTITY_SHARE * total and item.linked < UBIQUITY_LINK_CAP
    ]


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
    scope: _Scope,
    *,
    vector: np.ndarray,
    lexemes: list[str],
    stats: _Stats,
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
        for index, (quoted, weight) in enumerate(zip(_quoted(lexemes), params["search_idfs"], strict=True)):
            params[f"term_{index}"] = quoted
            params[f"term_idf_{index}"] = weight
            terms.append(f"(m.search_vector @@ %(term_{index})s::tsquery)::int * %(term_idf_{index})s")
        params |= {"keyword_query": " | ".join(_quoted(selective)), "keyword_limit": KEYWORD_CANDIDATES}
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
        scope = _Scope(tenant, contact, tuple(memory_types), include_compressed, key_prefix)
        return _without_query(scope=scope, weights=weights, top_k=top_k, now=now)
    # A query searches compressed episodes too. Compression (lifecycle/compression.py) sums old sessions and
    # themes up in summaries and patterns, which replace the episodes where no query asks for them (a
    # context without one, the stage's listing); but "what did she do on 8 May?" is answered by the episode,
    # not by a three-sentence summary of the month. Excluded, as the seed spec had it, every question about
    # a session older than the newest ten failed: LoCoMo R@10 0.81 -> 0.09 once the 6-hourly job had run.
    scope = _Scope(tenant, contact, tuple(memory_types), include_compressed=True, key_prefix=key_prefix)
    terms = _query_terms(scope, query)
    speakers = {item.entity.slug: item for item in terms.named if item.is_speaker}
    # a question about one speaker is embedded as they would say it: "What did Caroline paint?" is closest
    # to her "I painted a sunrise", not to every turn that greets her by name (signals/speaker.py)
    perspective = (
        speaker_signal.perspective(query, names=_surface_names(query, next(iter(speakers.values()))))
        if len(speakers) == 1
        else query
    )
    vector = query_vector if query_vector is not None else embed_query(perspective, tenant=tenant, contact=contact)
    windows = time_window.windows(query, reference=reference_time)
    stats = _scope_stats(scope, terms.lexemes)
    query_entities = _discriminating(terms.named, total=stats.total)
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


def _surface_names(query: str, named: _NamedEntity) -> list[str]:
    """The words of `query` that name the entity: its slug or one of its aliases."""
    names = {named.entity.slug, *named.aliases}
    return [word for word in _WORD.findall(query.replace("’", "'")) if slugify(re.sub(r"['’]s$", "", word)) in names]


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
    scope_sql, params = _Scope(tenant, contact, (scoring.EPISODE,), False).sql()
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


def _without_query(*, scope: _Scope, weights: scoring.Weights, top_k: int, now: datetime) -> SearchResult:
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
