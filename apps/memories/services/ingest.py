"""POST /ingest and POST /observations: ledger + event bus row first, then inline extraction.

Guarantees:
- the message and its ContextEvent are committed together, before extraction runs: a failure in
  extraction never loses the message (the event stays `extracted_at = NULL` and a task retries it);
- the same client message_id twice is a no-op that returns the first result;
- deferred work (consolidation, the session window) is queued on commit, never before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.contacts.models import Contact
from apps.contacts.services import contact_get_or_create, contact_state_update
from apps.conversations.models import Conversation, Message
from apps.conversations.selectors import messages_turn_before
from apps.conversations.services import conversation_get_or_create, message_append
from apps.conversations.window import window_append
from apps.core.exceptions import ApplicationError
from apps.memories import scoring
from apps.memories.extraction import ExtractedEntity, extract, salience, slugify
from apps.memories.extraction.dates import format_day, mentioned_dates
from apps.memories.models import ContextEvent
from apps.memories.models.memory import INDEX_TERMS_LENGTH
from apps.memories.services.scheduling import consolidation_schedule
from apps.memories.services.writing import (
    Candidate,
    MemoryChange,
    MemoryVectors,
    candidates_embed,
    memories_write,
    session_context_update,
    turn_line,
    working_memory_expiry,
)
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestItem:
    contact_id: str
    conversation_id: str
    message: str
    role: str = Message.ROLE_USER
    message_id: str | None = None
    speaker: str = ""
    occurred_at: datetime | None = None
    channel: str = ""
    display_name: str = ""
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class IngestOutcome:
    event: ContextEvent
    message: Message
    memories: list[dict[str, Any]]  # what inline extraction created or reinforced (as first returned)
    duplicate: bool
    crisis: dict[str, Any] | None = None
    state: dict[str, Any] | None = None


def _state_update(event: ContextEvent, message: Message) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Contact intelligence for a user message: mood, crisis, sessions, stage. Recorded on the event so a
    replayed message_id returns the same answer."""
    if message.role != Message.ROLE_USER or event.contact is None:
        return None, None
    update = contact_state_update(
        contact=event.contact, text=message.content, message_id=message.external_id, occurred_at=message.occurred_at
    )
    crisis = None
    if update.crisis.is_crisis:
        crisis = {
            "detected": True,
            "severity": update.crisis.severity,
            "language": update.crisis.language,
            "guidance": update.crisis_guidance,
        }
    state = {
        "mood": update.state.mood,
        "moodConfidence": update.state.mood_confidence,
        "energy": update.state.energy,
        "relationshipStage": update.state.relationship_stage,
        "activeStreak": update.state.active_streak,
        "churnRisk": update.state.churn_risk,
    }
    ContextEvent.objects.filter(pk=event.pk).update(result={**event.result, "crisis": crisis, "state": state})
    event.result = {**event.result, "crisis": crisis, "state": state}
    return crisis, state


def memory_change_summary(change: MemoryChange) -> dict[str, Any]:
    memory = change.memory
    return {
        "id": str(memory.pk),
        "memory_type": memory.memory_type,
        "content": memory.content,
        "importance": memory.importance,
        "action": change.action,
        "superseded": [str(old.pk) for old in change.superseded],
    }


def _candidates_for_message(
    *,
    text: str,
    role: str,
    speaker: str,
    is_tenant_scope: bool,
    session_id: str = "",
    occurred_at: datetime | None = None,
    previous_turn: str = "",
) -> list[Candidate]:
    extraction = extract(text, scope="tenant" if is_tenant_scope else "contact", role=role)
    if extraction.is_low_content:
        return []
    subject = speaker or None
    # what a named speaker says is about them: their turns and the facts stated in them link their entity
    # (in a two-person chat each speaker is on half the memories, so retrieval ignores them as ubiquitous)
    speaker_entity = _speaker_entity(speaker)
    candidates = []
    for item in extraction.memories:
        content = item.statement(subject)
        candidates.append(
            Candidate(
                memory_type=item.memory_type,
                content=content,
                salience=salience(content if item.memory_type != "episode" else text, has_entity=bool(item.entities)),
                slot=item.slot or "",
                is_correction=item.is_correction,
                polarity=item.polarity,
                entities=_with(item.entities, speaker_entity),
                metadata={"speaker": speaker} if speaker else {},
                source_session_id=session_id,
                index_terms=_episode_dates(text, occurred_at) if item.memory_type == "episode" and occurred_at else "",
                previous_turn=previous_turn,
            )
        )
    if candidates and extraction.entities:
        # the episode links every entity the turn mentioned, so entity retrieval finds the event itself
        episode_index = next((i for i, c in enumerate(candidates) if c.memory_type == "episode"), None)
        if episode_index is not None:
            episode = candidates[episode_index]
            candidates[episode_index] = replace(episode, entities=_with(extraction.entities, speaker_entity))
    return candidates


