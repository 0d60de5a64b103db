"""Per-key rate limit (docs/api.md "Limits"): a fixed window per API key, counted in Redis with one round trip
(INCR + EXPIRE in a pipeline). The limit is `ENGRAM_RATE_LIMIT_PER_MINUTE` requests a minute, or the tenant's own
`settings.rate_limit` (`{"requests": N, "window_seconds": S}`: a plan, or a test that wants a short window). Over
the limit: 429 with Retry-After (the seconds left in the window). Redis unreachable: the request is allowed (the
limit protects the service; it must not take the API down with it).

One function, `rate_limit_wait`, serves every entry point that takes an API key: the REST API (the DRF throttle
below) and the MCP server (HTTP: the same throttle on its view; stdio: each tool call)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from apps.core.redis import RedisError, get_redis
from apps.tenants.authentication import ApiPrincipal
from apps.tenants.models import ApiKey

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateLimit:
    requests: int  # 0: unlimited
    window_seconds: int


def rate_limit_of(api_key: ApiKey) -> RateLimit:
    """The tenant's own `settings.rate_limit` when it is well formed, else the server's per-minute limit."""
    default = RateLimit(int(settings.ENGRAM["RATE_LIMIT_PER_MINUTE"]), WINDOW_SECONDS)
    own = (api_key.tenant.settings or {}).get("rate_limit")
    if not isinstance(own, dict):
        return default
    requests, window = own.get("requests"), own.get("window_seconds", WINDOW_SECONDS)
    if not isinstance(requests, int) or not isinstance(window, int) or requests < 0 or not 1 <= window <= 3600:
        logger.warning("Tenant %s has a malformed settings.rate_limit; the server's limit applies", api_key.tenant_id)
        return default
    return RateLimit(requests, window)


def rate_limit_wait(*, api_key: ApiKey) -> float | None:
    """Count one request of `api_key`; None when it is allowed, else the seconds until its window ends."""
    limit = rate_limit_of(api_key)
    if limit.requests <= 0:
        return None
    now = time.time()
    window = int(now // limit.window_seconds)
    key = f"engram:throttle:{api_key.pk}:{limit.window_seconds}:{window}"
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, limit.window_seconds + 5)
        count, _ = pipe.execute()
    except RedisError as exc:
        logger.warning("Rate limit not applied: Redis unavailable (%s)", exc)
        return None
    if int(count) <= limit.requests:
        return None
    return (window + 1) * limit.window_seconds - now


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.wait_seconds: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        principal = request.user
        if not isinstance(principal, ApiPrincipal):
            return True  # not a key: the permission check answers 401
        self.wait_seconds = rate_limit_wait(api_key=principal.api_key)
        return self.wait_seconds is None

    def wait(self) -> float | None:
        return self.wait_seconds
