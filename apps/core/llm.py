"""The one way Engram talks to an LLM: JSON-object chat completions against any OpenAI-compatible server.

Retries with short exponential backoff on timeouts, connection errors, 5xx/429 and replies that are not a
JSON object; every call (success or final failure) is written to LlmCall with its tokens and cost.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

import openai
from django.conf import settings
from django.db import transaction

from apps.core.models import LlmCall

logger = logging.getLogger(__name__)

FIRST_BACKOFF_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 2.0
_FENCED = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)


class LLMUnavailable(Exception):
    """No usable reply: not configured, the server failed every attempt, or the budget ran out."""


@dataclass(frozen=True)
class LLMResult:
    data: dict[str, Any]
    model: str
    prompt_tokens: int  # summed over every attempt of the call (what was billed)
    completion_tokens: int
    latency_ms: float  # the whole call, retries and backoff included


class _RetryableReply(Exception):
    """The server answered, but not with a JSON object."""


def llm_is_configured() -> bool:
    return bool(settings.LLM_BASE_URL)


@lru_cache(maxsize=8)
def _client(base_url: str, api_key: str) -> openai.OpenAI:
    # max_retries=0: llm_complete_json retries itself, within the caller's time budget
    return openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=0)


def llm_complete_json(
    *,
    system: str,
    user: str,
    purpose: str,
    tenant_id: str | uuid.UUID | None = None,
    max_tokens: int = 800,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> LLMResult:
    """Ask the configured model for a JSON object; return it parsed, or raise LLMUnavailable.

    `timeout` (default settings.LLM_TIMEOUT_SECONDS) is the budget of the whole call: each attempt gets
    what is left of it, and no retry starts once its backoff would cross it. `max_retries` defaults to
    settings.LLM_MAX_RETRIES. A 4xx other than 429 is not retried. Writes one LlmCall row, never raising
    for it.
    """
    if not llm_is_configured():
        raise LLMUnavailable("LLM_BASE_URL is not set")
    budget = settings.LLM_TIMEOUT_SECONDS if timeout is None else timeout
    retries = settings.LLM_MAX_RETRIES if max_retries is None else max_retries
    model = settings.LLM_MODEL
    client = _client(settings.LLM_BASE_URL, settings.LLM_API_KEY)
    started = time.monotonic()
    deadline = started + budget
    prompt_tokens = completion_tokens = 0
    last_error = "no attempt made"
    for attempt in range(retries + 1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            response = client.chat.completions.create(
                model=model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format={"type": "json_object"},
                temperature=0,
                max_tokens=max_tokens,
                timeout=remaining,
            )
            if response.usage is not None:
                prompt_tokens += response.usage.prompt_tokens or 0
                completion_tokens += response.usage.completion_tokens or 0
            data = parse_json_object(response.choices[0].message.content if response.choices else None)
        except (openai.APITimeoutError, openai.APIConnectionError, _RetryableReply) as exc:
            last_error = _describe(exc)
        except openai.APIStatusError as exc:
            last_error = _describe(exc)
            if exc.status_code < 500 and exc.status_code != 429:
                break
        else:
            latency_ms = (time.monotonic() - started) * 1000
            _record(tenant_id, purpose, model, prompt_tokens, completion_tokens, latency_ms, success=True)
            return LLMResult(
                data=data,
                model=response.model or model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                latency_ms=latency_ms,
            )
        backoff = min(FIRST_BACKOFF_SECONDS * 2**attempt, MAX_BACKOFF_SECONDS)
        if attempt == retries or time.monotonic() + backoff >= deadline:
            break
        logger.info("LLM call for %s failed (%s); retrying in %.1f s", purpose, last_error, backoff)
        time.sleep(backoff)
    latency_ms = (time.monotonic() - started) * 1000
    _record(tenant_id, purpose, model, prompt_tokens, completion_tokens, latency_ms, success=False, error=last_error)
    raise LLMUnavailable(f"LLM call for {purpose} failed: {last_error}")


def parse_json_object(content: str | None) -> dict[str, Any]:
    """The JSON object in a reply, with a ```json fence around it tolerated."""
    if not content:
        raise _RetryableReply("empty reply")
    text = content.strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _RetryableReply(f"reply is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise _RetryableReply(f"reply is JSON but not an object: {type(data).__name__}")
    return data


def llm_cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> Decimal:
    """Cost from settings.ENGRAM["LLM_PRICES"]: {model: {"input": USD per 1M tokens, "output": ...}}; else 0."""
    prices = settings.ENGRAM.get("LLM_PRICES", {}).get(model)
    if not prices:
        return Decimal(0)
    per_million = (
        Decimal(str(prices.get("input", 0))) * prompt_tokens + Decimal(str(prices.get("output", 0))) * completion_tokens
    )
    return (per_million / 1_000_000).quantize(Decimal("0.000001"))


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


def _record(
    tenant_id: str | uuid.UUID | None,
    purpose: str,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    latency_ms: float,
    *,
    success: bool,
    error: str = "",
) -> None:
    try:
        # a savepoint: a failed insert must not break the caller's transaction
        with transaction.atomic():
            LlmCall.objects.create(
                tenant_id=tenant_id,
                purpose=purpose[:64],
                model=model[:128],
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cost_usd=llm_cost_usd(model, prompt_tokens, completion_tokens),
                latency_ms=latency_ms,
                success=success,
                error=error,
            )
    except Exception:
        logger.exception("could not record the LLM call for %s", purpose)
