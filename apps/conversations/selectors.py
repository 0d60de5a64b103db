from __future__ import annotations

from django.db.models import QuerySet

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
