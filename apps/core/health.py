"""Health of the three components Engram needs: PostgreSQL (+ pgvector), Redis, Celery worker."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import connection

from apps.core.redis import RedisError, get_redis

logger = logging.getLogger(__name__)

HEARTBEAT_KEY = "engram:worker:heartbeat"
HEARTBEAT_STALE_SECONDS = 120


def worker_heartbeat_record() -> None:
    get_redis().set(HEARTBEAT_KEY, str(time.time()), ex=24 * 60 * 60)


def health_report() -> dict[str, Any]:
    report: dict[str, Any] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        report["database"] = {"ok": row is not None, "pgvector": row[0] if row else None}
    except Exception:  # any driver error means "down"; the details go to the log, not to a public endpoint
        logger.exception("health check: the database is unreachable")
        report["database"] = {"ok": False, "error": "unreachable"}

    heartbeat: bytes | str | None = None
    try:
        redis_client = get_redis()
        redis_client.ping()
        heartbeat = redis_client.get(HEARTBEAT_KEY)
        report["redis"] = {"ok": True}
    except RedisError:
        logger.exception("health check: Redis is unreachable")
        report["redis"] = {"ok": False, "error": "unreachable"}

    if heartbeat is None:
        report["worker"] = {"ok": False, "last_heartbeat_seconds_ago": None}
    else:
        age = round(time.time() - float(heartbeat), 1)
        report["worker"] = {"ok": age <= HEARTBEAT_STALE_SECONDS, "last_heartbeat_seconds_ago": age}

    report["status"] = "ok" if all(part["ok"] for part in report.values()) else "degraded"
    return report
