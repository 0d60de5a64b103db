from __future__ import annotations

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
