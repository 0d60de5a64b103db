"""Contact state on every ingested user message: mood (LLM → previous → keywords chain), crisis language,
sessions, streak, relationship stage, churn risk. Crisis detection never depends on an LLM."""

from __future__ import annotations

import copy
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.contacts.intelligence import crisis as crisis_rules
from apps.contacts.intelligence import mood as mood_rules
from apps.contacts.intelligence import stages
from apps.contacts.intelligence.helplines import helpline_guidance
from apps.contacts.models import Contact, ContactState, CrisisReview, InteractionLog
from apps.core.llm import LLMUnavailable, llm_complete_json, llm_is_configured
from apps.core.rows import instances_insert

logger = logging.getLogger(__name__)

MOOD_LLM_BUDGET_SECONDS = 0.2
USUAL_MOOD_WINDOW = 50


@dataclass(frozen=True)
class StateUpdate:
    state: ContactState
    mood: mood_rules.MoodReading
    crisis: crisis_rules.CrisisSignal
    crisis_guidance: str | None
    new_session: bool


def mood_classify(*, text: str, previous: mood_rules.MoodReading | None, tenant_id: str) -> mood_rules.MoodReading:
    """LLM classification within 200 ms when configured; on timeout the previous mood; with no LLM or the
    provider failing fast, the keyword/emoji classifier."""
    if not llm_is_configured():
        return mood_rules.classify_mood_keywords(text)
    started = time.monotonic()
    try:
        result = llm_complete_json(
            system=mood_rules.MOOD_LLM_SYSTEM_PROMPT,
            user=f'Message: "{text[:600]}"',
            purpose="mood",
            tenant_id=tenant_id,
            max_tokens=40,
            timeout=MOOD_LLM_BUDGET_SECONDS,
            max_retries=0,
        )
    except LLMUnavailable:
        timed_out = time.monotonic() - started >= MOOD_LLM_BUDGET_SECONDS * 0.9
        if timed_out and previous is not None:
            return mood_rules.MoodReading(
                mood=previous.mood,
                energy=previous.energy,
                style=previous.style,
                confidence=previous.confidence,
                source="previous",
            )
        return mood_rules.classify_mood_keywords(text)
    return mood_rules.mood_from_llm_json(result.data) or mood_rules.classify_mood_keywords(text)


def _usual_mood(contact: Contact) -> tuple[str, str]:
    rows = list(
        InteractionLog.objects.filter(contact=contact)
        .order_by("-occurred_at")
        .values_list("mood", "energy")[:USUAL_MOOD_WINDOW]
    )
    if len(rows) < 5:
        return "", ""
    mood = Counter(row[0] for row in rows).most_common(1)[0][0]
    energy = Counter(row[1] for row in rows).most_common(1)[0][0]
    return mood, energy


def crisis_guidance_for(contact: Contact) -> str:
    tenant_settings = contact.tenant.settings or {}
    locale = (contact.metadata or {}).get("locale") or tenant_settings.get("locale")
    overrides = tenant_settings.get("helplines") if isinstance(tenant_settings.get("helplines"), dict) else None
    return helpline_guidance(locale, overrides)


@dataclass(frozen=True)
class StatedMessage:
    """A user message as contact intelligence reads it."""

    text: str
    message_id: str
    occurred_at: datetime


def contact_state_update(
    *, contact: Contact, text: str, message_id: str, occurred_at: datetime, now: datetime | None = None
) -> StateUpdate:
    (update,) = contact_state_update_many(
        contact=contact, messages=[StatedMessage(text, message_id, occurred_at)], now=now
    )
    if update is None:
        raise ValueError(f"message {message_id} was already applied to the contact's state")
    return update


def contact_state_update_many(
    *, contact: Contact, messages: Sequence[StatedMessage], now: datetime | None = None
) -> list[StateUpdate | None]:
    """The contact's state after each of `messages`, in order (mood, crisis, sessions, streak, stage), in one
    transaction with the state row locked; the interaction log written in one statement. Each update carries
    the state as it was right after its message. A message already applied (its interaction log exists: a
    retry, or a concurrent request that got there first) is not applied again: None in its place."""
    now = now or timezone.now()
    updates: list[StateUpdate | None] = []
    logs: list[InteractionLog] = []
    with transaction.atomic():
        state, _ = ContactState.objects.select_for_update().get_or_create(
            contact=contact, defaults={"tenant": contact.tenant}
        )
        applied = set(
            InteractionLog.objects.filter(
                contact=contact, message_id__in=[message.message_id for message in messages]
            ).values_list("message_id", flat=True)
        )
        for message in messages:
            if message.message_id in applied:
                updates.append(None)
                continue
            update, log = _state_step(contact=contact, state=state, message=message)
            updates.append(update)
            logs.append(log)
        instances_insert(logs)  # bulk_create, its parameters sent apart (apps/core/rows.py)
        state.usual_mood, state.usual_energy = _usual_mood(contact)
        state.save()
    return updates


