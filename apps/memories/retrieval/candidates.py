"""The candidate statement: one round trip finds a search's candidates and reads what ranking needs of each.

Candidates come from eight sources (`SOURCES`), unioned so a keyword-only or entity-only hit is never dropped,
each source but the neighbour a CTE with its own limit:

- vector: pgvector HNSW top-N by cosine to the query (wider for a large scope, vector_effort.py);
- keyword: full-text top-N over the query's selective lexemes (`_selective`: the rarest, within
  KEYWORD_ROW_BUDGET), ranked by the IDF of the words each match holds;
- entity: memories linked to the entities the query names (query.discriminating), by importance;
- time: the memories said inside a window the query names (signals/time_window.py), closest in meaning;
- condition: the scope's standing instructions whose condition is closest to the query (signals/condition.py;
  a partial index holds the few memories that have one);
- preference: for a request for advice, the scope's preferences closest to the query (signals/advice.py; the
  scope's type index holds them);
- background: for a caller that ranks some types beside the query's best matches (types.Background: GET
  /context's stage density), the scope's memories of those types closest to the query, of each type's latest
  BACKGROUND_ROW_BUDGET;

plus the turns just before and after each candidate episode in its conversation (neighbour). For every one of
them the statement computes the features (cosine to the memory's own and to its context embedding, BM25 over
`search_vector` and `context_vector`, in PostgreSQL: no vector or tsvector crosses the wire) and reads the
few columns a prompt or an API row needs (`MEMORY_COLUMNS`, a `types.RetrievedMemory` by `retrieved`).
`found_by` names the sources that found a candidate (`SOURCES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from apps.core.embeddings import vector_literal
from apps.core.rows import array_literal, bound_cursor
from apps.memories.retrieval import vector_effort
from apps.memories.retrieval.query import Scope, Stats, quoted_lexemes
from apps.memories.retrieval.signals import advice, chunk_share, condition, specificity, time_window
from apps.memories.retrieval.types import Background, EntityRef, RetrievedMemory

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
# the preference source (a request for advice) compares the query with at most the scope's latest this many
# preferences: a contact states tens (BEAM's at most 77), but the 100k benchmark's heavy contact holds 3,344 and
# reading them all took 18 ms (1.2 ms for its latest 200). One who has stated more is represented by the latest;
# the vector source still searches the whole scope
PREFERENCE_ROW_BUDGET = 200
# the background source (types.Background: GET /context's stage density) reads at most each type's latest this
# many memories, the same way
BACKGROUND_ROW_BUDGET = 200
SOURCES = ("vector", "keyword", "entity", "time", "condition", "preference", "background", "neighbour")
_SOURCE_BITS = {
    "keyword": 1,
    "entity": 2,
    "vector": 4,
    "neighbour": 8,
    "time": 16,
    "condition": 32,
    "preference": 64,
    "background": 128,
}
# the sources a candidate's bits name, for every combination of bits (found_by, without a loop per candidate)
_FOUND_BY = {
    bits: tuple(source for source in SOURCES if bits & _SOURCE_BITS[source]) for bits in range(1 << len(_SOURCE_BITS))
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

idf = specificity.idf  # BM25's inverse document frequency, shared with the entity specificity


# A scope planned for its own parameters (vector_effort.custom_plan: 1,000 memories or more, or narrowed to some
# types) is planned on every search anyway, so its statement need not be one text: it leaves out the sources the
# query switches off (an empty source in their place), which the planner then does not weigh — 2.2 → 1.3 ms of
# planning a search of the 100k benchmark's heavy contact (docs/benchmarks.md, "Session 57"). The same rows: a
# switched-off source finds none either way. A smaller scope keeps the one text its generic plan is cached for.
COMPACT_CUSTOM_PLANS = True
_NO_ROWS = "(SELECT NULL::uuid AS id WHERE false)"


def _compact(cte: str, switched_on: dict[str, bool]) -> str:
    """`cte` ("name AS (…)") as it is if its source is switched on, else the name over no rows."""
    name = cte.split(" AS ", 1)[0]
    return cte if switched_on[name] else f"{name} AS {_NO_ROWS}"


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
# days since the last access: no datetime parsing per candidate; the days a float8, not the numeric `extract`
# gives, which the driver would load as a Decimal per candidate)
MEMORY_COLUMNS = (
    "m.id, m.memory_type, m.content, m.importance, "
    "(extract(epoch FROM m.occurred_at) * 1000000)::bigint, m.is_compressed, m.source_message_ids, "
    "m.access_count, (extract(epoch FROM (%(now)s - m.accessed_at)) / 86400.0)::float8, "
    "m.outdated_by_id IS NOT NULL, "
    "coalesce(m.metadata->>'role', '')"
)


def vector_source_sql(scope_sql: str, *, exact: bool = False) -> str:
    """The vector source: the scope's memories nearest the query (`%(vector)s`) through the HNSW index, at most
    `%(vector_limit)s` (bench_latency --floor times it alone). `exact`: every memory of the scope compared and
    sorted, never the index (the subquery is not flattened: its order cannot be read from the index) — a small
    scope's plan, which a generic plan must keep whatever it estimates (vector_effort.custom_plan)."""
    if exact:
        return (
            "SELECT s.id FROM (SELECT m.id, m.embedding <=> %(vector)s::halfvec AS distance "
            f"FROM memories_memory m WHERE {scope_sql} AND m.embedding IS NOT NULL OFFSET 0) s "
            "ORDER BY s.distance LIMIT %(vector_limit)s"
        )
    return (
        f"SELECT m.id FROM memories_memory m WHERE {scope_sql} AND m.embedding IS NOT NULL "
        "ORDER BY m.embedding <=> %(vector)s::halfvec LIMIT %(vector_limit)s"
    )


