"""Sign-in throttling for people (the inspector's /accounts/login/ and the admin's /admin/login/): failed
attempts are counted in Redis per username and client address; at LOGIN_FAILURES_ALLOWED within the window
the pair is locked until the window ends — even the right password is refused meanwhile, with a message that
says so and when to try again. A success clears the count. Another address keeps trying the same username
(so one attacker cannot lock an operator out from everywhere); another username from the same address too.

Redis down: sign-in works unthrottled (logged), the same choice as the API's rate limit — an outage of the
cache must not lock every operator out of the admin they need to repair it.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest

from apps.core.redis import RedisError, get_redis

logger = logging.getLogger(__name__)

KEY_PREFIX = "engram:login-failures:"


def _key(username: str, address: str) -> str:
    # hashed: no username or address in Redis
    digest = hashlib.sha256(f"{username.strip().casefold()}\x00{address}".encode()).hexdigest()
    return f"{KEY_PREFIX}{digest}"


def _address(request: HttpRequest | None) -> str:
    return str(request.META.get("REMOTE_ADDR", "")) if request is not None else ""


def login_lock_seconds(*, username: str, address: str) -> int:
    """Seconds left of the pair's lock; 0 when it may try."""
    try:
        client = get_redis()
        key = _key(username, address)
        failures = int(client.get(key) or 0)
        if failures < settings.ENGRAM["LOGIN_FAILURES_ALLOWED"]:
            return 0
        return max(int(client.ttl(key)), 1)
    except RedisError as exc:
        logger.warning("Redis unavailable: sign-in not throttled (%s)", exc)
        return 0


def login_failure_record(*, username: str, address: str) -> int:
    """Count a failed attempt; the count so far (0 when Redis is down)."""
    try:
        pipe = get_redis().pipeline()
        key = _key(username, address)
        pipe.incr(key)
        pipe.expire(key, settings.ENGRAM["LOGIN_WINDOW_SECONDS"], nx=True)
        count, _ = pipe.execute()
        return int(count)
    except RedisError as exc:
        logger.warning("Redis unavailable: a failed sign-in not counted (%s)", exc)
        return 0


def login_failures_clear(*, username: str, address: str) -> None:
    try:
        get_redis().delete(_key(username, address))
    except RedisError as exc:
        logger.warning("Redis unavailable: failed sign-ins not cleared (%s)", exc)


def _minutes(seconds: int) -> str:
    minutes = max(1, -(-seconds // 60))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


class ThrottledLoginMixin:
    """For Django's authentication forms: refuse a locked username+address before checking the password,
    count a failure, clear the count on success."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        address = _address(self.request)
        locked = login_lock_seconds(username=username, address=address)
        if locked:
            raise forms.ValidationError(
                f"Too many failed sign-ins for this username from your address. Try again in {_minutes(locked)}.",
                code="locked",
            )
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            count = login_failure_record(username=username, address=address)
            allowed = settings.ENGRAM["LOGIN_FAILURES_ALLOWED"]
            if count >= allowed:
                seconds = settings.ENGRAM["LOGIN_WINDOW_SECONDS"]
                raise forms.ValidationError(
                    f"Too many failed sign-ins for this username from your address. Try again in {_minutes(seconds)}.",
                    code="locked",
                ) from None
            raise
        login_failures_clear(username=username, address=address)
        return cleaned


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass
