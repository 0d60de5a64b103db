"""Access statistics, recorded off the request path.

A retrieval appends one entry to a Redis list — its time and the ids it returned, a single RPUSH whatever
the number of memories; a beat task folds the list into PostgreSQL every 30 s with one UPDATE … FROM
(VALUES …) per batch: the count of uses and the latest access of each memory. An access also restarts
the decay clock: `base_importance` takes the current importance and `accessed_at` moves forward.

`access_count` counts *uses*, not retrievals: accesses less than USE_GAP after the memory's previous access
belong to the same use. A burst of searches (an agent loop, a benchmark asking 200 questions in a minute)
returns the same memories again and again; counted one by one, that burst made them "frequently used" for
months and lifted them over what later questions asked for (docs/retrieval.md §4). It also makes a flush
safe to repeat: a flush that died after writing some batches leaves its list to the next one, whose
accesses are then no later than what the memories already record, and count nothing twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from datetime import datetime

import redis
from django.db import connection
from redis.exceptions import LockError, ResponseError

from apps.core.redis import RedisError, get_redis
from apps.memories.decay import decayed_importance_sql

logger = logging.getLogger(__name__)

LOG_KEY = "engram:access:log"
FLUSHING_KEY = f"{LOG_KEY}:flushing"
FLUSH_LOCK_KEY = f"{LOG_KEY}:lock"
FLUSH_LOCK_SECONDS = 300
FLUSH_BATCH = 5000
USE_GAP_SECONDS = 60 * 60  # accesses closer together than this are one use


def access_record(*, memory_ids: Iterable[object], at: datetime) -> None:
    ids = [str(memory_id) for memory_id in memory_ids]
    if not ids:
        return
    try:
        get_redis().rpush(LOG_KEY, f"{at.timestamp()} {','.join(ids)}")
    except RedisError:
        logger.warning("Redis unavailable: recording %d accesses directly in PostgreSQL", len(ids))
        _apply({memory_id: [at.timestamp()] for memory_id in ids})


def access_flush() -> int:
    """Fold pending accesses into PostgreSQL. Returns the number of memories updated (0 when another flush
    is running: one at a time, so no entry is counted twice)."""
    redis_client = get_redis()
    lock = redis_client.lock(FLUSH_LOCK_KEY, timeout=FLUSH_LOCK_SECONDS, blocking=False)
    if not lock.acquire():
        return 0
    try:
        return _flush(redis_client)
    finally:
        with contextlib.suppress(LockError):  # expired meanwhile: nothing left to release
            lock.release()


def _flush(redis_client: redis.Redis) -> int:
    # a previous flush that died mid-way left its list: finish that first (nothing is lost or double-counted)
    if not redis_client.exists(FLUSHING_KEY):
        try:
            redis_client.rename(LOG_KEY, FLUSHING_KEY)  # new accesses go to a fresh list meanwhile
        except ResponseError:  # no such key: nothing pending
            return 0
    times: dict[str, list[float]] = {}
    for raw in redis_client.lrange(FLUSHING_KEY, 0, -1):
        entry = raw.decode() if isinstance(raw, bytes) else str(raw)
        timestamp, _, ids = entry.partition(" ")
        for memory_id in ids.split(","):
            times.setdefault(memory_id, []).append(float(timestamp))
    memory_ids = list(times)
    updated = 0
    for start in range(0, len(memory_ids), FLUSH_BATCH):
        updated += _apply({memory_id: times[memory_id] for memory_id in memory_ids[start : start + FLUSH_BATCH]})
    redis_client.delete(FLUSHING_KEY)
    return updated


def uses(*, times: list[float], previous_access: float | None) -> int:
    """How many uses a memory's access times make: an access counts unless it comes less than USE_GAP_SECONDS
    after the one before it (`previous_access`: the memory's last access before these, None if never)."""
    count = 0
    for at in sorted(times):
        if previous_access is None or at - previous_access >= USE_GAP_SECONDS:
            count += 1
        previous_access = at if previous_access is None else max(previous_access, at)
    return count


def _apply(times: dict[str, list[float]]) -> int:
    if not times:
        return 0
    with connection.cursor() as cursor:
        # each memory's last access before these (none while it has never been accessed: the first counts)
        cursor.execute(
            "SELECT id::text, CASE WHEN access_count > 0 THEN extract(epoch FROM accessed_at) END "
            "FROM memories_memory WHERE id = ANY(%s::uuid[])",
            [list(times)],
        )
        previous = {memory_id: (float(at) if at is not None else None) for memory_id, at in cursor.fetchall()}
    rows = [
        (memory_id, uses(times=stamps, previous_access=previous[memory_id]), max(stamps))
        for memory_id, stamps in times.items()
        if memory_id in previous  # deleted meanwhile: nothing to count
    ]
    if not rows:
        return 0
    decayed = decayed_importance_sql(at_sql="GREATEST(m.accessed_at, v.ts)")
    values = ", ".join(["(%s::uuid, %s::int, to_timestamp(%s))"] * len(rows))
    params = [item for row in rows for item in row]
    with connection.cursor() as cursor:
        cursor.execute(
            # the decay clock restarts at the access: importance and its anchor take the decayed value then
            f"UPDATE memories_memory m SET access_count = m.access_count + v.n, "
            f"importance = {decayed}, base_importance = {decayed}, "
            f"accessed_at = GREATEST(m.accessed_at, v.ts) "
            f"FROM (VALUES {values}) AS v(id, n, ts) WHERE m.id = v.id",
            params,
        )
        return cursor.rowcount
