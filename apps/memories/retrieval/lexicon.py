"""Per-scope lexicon: the document frequencies BM25 needs, kept in Redis and refreshed off the request path.

Counting how many of a 20,000-memory scope contain each query word costs tens of milliseconds per query
(every match is a heap visit). IDF moves slowly, so a large scope's counts are computed by a worker in one
aggregate statement and kept in one Redis hash per scope:

    engram:lexicon:<tenant>:<contact|tenant>   s:<lexeme> → df in search_vector, c:<lexeme> → df in
                                               context_vector (only df ≥ 2: a missing lexeme counts 1),
                                               __meta → {total, average lengths, computed_at}

A search reads the fields of its query's lexemes in one round trip. A stale lexicon (older than
`LEXICON_MAX_AGE_SECONDS`, or `MID_SIZED_MAX_AGE_SECONDS` for a scope below `LARGE_SCOPE_FROM` memories, whose
few new memories move its frequencies more) is still used while a worker recomputes it; a scope with no lexicon
(or with fewer than `LEXICON_FROM` memories) is counted exactly in SQL, and a refresh is queued when the scope
is large enough; a consolidation run of a scope queues its refresh too (`scope_lexicon_rewritten`). Mid-sized
scopes (a chat of a few hundred turns) have one too: counting them exactly cost 2.6 ms of every search's SQL
(docs/benchmarks.md, "Session 56"), and the lexicon ranks their questions alike.
The lexicon is derived data: losing it costs one slower search, never a wrong result set.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from apps.core.redis import RedisError, get_redis, scope_key
from apps.memories import scoring
from apps.memories.dispatch import lexicon_refresh_queue

logger = logging.getLogger(__name__)

LEXICON_FROM = 200  # smaller scopes are counted exactly at query time (about a millisecond)
LEXICON_MAX_AGE_SECONDS = 600
LARGE_SCOPE_FROM = 1000  # below it, a lexicon is refreshed sooner: a few new memories move its frequencies
MID_SIZED_MAX_AGE_SECONDS = 60
LEXICON_TTL_SECONDS = 24 * 3600  # an idle scope's lexicon disappears
REFRESH_LOCK_SECONDS = 300
META = "__meta"
WRITE_CHUNK = 5000


@dataclass(frozen=True)
class Stats:
    """What BM25 needs of a scope: its size, the average tsvector lengths, and the document frequency of each
    query lexeme — counted in SQL at query time (retrieval/query.scope_stats) or read from the lexicon."""

    total: int
    average_search_length: float
    average_context_length: float
    search_df: dict[str, int]
    context_df: dict[str, int]


@dataclass(frozen=True)
class Lexicon(Stats):
    computed_at: float


def lexicon_key(*, tenant_id: Any, contact_id: Any | None) -> str:
    return scope_key("lexicon", tenant_id=tenant_id, contact_id=contact_id)


def refresh_lock_key(*, tenant_id: Any, contact_id: Any | None) -> str:
    return lexicon_key(tenant_id=tenant_id, contact_id=contact_id) + ":refreshing"


def current_scope_sql(
    *, tenant_id: Any, contact_id: Any | None, alias: str = "m", owner: bool = True
) -> tuple[str, dict[str, Any]]:
    """The memories a search may return (current, not expired, importance ≥ 0.1), as SQL with named
    parameters (`%(scope_tenant)s`, …) so one statement can repeat the clause with one set of values.
    `owner=False` leaves out the tenant and contact columns, for a statement that matches the scope's
    token in the scoped full-text index instead (models.memory.SCOPED_SEARCH_SQL)."""
    owner_clauses = [
        f"{alias}.tenant_id = %(scope_tenant)s",
        f"{alias}.contact_id = %(scope_contact)s" if contact_id is not None else f"{alias}.contact_id IS NULL",
    ]
    clauses = [
        *(owner_clauses if owner else []),
        f"{alias}.valid_to IS NULL",
        f"{alias}.deleted_at IS NULL",
        f"({alias}.expires_at IS NULL OR {alias}.expires_at > now())",
        f"{alias}.importance >= %(scope_min_importance)s",
    ]
    params: dict[str, Any] = {
        "scope_tenant": tenant_id,
        "scope_contact": contact_id,
        "scope_min_importance": scoring.RETRIEVAL_MIN_IMPORTANCE,
    }
    return " AND ".join(clauses), params


def scope_lexicon_get(*, tenant_id: Any, contact_id: Any | None, lexemes: list[str]) -> Lexicon | None:
    """The scope's lexicon restricted to `lexemes`, or None when there is none (or Redis is down).
    Queues a refresh when it is older than `max_age` allows."""
    key = lexicon_key(tenant_id=tenant_id, contact_id=contact_id)
    fields = [META, *(f"s:{lexeme}" for lexeme in lexemes), *(f"c:{lexeme}" for lexeme in lexemes)]
    try:
        values = get_redis().hmget(key, fields)
    except RedisError:
        return None
    if not values[0]:
        return None
    meta = json.loads(values[0])
    counts = [int(value) if value else 1 for value in values[1:]]
    if time.time() - float(meta["computed_at"]) > max_age(int(meta["total"])):
        scope_lexicon_refresh_queue(tenant_id=tenant_id, contact_id=contact_id)
    return Lexicon(
        total=int(meta["total"]),
        average_search_length=float(meta["average_search_length"]),
        average_context_length=float(meta["average_context_length"]),
        search_df=dict(zip(lexemes, counts[: len(lexemes)], strict=True)),
        context_df=dict(zip(lexemes, counts[len(lexemes) :], strict=True)),
        computed_at=float(meta["computed_at"]),
    )


def max_age(total: int) -> int:
    """How old a lexicon of `total` memories may be before a search queues its refresh (it is used meanwhile)."""
    return LEXICON_MAX_AGE_SECONDS if total >= LARGE_SCOPE_FROM else MID_SIZED_MAX_AGE_SECONDS


def scope_lexicon_refresh_queue(*, tenant_id: Any, contact_id: Any | None) -> bool:
    """Queue one refresh per scope at a time (a Redis lock); False when one is already queued or running."""
    lock = refresh_lock_key(tenant_id=tenant_id, contact_id=contact_id)
    try:
        if not get_redis().set(lock, "1", nx=True, ex=REFRESH_LOCK_SECONDS):
            return False
        lexicon_refresh_queue(tenant_id=tenant_id, contact_id=contact_id)
    except Exception:  # broker or Redis down: searches count in SQL meanwhile
        logger.warning("Could not queue the lexicon refresh of %s/%s", tenant_id, contact_id, exc_info=True)
        return False
    return True


def scope_lexicon_rewritten(*, tenant_id: Any, contact_id: Any | None) -> bool:
    """A consolidation run rewrote the scope (merged, extracted, compressed, decayed): queue the refresh of its
    lexicon, when it has one, rather than let searches count what the run changed until the lexicon ages out.
    False when the scope has none (it is counted exactly) or a refresh is already queued."""
    try:
        if not get_redis().exists(lexicon_key(tenant_id=tenant_id, contact_id=contact_id)):
            return False
    except RedisError:
        return False
    return scope_lexicon_refresh_queue(tenant_id=tenant_id, contact_id=contact_id)


def scope_lexicon_refresh(*, tenant_id: Any, contact_id: Any | None) -> int:
    """Recompute a scope's lexicon (one aggregate statement) and swap it in atomically.
    Returns the number of memories in the scope; a scope below LEXICON_FROM gets no lexicon."""
    # compressed episodes are searched (the archive stays findable by what it says): they count too
    scope_sql, params = current_scope_sql(tenant_id=tenant_id, contact_id=contact_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(avg(length(m.search_vector)), 0), coalesce(avg(length(m.context_vector)), 0) "
            f"FROM memories_memory m WHERE {scope_sql}",
            params,
        )
        total, search_length, context_length = cursor.fetchone() or (0, 0.0, 0.0)
        key = lexicon_key(tenant_id=tenant_id, contact_id=contact_id)
        if total < LEXICON_FROM:
            get_redis().delete(key)
            return int(total)
        cursor.execute(
            "SELECT 's:' || u.lexeme, count(*) FROM memories_memory m "
            f"CROSS JOIN LATERAL unnest(m.search_vector) u WHERE {scope_sql} GROUP BY u.lexeme HAVING count(*) > 1 "
            "UNION ALL SELECT 'c:' || u.lexeme, count(*) FROM memories_memory m "
            f"CROSS JOIN LATERAL unnest(m.context_vector) u WHERE {scope_sql} GROUP BY u.lexeme HAVING count(*) > 1",
            params,
        )
        rows = cursor.fetchall()
    meta = {
        "total": int(total),
        "average_search_length": float(search_length),
        "average_context_length": float(context_length),
        "computed_at": timezone.now().timestamp(),
    }
    redis_client = get_redis()
    building = f"{key}:building"
    pipe = redis_client.pipeline(transaction=False)
    pipe.delete(building)
    for start in range(0, len(rows), WRITE_CHUNK):
        pipe.hset(building, mapping={field: int(count) for field, count in rows[start : start + WRITE_CHUNK]})
    pipe.hset(building, META, json.dumps(meta))
    pipe.expire(building, LEXICON_TTL_SECONDS)
    pipe.rename(building, key)
    pipe.delete(refresh_lock_key(tenant_id=tenant_id, contact_id=contact_id))
    pipe.execute()
    return int(total)
