"""Deferred consolidation (per conversation, ~5 minutes after a burst of turns; queued by
apps/memories/dispatch.py, debounced).

Deferred, per conversation: retry unfinished extraction, join the episodes of each burst of one speaker's
messages into one (lifecycle/burst_rules.py), merge near-duplicates (cosine > 0.92, same type and scope; the
more specific content wins; importance = max + 0.05), link entities named anywhere in the conversation, boost
memories tied to a decision with a positive outcome (+0.1).
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, connection
from django.db.models import Q
from django.utils import timezone

from apps.contacts.models import Contact
from apps.conversations.models import Conversation, Message
from apps.conversations.sessions import SEPARATOR, later_sessions_pattern
from apps.core.embeddings import cosine_threshold
from apps.core.vectors import vector_from_send
from apps.entities.services import entity_upsert_many
from apps.memories import scoring
from apps.memories.extraction import extract
from apps.memories.ingest.services import event_extract, events_state_update, is_user_turn
from apps.memories.lifecycle import burst_rules, nearest
from apps.memories.lifecycle.runs import run_logged
from apps.memories.models import ConsolidationRun, ContextEvent, Memory, MemoryEntity, MemoryRevision
from apps.memories.retrieval.lexicon import scope_lexicon_rewritten
from apps.memories.store.merging import burst_join, memory_merge
from apps.memories.store.revisions import SYSTEM, memory_snapshot, revision_record
from apps.memories.store.writing import turn_line
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

EXTRACTION_RETRY_AFTER = timedelta(seconds=30)
MAX_EXTRACTION_ATTEMPTS = 5


def unfinished_events_extract(events: list[ContextEvent]) -> int:
    """Retry what a request left unfinished: the contact state of user messages that never got it (so a
    crisis is never left unread), then extraction, event by event."""
    events_state_update(
        [
            (event, event.message)
            for event in events
            if event.message is not None and is_user_turn(event, event.message) and "state" not in event.result
        ]
    )
    done = 0
    for event in events:
        try:
            event_extract(event=event, actor=SYSTEM)
            done += 1
        except Exception as exc:
            logger.exception("Extraction retry failed for event %s", event.pk)
            ContextEvent.objects.filter(pk=event.pk).update(attempts=event.attempts + 1, last_error=repr(exc)[:2000])
    return done


def pending_events_extract(*, limit: int = 500) -> int:
    """Events whose inline extraction never completed (the request died, a rule raised) are retried."""
    cutoff = timezone.now() - EXTRACTION_RETRY_AFTER
    events = list(
        ContextEvent.objects.select_related("tenant", "contact", "message")
        .filter(extracted_at__isnull=True, created_at__lt=cutoff, attempts__lt=MAX_EXTRACTION_ATTEMPTS)
        .order_by("created_at")[:limit]
    )
    return unfinished_events_extract(events)


def exhausted_events_reset(*, event_ids: list[Any]) -> int:
    """Let the sweeps try again the events whose extraction spent its MAX_EXTRACTION_ATTEMPTS (they no longer
    try them): their attempts start over. For what a fault left behind once its cause is fixed (the worker whose
    retries all failed, docs/benchmarks.md Session 34): the messages are in the ledger, only their memories are
    missing. Returns how many were reset."""
    return ContextEvent.objects.filter(
        pk__in=event_ids, extracted_at__isnull=True, attempts__gte=MAX_EXTRACTION_ATTEMPTS
    ).update(attempts=0, last_error="")


def exhausted_events_retry(*, events: list[ContextEvent]) -> int:
    """`exhausted_events_reset`, then each of `events` extracted now, event by event. Returns how many were
    extracted; one that fails again keeps its new error."""
    exhausted_events_reset(event_ids=[event.pk for event in events])
    pending = list(
        ContextEvent.objects.select_related("tenant", "contact", "message")
        .filter(pk__in=[event.pk for event in events], extracted_at__isnull=True)
        .order_by("created_at", "pk")
    )
    return unfinished_events_extract(pending)


# Each memory of the scope (or of one conversation) with its nearest current neighbour of the same type, in
# one statement: an HNSW probe per memory (the scope's filters ride the iterative index scan), not a query
# per memory (3–6 s for a LoCoMo session before). For a scope of up to EXACT_SCOPE_LIMIT memories the pairs are
# computed exactly instead (lifecycle/nearest.py): a probe costs ~8–10 ms in a table shared with other tenants,
# so a conversation of a few hundred chunks of long messages took 12 s of the worker; the matrix product takes
# milliseconds (docs/benchmarks.md, "Session 23").
_NEAREST_SQL = """
SELECT m.id, n.id, 1 - (m.embedding <=> n.embedding)
FROM memories_memory m
CROSS JOIN LATERAL (
  SELECT n.id, n.embedding FROM memories_memory n
  WHERE n.tenant_id = m.tenant_id AND n.contact_id IS NOT DISTINCT FROM m.contact_id
    AND n.memory_type = m.memory_type AND n.id <> m.id AND n.valid_to IS NULL AND n.deleted_at IS NULL
    AND NOT n.is_compressed AND n.embedding IS NOT NULL
  ORDER BY n.embedding <=> m.embedding LIMIT 1) n
