"""The one Redis connection pool of the process (session windows, hot state, heartbeats)."""

from __future__ import annotations

from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=1)
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL, decode_responses=True, socket_timeout=0.5, socket_connect_timeout=0.5
    )


RedisError = redis.exceptions.RedisError
