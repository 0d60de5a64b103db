from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.contacts.models import Contact
from apps.conversations.models import Conversation, Message
from apps.core.exceptions import ApplicationError
from apps.tenants.models import Tenant


@dataclass(frozen=True)
class AppendedMessage:
    message: Message
    created: bool  # False: the client's message_id was seen before and nothing was written


def conversation_get_or_create(
    *, tenant: Tenant, external_id: str, contact: Contact | None, channel: str = "", at: datetime
) -> Conversation:
    conversation, created = Conversation.objects.get_or_create(
        tenant=tenant,
        external_id=external_id,
        defaults={"contact": contact, "channel": channel, "started_at": at, "last_message_at": at},
    )
    if not created and contact is not None and conversation.contact_id not in (None, contact.pk):
        raise ApplicationError(
            f"Conversation '{external_id}' belongs to another contact.",
            code="conflict",
            status_code=409,
            details={"conversation_id": ["This conversation belongs to another contact."]},
        )
    return conversation


def message_append(
    *,
    tenant: Tenant,
    conversation: Conversation,
    contact: Contact | None,
    role: str,
    content: str,
    external_id: str | None = None,
    speaker: str = "",
    occurred_at: datetime | None = None,
    metadata: dict[str, Any] | None = None,
) -> AppendedMessage:
    """Append one turn to the ledger. The same client message_id twice writes nothing the second time."""
    if role not in Message.ROLES:
        raise ApplicationError(f"role must be one of {', '.join(Message.ROLES)}.")
    if external_id:
        existing = Message.objects.filter(tenant=tenant, external_id=external_id).first()
        if existing is not None:
            return AppendedMessage(message=existing, created=False)
    at = occurred_at or timezone.now()
    try:
        with transaction.atomic():
            message = Message.objects.create(
                tenant=tenant,
                conversation=conversation,
                contact=contact,
                external_id=external_id or Message.new_external_id(),
                role=role,
                speaker=speaker,
                content=content,
                occurred_at=at,
                metadata=metadata or {},
            )
    except IntegrityError:
        # a concurrent request with the same message_id won the race: return its row
        return AppendedMessage(message=Message.objects.get(tenant=tenant, external_id=external_id), created=False)
    Conversation.objects.filter(pk=conversation.pk).update(
        message_count=F("message_count") + 1,
        last_message_at=at if at > conversation.last_message_at else conversation.last_message_at,
        status=Conversation.STATUS_OPEN,
        closed_at=None,
    )
    if at > conversation.last_message_at:
        conversation.last_message_at = at
    if contact is not None and (contact.last_seen_at is None or at > contact.last_seen_at):
        Contact.objects.filter(pk=contact.pk).update(last_seen_at=at)
        contact.last_seen_at = at
    return AppendedMessage(message=message, created=True)
