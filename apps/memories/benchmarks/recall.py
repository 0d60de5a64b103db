"""The vector index against exact search (issue 29 item 4): recall@10 of the HNSW index at the connection's
`hnsw.ef_search`, and whether a search scoped to one contact returns only that contact's memories and the same
top results as an exact search of the same scope.

The approximate statement is the search's own vector source (apps/memories/retrieval/candidates.py: the scope's
current memories, `ORDER BY embedding <=> q LIMIT n`, under the ef_search the search uses for a scope of that
size (retrieval/vector_effort.py: the connection's, or more for a large scope) unless the caller set one, and the
connection's iterative-scan setting, bound to the tenant as a request is). The exact one orders by the same
distance plus zero, an expression no index can serve, so PostgreSQL computes every distance of the scope (the
scope's own B-tree filters still apply). recall@10 = |approximate top 10 ∩ exact top 10| / |exact top 10|,
averaged over queries; `in_candidates` is the same for the search's 50 vector candidates re-ordered by distance
(what ranking sees).
"""

from __future__ import annotations

import json
import statistics
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from apps.core.embeddings import vector_literal
from apps.core.tenancy import tenant_bind, tenant_reset
from apps.memories.retrieval import vector_effort
from apps.memories.retrieval.lexicon import current_scope_sql

CANDIDATES = 50  # the search's VECTOR_CANDIDATES
ANY_CONTACT = "any"  # a scope of every current memory of the tenant, brain and contacts (no contact filter)


def _scope(tenant_id: Any, contact_id: Any | None) -> tuple[str, dict[str, Any]]:
    sql, params = current_scope_sql(tenant_id=tenant_id, contact_id=None if contact_id == ANY_CONTACT else contact_id)
    if contact_id == ANY_CONTACT:
        sql = sql.replace("m.contact_id IS NULL AND ", "")
    return sql, params


@dataclass(frozen=True)
class ScopeRecall:
    label: str
    queries: int
    scope_size: int  # memories the scope holds (the mean, for a set of contacts)
    recall_at_10: float
    in_candidates: float
    within_1pct: float  # share of the approximate top 10 no farther than the exact 10th nearest × 1.01
    distance_gap: float  # mean cosine distance of the approximate top 10 minus that of the exact top 10
    short: int  # answers with fewer rows than min(10, the scope's size)
    foreign: int  # rows returned from outside the scope: must be 0
    plan: str  # which index the approximate statement's plan scans

    def line(self) -> str:
        return (
            f"{self.label}: recall@10 {self.recall_at_10:.4f}, exact top 10 among the 50 candidates "
            f"{self.in_candidates:.4f}, top 10 within 1% of the exact 10th distance {self.within_1pct:.4f}, mean "
            f"distance gap {self.distance_gap:.4f} ({self.queries} queries, scope {self.scope_size:,}; short answers "
            f"{self.short}, rows from outside the scope {self.foreign}; plan: {self.plan})"
        )


def _statement(contact_id: Any | None, tenant_id: Any, *, exact: bool) -> tuple[str, dict[str, Any]]:
    scope_sql, params = _scope(tenant_id, contact_id)
    order = "(m.embedding <=> %(vector)s::halfvec) + 0" if exact else "m.embedding <=> %(vector)s::halfvec"
    sql = (
        "SELECT m.id, m.contact_id, m.embedding <=> %(vector)s::halfvec FROM memories_memory m "
        f"WHERE {scope_sql} AND NOT m.is_compressed AND m.embedding IS NOT NULL ORDER BY {order} LIMIT %(limit)s"
    )
    return sql, params


def _plan(cursor: Any, sql: str, params: dict[str, Any]) -> str:
    cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
    text = json.dumps(cursor.fetchone()[0])
    if "memory_embedding_hnsw" in text:
        return "hnsw"
    indexes = sorted(set(part.split('"')[0] for part in text.split('"Index Name": "')[1:]))
    return ("+".join(indexes) + " then sort") if indexes else "seq scan then sort"


