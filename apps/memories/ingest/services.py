"""POST /ingest and POST /observations: ledger + event bus row first, then inline extraction.

Guarantees:
- the message and its ContextEvent are committed together, before extraction runs: a failure in
  extraction never loses the message (the event stays `extracted_at = NULL` and a task retries it);
- the same client message_id twice is a no-op that returns the first result;
- deferred work (consolidation, the session window) is queued on commit, never before.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.contacts.models import Contact
from apps.contacts.services import (
    StatedMessage,
    StateUpdate,
    contact_state_update_many,
    contacts_get_or_create_many,
)
from apps.conversations.models import Message
from apps.conversations.selectors import Turn, messages_turns_before
from apps.conversations.services import conversations_get_or_create_many, messages_appended, messages_sessions
from apps.conversations.window import windows_append
from apps.core.chunking import semantic_chunks
from apps.core.embeddings import EmbedderUnavailable, cache_scope
from apps.core.exceptions import ApplicationError
from apps.core.moments import occurred_at_problem
from apps.core.rows import instances_insert
from apps.core.timing import phase
from apps.entities.services import entity_aliases_add, entity_aliases_reset
from apps.memories import scoring
from apps.memories.dispatch import EXTRACT_EVENTS, bursts_join_schedule, consolidation_schedule, task_queue
from apps.memories.extraction import ExtractedEntity, extract, salience, slugify
from apps.memories.extraction.answers import (
    asked_words,
    is_short_reply,
    question_asked,
    statement_answered,
    with_question,
)
from apps.memories.extraction.dates import format_day, mentioned_dates
from apps.memories.extraction.index_words import chunks_of
from apps.memories.extraction.rules import MAX_EPISODE_CHARS, MAX_SCAN_CHARS, addressed_names
from apps.memories.models import ContextEvent
from apps.memories.models.memory import INDEX_TERMS_LENGTH
from apps.memories.selectors import EpisodeAnchor, EpisodeBefore, episodes_before
from apps.memories.store.revisions import SYSTEM
from apps.memories.store.writing import (
    Candidate,
    MemoryChange,
    MemoryVectors,
    Provenance,
    TurnKey,
    candidates_embed,
    context_mix,
    memories_write,
    sessions_context_set,
    sessions_context_words,
    turn_line,
    working_memory_expiry,
)
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestItem:
    contact_id: str | None  # None: the tenant's own conversation with its AI (the brain learns from it)
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
    is_user_turn: bool = False  # contact intelligence reads it: `state` None then means not known yet

    @property
    def crisis_answer(self) -> dict[str, Any]:
        """What the client is told: the crisis block when detected; `detected: false` when the message was
        checked (or is not the contact's own); `detected: null, pending: true` when the check has not run
        yet (it failed, and runs again on the retry of this message_id)."""
        if self.crisis:
            return self.crisis
        if self.is_user_turn and self.state is None:
            return {"detected": None, "pending": True}
        return {"detected": False}


def _state_payload(update: StateUpdate) -> tuple[dict[str, Any] | None, dict[str, Any]]:
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
        "mood_confidence": update.state.mood_confidence,
        "energy": update.state.energy,
        "relationship_stage": update.state.relationship_stage,
        "active_streak": update.state.active_streak,
        "churn_risk": update.state.churn_risk,
    }
    return crisis, state


def _events_result_merge(patches: dict[Any, dict[str, Any]]) -> None:
    """Merge a patch into each event's result, one statement."""
    if not patches:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_contextevent e SET result = e.result || v.patch::jsonb, updated_at = now() "
            "FROM unnest(%s::uuid[], %s::text[]) AS v(id, patch) WHERE e.id = v.id",
            [list(patches), [json.dumps(patch, cls=DjangoJSONEncoder) for patch in patches.values()]],
        )


def is_user_turn(event: ContextEvent, message: Message) -> bool:
    """Contact intelligence (mood, crisis) reads a contact's own messages only."""
    return message.role == Message.ROLE_USER and event.contact_id is not None


