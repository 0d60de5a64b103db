"""Per-tenant cap on heavy requests in flight (issue 32 item 5): batch ingest, a knowledge document's upload and
the brain's context each hold a write worker for up to seconds, and the write pool has one worker per core; the
per-key rate limit counts requests, not how long they hold a worker, so one tenant's parallel batches could take
the whole pool. At most `ENGRAM_HEAVY_REQUESTS_PER_TENANT` of a tenant's heavy requests run at once (the tenant's
own `settings.heavy_requests` when it is a positive integer); one more is answered 429 with Retry-After.

Counted in Redis as a sorted set per tenant, one member per request in flight scored by when its slot lapses:
a request that never releases its slot (a worker killed mid-request) frees it after SLOT_TTL_SECONDS, longer
than gunicorn's 120 s timeout. Taking a slot is one Lua script (expire lapsed slots, count, add), so two
requests never both take the last slot.

Redis unreachable: the request runs, uncounted, like the rate limit (docs/reliability.md "Limits when Redis
is down": the caps protect the service and must not take the API down with them)."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from apps.core.redis import RedisError, get_redis
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

SLOT_TTL_SECONDS = 150
RETRY_AFTER_SECONDS = 2  # heavy requests take about a second: a slot is usually free again by then

_TAKE_SLOT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


class TenantBusy(Exception):
    def __init__(self, *, limit: int) -> None:
        super().__init__(
            f"This tenant already has {limit} heavy request{'' if limit == 1 else 's'} in flight (batch ingest, "
            "document upload, brain context)."
        )
        self.limit = limit
        self.wait = RETRY_AFTER_SECONDS


def in_flight_key(tenant_id: Any) -> str:
    return f"engram:inflight:{tenant_id}"


def heavy_request_limit(tenant: Tenant) -> int:
    """The tenant's own `settings.heavy_requests` when it is a positive integer, else the server's (0: no cap)."""
    own = (tenant.settings or {}).get("heavy_requests")
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return own
    return int(settings.ENGRAM["HEAVY_REQUESTS_PER_TENANT"])


def heavy_slot_take(*, tenant: Tenant) -> str | None:
    """Take one of the tenant's heavy-request slots; the slot's token (None: not counted, no cap or Redis
    down). Raises TenantBusy when every slot is taken."""
    limit = heavy_request_limit(tenant)
    if limit <= 0:
        return None
    token = secrets.token_hex(8)
    now = time.time()
    try:
        taken = get_redis().eval(
            _TAKE_SLOT, 1, in_flight_key(tenant.pk), now, limit, now + SLOT_TTL_SECONDS, token, SLOT_TTL_SECONDS
        )
    except RedisError as exc:
        logger.warning("Heavy-request cap not applied: Redis unavailable (%s)", exc)
        return None
    if not int(taken):
        raise TenantBusy(limit=limit)
    return token


def heavy_slot_release(*, tenant_id: Any, token: str | None) -> None:
    if token is None:
        return
    try:
        get_redis().zrem(in_flight_key(tenant_id), token)
    except RedisError as exc:  # the slot lapses by itself after SLOT_TTL_SECONDS
        logger.warning("Heavy-request slot not released: Redis unavailable (%s)", exc)


@contextmanager
def heavy_request_slot(*, tenant: Tenant) -> Iterator[None]:
    token = heavy_slot_take(tenant=tenant)
    try:
        yield
    finally:
        heavy_slot_release(tenant_id=tenant.pk, token=token)