WHERE {where} {session}
ORDER BY {order}
"""
# The order consolidation reads a scope's memories in, and which of two near-duplicates is the older: when it was
# said, then its place in the ledger, then its text — never when the worker happened to write the row or a random
# id, so the same conversation ingested twice consolidates into the same memories (two end-to-end runs of one
# code once differed by 2 patterns of 80 and a handful of merges, and by 0.003 R@10; docs/benchmarks.md, Session 32)
STABLE_ORDER = "m.occurred_at, m.source_sequence NULLS LAST, m.content_hash, m.id"


def stable_key(memory: Memory) -> tuple[Any, ...]:
    """STABLE_ORDER of a loaded memory (a missing ledger position sorts last, as NULLS LAST does)."""
    sequence = memory.source_sequence
    return (memory.occurred_at, sequence is None, sequence or 0, memory.content_hash, str(memory.pk))


# the memories of the scope a pair is made of (current, with an embedding): both paths, and the count that picks one
_SCOPE_ROWS_WHERE = (
    "m.tenant_id = %s AND {contact} AND m.valid_to IS NULL AND m.deleted_at IS NULL AND NOT m.is_compressed "
    "AND m.embedding IS NOT NULL"
)
EXACT_SCOPE_LIMIT = 5000


def nearest_pairs(
    *, tenant: Tenant, contact: Contact | None, session_id: str | None = None
) -> list[tuple[Any, Any, float]]:
    """(memory id, its nearest current memory of the same type and scope, their cosine similarity) for each
    memory of the scope — or of conversation `session_id` — in STABLE_ORDER: exactly (one fetch of the
    scope's embeddings, lifecycle/nearest.py) for a scope of up to EXACT_SCOPE_LIMIT memories, else one HNSW
    probe per memory."""
    contact_sql = "m.contact_id = %s" if contact is not None else "m.contact_id IS NULL"
    scope_params: list[Any] = [tenant.pk, *([contact.pk] if contact is not None else [])]
    session_sql, session_params = "", []
    if session_id is not None:  # the conversation's sessions: its id, then <id>/<n> (apps/conversations/sessions.py)
        session_sql = "(m.source_session_id = %s OR m.source_session_id LIKE %s)"
        session_params = [session_id, later_sessions_pattern(session_id)]
    where = _SCOPE_ROWS_WHERE.format(contact=contact_sql)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE {where} LIMIT %s) s",
            [*scope_params, EXACT_SCOPE_LIMIT + 1],
        )
        row = cursor.fetchone()
        if row is not None and row[0] <= EXACT_SCOPE_LIMIT:
            cursor.execute(
                "SELECT m.id, m.memory_type, vector_send(m.embedding::vector), "
                f"{session_sql or 'true'} FROM memories_memory m WHERE {where} ORDER BY {STABLE_ORDER}",
                [*session_params, *scope_params],
            )
            scope = [
                (nearest.Row(id=memory_id, memory_type=memory_type, vector=vector_from_send(sent)), asked)
                for memory_id, memory_type, sent, asked in cursor.fetchall()
            ]
            return nearest.nearest_pairs([item for item, asked in scope if asked], [item for item, _ in scope])
        cursor.execute(
            _NEAREST_SQL.format(where=where, session=f"AND {session_sql}" if session_sql else "", order=STABLE_ORDER),
            [*scope_params, *session_params],
        )
        return [(memory_id, neighbour_id, float(similarity)) for memory_id, neighbour_id, similarity in cursor]


def near_duplicates_merge(*, tenant: Tenant, contact: Contact | None, session_id: str | None = None) -> int:
    """Merge memories of the same type and scope above the merge similarity (0.92): each memory of the
    scope — or only those that came from conversation `session_id` — with its nearest neighbour."""
    pairs = nearest_pairs(tenant=tenant, contact=contact, session_id=session_id)
    threshold = cosine_threshold(scoring.MERGE_SIMILARITY)
    pairs = [pair for pair in pairs if pair[2] > threshold]
    if not pairs:
        return 0
    involved = Memory.objects.in_bulk({memory_id for pair in pairs for memory_id in pair[:2]})
    absorbed_ids: set[Any] = set()
    merged = 0
    for memory_id, neighbour_id, similarity in pairs:
        if memory_id in absorbed_ids or neighbour_id in absorbed_ids:
            continue  # one of them was absorbed earlier in this run
        memory, neighbour = involved[memory_id], involved[neighbour_id]
        polarity_differs = memory.metadata.get("polarity", 0) != neighbour.metadata.get("polarity", 0)
        slots_differ = bool(memory.slot and neighbour.slot and memory.slot != neighbour.slot)
        if polarity_differs or slots_differ or memory.key or neighbour.key:  # a keyed record is the client's
            continue
        if _said_by_others(memory, neighbour) or _answers(memory, neighbour) or _answers(neighbour, memory):
            continue
        older, newer = sorted([memory, neighbour], key=stable_key)
        if memory_merge(survivor=older, absorbed=newer, actor=SYSTEM, similarity=similarity) is not None:
            absorbed_ids.add(newer.pk)
            merged += 1
    return merged


def _said_by_others(memory: Memory, neighbour: Memory) -> bool:
    """Two speakers' memories are not one: merged, one's words would survive under the other's name ("Sam:
    Got some good news…" absorbing "Evan: Congrats Sam!…"; 18 of 61 merges on LoCoMo's settled store)."""
    speaker, other = memory.metadata.get("speaker"), neighbour.metadata.get("speaker")
    return bool(speaker and other and speaker != other)


def _answers(reply: Memory, question: Memory) -> bool:
    """A short reply stored with the question it answers (extraction/answers.py) quotes it: merged, the
    question would survive and the answer be gone from the content."""
    answered = reply.metadata.get("answers")
    return bool(answered and answered in question.source_message_ids)


# The recent bursts of a live conversation are joined seconds after they close (BURSTS_JOIN_DELAY_SECONDS,
# apps/memories/dispatch.py), over what arrived since the last such run and the BURSTS_RECENT_MESSAGES before
# it (a burst still open then); the deferred consolidation joins the rest, the whole conversation, minutes later.
BURSTS_RECENT_MESSAGES = 200


def conversation_bursts_merge(*, conversation: Conversation, recent: int | None = None) -> int:
    """Join the episodes of each burst of the conversation (one named speaker's consecutive messages, seconds
    apart: burst_rules.bursts) into one episode, in ledger order, up to BURST_MAX_CHARS each. A long message
    (stored as chunks) or one not yet extracted ends a burst there; one with no episode of its own (small talk,
    a repeat stored with an earlier message) is passed over. With `recent`, only the last `recent` messages
    are read and only the bursts a later message has closed are joined (the last may still grow). Returns how
    many episodes were joined into others."""
    messages = Message.objects.filter(conversation=conversation)
    if recent is None:
        ledger = list(messages.order_by("occurred_at", "id").values_list("id", "speaker", "occurred_at", "content"))
    else:
        ledger = list(
            messages.order_by("-occurred_at", "-id").values_list("id", "speaker", "occurred_at", "content")[:recent]
        )[::-1]
    turns = [
        burst_rules.LedgerTurn(sequence=pk, speaker=speaker, occurred_at=occurred_at)
        for pk, speaker, occurred_at, _ in ledger
    ]
    place = {row[0]: index for index, row in enumerate(ledger)}

    def around(first: int, last: int, text: str) -> str:
        """A joined episode's keyword context: the turn before it, it, the turn after (as a whole turn's)."""
        lines = [text]
        if place[first] > 0:
            _, speaker, _, content = ledger[place[first] - 1]
            lines.insert(0, turn_line(speaker, content))
        if place[last] + 1 < len(ledger):
            _, speaker, _, content = ledger[place[last] + 1]
            lines.append(turn_line(speaker, content))
        return "\n".join(lines)

    found = burst_rules.bursts(turns)
    if recent is not None and found and found[-1][-1] == ledger[-1][0]:
        found = found[:-1]  # still open: the speaker may go on
    if not found:
        return 0
    sequences = [sequence for burst in found for sequence in burst]
    pending = set(
        ContextEvent.objects.filter(
            message_id__in=sequences, extracted_at__isnull=True, attempts__lt=MAX_EXTRACTION_ATTEMPTS
        ).values_list("message_id", flat=True)
    )
    episodes: dict[int, list[Memory]] = {}
    for memory in Memory.objects.filter(
        Q(contact_id=conversation.contact_id) if conversation.contact_id else Q(contact__isnull=True),
        tenant_id=conversation.tenant_id,
        memory_type=scoring.EPISODE,
        valid_to__isnull=True,
        deleted_at__isnull=True,
        source_sequence__in=sequences,
    ):
        episodes.setdefault(memory.source_sequence or 0, []).append(memory)
    speaker_of = {turn.sequence: turn.speaker for turn in turns}
    joined = 0
    for burst in found:
        run: list[Memory] = []
        for sequence in [*burst, None]:  # None closes the last run
            own = episodes.get(sequence, []) if sequence is not None else []
            ends = sequence is None or sequence in pending or any("chunk" in (memory.metadata or {}) for memory in own)
            single = len(own) == 1 and len(own[0].source_message_ids) == 1 and not ends
            if not single and not ends:
                continue  # small talk (no episode) or a repeat kept with an earlier message: the burst goes on
            if single and run:
                text = burst_rules.joined(
                    [*[part.content for part in run], own[0].content], speaker=speaker_of[burst[0]]
                )
                if len(text) <= burst_rules.BURST_MAX_CHARS:
                    run.append(own[0])
                    continue
            if len(run) > 1:
                text = burst_rules.joined([part.content for part in run], speaker=speaker_of[burst[0]])
                context = around(run[0].source_sequence or 0, run[-1].source_sequence or 0, text)
                if burst_join(parts=run, content=text, context_words=context, actor=SYSTEM) is not None:
                    joined += len(run) - 1
            run = [own[0]] if single else []
    return joined


def conversation_recent_bursts_merge(*, conversation_id: str, since_message_id: int | None = None) -> int:
    """The bursts a live conversation's latest messages closed, joined seconds after (the worker's side of
    dispatch.bursts_join_schedule): the next request for context finds the whole thought, not its fragments.
    Reads the messages since `since_message_id` (the first of the batches that queued this run; None: none
    known) and the BURSTS_RECENT_MESSAGES before them: a client importing a long chat in batches of hundreds has
    every burst of it joined, not only the last batch's."""
    conversation = Conversation.objects.filter(pk=conversation_id, tenant__is_active=True).first()
    if conversation is None:
        return 0  # deleted, or its tenant deactivated (being deleted: see conversation_consolidate)
    recent = BURSTS_RECENT_MESSAGES
    if since_message_id is not None:
        recent += Message.objects.filter(conversation=conversation, pk__gte=since_message_id).count()
    return conversation_bursts_merge(conversation=conversation, recent=recent)


def conversation_entities_link(*, conversation: Conversation) -> int:
    """The conversation's memories are linked to the entities recognised anywhere in the conversation that
    they name (ai-brain-memory.txt §4.3: "link new memories to recognised entities"): "Bruno" in a later turn
    joins the pet:bruno named in an earlier one. Only this conversation's memories, and a name only where it
    is written as recognised (case-sensitive, whole words): linking every memory of the contact that held the
    word case-insensitively ("here", "pottery") flooded the entity candidates and matches of unrelated
    questions (LoCoMo over HTTP, settled R@10 −0.015; docs/benchmarks.md, session 9)."""
    contact = conversation.contact
    texts = list(
        Message.objects.filter(conversation=conversation, role=Message.ROLE_USER).values_list("content", flat=True)
    )
    mentions = [entity for text in texts for entity in extract(text, scope="contact", role="user").entities]
    if not mentions:
        return 0
    entities = entity_upsert_many(
        tenant=conversation.tenant, contact=contact, entities=mentions, at=conversation.last_message_at
    )
    memories = list(
        Memory.objects.filter(
            Q(source_session_id=conversation.external_id)  # its first session, then <id>/<n>
            | Q(source_session_id__startswith=f"{conversation.external_id}{SEPARATOR}"),
            tenant=conversation.tenant,
            contact=contact,
            valid_to__isnull=True,
            deleted_at__isnull=True,
        ).only("pk", "content")
    )
    patterns = {
        entity.pk: re.compile(r"(?<!\w)" + re.escape(entity.display_name) + r"(?!\w)")
        for entity in entities.values()
        if entity.display_name
    }
    linked = set(
        MemoryEntity.objects.filter(memory__in=memories, entity_id__in=list(patterns)).values_list(
            "memory_id", "entity_id"
        )
    )
    links = [
        MemoryEntity(memory=memory, entity_id=entity_id)
        for memory in memories
        for entity_id, pattern in patterns.items()
        if (memory.pk, entity_id) not in linked and pattern.search(memory.content)
    ]
    MemoryEntity.objects.bulk_create(links, ignore_conflicts=True)
    return len(links)


def outcomes_boost(*, conversation: Conversation) -> int:
    """A message carrying metadata {"outcome": "positive", "decision_message_id": "<id>"} boosts, once, the
    memories that came from the decision message by +0.1 (ai-brain-memory.txt §4.3, outcome-boosted)."""
    boosted = 0
    outcomes = Message.objects.filter(conversation=conversation, metadata__outcome="positive")
    for message in outcomes:
        decision_id = message.metadata.get("decision_message_id")
        if not decision_id:
            continue
        related = Memory.objects.filter(
            tenant=conversation.tenant,
            contact=conversation.contact,  # the decision of this conversation's contact, not another's
            source_message_ids__contains=[decision_id],
            valid_to__isnull=True,
            deleted_at__isnull=True,
        )
        for memory in related:
            if message.external_id in memory.metadata.get("outcome_boosted_by", []):
                continue  # each outcome boosts once
            before = memory_snapshot(memory)
            memory.importance = round(scoring.clamp(memory.importance + scoring.OUTCOME_BOOST), 4)
            memory.base_importance = memory.importance
            boosted_by = list(memory.metadata.get("outcome_boosted_by", []))
            memory.metadata = {**memory.metadata, "outcome_boosted_by": [*boosted_by, message.external_id]}
            memory.save(update_fields=["importance", "base_importance", "metadata", "updated_at"])
            revision_record(
                memory=memory,
                action=MemoryRevision.Action.IMPORTANCE_RECOMPUTED,
                actor=SYSTEM,
                before=before,
                note=f"positive outcome reported in message {message.external_id}",
            )
            boosted += 1
    return boosted


def conversation_consolidate(*, conversation_id: str) -> dict[str, int]:
    conversation = Conversation.objects.filter(pk=conversation_id).select_related("tenant", "contact").first()
    if conversation is None or not conversation.tenant.is_active:
        # deleted, or deactivated: a tenant's deletion deactivates it first, and a run that started now would
        # lock its conversation and contact rows against the cascade (a deadlock the deletion loses); a
        # reactivated tenant's conversation is still due (consolidated_at unchanged) and the sweep queues it
        return {}
    # started, not finished: a turn that arrives during the run is later than this and queues the next run
    Conversation.objects.filter(pk=conversation.pk).update(consolidated_at=timezone.now())
    try:
        return _conversation_consolidate(conversation)
    except IntegrityError:
        if Conversation.objects.filter(pk=conversation.pk).exists():
            raise
        # its contact was erased meanwhile (contact_delete commits between two of this run's writes): a row
        # written for it failed its foreign key; nothing of the contact is left to consolidate
        logger.info("Conversation %s was erased during its consolidation: run ended", conversation_id)
        return {}


def _conversation_consolidate(conversation: Conversation) -> dict[str, int]:
    with run_logged(
        kind=ConsolidationRun.KIND_DEFERRED, tenant=conversation.tenant, contact=conversation.contact
    ) as stats:
        events = list(
            ContextEvent.objects.select_related("tenant", "contact", "message").filter(
                conversation=conversation, extracted_at__isnull=True, attempts__lt=MAX_EXTRACTION_ATTEMPTS
            )
        )
        stats["extracted"] = unfinished_events_extract(events)
        stats["bursts"] = conversation_bursts_merge(conversation=conversation)
        stats["merged"] = near_duplicates_merge(
            tenant=conversation.tenant, contact=conversation.contact, session_id=conversation.external_id
        )
        stats["entity_links"] = conversation_entities_link(conversation=conversation)
        stats["outcome_boosted"] = outcomes_boost(conversation=conversation)
    scope_lexicon_rewritten(tenant_id=conversation.tenant_id, contact_id=conversation.contact_id)
    return stats