def events_state_update(persisted: Sequence[tuple[ContextEvent, Message]]) -> dict[Any, tuple[Any, Any]]:
    """Contact intelligence for the batch's user messages: mood, crisis, sessions, stage — per contact in
    message order, one transaction each. Recorded on the events right after the messages commit and before
    extraction runs, so a replayed message_id returns the same answer even when extraction fails; a message
    whose state update never ran (the request died) gets it on its retry. {event id: (crisis, state)}."""
    by_contact: dict[Any, list[tuple[ContextEvent, Message]]] = {}
    for event, message in persisted:
        if is_user_turn(event, message):
            by_contact.setdefault(event.contact_id, []).append((event, message))
    answers: dict[Any, tuple[Any, Any]] = {}
    for pairs in by_contact.values():
        contact = pairs[0][0].contact
        assert contact is not None
        try:
            updates = contact_state_update_many(
                contact=contact,
                messages=[StatedMessage(m.content, m.external_id, m.occurred_at) for _, m in pairs],
            )
        except Exception:
            logger.exception("Contact state update failed for contact %s", contact.pk)
            continue
        patches: dict[Any, dict[str, Any]] = {}
        for (event, _), update in zip(pairs, updates, strict=True):
            if update is None:  # applied by a concurrent request for the same message: its answer
                event.refresh_from_db(fields=["result"])
                if "state" in event.result:
                    answers[event.pk] = (event.result.get("crisis"), event.result["state"])
                continue
            crisis, state = _state_payload(update)
            answers[event.pk] = (crisis, state)
            patches[event.pk] = {"crisis": crisis, "state": state}
            event.result = {**event.result, **patches[event.pk]}
        _events_result_merge(patches)
    return answers


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


# A message longer than the rules read in one pass (they scan 2,000 characters; an episode keeps 1,000) is
# split into semantic chunks (memory-logic.txt §1.3: 50-300 tokens; 200 keeps each chunk's episode whole),
# and every chunk is extracted and stored, each with the message as its source.
LONG_MESSAGE_CHARS = MAX_EPISODE_CHARS
CHUNK_MAX_TOKENS = 200


def _candidates_for_message(
    *,
    text: str,
    role: str,
    speaker: str,
    is_tenant_scope: bool,
    session_id: str = "",
    occurred_at: datetime | None = None,
) -> list[Candidate]:
    """The candidates of one turn: those of its text, or, when it is long, of each of its chunks (marked
    `chunk` i of `chunks` n in their metadata, in order)."""
    chunks = semantic_chunks(text, max_tokens=CHUNK_MAX_TOKENS) if len(text) > LONG_MESSAGE_CHARS else []
    if len(chunks) <= 1:
        chunks = [text]
    candidates: list[Candidate] = []
    for index, chunk in enumerate(chunks):
        found = _candidates_for_text(
            text=chunk,
            role=role,
            speaker=speaker,
            is_tenant_scope=is_tenant_scope,
            session_id=session_id,
            occurred_at=occurred_at,
        )
        if len(chunks) > 1:
            found = [
                replace(candidate, metadata={**candidate.metadata, "chunk": index, "chunks": len(chunks)})
                for candidate in found
            ]
        candidates.extend(found)
    return candidates


def _said_by(*, speaker: str, role: str) -> dict[str, str]:
    """Who said a memory's words, in its metadata: the speaker's label when the message has one; else, when it
    was not the contact's own (user) message, its role ("assistant": the AI's own reply, which GET /context
    hands the model as "Assistant: …", so it is never read as something the contact said)."""
    if speaker:
        return {"speaker": speaker}
    return {"role": role} if role and role != Message.ROLE_USER else {}


