"""Per-key rate limit (docs/api.md "Limits"): a fixed one-minute window per API key, counted in Redis with one
round trip (INCR + EXPIRE in a pipeline). Over the limit: 429 with Retry-After (the seconds left in the
window). Redis unreachable: the request is allowed (the limit protects the service; it must not take the API
down with it)."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from apps.core.redis import RedisError, get_redis
from apps.tenants.authentication import ApiPrincipal

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.wait_seconds: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        limit = int(settings.ENGRAM["RATE_LIMIT_PER_MINUTE"])
        principal = request.user
        if limit <= 0 or not isinstance(principal, ApiPrincipal):
            return True  # unlimited, or not a key (the permission check answers 401)
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        key = f"engram:throttle:{principal.api_key.pk}:{window}"
        try:
            pipe = get_redis().pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, WINDOW_SECONDS + 5)
            count, _ = pipe.execute()
        except RedisError as exc:
            logger.warning("Rate limit not applied: Redis unavailable (%s)", exc)
            return True
        if int(count) <= limit:
            return True
        self.wait_seconds = (window + 1) * WINDOW_SECONDS - now
        return False

    def wait(self) -> float | None:
        return self.wait_seconds
