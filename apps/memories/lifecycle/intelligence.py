"""Contact-intelligence patterns over the mood and timing history, run with the periodic consolidation
(contact-intelligence.txt §4.2): difficult periods, preferred chat hours, engagement decline."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta

from apps.contacts.intelligence import patterns
from apps.contacts.models import Contact, ContactState, Insight, InteractionLog, Trigger
from apps.contacts.services.state import contact_state_refresh
from apps.contacts.services.triggers import trigger_create
from apps.memories import scoring
from apps.memories.models import Memory
from apps.memories.store.revisions import SYSTEM
from apps.memories.store.writing import Candidate, memories_write

HISTORY_DAYS = 30
BORED_SHARE = 0.3


def _subject(contact: Contact) -> str:
    return contact.display_name or "Contact"


def difficult_periods_detect(*, contact: Contact, history: list[InteractionLog], now: datetime) -> int:
    runs = patterns.sustained_negative_runs([(row.occurred_at, row.mood) for row in history])
    created = 0
    for start, end in runs:
        key = f"difficult-period:{start.date().isoformat()}"
        if Memory.objects.filter(tenant=contact.tenant, contact=contact, metadata__pattern_key=key).exists():
            continue
        content = f"{_subject(contact)} went through a difficult period around {start:%d %B %Y}"
        memories_write(
            tenant=contact.tenant,
            contact=contact,
            candidates=[
                Candidate(memory_type=scoring.EPISODE, content=content, importance=0.7, metadata={"pattern_key": key})
            ],
            occurred_at=start,
            actor=SYSTEM,
            now=now,
            source_message_ids=[
                row.message_id for row in history if start <= row.occurred_at <= end and row.message_id
            ],
        )
        next_morning = datetime.combine(end.date() + timedelta(days=1), datetime.min.time(), tzinfo=end.tzinfo)
        trigger_create(
            contact=contact,
            kind=Trigger.KIND_CHECK_IN,
            reason=f"Sustained negative mood on {end:%d %b %Y}: check in",
            dedupe_key=key,
            earliest=max(next_morning, end),
        )
        created += 1
    return created


def chat_hours_detect(*, contact: Contact, history: list[InteractionLog], now: datetime) -> int:
    window = patterns.preferred_chat_window([row.occurred_at for row in history])
    if window is None:
        return 0
    start, end = window
    ContactState.objects.filter(contact=contact).update(chat_window_start=start, chat_window_end=end)
    content = patterns.describe_chat_window(start, end)
    (change,) = memories_write(
        tenant=contact.tenant,
        contact=contact,
        candidates=[
            Candidate(memory_type=scoring.PATTERN, content=content, importance=0.75, slot="pattern:chat-hours")
        ],
        occurred_at=now,
        actor=SYSTEM,
        now=now,
    )
    return int(change.action == "created")


def engagement_decline_detect(*, contact: Contact, history: list[InteractionLog], now: datetime) -> float:
    """Returns the engagement drop (0..1) used by the churn formula; adds an insight when the contact is bored."""
    per_session: dict[int, list[InteractionLog]] = defaultdict(list)
    for row in history:
        per_session[row.session_number].append(row)
    sessions = [(rows[0].occurred_at, len(rows)) for _, rows in sorted(per_session.items())]
    if not patterns.engagement_decline(sessions, now=now):
        return 0.0
    drop = patterns.engagement_drop(sessions, now=now)
    recent = [row.mood for row in history if row.occurred_at >= now - timedelta(days=7)]
    bored = recent and Counter(recent)["bored"] / len(recent) >= BORED_SHARE
    if bored:
        week = now.isocalendar()
        Insight.objects.get_or_create(
            tenant=contact.tenant,
            dedupe_key=f"bored-decline:{contact.pk}:{week.year}-{week.week}",
            defaults={
                "contact": contact,
                "kind": "engagement_decline_bored",
                "text": f"{_subject(contact)} sends {int(drop * 100)}% fewer messages per session than the week "
                "before and often seems bored: try new topics or a different format.",
            },
        )
    return drop


def contact_patterns_detect(*, contact: Contact, now: datetime) -> dict[str, int]:
    history = list(
        InteractionLog.objects.filter(
            contact=contact, occurred_at__gte=now - timedelta(days=HISTORY_DAYS), occurred_at__lte=now
        )
    )
    stats = {
        "difficult_periods": difficult_periods_detect(contact=contact, history=history, now=now),
        "chat_hour_patterns": chat_hours_detect(contact=contact, history=history, now=now),
    }
    drop = engagement_decline_detect(contact=contact, history=history, now=now)
    stats["engagement_declines"] = int(drop > 0)
    before = ContactState.objects.filter(contact=contact).values_list("relationship_stage", flat=True).first()
    state = contact_state_refresh(contact=contact, now=now, engagement_drop=drop)
    if state is not None and state.relationship_stage == "fading" and before != "fading":
        trigger_create(
            contact=contact,
            kind=Trigger.KIND_RE_ENGAGEMENT,
            reason="Relationship is fading: re-engage with a key fact",
            dedupe_key=f"fading:{state.last_seen_at:%Y-%m-%d}",
            earliest=now,
        )
        stats["re_engagement_triggers"] = 1
    return stats