def scope_recall(
    *,
    tenant_id: Any,
    contact_ids: list[Any | None],
    vectors: np.ndarray,
    label: str,
    k: int = 10,
    exact_cache: dict[tuple[Any, bytes], list[Any]] | None = None,
    as_search: bool = True,
) -> ScopeRecall:
    """Each query vector asked of each scope in `contact_ids` (None: the tenant's brain), in turn. `exact_cache`
    keeps the exact answers between calls (the same queries at several ef_search values). `as_search`: at the
    ef_search the search picks for the scope's size; False: at the connection's (a caller's SET)."""
    exact_cache = {} if exact_cache is None else exact_cache
    recalls, in_candidates, sizes, within, gaps = [], [], [], [], []
    short = foreign = asked = 0
    plans: set[str] = set()
    tenant_bind(tenant_id)
    try:
        with connection.cursor() as cursor:
            for index, contact_id in enumerate(contact_ids):
                approximate, params = _statement(contact_id, tenant_id, exact=False)
                exact, _ = _statement(contact_id, tenant_id, exact=True)
                scope_sql, count_params = _scope(tenant_id, contact_id)
                cursor.execute(
                    f"SELECT count(*) FROM memories_memory m WHERE {scope_sql} AND NOT m.is_compressed "
                    "AND m.embedding IS NOT NULL",
                    count_params,
                )
                size = int(cursor.fetchone()[0])
                sizes.append(size)
                effort = vector_effort.ef_search_for(size) if as_search else None  # the search's for this size
                share = vectors[index :: len(contact_ids)] if len(contact_ids) > 1 else vectors
                for vector in share:
                    asked += 1
                    values = {**params, "vector": vector_literal(vector)}
                    if len(plans) < 3 and asked <= len(contact_ids) * 2:
                        with vector_effort.searching_at(cursor, effort):
                            plans.add(_plan(cursor, approximate, {**values, "limit": CANDIDATES}))
                    cache_key = (contact_id, vector.tobytes())
                    if cache_key not in exact_cache:
                        cursor.execute(exact, {**values, "limit": k})
                        exact_cache[cache_key] = [(row[0], float(row[2])) for row in cursor.fetchall()]
                    truth = [pk for pk, _ in exact_cache[cache_key]]
                    distances = [distance for _, distance in exact_cache[cache_key]]
                    with vector_effort.searching_at(cursor, effort):
                        cursor.execute(approximate, {**values, "limit": k})
                        top = cursor.fetchall()
                        cursor.execute(approximate, {**values, "limit": CANDIDATES})
                        candidates = cursor.fetchall()
                    for rows in (top, candidates):
                        foreign += sum(1 for row in rows if contact_id != ANY_CONTACT and row[1] != contact_id)
                    if len(top) < min(k, size):
                        short += 1
                    if not truth:
                        continue
                    recalls.append(len({row[0] for row in top} & set(truth)) / len(truth))
                    # near ties: clusters of paraphrases put many rows at almost the same distance, and missing
                    # the exact 10th for one 0.1% farther is no loss to ranking
                    within.append(sum(1 for row in top if float(row[2]) <= distances[-1] * 1.01) / len(truth))
                    if top:
                        gaps.append(statistics.mean(float(row[2]) for row in top) - statistics.mean(distances))
                    best = [row[0] for row in sorted(candidates, key=lambda row: row[2])[:k]]
                    in_candidates.append(len(set(best) & set(truth)) / len(truth))
    finally:
        tenant_reset()
    return ScopeRecall(
        label=label,
        queries=asked,
        scope_size=round(statistics.mean(sizes)) if sizes else 0,
        recall_at_10=statistics.mean(recalls) if recalls else 1.0,
        in_candidates=statistics.mean(in_candidates) if in_candidates else 1.0,
        within_1pct=statistics.mean(within) if within else 1.0,
        distance_gap=statistics.mean(gaps) if gaps else 0.0,
        short=short,
        foreign=foreign,
        plan=", ".join(sorted(plans)),
    )


def ef_search() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true), current_setting('hnsw.iterative_scan', true)")
        row = cursor.fetchone()
    large = f"{vector_effort.large_scope_ef_search()} for scopes of {vector_effort.large_scope():,} memories or more"
    return f"hnsw.ef_search {row[0]} ({large}), hnsw.iterative_scan {row[1]}" if row else "unknown"


def contact_sample(*, tenant_id: Any, count: int, minimum: int = 10) -> list[uuid.UUID]:
    """`count` contacts of the tenant holding at least `minimum` memories (a spread of sizes: every n-th by size)."""
    tenant_bind(tenant_id)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT contact_id FROM memories_memory WHERE tenant_id = %s AND contact_id IS NOT NULL "
                "GROUP BY contact_id HAVING count(*) >= %s ORDER BY count(*), contact_id",
                [tenant_id, minimum],
            )
            ids = [row[0] for row in cursor.fetchall()]
    finally:
        tenant_reset()
    if len(ids) <= count:
        return ids
    step = len(ids) / count
    return [ids[int(index * step)] for index in range(count)]
