"""Proactive triggers (check-in, re-engagement, follow-up), due inside the contact's preferred chat hours."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.contacts.models import Contact, ContactState, Trigger
from apps.core.exceptions import ApplicationError

DEFAULT_OUTREACH_HOUR = 9  # UTC, when the contact's chat window is not known yet


def outreach_time(*, state: ContactState | None, earliest: datetime) -> datetime:
    """The first moment at or after `earliest` that falls at the start of the contact's chat window
    (or 09:00 UTC when unknown)."""
    hour = state.chat_window_start if state and state.chat_window_start is not None else DEFAULT_OUTREACH_HOUR
    candidate = datetime.combine(earliest.date(), time(hour=hour), tzinfo=earliest.tzinfo)
    if candidate < earliest:
        candidate += timedelta(days=1)
    return candidate


def trigger_create(*, contact: Contact, kind: str, reason: str, dedupe_key: str, earliest: datetime) -> Trigger | None:
    """One pending trigger per contact and dedupe key; returns None when it already exists."""
    if kind not in Trigger.KINDS:
        raise ApplicationError(f"kind must be one of {', '.join(Trigger.KINDS)}.")
    state = ContactState.objects.filter(contact=contact).first()
    try:
        with transaction.atomic():
            return Trigger.objects.create(
                tenant=contact.tenant,
                contact=contact,
                kind=kind,
                reason=reason[:300],
                dedupe_key=dedupe_key[:200],
                due_at=outreach_time(state=state, earliest=earliest),
            )
    except IntegrityError:
        return None


def trigger_complete(*, trigger: Trigger, status: str = Trigger.STATUS_DONE) -> Trigger:
    if status not in (Trigger.STATUS_DONE, Trigger.STATUS_CANCELLED):
        raise ApplicationError("status must be done or cancelled.")
    if trigger.status == Trigger.STATUS_PENDING:
        trigger.status = status
        trigger.done_at = timezone.now()
        trigger.save(update_fields=["status", "done_at", "updated_at"])
    return trigger