def _episode_dates(text: str, occurred_at: datetime) -> str:
    """An episode's index terms: the day it was said and the days it names ('yesterday' → the day before)."""
    said_on = occurred_at.date()
    terms = format_day(said_on)
    for term in mentioned_dates(text, said_on):
        if len(terms) + 1 + len(term) <= INDEX_TERMS_LENGTH:
            terms = f"{terms} {term}"
    return terms


def _speaker_entity(speaker: str) -> ExtractedEntity | None:
    slug = slugify(speaker)
    return ExtractedEntity(entity_type="person", slug=slug, display_name=speaker.strip()) if slug else None


def _with(entities: Sequence[ExtractedEntity], extra: ExtractedEntity | None) -> tuple[ExtractedEntity, ...]:
    if extra is None or any(entity.slug == extra.slug for entity in entities):
        return tuple(entities)
    return (*entities, extra)


def previous_turns(events: Sequence[ContextEvent]) -> dict[Any, str]:
    """The turn before each message event's message, as its memories' context embeddings read it."""
    before = messages_turn_before(message_ids=[event.message_id for event in events if event.message_id])
    return {event.pk: turn_line(*before[event.message_id]) for event in events if event.message_id in before}


def _candidates_for_event(event: ContextEvent, *, previous_turn: str | None = None) -> list[Candidate]:
    """`previous_turn`: the turn before the event's message (looked up when not given)."""
    is_tenant_scope = event.contact_id is None
    if event.event_type == ContextEvent.TYPE_MESSAGE:
        assert event.message is not None
        if previous_turn is None:
            previous_turn = previous_turns([event]).get(event.pk, "")
        return _candidates_for_message(
            text=event.content,
            role=event.message.role,
            speaker=event.message.speaker,
            is_tenant_scope=is_tenant_scope,
            session_id=str((event.source_metadata or {}).get("conversation_id", "")),
            occurred_at=event.message.occurred_at,
            previous_turn=previous_turn,
        )
    return _candidates_for_observation(event)


OBSERVATION_TYPES = {
    "fact": scoring.FACT,
    "learned_fact": scoring.FACT,
    "project_details": scoring.FACT,
    "correction": scoring.FACT,
    "preference": scoring.PREFERENCE,
}


def _candidates_for_observation(event: ContextEvent) -> list[Candidate]:
    """An agent's observation is already a normalised statement: it becomes the memory itself; the rules
    still run over it for entities and slots. scaffold_update feeds only the memory processor."""
    memory_type = OBSERVATION_TYPES.get(event.event_type)
    if memory_type is None:
        return []
    extraction = extract(event.content, scope="tenant" if event.contact_id is None else "contact", role="user")
    slot = next((item.slot for item in extraction.memories if item.slot), "") or ""
    polarity = next((item.polarity for item in extraction.memories if item.polarity), 0)
    return [
        Candidate(
            memory_type=memory_type,
            content=extraction.cleaned_text,
            salience=salience(extraction.cleaned_text, has_entity=bool(extraction.entities)),
            slot=slot,
            is_correction=event.event_type == "correction" or any(item.is_correction for item in extraction.memories),
            polarity=polarity,
            entities=tuple(extraction.entities),
            metadata={"observation": event.event_type},
        )
    ]


