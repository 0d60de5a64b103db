from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.contacts.models import Contact
from apps.conversations.models import Conversation, Message
from apps.conversations.sessions import SessionState, session_id, sessions_assign
from apps.core.exceptions import ApplicationError
from apps.tenants.models import Tenant


@dataclass(frozen=True)
class AppendedMessage:
    message: Message
    created: bool  # False: the client's message_id was seen before and nothing was written


def conversation_get_or_create(
    *, tenant: Tenant, external_id: str, contact: Contact | None, channel: str = "", at: datetime
) -> Conversation:
    return conversations_get_or_create_many(tenant=tenant, wanted=[(external_id, contact, channel, at)])[external_id]


def conversations_get_or_create_many(
    *, tenant: Tenant, wanted: Sequence[tuple[str, Contact | None, str, datetime]]
) -> dict[str, Conversation]:
    """`conversation_get_or_create` for a batch: (external_id, contact, channel, first message time) in
    order, the first of each id creating it. A conversation of another contact → 409 before anything is
    written. A few statements whatever the batch's size."""
    ids = list(dict.fromkeys(external_id for external_id, _, _, _ in wanted))
    found = {c.external_id: c for c in Conversation.objects.filter(tenant=tenant, external_id__in=ids)}
    missing: dict[str, Conversation] = {}
    for external_id, contact, channel, at in wanted:
        if external_id not in found and external_id not in missing:
            missing[external_id] = Conversation(
                tenant=tenant,
                external_id=external_id,
                contact=contact,
                channel=channel,
                started_at=at,
                last_message_at=at,
            )
    if missing:
        Conversation.objects.bulk_create(list(missing.values()), ignore_conflicts=True)  # a concurrent one may win
        found.update({c.external_id: c for c in Conversation.objects.filter(tenant=tenant, external_id__in=missing)})
    for external_id, contact, _, _ in wanted:
        conversation = found[external_id]
        if conversation.contact_id != (contact.pk if contact is not None else None):
            whose = "the tenant's own (no contact)" if conversation.contact_id is None else "another contact"
            raise ApplicationError(
                f"Conversation '{external_id}' belongs to {whose}.",
                code="conflict",
                status_code=409,
                details={"conversation_id": [f"This conversation belongs to {whose}."]},
            )
    return found


def messages_sessions(*, messages: Sequence[Message]) -> list[str]:
    """The session id of each new message, before it is written (apps/conversations/sessions.py), and each
    conversation's session number moved on. Locks the conversations' rows until the transaction ends, so
    concurrent batches of one conversation number its sessions one after the other. Two statements."""
    if not messages:
        return []
    gap = timedelta(seconds=int(settings.ENGRAM["SESSION_GAP_SECONDS"]))
    by_conversation: dict[Any, list[int]] = {}
    for index, message in enumerate(messages):
        by_conversation.setdefault(message.conversation_id, []).append(index)
    rows = Conversation.objects.select_for_update().filter(pk__in=list(by_conversation)).order_by("pk")
    fields = ("pk", "external_id", "session_number", "last_message_at", "message_count")
    current = {row.pk: row for row in rows.only(*fields)}
    sessions = [""] * len(messages)
    moved: dict[Any, int] = {}
    for pk, indexes in by_conversation.items():
        row = current[pk]
        state = SessionState(row.session_number, row.last_message_at if row.message_count else None)
        numbers, after = sessions_assign(state, [messages[index].occurred_at for index in indexes], gap=gap)
        for index, number in zip(indexes, numbers, strict=True):
            sessions[index] = session_id(row.external_id, number)
        if after.number != row.session_number:
            moved[pk] = after.number
    if moved:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE conversations_conversation c SET session_number = v.n "
                "FROM unnest(%s::uuid[], %s::int[]) AS v(id, n) WHERE c.id = v.id",
                [list(moved), list(moved.values())],
            )
    return sessions


def messages_appended(*, messages: Sequence[Message]) -> None:
    """After new ledger rows: each conversation's message count and last message time, each contact's last
    seen time (moved forward only), in two statements."""
    if not messages:
        return
    per_conversation: dict[Any, list[Message]] = {}
    per_contact: dict[Any, datetime] = {}
    for message in messages:
        per_conversation.setdefault(message.conversation_id, []).append(message)
        if message.contact_id is not None:
            latest = per_contact.get(message.contact_id)
            per_contact[message.contact_id] = max(latest, message.occurred_at) if latest else message.occurred_at
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_conversation c SET message_count = c.message_count + v.n, "
            "last_message_at = GREATEST(c.last_message_at, v.at), status = %s, closed_at = NULL "
            "FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[]) AS v(id, n, at) WHERE c.id = v.id",
            [
                Conversation.STATUS_OPEN,
                list(per_conversation),
                [len(rows) for rows in per_conversation.values()],
                [max(row.occurred_at for row in rows) for rows in per_conversation.values()],
            ],
        )
        cursor.execute(
            "UPDATE contacts_contact c SET last_seen_at = GREATEST(coalesce(c.last_seen_at, v.at), v.at) "
            "FROM unnest(%s::uuid[], %s::timestamptz[]) AS v(id, at) WHERE c.id = v.id",
            [list(per_contact), list(per_contact.values())],
        )
    for message in messages:
        conversation = message.conversation
        conversation.last_message_at = max(conversation.last_message_at, message.occurred_at)
        if message.contact is not None:
            seen = message.contact.last_seen_at
            message.contact.last_seen_at = max(seen, message.occurred_at) if seen else message.occurred_at


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
    messages_appended(messages=[message])
    return AppendedMessage(message=message, created=True)