def retrieved(row: Sequence[Any]) -> RetrievedMemory:
    return RetrievedMemory(
        pk=row[0],
        memory_type=row[1],
        content=row[2],
        importance=row[3],
        occurred_at=_EPOCH + timedelta(microseconds=row[4]),
        is_compressed=row[5],
        source_message_ids=tuple(row[6] or ()),
        outdated=bool(row[9]),
        role=row[10],
    )


@dataclass(frozen=True)
class Candidate:
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
    condition: str = ""  # a standing instruction's condition (its context_cosine is the query's to it)
    sequence: int | None = None  # its ledger position: with occurred_at, its place among its session's turns
    sums_up_session: bool = False  # a session's summary, written by compression (its episodes stay searchable)


def fetch(
    scope: Scope,
    *,
    vector: np.ndarray,
    lexemes: list[str],
    stats: Stats,
    entities: list[EntityRef],
    now: datetime,
    windows: Sequence[time_window.TimeWindow] = (),
    preferences: bool = False,
    background: Background | None = None,
) -> list[Candidate]:
    """One statement: the vector, keyword, entity, time and condition candidates, the turns just before and after each
    candidate episode in its conversation (two LATERAL probes of memory_session_turn_idx per candidate),
    and the features and read columns of all of them. `preferences`: the query asks for advice, read the
    scope's preferences closest to it too (signals/advice.py). `background`: the scope's memories of its
    types closest to the query too (VECTOR_CANDIDATES of them, as deep as the vector source, of each type's
    latest BACKGROUND_ROW_BUDGET)."""
    scope_sql, params = scope.sql()
    neighbour_scope, _ = scope.sql(alias="n", owner=False)  # the owner comes from the candidate (_NEIGHBOUR_TURN)
    vector_text = vector_literal(vector)
    params |= {
        "now": now,
        "vector": vector_text,
        "lexemes": lexemes,
        # (the lists that may be empty travel as array text: one prepared statement either way, rows.array_literal)
        "search_idfs": array_literal([idf(stats.search_df.get(lexeme, 0), stats.total) for lexeme in lexemes]),
        "context_idfs": array_literal([idf(stats.context_df.get(lexeme, 0), stats.total) for lexeme in lexemes]),
        "search_average": stats.average_search_length or 1.0,
        "context_average": stats.average_context_length or 1.0,
        "entity_ids": array_literal([entity.id for entity in entities]),
    }
    # Every source is in the statement whatever the query holds, its inputs empty or switched off when the query
    # gives it nothing: one statement text (two: a scope's vector source is exact or indexed), which a connection
    # prepares and plans once. A source per input, the time windows and background types one subquery each, gave
    # 39 texts over 400 GET /context of typical contacts, and the first request of each text paid its plan (a
    # third of the slowest tenth, in process). A scope planned for its own parameters is planned every time
    # anyway: its statement leaves the switched-off sources out (COMPACT_CUSTOM_PLANS)
    selective = _selective(lexemes, stats) if KEYWORD_CANDIDATES > 0 else []
    # ranked by the IDF of the query words each match holds (an IDF-weighted coordination level: BM25 without
    # term frequency); ts_rank_cd ignored IDF and let a speaker's name crowd out the rare words. Matches of the
    # same words tie: the one closer to the query in meaning goes first (by id, a random UUID, before: LoCoMo
    # R@10 0.7988 -> 0.8000 on the same ingest, both halves up; the keyword source +0.2 ms p50 on LoCoMo
    # contacts, +0.01 ms at 100k where few memories match). The query's words are one array parameter, not one
    # parameter each (one text whatever their number)
    params |= {
        "keyword_on": bool(selective),
        "keyword_query": " | ".join(quoted_lexemes(selective)) if selective else None,
        "keyword_limit": KEYWORD_CANDIDATES,
        "terms": quoted_lexemes(lexemes),
    }
    unowned_sql, _ = scope.sql(owner=False)
    ctes = [
        f"keyword AS (SELECT m.id FROM memories_memory m WHERE %(keyword_on)s AND {unowned_sql} "
        f"AND {scope.matching('%(keyword_query)s::tsquery')} "
        "ORDER BY (SELECT coalesce(sum(w.idf), 0) FROM unnest(%(terms)s::tsquery[], %(search_idfs)s::float8[]) "
        "AS w(term, idf) WHERE m.search_vector @@ w.term) DESC, m.embedding <=> %(vector)s::halfvec, m.id "
        "LIMIT %(keyword_limit)s)"
    ]
    # the memories linked to the entities the query names (none named: an empty array, no row)
    params["entity_limit"] = ENTITY_CANDIDATES if entities else 0
    ctes.append(
        "entity AS (SELECT me.memory_id AS id FROM memories_memoryentity me "
        "JOIN memories_memory m ON m.id = me.memory_id "
        f"WHERE me.entity_id = ANY(%(entity_ids)s::uuid[]) AND {scope_sql} "
        "GROUP BY me.memory_id, m.importance ORDER BY m.importance DESC, me.memory_id LIMIT %(entity_limit)s)"
    )
    params["vector_limit"] = VECTOR_CANDIDATES
    exact = not vector_effort.custom_plan(stats.total, narrowed=scope.narrowed)
    ctes.append(f"vector AS ({vector_source_sql(scope_sql, exact=exact)})")
    # the memories said inside the windows the query names, closest in meaning first (the index on the scope's
    # event times finds them, each window's latest TIME_ROW_BUDGET; an open window, "before 2023", is only a
    # signal): one LATERAL probe per window of the two arrays (none: no probe)
    bounded = [window for window in windows if (window.end - window.start) <= MAX_TIME_SOURCE_WINDOW]
    if TIME_CANDIDATES <= 0:
        bounded = []
    params |= {
        "window_starts": array_literal([window.start for window in bounded]),
        "window_ends": array_literal([window.end for window in bounded]),
        "time_limit": TIME_CANDIDATES,
        "time_rows": TIME_ROW_BUDGET,
    }
    ctes.append(
        "time AS (SELECT w.id FROM unnest(%(window_starts)s::timestamptz[], %(window_ends)s::timestamptz[]) "
        "AS tw(window_start, window_end) CROSS JOIN LATERAL ("
        f"SELECT m.id, m.embedding <=> %(vector)s::halfvec AS distance FROM memories_memory m WHERE {scope_sql} "
        "AND m.occurred_at >= tw.window_start AND m.occurred_at < tw.window_end AND m.embedding IS NOT NULL "
        "ORDER BY m.occurred_at DESC LIMIT %(time_rows)s) w "
        "GROUP BY w.id ORDER BY min(w.distance), w.id LIMIT %(time_limit)s)"
    )
    # the scope's standing instructions by their condition's embedding (the context embedding of the few
    # memories memory_condition_idx holds: read whole, no vector index needed)
    params["condition_limit"] = condition.CONDITION_CANDIDATES
    ctes.append(
        f"condition AS (SELECT m.id FROM memories_memory m WHERE {scope_sql} "
        "AND m.metadata ? 'instruction_condition' AND m.context_embedding IS NOT NULL "
        "ORDER BY m.context_embedding <=> %(vector)s::halfvec LIMIT %(condition_limit)s)"
    )
    # for a request for advice, the scope's preferences (not instructions with a condition: those are the
    # condition source's) closest to the query, of its latest PREFERENCE_ROW_BUDGET (memory_scope_type_idx reads
    # them in order and stops); any other query switches it off
    params |= {
        "preference_on": preferences and advice.ADVICE_PREFERENCES > 0,
        "preference_limit": advice.ADVICE_PREFERENCES,
        "preference_rows": PREFERENCE_ROW_BUDGET,
    }
    ctes.append(
        f"preference AS (SELECT p.id FROM (SELECT m.id, m.embedding FROM memories_memory m WHERE %(preference_on)s "
        f"AND {scope_sql} AND m.memory_type = 'preference' AND NOT m.metadata ? 'instruction_condition' "
        "AND m.embedding IS NOT NULL ORDER BY m.created_at DESC LIMIT %(preference_rows)s) p "
        "ORDER BY p.embedding <=> %(vector)s::halfvec, p.id LIMIT %(preference_limit)s)"
    )
    # the background (types.Background: GET /context's stage density): each type's latest BACKGROUND_ROW_BUDGET
    # (memory_scope_type_idx reads them in order and stops, one LATERAL probe per type of the array), episodes of
    # those only the recent, then the closest to the query: a bounded read. Through the HNSW index a type filter
    # costs what its share of the neighbourhood says: 6 ms for a 20,000-memory contact's facts, 44 ms for its
    # preferences (the iterative scan walked 25,000 buffers to find 50); sorting all of a type exactly 21-64 ms
    # (docs/benchmarks.md, "Session 41")
    background_types = background.memory_types if background is not None else ()
    since = background.episodes_since if background is not None and background_types else None
    params |= {
        "background_types": array_literal(background_types),
        "background_since": since.isoformat() if since is not None else None,
        "background_limit": VECTOR_CANDIDATES,
        "background_rows": BACKGROUND_ROW_BUDGET,
    }
    ctes.append(
        "background AS (SELECT b.id FROM unnest(%(background_types)s::text[]) AS bt(memory_type) CROSS JOIN LATERAL ("
        f"SELECT m.id, m.embedding, m.memory_type, m.occurred_at FROM memories_memory m WHERE {scope_sql} "
        "AND m.memory_type = bt.memory_type AND m.embedding IS NOT NULL "
        "ORDER BY m.created_at DESC LIMIT %(background_rows)s) b "
        "WHERE %(background_since)s::timestamptz IS NULL OR b.memory_type <> 'episode' "
        "OR b.occurred_at >= %(background_since)s::timestamptz "
        "ORDER BY b.embedding <=> %(vector)s::halfvec, b.id LIMIT %(background_limit)s)"
    )
    if not exact and COMPACT_CUSTOM_PLANS:
        switched_on = {
            "keyword": bool(selective),
            "entity": bool(entities),
            "vector": True,
            "time": bool(bounded),
            "condition": True,
            "preference": bool(params["preference_on"]),
            "background": bool(background_types),
        }
        ctes = [_compact(cte, switched_on) for cte in ctes]
    sources = [f"SELECT id, {_SOURCE_BITS[name]} AS bit FROM {name}" for name in _SOURCE_BITS if name != "neighbour"]
    bm25_columns = {"k1": BM25_K1, "k1_plus_1": BM25_K1 + 1, "b": BM25_B}
    search_bm25 = _BM25_SQL.format(column="search_vector", average="search_average", idfs="search_idfs", **bm25_columns)
    context_bm25 = _BM25_SQL.format(
        column="context_vector", average="context_average", idfs="context_idfs", **bm25_columns
    )
    # the query's entities each candidate links (none to look for when the query names none: no probe per candidate)
    matched_entities = (
        "CASE WHEN cardinality(%(entity_ids)s::uuid[]) = 0 THEN '{}'::uuid[] ELSE ARRAY(SELECT me.entity_id "
        "FROM memories_memoryentity me WHERE me.memory_id = m.id AND me.entity_id = ANY(%(entity_ids)s::uuid[])) END"
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
        f"SELECT {MEMORY_COLUMNS}, k.found, m.source_session_id, right(rtrim(m.content), 1) = '?', "
        "coalesce(1 - (m.embedding <=> %(vector)s::halfvec), 0), "
        "coalesce(1 - (m.context_embedding <=> %(vector)s::halfvec), 1 - (m.embedding <=> %(vector)s::halfvec), 0), "
        "coalesce(length(m.search_vector), 0), "
        f"{search_bm25}, {context_bm25}, "
        f"{matched_entities}, "
        "coalesce(m.metadata->>'speaker', ''), m.index_terms, "
        "CASE WHEN jsonb_typeof(m.metadata->'chunk') = 'number' THEN m.metadata->>'chunk' END, "
        "CASE WHEN jsonb_typeof(m.metadata->'chunks') = 'number' THEN m.metadata->>'chunks' END, "
        "coalesce(m.metadata->>'instruction_condition', ''), m.source_sequence, "
        "m.metadata ? 'compression_source' "
        "FROM candidate k JOIN memories_memory m ON m.id = k.id"
    )
    # a large scope searches the vector index wider, and a scope of a thousand memories or more (or narrowed to
    # some types) is planned for its own parameters (retrieval/vector_effort.py: the recall, and the plans)
    with bound_cursor(vector_effort.statement_settings(stats.total, narrowed=scope.narrowed)) as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        Candidate(
            memory=retrieved(row),
            access_count=row[7],
            days_since_access=float(row[8]),
            found_by=_FOUND_BY[row[11]],
            session=row[12],
            is_question=bool(row[13]),
            cosine=float(row[14]),
            context_cosine=float(row[15]),
            search_length=row[16],
            bm25=float(row[17]),
            context_bm25=float(row[18]),
            matched_entity_ids=tuple(row[19]),
            speaker=row[20],
            index_terms=row[21] or "",
            chunks=chunk_share.split_into(row[22], row[23]),
            condition=row[24],
            sequence=row[25],
            sums_up_session=bool(row[26]),
        )
        for row in rows
    ]
