"""The working-memory session window: the last N turns of a conversation in Redis.

Redis holds two keys per conversation: the first turn (always kept: it carries the greeting and the
initial context) and a list of the most recent turns. PostgreSQL is the source of truth; when Redis
lacks the window (expired, flushed, restarted) or is down, the window is rebuilt from the ledger.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from apps.conversations.models import Conversation, Message
from apps.core.redis import RedisError, get_redis, scope_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    speaker: str
    message_id: str
    occurred_at: str

    @classmethod
    def from_message(cls, message: Message) -> Turn:
        return cls(
            role=message.role,
            content=message.content,
            speaker=message.speaker,
            message_id=message.external_id,
            occurred_at=message.occurred_at.isoformat(),
        )


def window_keys(conversation: Conversation) -> tuple[str, str]:
    """(first turn, recent turns): under the contact's scope (apps/core/redis.py), erased with it."""
    base = scope_key(
        "window", tenant_id=conversation.tenant_id, contact_id=conversation.contact_id, rest=str(conversation.id)
    )
    return f"{base}:first", f"{base}:recent"


def _size() -> int:
    return int(settings.ENGRAM["SESSION_WINDOW_TURNS"])


def _ttl() -> int:
    return int(settings.ENGRAM["SESSION_WINDOW_TTL_SECONDS"])


def _from_ledger(conversation: Conversation) -> list[Turn]:
    size = _size()
    ordered = Message.objects.filter(conversation=conversation).order_by("occurred_at", "id")
    first = ordered.first()
    if first is None:
        return []
    recent = list(ordered.exclude(pk=first.pk).order_by("-occurred_at", "-id")[: size - 1])
    recent.reverse()
    return [Turn.from_message(first), *(Turn.from_message(message) for message in recent)]


def _store(conversation: Conversation, turns: list[Turn]) -> None:
    first_key, recent_key = window_keys(conversation)
    pipe = get_redis().pipeline(transaction=True)
    pipe.delete(first_key, recent_key)
    if turns:
        pipe.set(first_key, json.dumps(asdict(turns[0])), ex=_ttl())
        if len(turns) > 1:
            pipe.rpush(recent_key, *(json.dumps(asdict(turn)) for turn in turns[1:]))
            pipe.expire(recent_key, _ttl())
    pipe.execute()


def window_append(*, conversation: Conversation, message: Message) -> None:
    """Add a persisted message to the window; rebuild from the ledger when Redis lost the window."""
    message.conversation = conversation
    windows_append(messages=[message])


def windows_append(*, messages: Sequence[Message]) -> None:
    """Add persisted messages (of any conversations, in order) to their windows: two Redis round trips for
    the batch; a window Redis lost is rebuilt from the ledger (which holds these messages already)."""
    by_conversation: dict[Any, list[Message]] = {}
    for message in messages:
        by_conversation.setdefault(message.conversation_id, []).append(message)
    if not by_conversation:
        return
    conversations = {rows[0].conversation_id: rows[0].conversation for rows in by_conversation.values()}
    try:
        redis_client = get_redis()
        check = redis_client.pipeline(transaction=False)
        for conversation in conversations.values():
            check.exists(window_keys(conversation)[0])
        present = dict(zip(conversations, check.execute(), strict=True))
        pipe = redis_client.pipeline(transaction=True)
        for conversation_id, rows in by_conversation.items():
            conversation = conversations[conversation_id]
            if not present[conversation_id]:
                continue
            first_key, recent_key = window_keys(conversation)
            pipe.rpush(recent_key, *(json.dumps(asdict(Turn.from_message(message))) for message in rows))
            pipe.ltrim(recent_key, -(_size() - 1), -1)
            pipe.expire(recent_key, _ttl())
            pipe.expire(first_key, _ttl())
        pipe.execute()
        for conversation_id, conversation in conversations.items():
            if not present[conversation_id]:
                _store(conversation, _from_ledger(conversation))
    except RedisError:
        # the ledger already has the messages; the windows are rebuilt on the next read
        logger.warning("Redis unavailable: session windows of %d conversations not updated", len(conversations))


def window_get(*, conversation: Conversation) -> list[Turn]:
    first_key, recent_key = window_keys(conversation)
    try:
        redis_client = get_redis()
        pipe = redis_client.pipeline(transaction=False)
        pipe.get(first_key)
        pipe.lrange(recent_key, 0, -1)
        first, recent = pipe.execute()
    except RedisError:
        logger.warning("Redis unavailable: session window for %s read from PostgreSQL", conversation.id)
        return _from_ledger(conversation)
    if first is None:
        turns = _from_ledger(conversation)
        with contextlib.suppress(RedisError):
            _store(conversation, turns)
        return turns
    return [Turn(**json.loads(first)), *(Turn(**json.loads(item)) for item in recent)]


def window_clear(*, conversation: Conversation) -> None:
    try:
        get_redis().delete(*window_keys(conversation))
    except RedisError:
        logger.warning("Redis unavailable: session window for %s not cleared", conversation.id)


def window_as_dicts(turns: list[Turn]) -> list[dict[str, Any]]:
    return [asdict(turn) for turn in turns]
