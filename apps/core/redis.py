"""The one Redis connection pool of the process (session windows, hot state, heartbeats), and the naming
rule that makes a scope's keys erasable.

Every key that holds data of a scope (a contact, or a tenant's own brain) is named
`engram:<kind>:<tenant id>:<contact id | "tenant">[:…]` (`scope_key`), so erasing a contact or a tenant
finds all of them with one pattern (`scope_keys_forget`) without knowing which features wrote them.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def get_redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL, decode_responses=True, socket_timeout=0.5, socket_connect_timeout=0.5
    )


RedisError = redis.exceptions.RedisError

TENANT_SCOPE = "tenant"  # the contact segment of a tenant-scope key (the brain)


def scope_segment(*, tenant_id: Any, contact_id: Any | None) -> str:
    """`<tenant id>:<contact id | "tenant">`: the part of a key that names its scope."""
    return f"{tenant_id}:{contact_id if contact_id is not None else TENANT_SCOPE}"


def scope_key(kind: str, *, tenant_id: Any, contact_id: Any | None, rest: str = "") -> str:
    key = f"engram:{kind}:{scope_segment(tenant_id=tenant_id, contact_id=contact_id)}"
    return f"{key}:{rest}" if rest else key


def scope_keys_forget(*, tenant_id: Any, contact_id: Any | None = None, whole_tenant: bool = False) -> int:
    """Delete every key of a contact's scope (or, `whole_tenant`, of every scope of the tenant): session
    windows, lexicon, cached embeddings. One SCAN over the keyspace; returns how many keys went.
    Raises RedisError when Redis is unreachable (the caller decides whether that may wait)."""
    if whole_tenant:
        pattern = f"engram:*:{tenant_id}:*"
    else:
        pattern = f"engram:*:{scope_segment(tenant_id=tenant_id, contact_id=contact_id)}*"
    client = get_redis()
    removed = 0
    batch: list[str] = []
    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            removed += int(client.unlink(*batch))
            batch = []
    if batch:
        removed += int(client.unlink(*batch))
    return removed


def scope_keys_forget_quietly(*, tenant_id: Any, contact_id: Any | None = None, whole_tenant: bool = False) -> int:
    """`scope_keys_forget` that logs instead of raising: what Redis keeps expires by itself (session windows
    after SESSION_WINDOW_TTL_SECONDS, lexicons after a day, embeddings after EMBEDDING_CACHE_TTL_SECONDS)."""
    try:
        return scope_keys_forget(tenant_id=tenant_id, contact_id=contact_id, whole_tenant=whole_tenant)
    except RedisError as exc:
        logger.warning("Redis unavailable: keys of scope %s:%s not erased (%s)", tenant_id, contact_id, exc)
        return 0
