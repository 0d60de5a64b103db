"""What the sync and async clients share: each operation as a `Call` (method, path, body, how to read the answer,
whether it is safe to send twice), the retry policy, and the mapping of error answers to exceptions. The two
clients differ only in how they send a `Call` and sleep between attempts."""

from __future__ import annotations

import email.utils
import os
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypedDict, TypeVar

import httpx

from engram_client.errors import APIStatusError, error_for_status

T = TypeVar("T")

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"
RETRY_STATUSES = frozenset({429, 503})


class IngestMessage(TypedDict, total=False):
    """One message of `ingest_batch` (the body of POST /ingest). `message_id` is generated when missing."""

    conversation_id: str  # required
    message: str  # required
    role: str  # user | assistant | system | tool (default user)
    contact_id: str | None  # omitted or None: the tenant's own conversation (the brain)
    message_id: str
    speaker: str
    occurred_at: str | datetime
    channel: str
    display_name: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    params: Mapping[str, Any] | None = None
    json: Any = None
    files: Mapping[str, tuple[str, bytes, str]] | None = None
    data: Mapping[str, str] | None = None
    # safe to send again when the first attempt may have reached the server (a read, an ingest with its
    # message_id, an update to absolute values); a refused connection or a 429 is retried either way
    retry_safe: bool = True


@dataclass(frozen=True)
class Page(Generic[T]):
    results: list[T]
    count: int
    has_next: bool


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429 and 503 (after the server's Retry-After when it sends one, else exponential backoff with
    jitter), and on connection errors. `max_retry_wait`: a Retry-After longer than this is not waited for (the
    error is raised at once)."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    max_retry_wait: float = 60.0

    def backoff(self, attempt: int) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        return ceiling / 2 + ceiling / 2 * random.random()

    def delay_after_status(
        self, attempt: int, status_code: int, retry_after: float | None, retry_safe: bool
    ) -> float | None:
        """Seconds to wait before the next attempt, or None to give up and raise."""
        if attempt >= self.max_retries or status_code not in RETRY_STATUSES:
            return None
        if status_code == 503 and not retry_safe:
            return None  # the server may have done part of it: only a call that is safe twice is repeated
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_wait else None
        return self.backoff(attempt)

    def delay_after_error(self, attempt: int, error: httpx.TransportError, retry_safe: bool) -> float | None:
        if attempt >= self.max_retries:
            return None
        never_sent = isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)
        return self.backoff(attempt) if never_sent or retry_safe else None


def retry_after_seconds(response: httpx.Response) -> float | None:
    """Retry-After as seconds (a number, or an HTTP date)."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def refused_before_work(response: httpx.Response) -> bool:
    """A 503 `overloaded`: the server's front refused the request before any of it ran (its lane had no free
    worker), so sending it again is safe whatever the call."""
    if response.status_code != 503:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and error.get("code") == "overloaded"


def error_from(response: httpx.Response) -> APIStatusError:
    code, message, details = "", f"HTTP {response.status_code}", None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        code = str(error.get("code") or "")
        message = str(error.get("message") or message)
        details = error.get("details")
    elif response.text:
        message = f"{message}: {response.text[:300]}"
    return error_for_status(
        response.status_code, code=code, message=message, details=details, retry_after=retry_after_seconds(response)
    )


def read_body(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def resolve_settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    url = (base_url or os.environ.get("ENGRAM_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    key = api_key or os.environ.get("ENGRAM_API_KEY")
    if not key:
        raise ValueError("An API key is needed: Engram(api_key=...) or the ENGRAM_API_KEY environment variable.")
    return url, key


def headers_for(api_key: str) -> dict[str, str]:
    from engram_client import __version__

    return {"Authorization": f"Bearer {api_key}", "User-Agent": f"engram-client/{__version__}"}


def new_message_id() -> str:
    """A message_id for an ingest that has none: a retry of the same call then stores nothing twice."""
    return f"sdk-{uuid.uuid4().hex}"


def _iso(value: str | datetime | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


# --- the operations, each one Call ---------------------------------------------------------------------------


def ingest_body(message: IngestMessage | Mapping[str, Any]) -> dict[str, Any]:
    body = dict(message)
    body.setdefault("role", "user")
    if not body.get("message_id"):
        body["message_id"] = new_message_id()
    if "occurred_at" in body:
        body["occurred_at"] = _iso(body["occurred_at"])
    return body


def page_parser(item: Callable[[Any], T]) -> Callable[[Any], Page[T]]:
    def parse(body: Any) -> Page[T]:
        return Page(
            results=[item(row) for row in body.get("results") or []],
            count=int(body.get("count") or 0),
            has_next=bool(body.get("next")),
        )

    return parse


def list_params(filters: Mapping[str, Any], *, limit: int, offset: int) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in filters.items():
        if value is None or (value == "" and name != "key_prefix") or value is False:
            continue
        if isinstance(value, bool):
            params[name] = "true"
        elif isinstance(value, list | tuple):
            params[name] = ",".join(str(item) for item in value)
        else:
            params[name] = value
    return {**params, "limit": limit, "offset": offset}


def search_body(
    query: str,
    *,
    contact_id: str | None,
    top_k: int,
    memory_types: Sequence[str] | None,
    include_compressed: bool,
    explain: bool,
    key_prefix: str | None = None,
    as_of: datetime | str | None = None,
) -> dict[str, Any]:
    return _without_none(
        {
            "as_of": _iso(as_of),
            "key_prefix": key_prefix,
            "query": query,
            "contact_id": contact_id,
            "top_k": top_k,
            "memory_types": list(memory_types) if memory_types else None,
            "include_compressed": include_compressed or None,
            "explain": explain or None,
        }
    )


def context_params(
    *,
    query: str,
    conversation_id: str | None,
    token_budget: int | None,
    explain: bool,
    as_of: datetime | str | None = None,
) -> dict[str, Any]:
    return _without_none(
        {
            "as_of": _iso(as_of),
            "query": query or None,
            "conversation_id": conversation_id,
            "token_budget": token_budget,
            "explain": "true" if explain else None,
        }
    )


def memory_update_body(*, content: str | None, importance: float | None, is_pinned: bool | None) -> dict[str, Any]:
    body = _without_none({"content": content, "importance": importance, "is_pinned": is_pinned})
    if not body:
        raise ValueError("Give at least one of content, importance, is_pinned.")
    return body


def path_part(value: str) -> str:
    """An id inside a URL path: percent-encoded, so `wa:+91-98` or a space reach the server as they are."""
    from urllib.parse import quote

    if not value or "/" in value:
        raise ValueError(f"Not a valid id for a URL path: {value!r}")
    return quote(value, safe="")
