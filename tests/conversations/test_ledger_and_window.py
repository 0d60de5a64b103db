from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from apps.conversations import window
from apps.conversations.models import Conversation, Message
from apps.conversations.services import conversation_get_or_create, message_append
from apps.core.exceptions import ApplicationError
from apps.core.redis import get_redis
from tests.factories import ContactFactory
from tests.redis_keys import redis_clear, redis_keys

pytestmark = pytest.mark.django_db


def _conversation(tenant, contact=None):
    return conversation_get_or_create(tenant=tenant, external_id="conv-1", contact=contact, at=timezone.now())


def _append(tenant, conversation, n, start=None):
    start = start or timezone.now()
    return [
        message_append(
            tenant=tenant,
            conversation=conversation,
            contact=None,
            role="user" if i % 2 == 0 else "assistant",
            content=f"turn {i}",
            external_id=f"m-{i}",
            occurred_at=start + timedelta(seconds=i),
        ).message
        for i in range(n)
    ]


def test_same_message_id_is_written_once(tenant):
    conversation = _conversation(tenant)
    first = message_append(
        tenant=tenant, conversation=conversation, contact=None, role="user", content="hi", external_id="m1"
    )
    again = message_append(
        tenant=tenant, conversation=conversation, contact=None, role="user", content="changed", external_id="m1"
    )
    assert (first.created, again.created) == (True, False)
    assert again.message.pk == first.message.pk
    assert list(Message.objects.values_list("content", flat=True)) == ["hi"]
    assert Conversation.objects.get().message_count == 1


def test_unknown_role_is_refused(tenant):
    conversation = _conversation(tenant)
    with pytest.raises(ApplicationError):
        message_append(tenant=tenant, conversation=conversation, contact=None, role="robot", content="x")
    assert not Message.objects.exists()


def test_conversation_of_another_contact_is_refused(tenant):
    first, second = ContactFactory(tenant=tenant), ContactFactory(tenant=tenant)
    _conversation(tenant, first)
    with pytest.raises(ApplicationError, match="belongs to another contact"):
        _conversation(tenant, second)


def test_window_keeps_first_turn_and_last_19(tenant):
    conversation = _conversation(tenant)
    for message in _append(tenant, conversation, 30):
        window.window_append(conversation=conversation, message=message)
    turns = window.window_get(conversation=conversation)
    assert len(turns) == 20
    assert [turn.content for turn in turns] == ["turn 0", *[f"turn {i}" for i in range(11, 30)]]


def test_window_is_rebuilt_from_postgres_when_redis_lost_it(tenant):
    conversation = _conversation(tenant)
    for message in _append(tenant, conversation, 25):
        window.window_append(conversation=conversation, message=message)
    redis_clear()
    turns = window.window_get(conversation=conversation)
    assert [turn.message_id for turn in turns] == ["m-0", *[f"m-{i}" for i in range(6, 25)]]
    # and the rebuilt window is back in Redis
    assert get_redis().exists(window.window_keys(conversation)[0]) == 1


def test_window_reads_postgres_when_redis_is_down(tenant):
    conversation = _conversation(tenant)
    messages = _append(tenant, conversation, 3)
    window.get_redis.cache_clear()
    try:
        with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):  # nothing listens on port 1
            window.window_append(conversation=conversation, message=messages[-1])  # logs, does not raise
            turns = window.window_get(conversation=conversation)
    finally:
        window.get_redis.cache_clear()
    assert [turn.content for turn in turns] == ["turn 0", "turn 1", "turn 2"]


def test_window_clear(tenant):
    conversation = _conversation(tenant)
    for message in _append(tenant, conversation, 2):
        window.window_append(conversation=conversation, message=message)
    window.window_clear(conversation=conversation)
    assert redis_keys("engram:window:*") == []


def test_conversation_api_shows_window_and_paginated_messages(api, tenant, other_api):
    conversation = _conversation(tenant)
    _append(tenant, conversation, 3)
    detail = api.get("/api/v1/conversations/conv-1").json()
    assert detail["message_count"] == 3
    assert [turn["content"] for turn in detail["window"]] == ["turn 0", "turn 1", "turn 2"]
    messages = api.get("/api/v1/conversations/conv-1/messages").json()
    assert [row["message_id"] for row in messages["results"]] == ["m-0", "m-1", "m-2"]
    assert other_api.get("/api/v1/conversations/conv-1").status_code == 404