def _state_step(*, contact: Contact, state: ContactState, message: StatedMessage) -> tuple[StateUpdate, InteractionLog]:
    text, occurred_at = message.text, message.occurred_at
    crisis = crisis_rules.detect_crisis(text)
    previous = None
    if state.last_seen_at is not None:
        previous = mood_rules.MoodReading(
            mood=state.mood,
            energy=state.energy,
            style=state.style,
            confidence=state.mood_confidence,
            source="previous",
        )
    reading = mood_classify(text=text, previous=previous, tenant_id=str(contact.tenant_id))
    # a user message after ENGRAM_SESSION_GAP_SECONDS (30) quiet minutes starts a new session: the same silence
    # that splits a conversation's turns into sessions for retrieval (apps/conversations/sessions.py)
    gap = timedelta(seconds=int(settings.ENGRAM["SESSION_GAP_SECONDS"]))
    new_session = state.last_seen_at is None or occurred_at - state.last_seen_at > gap
    if new_session:
        state.sessions_count += 1
        state.active_streak = stages.next_streak(
            previous_streak=state.active_streak,
            last_session_date=state.last_session_date,
            session_date=occurred_at.date(),
        )
        state.last_session_date = max(occurred_at.date(), state.last_session_date or occurred_at.date())
    transition = previous is not None and previous.mood != reading.mood
    state.mood, state.energy, state.style = reading.mood, reading.energy, reading.style
    state.mood_confidence = reading.confidence
    state.last_seen_at = max(occurred_at, state.last_seen_at) if state.last_seen_at else occurred_at
    log = InteractionLog(
        tenant=contact.tenant,
        contact=contact,
        message_id=message.message_id,
        occurred_at=occurred_at,
        mood=reading.mood,
        energy=reading.energy,
        style=reading.style,
        confidence=reading.confidence,
        source=reading.source,
        previous_mood=previous.mood if previous else "",
        is_transition=transition,
        session_number=state.sessions_count,
    )
    state.relationship_stage = stages.relationship_stage(
        sessions_count=state.sessions_count,
        active_streak=state.active_streak,
        last_seen_at=state.last_seen_at,
        # as of this message: imported history gets the stage it had then; the periodic refresh
        # moves it to fading / dormant as real time passes
        now=state.last_seen_at,
    )
    state.churn_risk = stages.churn_risk(days_inactive=0.0, engagement_drop=0.0, current=state.churn_risk)
    guidance = None
    if crisis.is_crisis:
        guidance = crisis_guidance_for(contact)
        state.crisis_flag, state.crisis_at = True, occurred_at
        CrisisReview.objects.create(
            tenant=contact.tenant,
            contact=contact,
            message_id=message.message_id,
            excerpt=text[:1000],
            matched=list(crisis.matched),
            severity=crisis.severity,
            language=crisis.language,
            guidance=guidance,
        )
    update = StateUpdate(
        state=copy.copy(state), mood=reading, crisis=crisis, crisis_guidance=guidance, new_session=new_session
    )
    return update, log


def contact_crisis_report(*, contact: Contact, text: str, now: datetime | None = None) -> dict[str, Any] | None:
    """Crisis language in what the contact just wrote, before it is ingested: clients call GET /context with
    the user's message *before* replying and ingest it after (chat-engine-memory.txt), so the reply that
    needs SAFETY guidance is the one being prepared now. Flags the contact (crisis_flag, crisis_at) and opens
    a CrisisReview for operators — once per text while that review is open, so a retried GET adds nothing.
    The same rules as ingest (idioms such as "to die for" stay unflagged). Returns the crisis block, or None."""
    crisis = crisis_rules.detect_crisis(text)
    if not crisis.is_crisis:
        return None
    now = now or timezone.now()
    guidance = crisis_guidance_for(contact)
    excerpt = text[:1000]
    with transaction.atomic():
        state, _ = ContactState.objects.select_for_update().get_or_create(
            contact=contact, defaults={"tenant": contact.tenant}
        )
        state.crisis_flag, state.crisis_at = True, now
        state.save()
        if not CrisisReview.objects.filter(
            contact=contact, status=CrisisReview.STATUS_OPEN, message_id="", excerpt=excerpt
        ).exists():
            CrisisReview.objects.create(
                tenant=contact.tenant,
                contact=contact,
                message_id="",  # not a message yet: the query of GET /context
                excerpt=excerpt,
                matched=list(crisis.matched),
                severity=crisis.severity,
                language=crisis.language,
                guidance=guidance,
            )
    contact.state = state  # what the context that follows reads (the one-to-one's cache)
    return {
        "detected": True,
        "severity": crisis.severity,
        "language": crisis.language,
        "guidance": guidance,
        "source": "query",
    }


def contact_state_refresh(*, contact: Contact, now: datetime, engagement_drop: float = 0.0) -> ContactState | None:
    """Periodic: stage (fading/dormant from inactivity) and churn risk move with time, not only with messages."""
    state = ContactState.objects.filter(contact=contact).first()
    if state is None or state.last_seen_at is None:
        return state
    days_inactive = max(0.0, (now - state.last_seen_at).total_seconds() / 86400)
    state.relationship_stage = stages.relationship_stage(
        sessions_count=state.sessions_count, active_streak=state.active_streak, last_seen_at=state.last_seen_at, now=now
    )
    state.churn_risk = stages.churn_risk(
        days_inactive=days_inactive, engagement_drop=engagement_drop, current=state.churn_risk
    )
    state.save(update_fields=["relationship_stage", "churn_risk", "updated_at"])
    return state


def crisis_review_resolve(*, review: CrisisReview, reviewer: str) -> CrisisReview:
    with transaction.atomic():
        review.status = CrisisReview.STATUS_REVIEWED
        review.reviewed_by = reviewer
        review.reviewed_at = timezone.now()
        review.save(update_fields=["status", "reviewed_by", "reviewed_at"])
        if not CrisisReview.objects.filter(contact=review.contact, status=CrisisReview.STATUS_OPEN).exists():
            ContactState.objects.filter(contact=review.contact).update(crisis_flag=False)
    return review
