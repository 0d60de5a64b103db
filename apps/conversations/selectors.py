from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Q, QuerySet

from apps.conversations.models import Conversation, Message
from apps.core.exceptions import NotFound
from apps.tenants.models import Tenant


def conversation_get(*, tenant: Tenant, external_id: str) -> Conversation:
    conversation = Conversation.objects.select_related("contact").filter(tenant=tenant, external_id=external_id).first()
    if conversation is None:
        raise NotFound(f"Conversation '{external_id}' not found.")
    return conversation


def message_list(*, tenant: Tenant, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(tenant=tenant, conversation=conversation)


def message_turns_before(*, message: Message, count: int) -> list[Message]:
    """The `count` turns before `message` in its conversation, newest first (one probe of the
    conversation's (occurred_at, id) index)."""
    return list(
        Message.objects.filter(conversation_id=message.conversation_id)
        .filter(Q(occurred_at__lt=message.occurred_at) | Q(occurred_at=message.occurred_at, id__lt=message.id))
        .order_by("-occurred_at", "-id")
        .only("external_id", "speaker", "content", "occurred_at")[:count]
    )


def messages_turn_before(*, message_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """For each of `message_ids` with a turn before it in its conversation: that turn's (speaker, content).
    Turns are ordered as the ledger orders them — by time, then by arrival (the id) where times tie — so a
    conversation whose turns share one timestamp still has a turn before each. One statement."""
    if not message_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT cur.id, p.speaker, p.content FROM conversations_message cur "
            "CROSS JOIN LATERAL (SELECT p.speaker, p.content FROM conversations_message p "
            "  WHERE p.conversation_id = cur.conversation_id AND (p.occurred_at, p.id) < (cur.occurred_at, cur.id) "
            "  ORDER BY p.occurred_at DESC, p.id DESC LIMIT 1) p "
            "WHERE cur.id = ANY(%s)",
            [list(message_ids)],
        )
        return {message_id: (speaker, content) for message_id, speaker, content in cursor.fetchall()}