def _candidates_for_text(
    *,
    text: str,
    role: str,
    speaker: str,
    is_tenant_scope: bool,
    session_id: str = "",
    occurred_at: datetime | None = None,
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
                metadata=_said_by(speaker=speaker, role=role),
                source_session_id=session_id,
                index_terms=_episode_dates(text, occurred_at) if item.memory_type == "episode" and occurred_at else "",
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
    if not slug:
        return None
    # marked as a speaker: a query naming them is read from their side (retrieval/signals/speaker.py)
    return ExtractedEntity(entity_type="person", slug=slug, display_name=speaker.strip(), metadata={"role": "speaker"})


def speaker_aliases_learn(*, tenant: Tenant, messages: Sequence[Message]) -> int:
    """The names the speakers of a two-person conversation address each other by ("Thanks, Mel!", "Hey
    Rosie!") become aliases of the one addressed: the other speaker of that conversation (its ledger's
    speakers and this batch's). Conversations with more or fewer than two speakers teach nothing: whom a
    greeting addresses is not known. One read of the ledger, then `entity_aliases_add` per scope."""
    spoken = [message for message in messages if message.speaker.strip() and message.role == Message.ROLE_USER]
    addressed = [(message, names) for message in spoken if (names := addressed_names(message.content[:MAX_SCAN_CHARS]))]
    if not addressed:
        return 0
    conversations = {message.conversation_id for message, _ in addressed}
    speakers: dict[Any, set[str]] = {conversation: set() for conversation in conversations}
    for message in spoken:
        if message.conversation_id in speakers:
            speakers[message.conversation_id].add(message.speaker.strip())
    for conversation_id, speaker in (
        Message.objects.filter(conversation_id__in=conversations)
        .exclude(speaker="")
        .values_list("conversation_id", "speaker")
        .distinct()
    ):
        speakers[conversation_id].add(speaker.strip())
    learned: dict[Any, dict[str, dict[str, tuple[str, int]]]] = {}
    contacts: dict[Any, Contact | None] = {}
    for message, names in addressed:
        others = {slugify(name) for name in speakers[message.conversation_id]} - {slugify(message.speaker)}
        if len({slugify(name) for name in speakers[message.conversation_id]}) != 2 or len(others) != 1:
            continue
        addressee = next(iter(others))
        scope = message.conversation.contact_id
        contacts[scope] = message.conversation.contact
        for name in names:
            alias = slugify(name)
            if alias and alias != addressee:
                seen = learned.setdefault(scope, {}).setdefault(addressee, {})
                seen[alias] = (name, seen.get(alias, (name, 0))[1] + 1)
    return sum(
        entity_aliases_add(tenant=tenant, contact=contacts[scope], aliases=aliases, at=timezone.now())
        for scope, aliases in learned.items()
    )


RELEARN_BATCH = 500


def speaker_aliases_relearn(*, tenant: Tenant, contact: Contact) -> int:
    """Learn the contact's speaker aliases again from its ledger, as ingest would today: what an older rule
    learned ("yup" taken for a name) is forgotten first. Aliases are only ever learned, never set by hand, so
    nothing else is lost. Reads the contact's messages RELEARN_BATCH at a time. Returns the aliases learned."""
    entity_aliases_reset(tenant=tenant, contact=contact)
    messages = (
        Message.objects.filter(tenant=tenant, conversation__contact=contact, role=Message.ROLE_USER)
        .exclude(speaker="")
        .select_related("conversation", "conversation__contact")
        .order_by("occurred_at", "pk")
    )
    learned = 0
    batch: list[Message] = []
    for message in messages.iterator(chunk_size=RELEARN_BATCH):
        batch.append(message)
        if len(batch) == RELEARN_BATCH:
            learned += speaker_aliases_learn(tenant=tenant, messages=batch)
            batch = []
    if batch:
        learned += speaker_aliases_learn(tenant=tenant, messages=batch)
    return learned


def _with(entities: Sequence[ExtractedEntity], extra: ExtractedEntity | None) -> tuple[ExtractedEntity, ...]:
    if extra is None or any(entity.slug == extra.slug for entity in entities):
        return tuple(entities)
    return (*entities, extra)


def _candidates_for_event(event: ContextEvent) -> list[Candidate]:
    is_tenant_scope = event.contact_id is None
    if event.event_type == ContextEvent.TYPE_MESSAGE:
        assert event.message is not None
        return _candidates_for_message(
            text=event.content,
            role=event.message.role,
            speaker=event.message.speaker,
            is_tenant_scope=is_tenant_scope,
            session_id=_session_id(event),
            occurred_at=event.message.occurred_at,
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


def _with_questions_answered(
    events: Sequence[ContextEvent], planned: dict[Any, list[Candidate]]
) -> dict[Any, list[Candidate]]:
    """A short reply right after a question of the other speaker is remembered with it
    (extraction/answers.py): its episode's text quotes the question, and a low-content answer ("yes!!"),
    which made no memory, makes that episode. A user's plain yes or no to a question about them also states
    what it answers ("Are you vegetarian?" / "yep" → "Jo is vegetarian"). A longer reply to a question put
    to its speaker ("Is that your third one?" / "Yep! I chose to write about this because…") keeps its text;
    its episode records the question's words it does not say (`metadata.asked`, answers.asked_words), which
    index it (extraction/index_words.py). One statement reads the turns before, when the batch holds a
    message that made an episode or a short reply."""
    turns = [
        event
        for event in events
        if event.event_type == ContextEvent.TYPE_MESSAGE and event.message is not None and _session_of(event)
    ]
    replies = [
        event
        for event in turns
        if [candidate.memory_type for candidate in planned.get(event.pk, [])] in ([], [scoring.EPISODE])
        and is_short_reply(event.content, stored=bool(planned.get(event.pk)))  # nothing but its episode, or nothing
    ]
    short = {event.pk for event in replies}
    longer = [
        event
        for event in turns
        if event.pk not in short and any(_whole_episode(candidate) for candidate in planned.get(event.pk, []))
    ]
    if not replies and not longer:
        return planned
    before = messages_turns_before(message_ids=[event.message.pk for event in [*replies, *longer] if event.message])
    answered = dict(planned)
    for event in replies:
        message, asker = event.message, _other_speakers_turn(event, before)
        question = question_asked(asker.content) if asker is not None else ""
        if message is None or asker is None or not question:
            continue
        metadata = {"answers": asker.external_id}
        quoted = [
            replace(
                candidate,
                content=with_question(candidate.content, asker=asker.speaker, question=question),
                metadata={**candidate.metadata, **metadata},
            )
            for candidate in planned.get(event.pk, [])
        ] or [_answer_episode(event, message, asker=asker.speaker, question=question, metadata=metadata)]
        answered[event.pk] = quoted + _answer_statements(event, message, question=question, metadata=metadata)
    for event in longer:
        asker = _other_speakers_turn(event, before)
        words = asked_words(question_asked(asker.content), event.content) if asker is not None else []
        if asker is not None and words:
            answers = {"answers": asker.external_id, "asked": words}
            answered[event.pk] = [
                replace(candidate, metadata={**candidate.metadata, **answers})
                if _whole_episode(candidate)
                else candidate
                for candidate in planned[event.pk]
            ]
    return answered


def _other_speakers_turn(event: ContextEvent, before: dict[int, list[Turn]]) -> Turn | None:
    """The turn right before the event's message when the other speaker said it (None otherwise)."""
    message = event.message
    previous = before.get(message.pk, []) if message is not None else []
    if not previous or message is None or _same_speaker(previous[0], message):
        return None
    return previous[0]


def _whole_episode(candidate: Candidate) -> bool:
    """The episode of a whole message (not one of a long message's chunks)."""
    return candidate.memory_type == scoring.EPISODE and chunks_of(candidate.metadata) == 1


def _same_speaker(first: Turn, second: Message) -> bool:
    """Two turns by one speaker: the same name, or, unnamed, the same role (a user's two messages)."""
    if first.speaker or second.speaker:
        return first.speaker == second.speaker
    return first.role == second.role


def _answer_episode(
    event: ContextEvent, message: Message, *, asker: str, question: str, metadata: dict[str, Any]
) -> Candidate:
    """The episode of a low-content answer extraction did not store: 'Jo: yes!! (answering Mia: "…")'."""
    content = with_question(turn_line(message.speaker, event.content), asker=asker, question=question)
    speaker_entity = _speaker_entity(message.speaker)
    return Candidate(
        memory_type=scoring.EPISODE,
        content=content,
        salience=salience(content, has_entity=False),
        entities=(speaker_entity,) if speaker_entity is not None else (),
        metadata={**_said_by(speaker=message.speaker, role=message.role), **metadata},
        source_session_id=_session_id(event),
        index_terms=_episode_dates(event.content, message.occurred_at),
    )


def _answer_statements(
    event: ContextEvent, message: Message, *, question: str, metadata: dict[str, Any]
) -> list[Candidate]:
    """The facts and preferences a user's plain yes or no states: the rules read the sentence it amounts to
    ("Do you like sushi?" / "nah" → "I don't like sushi.") as if the user had typed it. An assistant's "Sure!"
    to a user's "Can you book it?" states nothing about the contact."""
    if message.role != Message.ROLE_USER:
        return []
    statement = statement_answered(question, event.content)
    if not statement:
        return []
    found = _candidates_for_text(
        text=statement, role=message.role, speaker=message.speaker, is_tenant_scope=False, session_id=_session_id(event)
    )
    return [
        replace(candidate, metadata={**candidate.metadata, **metadata})
        for candidate in found
        if candidate.memory_type != scoring.EPISODE  # the reply's own episode quotes the question
    ]


def event_extract(*, event: ContextEvent, actor: str, now: datetime | None = None) -> list[dict[str, Any]]:
    """Run inline extraction for one event and record what it did. Safe to call again after a failure: an
    event already extracted returns its recorded result."""
    if event.extracted_at is not None:
        return list(event.result.get("memories", []))
    return events_extract(events=[event], actor=actor, now=now)[event.pk]


def _session_id(event: ContextEvent) -> str:
    """The session of the conversation the event's message came in (apps/conversations/sessions.py); events
    written before sessions were split carry only their conversation id, their session then."""
    metadata = event.source_metadata or {}
    return str(metadata.get("session_id") or metadata.get("conversation_id", ""))


def _session_of(event: ContextEvent) -> str:
    """The session a message event's memories belong to ("" for the brain and for observations)."""
    if event.message is None or event.contact_id is None:
        return ""
    return _session_id(event)


def _with_contexts(work: Sequence[tuple[ContextEvent, Candidate]], vectors: MemoryVectors) -> MemoryVectors:
    """Context embeddings for the candidates of message events: each mixes its own embedding with the one of
    the episode before its message in the conversation (`context_mix`) — earlier in this batch, else the
    store's (one statement). Walks each conversation in ledger order (time, then arrival)."""
    by_session: dict[str, list[int]] = {}
    for index, (event, _) in enumerate(work):
        if _session_of(event):
            by_session.setdefault(_session_of(event), []).append(index)
    if not by_session:
        return vectors

    def position(index: int) -> tuple[datetime, int]:
        message = work[index][0].message
        assert message is not None
        return message.occurred_at, message.pk

    for indexes in by_session.values():
        indexes.sort(key=position)
    before = episodes_before(
        tenant_id=work[0][0].tenant_id,
        anchors=[
            EpisodeAnchor(session_id, session_id, *position(indexes[0])) for session_id, indexes in by_session.items()
        ],
    )
    contexts = list(vectors.context)
    for session_id, indexes in by_session.items():
        previous = before.get(session_id)
        current_message: Any = None
        episode_of_message: EpisodeBefore | None = None
        for index in indexes:
            event, candidate = work[index]
            if event.message_id != current_message:  # a new turn: the last turn's episode is now "before"
                if episode_of_message is not None:
                    previous = episode_of_message
                current_message, episode_of_message = event.message_id, None
            if previous is not None:
                contexts[index] = context_mix(
                    own=vectors.own[index],
                    own_text=candidate.text_to_embed,
                    previous=previous.embedding,
                    previous_text=previous.text,
                )
            if candidate.memory_type == scoring.EPISODE:
                episode_of_message = EpisodeBefore(embedding=vectors.own[index], text=candidate.text_to_embed)
    return MemoryVectors(own=vectors.own, context=contexts)


def _turn_key(event: ContextEvent) -> TurnKey:
    assert event.message is not None
    return (_session_of(event), event.message.occurred_at, event.message.external_id)


def _with_context_words(event: ContextEvent, candidate: Candidate, context_words: dict[TurnKey, str]) -> Candidate:
    """An episode of a conversation's turn, with the context words its row is to be inserted with."""
    if candidate.memory_type != scoring.EPISODE or event.message is None or not _session_of(event):
        return candidate
    words = context_words.get(_turn_key(event), "")
    return replace(candidate, context_words=words) if words else candidate


def _provenance(event: ContextEvent) -> Provenance:
    if event.message is not None:
        return Provenance(event.message.occurred_at, (event.message.external_id,), (event.pk,), event.message_id)
    return Provenance(event.created_at, (), (event.pk,), None)


def events_extract(
    *,
    events: Sequence[ContextEvent],
    actor: str,
    now: datetime | None = None,
    planned: dict[Any, list[Candidate]] | None = None,
) -> dict[Any, list[dict[str, Any]]]:
    """Inline extraction of a batch of events, in one transaction: their candidates embedded in one call,
    written per scope with one `memories_write` (a constant number of statements), the conversations'
    context words and the events' results set in one statement each. `planned`: candidates already made.
    Returns {event id: the summaries of what it created or reinforced}.

    Each event is claimed first (its row locked, `extracted_at` still empty, SKIP LOCKED): an event that
    another request, the retry sweep or the idle flush is extracting right now, or has extracted, is left
    to it — never extracted twice. Its summaries here are empty."""
    summaries: dict[Any, list[dict[str, Any]]] = {event.pk: [] for event in events}
    with transaction.atomic():
        claimed = set(
            ContextEvent.objects.select_for_update(skip_locked=True)
            .filter(pk__in=[event.pk for event in events], extracted_at__isnull=True)
            .values_list("pk", flat=True)
        )
        events = [event for event in events if event.pk in claimed]
        if not events:
            return summaries
        if planned is None:
            planned = {event.pk: _candidates_for_event(event) for event in events}
        planned = _with_questions_answered(events, planned)
        turns = [(event.message, _session_of(event)) for event in events if event.message and _session_of(event)]
        context_words = sessions_context_words(turns=turns)  # new episodes get theirs as they are inserted
        work = [
            (event, _with_context_words(event, candidate, context_words))
            for event in events
            for candidate in planned.get(event.pk, [])
        ]
        with phase("embedding"):
            own = candidates_embed(
                [candidate for _, candidate in work],
                scopes=[cache_scope(tenant_id=event.tenant_id, contact_id=event.contact_id) for event, _ in work],
            )
        with phase("write"):
            vectors = _with_contexts(work, own)
        by_scope: dict[Any, list[int]] = {}
        for index, (event, _) in enumerate(work):
            by_scope.setdefault(event.contact_id, []).append(index)
        inserted_with_words: set[TurnKey] = set()
        for positions in by_scope.values():
            first = work[positions[0]][0]
            with phase("write"):
                changes = memories_write(
                    tenant=first.tenant,
                    contact=first.contact,
                    candidates=[work[index][1] for index in positions],
                    provenance=[_provenance(work[index][0]) for index in positions],
                    actor=actor,
                    vectors=vectors.take(positions),
                    now=now,
                )
            for index, change in zip(positions, changes, strict=True):
                if change.action != "skipped":
                    summaries[work[index][0].pk].append(memory_change_summary(change))
                if change.action == "created" and work[index][1].context_words:
                    inserted_with_words.add(_turn_key(work[index][0]))
        # the turns whose episodes were not inserted here with their words: the turn before the batch (its
        # words now reach into it), and turns whose episode was a duplicate
        sessions_context_set(
            texts={key: words for key, words in context_words.items() if key not in inserted_with_words},
            tenant_id=events[0].tenant_id,
        )
        extracted_at = timezone.now()
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_contextevent e SET result = e.result || v.patch::jsonb, extracted_at = %s, "
                "updated_at = %s FROM unnest(%s::uuid[], %s::text[]) AS v(id, patch) WHERE e.id = v.id",
                [
                    extracted_at,
                    extracted_at,
                    [event.pk for event in events],
                    [json.dumps({"memories": summaries[event.pk]}) for event in events],
                ],
            )
    for event in events:
        event.result = {**event.result, "memories": summaries[event.pk]}
        event.extracted_at = extracted_at
    return summaries


def _record_failure(event: ContextEvent, exc: Exception) -> None:
    logger.exception("Inline extraction failed for event %s; it will be retried", event.pk)
    ContextEvent.objects.filter(pk=event.pk).update(attempts=event.attempts + 1, last_error=repr(exc)[:2000])


@dataclass(frozen=True)
class _Persisted:
    event: ContextEvent
    message: Message
    created: bool


def _persist_batch(*, tenant: Tenant, items: Sequence[IngestItem]) -> list[_Persisted]:
    """The ledger rows and event rows of the whole batch in one transaction, before anything else runs:
    a conflict anywhere (a message_id used for another conversation or contact, a conversation of another
    contact) writes nothing. A constant number of statements per batch. A client message_id seen before —
    earlier in the batch or in the ledger — is a duplicate: nothing is written for it."""
    now = timezone.now()
    with transaction.atomic():
        contacts: dict[str | None, Contact | None] = {None: None}
        contacts.update(
            contacts_get_or_create_many(
                tenant=tenant,
                wanted=[(item.contact_id, item.display_name, item.channel) for item in items if item.contact_id],
            )
        )
        conversations = conversations_get_or_create_many(
            tenant=tenant,
            wanted=[
                (item.conversation_id, contacts[item.contact_id], item.channel, item.occurred_at or now)
                for item in items
            ],
        )
        given_ids = [item.message_id for item in items if item.message_id]
        existing = {
            message.external_id: message
            for message in Message.objects.filter(tenant=tenant, external_id__in=given_ids).select_related(
                "conversation"
            )
        }
        plan: list[tuple[Message, bool]] = []
        new_messages: list[Message] = []
        for item in items:
            contact = contacts[item.contact_id]
            conversation = conversations[item.conversation_id]
            known = existing.get(item.message_id) if item.message_id else None
            if known is not None:
                owner = contact.pk if contact is not None else None
                if known.conversation.external_id != item.conversation_id or known.contact_id != owner:
                    raise ApplicationError(
                        f"message_id '{item.message_id}' was already used for another conversation or contact.",
                        code="conflict",
                        status_code=409,
                    )
                plan.append((known, False))
                continue
            message = Message(
                tenant=tenant,
                conversation=conversation,
                contact=contact,
                external_id=item.message_id or Message.new_external_id(),
                role=item.role,
                speaker=item.speaker,
                content=item.message,
                occurred_at=item.occurred_at or now,
                metadata=item.metadata or {},
            )
            existing[message.external_id] = message
            new_messages.append(message)
            plan.append((message, True))
        sessions = messages_sessions(messages=new_messages)  # a chat's silences split it into sessions
        session_of = {message.external_id: session for message, session in zip(new_messages, sessions, strict=True)}
        instances_insert(new_messages)  # bulk_create, its parameters sent apart (apps/core/rows.py)
        events = [
            ContextEvent(
                tenant=tenant,
                contact=message.contact,
                conversation=message.conversation,
                message=message,
                event_type=ContextEvent.TYPE_MESSAGE,
                content=message.content,
                source_metadata={
                    "source": "ingest",
                    "conversation_id": message.conversation.external_id,
                    "session_id": session_of[message.external_id],
                    "message_id": message.external_id,
                    "role": message.role,
                    "speaker": message.speaker,
                    "channel": item.channel,
                },
            )
            for (message, created), item in zip(plan, items, strict=True)
            if created
        ]
        instances_insert(events)
        messages_appended(messages=new_messages)
        transaction.on_commit(lambda: _after_commit(new_messages))
    event_of = {event.message_id: event for event in events}
    duplicates = [message.pk for message, created in plan if not created]
    if duplicates:
        event_of |= {
            event.message_id: event
            for event in ContextEvent.objects.select_related("message", "contact").filter(message_id__in=duplicates)
        }
    return [_Persisted(event_of[message.pk], message, created) for message, created in plan]


def _after_commit(messages: Sequence[Message]) -> None:
    with phase("redis"):
        windows_append(messages=messages)
    conversations = {message.conversation_id: message.conversation for message in messages}
    for conversation in conversations.values():
        consolidation_schedule(conversation=conversation)
    # named speakers' messages may close a burst (apps/memories/lifecycle/burst_rules.py): joined seconds later
    first_named: dict[Any, int] = {}
    for message in messages:
        if message.speaker.strip():
            first_named[message.conversation_id] = min(message.pk, first_named.get(message.conversation_id, message.pk))
    for conversation_id, first_message_id in first_named.items():
        bursts_join_schedule(conversation=conversations[conversation_id], first_message_id=first_message_id)


EXTRACTION_CHUNK = 64  # events per inline extraction step: the budget is checked between steps


def _extract_within(
    *,
    events: Sequence[ContextEvent],
    actor: str,
    now: datetime | None,
    planned: dict[Any, list[Candidate]],
    started: float,
) -> tuple[dict[Any, list[dict[str, Any]]], list[ContextEvent]]:
    """Extract `events` in chunks while the request is within its inline budget (the first chunk always).
    Returns (summaries by event id, the events left for the worker)."""
    budget = float(settings.ENGRAM["INGEST_INLINE_SECONDS"])
    memories: dict[Any, list[dict[str, Any]]] = {}
    for start in range(0, len(events), EXTRACTION_CHUNK):
        # a simulation's clock (`now`) stays inline: the worker would extract them at the wall clock
        if start and now is None and time.monotonic() - started > budget:
            return memories, list(events[start:])
        chunk = events[start : start + EXTRACTION_CHUNK]
        try:
            with phase("write"):
                memories |= events_extract(events=chunk, actor=actor, now=now, planned=planned)
        except EmbedderUnavailable as exc:  # every event would fail alike: they stay pending for the retry task
            for event in events[start:]:
                _record_failure(event, exc)
            return memories, []
        except Exception:
            logger.exception("Batch extraction failed; extracting its %d events one by one", len(chunk))
            for event in chunk:
                try:
                    memories[event.pk] = event_extract(event=event, actor=actor, now=now)
                except Exception as exc:
                    _record_failure(event, exc)
    return memories, []


def events_extract_queue(*, tenant: Tenant, events: Sequence[ContextEvent]) -> None:
    """Hand events whose inline extraction did not run to the worker. Never raises: when the broker is
    unreachable the events stay pending, and the per-minute retry sweep extracts them."""
    try:
        task_queue(EXTRACT_EVENTS, tenant_id=str(tenant.pk), event_ids=[str(event.pk) for event in events])
    except Exception as exc:  # kombu's OperationalError when the broker is unreachable
        logger.warning("Could not queue the extraction of %d events: %s", len(events), exc)


def events_extract_deferred(*, tenant_id: Any, event_ids: Sequence[Any]) -> int:
    """The worker's side of `events_extract_queue`: the events still unextracted, in their order, in chunks
    (each claims its events: one that the retry sweep or another run holds is left to it). Returns how many
    were extracted here."""
    events = list(
        ContextEvent.objects.select_related("tenant", "contact", "message")
        .filter(tenant_id=tenant_id, pk__in=list(event_ids), extracted_at__isnull=True)
        .order_by("created_at", "pk")
    )
    done = 0
    for start in range(0, len(events), EXTRACTION_CHUNK):
        chunk = events[start : start + EXTRACTION_CHUNK]
        try:
            events_extract(events=chunk, actor=SYSTEM)  # sets extracted_at on the events it claimed
        except Exception:
            logger.exception("Deferred extraction of %d events failed; the retry sweep takes them", len(chunk))
            continue
        done += sum(1 for event in chunk if event.extracted_at is not None)
    return done


def ingest_messages(
    *, tenant: Tenant, items: Sequence[IngestItem], actor: str, now: datetime | None = None
) -> list[IngestOutcome]:
    """Ingest messages in order, as one batch: the ledger and event rows first (one transaction), then the
    contact state of the user messages, then inline extraction of all of them (candidates embedded in one
    call, written in one transaction). A failure in extraction keeps the messages: the batch is retried event
    by event, and an event that still fails stays pending for the retry task. `now` is when Engram learns
    them (a simulation's clock; the wall clock by default). An `occurred_at` out of bounds
    (apps/core/moments.py) is refused before anything is written.

    Inline extraction runs in chunks of EXTRACTION_CHUNK events and stops starting new ones once the request
    has spent INGEST_INLINE_SECONDS: the rest is queued for the worker (their answers say `extraction:
    pending`), so a large batch on a starved machine answers well inside the web worker's timeout instead of
    being killed by it. The first chunk always runs inline, and the contact state (crisis) of every user
    message is always read here."""
    for index, item in enumerate(items):
        if item.occurred_at is not None and (problem := occurred_at_problem(item.occurred_at, now=now)):
            field = "occurred_at" if len(items) == 1 else f"messages[{index}].occurred_at"
            raise ApplicationError(problem, details={field: [problem]})
    started = time.monotonic()
    try:
        with phase("ledger"):
            persisted = _persist_batch(tenant=tenant, items=items)
    except IntegrityError:
        # a concurrent request wrote one of these message_ids (or contacts, conversations) first: once more,
        # and its rows are duplicates now
        with phase("ledger"):
            persisted = _persist_batch(tenant=tenant, items=items)
    # new messages, and earlier ones whose request died before their state or extraction (a retry)
    unstated = [
        (row.event, row.message)
        for row in persisted
        if is_user_turn(row.event, row.message) and (row.created or "state" not in row.event.result)
    ]
    with phase("state"):
        answers = events_state_update(unstated)
    planned: dict[Any, list[Candidate]] = {}
    extractable: list[ContextEvent] = []
    for row in persisted:
        # extracted already, or met earlier in this batch (a message_id sent twice in it)
        if row.event.extracted_at is not None or row.event.pk in planned:
            continue
        try:
            with phase("extraction"):
                planned[row.event.pk] = _candidates_for_event(row.event)
        except Exception as exc:  # a rule bug must not lose the batch: the event is retried later
            planned[row.event.pk] = []
            _record_failure(row.event, exc)
            continue
        extractable.append(row.event)
    memories, deferred = _extract_within(events=extractable, actor=actor, now=now, planned=planned, started=started)
    if deferred:
        logger.info("Inline extraction over its time budget: %d events of a batch go to the worker", len(deferred))
        transaction.on_commit(lambda: events_extract_queue(tenant=tenant, events=deferred))
    try:
        with phase("extraction"), transaction.atomic():  # a savepoint: a failure here leaves the batch intact
            speaker_aliases_learn(tenant=tenant, messages=[row.message for row in persisted if row.created])
    except Exception:  # aliases help retrieval; a failure here must not fail a batch that is stored
        logger.exception("Learning speaker aliases failed for a batch of %d messages", len(persisted))
    outcomes: list[IngestOutcome] = []
    for row in persisted:
        result = row.event.result
        crisis, state = answers.get(row.event.pk, (result.get("crisis"), result.get("state")))
        outcomes.append(
            IngestOutcome(
                event=row.event,
                message=row.message,
                memories=memories.get(row.event.pk, result.get("memories", [])),
                duplicate=not row.created,
                crisis=crisis,
                state=state,
                is_user_turn=is_user_turn(row.event, row.message),
            )
        )
    return outcomes


def ingest_payload(outcome: IngestOutcome) -> dict[str, Any]:
    """The answer to one ingested message, as POST /ingest and the MCP tool add_memory give it."""
    return {
        "event_id": str(outcome.event.pk),
        "message_id": outcome.message.external_id,
        "duplicate": outcome.duplicate,
        "memories": outcome.memories,
        "state": outcome.state,
        "crisis": outcome.crisis_answer,
        # done: its memories are stored (and listed above); pending: the worker extracts it (a large batch over
        # the inline time budget, or a failure the retry sweep takes) — GET /events/{event_id} tells when
        "extraction": "done" if outcome.event.extracted_at is not None else "pending",
    }


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
    metadata: dict[str, Any] | None = None,
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
                metadata={"added_by": actor, **(metadata or {})},
                expires_at=working_memory_expiry(now) if is_working else None,
            )
        ],
        occurred_at=now,
        actor=actor,
    )
    return change
