"""Keyspace helpers for tests: the embedded Redis renames FLUSHDB and KEYS away (config/embedded.py), so the
tests list and clear keys with SCAN + UNLINK, as erasure does."""

from __future__ import annotations

from apps.core.redis import get_redis


def redis_keys(pattern: str = "*") -> list[str]:
    return sorted(get_redis().scan_iter(match=pattern, count=1000))


def redis_clear(pattern: str = "*") -> None:
    keys = redis_keys(pattern)
    for start in range(0, len(keys), 1000):
        get_redis().unlink(*keys[start : start + 1000])
