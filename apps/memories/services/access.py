"""Access statistics, recorded off the request path.

A retrieval adds its memory ids to two Redis hashes (one pipeline, O(returned)); a beat task folds them
into PostgreSQL every 30 s with one UPDATE … FROM (VALUES …). An access also restarts the decay clock:
`base_importance` takes the current importance and `accessed_at` moves forward.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.db import connection

from apps.core.redis import RedisError, get_redis
from apps.memories.services.decay import decayed_importance_sql

logger = logging.getLogger(__name__)

COUNTS_KEY = "engram:access:counts"
LAST_KEY = "engram:access:last"
FLUSH_BATCH = 5000


def access_record(*, memory_ids: Iterable[object], at: datetime) -> None:
    ids = [str(memory_id) for memory_id in memory_ids]
    if not ids:
        return
    timestamp = at.timestamp()
    try:
        pipe = get_redis().pipeline(transaction=False)
        for memory_id in ids:
            pipe.hincrby(COUNTS_KEY, memory_id, 1)
            pipe.hset(LAST_KEY, memory_id, timestamp)
        pipe.execute()
    except RedisError:
        logger.warning("Redis unavailable: recording %d accesses directly in PostgreSQL", len(ids))
        _apply([(memory_id, 1, timestamp) for memory_id in ids])


def access_flush() -> int:
    """Fold pending access counts into PostgreSQL. Returns the number of memories updated."""
    redis_client = get_redis()
    processing_counts, processing_last = f"{COUNTS_KEY}:flushing", f"{LAST_KEY}:flushing"
    # a previous flush that died mid-way left its keys: finish those first (nothing is lost or double-counted)
    if not redis_client.exists(processing_counts):
        if not redis_client.exists(COUNTS_KEY):
            return 0
        pipe = redis_client.pipeline(transaction=True)
        pipe.rename(COUNTS_KEY, processing_counts)
        pipe.rename(LAST_KEY, processing_last)
        pipe.execute()
    counts = redis_client.hgetall(processing_counts)
    last = redis_client.hgetall(processing_last)
    rows = [(str(memory_id), int(count), float(last.get(memory_id, 0))) for memory_id, count in counts.items()]
    updated = 0
    for start in range(0, len(rows), FLUSH_BATCH):
        updated += _apply(rows[start : start + FLUSH_BATCH])
    redis_client.delete(processing_counts, processing_last)
    return updated


def _apply(rows: list[tuple[str, int, float]]) -> int:
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