def event_extract(
    *,
    event: ContextEvent,
    actor: str,
    candidates: Sequence[Candidate] | None = None,
    vectors: MemoryVectors | None = None,
    now: datetime | None = None,
    samples: dict[Any, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run inline extraction for one event and record what it did (a batch passes the event's `candidates`
    and their `vectors`, made for the whole batch at once). Safe to call again after a failure: an event
    already extracted returns its recorded result."""
    if event.extracted_at is not None:
        return list(event.result.get("memories", []))
    if candidates is None:
        candidates = _candidates_for_event(event)
    occurred_at = event.message.occurred_at if event.message is not None else event.created_at
    source_message_ids = [event.message.external_id] if event.message is not None else []
    with transaction.atomic():
        changes = memories_write(
            tenant=event.tenant,
            contact=event.contact,
            candidates=candidates,
            occurred_at=occurred_at,
            actor=actor,
            source_message_ids=source_message_ids,
            source_event_ids=[event.pk],
            source_sequence=event.message_id,
            vectors=vectors,
            now=now,
            samples=samples,
        )
        if event.message is not None and event.contact_id is not None:
            session_id = str((event.source_metadata or {}).get("conversation_id", ""))
            if session_id:
                session_context_update(message=event.message, session_id=session_id)
        summaries = [memory_change_summary(change) for change in changes if change.action != "skipped"]
        event.result = {**event.result, "memories": summaries}
        event.extracted_at = timezone.now()
        event.save(update_fields=["result", "extracted_at", "updated_at"])
    return summaries


def _record_failure(event: ContextEvent, exc: Exception) -> None:
    logger.exception("Inline extraction failed for event %s; it will be retried", event.pk)
    ContextEvent.objects.filter(pk=event.pk).update(attempts=event.attempts + 1, last_error=repr(exc)[:2000])


def _persist_message(*, tenant: Tenant, item: IngestItem) -> tuple[ContextEvent, Message, bool]:
    """Ledger row + event row in one transaction. Returns (event, message, created)."""
    at = item.occurred_at or timezone.now()
    with transaction.atomic():
        contact = contact_get_or_create(
            tenant=tenant, external_id=item.contact_id, display_name=item.display_name, channel=item.channel
        )
        conversation = conversation_get_or_create(
            tenant=tenant, external_id=item.conversation_id, contact=contact, channel=item.channel, at=at
        )
        appended = message_append(
            tenant=tenant,
            conversation=conversation,
            contact=contact,
            role=item.role,
            content=item.message,
            external_id=item.message_id,
            speaker=item.speaker,
            occurred_at=at,
            metadata=item.metadata,
        )
        message = appended.message
        if not appended.created:
            if message.conversation.external_id != item.conversation_id or message.contact_id != contact.pk:
                raise ApplicationError(
                    f"message_id '{item.message_id}' was already used for another conversation or contact.",
                    code="conflict",
                    status_code=409,
                )
            return ContextEvent.objects.select_related("message").get(message=message), message, False
        event = ContextEvent.objects.create(
            tenant=tenant,
            contact=contact,
            conversation=conversation,
            message=message,
            event_type=ContextEvent.TYPE_MESSAGE,
            content=message.content,
            source_metadata={
                "source": "ingest",
                "conversation_id": item.conversation_id,
                "message_id": message.external_id,
                "role": item.role,
                "speaker": item.speaker,
                "channel": item.channel,
            },
        )
        transaction.on_commit(lambda: _after_commit(conversation, message))
    return event, message, True


def _after_commit(conversation: Conversation, message: Message) -> None:
    window_append(conversation=conversation, message=message)
    consolidation_schedule(conversation=conversation)


def ingest_messages(
    *, tenant: Tenant, items: Sequence[IngestItem], actor: str, now: datetime | None = None
) -> list[IngestOutcome]:
    """Ingest messages in order. All texts of new messages are cleaned and their candidates embedded in
    one batch call; each message then commits on its own, so a failure later in a batch keeps the earlier.
    `now` is when Engram learns them (a simulation's clock; the wall clock by default)."""
    persisted = [_persist_message(tenant=tenant, item=item) for item in items]
    new_events = [event for event, _, created in persisted if created]
    before = previous_turns(new_events)
    planned: dict[Any, list[Candidate]] = {}
    for event in new_events:
        try:
            planned[event.pk] = _candidates_for_event(event, previous_turn=before.get(event.pk, ""))
        except Exception as exc:  # a rule bug must not lose the batch: the event is retried later
            _record_failure(event, exc)
    vectors = candidates_embed([candidate for candidates in planned.values() for candidate in candidates])

    outcomes: list[IngestOutcome] = []
    samples: dict[Any, Any] = {}
    offset = 0
    for event, message, created in persisted:
        if not created:
            outcomes.append(
                IngestOutcome(
                    event=event,
                    message=message,
                    memories=event.result.get("memories", []),
                    duplicate=True,
                    crisis=event.result.get("crisis"),
                    state=event.result.get("state"),
                )
            )
            continue
        # crisis language and mood first: independent of extraction, and never lost to its failure
        try:
            crisis, state = _state_update(event, message)
        except Exception:
            logger.exception("Contact state update failed for event %s", event.pk)
            crisis, state = None, None
        if event.pk not in planned:
            outcomes.append(
                IngestOutcome(event=event, message=message, memories=[], duplicate=False, crisis=crisis, state=state)
            )
            continue
        candidates = planned[event.pk]
        count = len(candidates)
        event_vectors = vectors[offset : offset + count]
        offset += count
        try:
            memories = event_extract(
                event=event,
                actor=actor,
                candidates=candidates,
                vectors=event_vectors if count else None,
                samples=samples,
                now=now,
            )
        except Exception as exc:
            _record_failure(event, exc)
            memories = []
        outcomes.append(
            IngestOutcome(event=event, message=message, memories=memories, duplicate=False, crisis=crisis, state=state)
        )
    return outcomes


def created_memory_ids(summaries: Iterable[Sequence[dict[str, Any]]]) -> list[str]:
    """The ids of the memories extractions created (their `memory_change_summary` rows)."""
    return [memory["id"] for memories in summaries for memory in memories if memory["action"] == "created"]


def observation_record(
    *,
    tenant: Tenant,
    content: str,
    category: str,
    contact: Contact | None,
    source_metadata: dict[str, Any] | None,
    actor: str,
) -> tuple[ContextEvent, list[dict[str, Any]]]:
    """An agent's observation (interactive tool call or autonomous cycle) onto the event bus."""
    if category not in ContextEvent.OBSERVATION_CATEGORIES:
        raise ApplicationError(f"category must be one of {', '.join(ContextEvent.OBSERVATION_CATEGORIES)}.")
    with transaction.atomic():
        event = ContextEvent.objects.create(
            tenant=tenant,
            contact=contact,
            event_type=category,
            content=content,
            source_metadata={"source": "observation", **(source_metadata or {})},
        )
    try:
        memories = event_extract(event=event, actor=actor)
    except Exception as exc:
        _record_failure(event, exc)
        memories = []
    return event, memories


def memory_add(
    *,
    tenant: Tenant,
    contact: Contact | None,
    memory_type: str,
    content: str,
    actor: str,
    importance: float | None = None,
    is_pinned: bool = False,
) -> MemoryChange:
    """An explicit add (API, inspector): a seed type name is mapped, then the normal write path runs.
    A `working` memory (seed type) is an episode that expires with the session window."""
    is_working = memory_type == "working"
    memory_type = scoring.SEED_TYPE_MAP.get(memory_type, memory_type)
    if memory_type not in scoring.MEMORY_TYPES:
        raise ApplicationError(f"memory_type must be one of {', '.join(scoring.MEMORY_TYPES)} (or a seed type).")
    extraction = extract(content, scope="tenant" if contact is None else "contact", role="user")
    now = timezone.now()
    (change,) = memories_write(
        tenant=tenant,
        contact=contact,
        candidates=[
            Candidate(
                memory_type=memory_type,
                content=extraction.cleaned_text,
                salience=salience(extraction.cleaned_text, has_entity=bool(extraction.entities)),
                slot=next((item.slot for item in extraction.memories if item.slot), "") or "",
                entities=tuple(extraction.entities),
                importance=importance
                if importance is not None
                else scoring.type_defaults(memory_type, is_tenant_scope=contact is None)[0],
                is_pinned=is_pinned,
                metadata={"added_by": actor},
                expires_at=working_memory_expiry(now) if is_working else None,
            )
        ],
        occurred_at=now,
        actor=actor,
    )
    return change
