"""Context assembly for GET /context/{contact_id}: what the LLM is handed before each reply.

Reads only. Access statistics for the memories handed out are recorded by `apps.context.services`
(`context_payload`, through `access_record`: Redis, batched), never written here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from apps.contacts.intelligence.stages import EVERYTHING, STAGE_DENSITY, STAGE_MEMORY_BUDGETS, Density
from apps.contacts.models import Contact
from apps.context.budgets import MAX_LINES, budget_memories
from apps.context.fences import DATA_NOT_INSTRUCTIONS, inline
from apps.conversations.models import Conversation
from apps.conversations.window import window_get
from apps.core.timing import phase
from apps.core.tokens import count_tokens
from apps.memories import scoring
from apps.memories.retrieval.search import last_episode, memory_entities, memory_search
from apps.memories.retrieval.types import Background, EntityRef, ScoredMemory
from apps.tenants.models import Tenant

CONTEXT_CANDIDATES = 40
# the query's best matches: in the context whatever the stage's density (types, recent episodes only, last topic),
# half of the lines a context can hold and at most half its budget before the density's turn
QUERY_LED = MAX_LINES // 2


@dataclass
class ContextBundle:
    contact: Contact
    state: dict[str, Any]
    memories: list[ScoredMemory]
    entities: list[EntityRef]
    context_text: str
    memory_budget: int
    tokens_used: int
    dropped: list[ScoredMemory] = field(default_factory=list)
    # the memories in the context as the query's best matches (QUERY_LED), not by the stage's density
    query_led: frozenset[Any] = frozenset()
    profile: dict[str, Any] = field(default_factory=dict)
    crisis: dict[str, Any] | None = None


def _in_window_message_ids(conversation: Conversation | None) -> set[str]:
    if conversation is None:
        return set()
    return {turn.message_id for turn in window_get(conversation=conversation)}


def render_context_text(
    *, contact: Contact, state: dict[str, Any], lines: list[str], emotional_block: str = "", profile_block: str = ""
) -> str:
    header = f"Contact: {inline(contact.display_name or contact.external_id)}"
    if contact.channel:
        header += f" ({inline(contact.channel)})"
    parts = [header]
    if emotional_block:
        parts.append(emotional_block.rstrip())
    if profile_block:
        parts.append(profile_block.rstrip())
    if lines:  # each line is data on one line already (`budgets.memory_line`)
        parts.append(DATA_NOT_INSTRUCTIONS)
        parts.append("<memory>\n" + "\n".join(lines) + "\n</memory>")
    return "\n".join(parts)


def _not_in_window(scored: list[ScoredMemory], conversation: Conversation | None) -> list[ScoredMemory]:
    """Episodes of turns still in the conversation's session window are already in the prompt's chat history."""
    in_window = _in_window_message_ids(conversation)
    if not in_window:
        return scored
    return [
        item
        for item in scored
        if not (
            item.memory.memory_type == scoring.EPISODE
            and item.memory.source_message_ids
            and set(item.memory.source_message_ids) <= in_window
        )
    ]


def _recent_since(density: Density, reference: datetime) -> datetime | None:
    """From when the stage's density holds episodes (None: of any age); a reference (`as_of`) at the calendar's
    start counts them all."""
    if density.recent_episode_days is None:
        return None
    try:
        return reference - timedelta(days=density.recent_episode_days)
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def _admits(density: Density, item: ScoredMemory, *, reference: datetime) -> bool:
    """Does the stage's density hold this memory: its type, and for an episode how recent it is (as of
    `reference`)."""
    if item.memory.memory_type not in density.memory_types:
        return False
    since = _recent_since(density, reference)
    return since is None or item.memory.memory_type != scoring.EPISODE or item.memory.occurred_at >= since


def _holds_everything(density: Density) -> bool:
    """A density of every type and age: the query's own ranking is all of it, no background of the stage's."""
    return density.memory_types == EVERYTHING.memory_types and not density.last_topic_only


def _has_background(density: Density) -> bool:
    """Some types (building, established, fading): a background of their own behind the query's matches. Not
    every type (the query's ranking is all of it), nor the last topic alone (one line: the matches keep the
    budget, and it takes what they leave)."""
    return not _holds_everything(density) and not density.last_topic_only


def _density(
    *,
    tenant: Tenant,
    contact: Contact,
    query: str,
    density: Density,
    conversation: Conversation | None,
    now: datetime,
    reference: datetime,
) -> tuple[list[ScoredMemory], int]:
    """The stage's own memories, without a query (none of them leads): its last topic, or its types ranked by
    importance and use, episodes only when recent enough (as of `reference`), none of the turns still in the chat
    window."""
    if density.last_topic_only:
        return last_episode(tenant=tenant, contact=contact, now=now), 0
    found = memory_search(
        tenant=tenant,
        contact=contact,
        query=query,
        top_k=CONTEXT_CANDIDATES,
        memory_types=density.memory_types,
        now=now,
    ).results
    return [item for item in _not_in_window(found, conversation) if _admits(density, item, reference=reference)], 0


def _query_led(
    *,
    tenant: Tenant,
    contact: Contact,
    query: str,
    density: Density,
    conversation: Conversation | None,
    now: datetime,
    reference: datetime,
) -> tuple[list[ScoredMemory], int]:
    """What a context with a query holds before the budget, and how many of them lead: the query's QUERY_LED
    best matches of any type and age, then the stage's density (its types ranked for the query, episodes only
    when recent, or the last topic). The density says what a stage's context is made of — what a message
    that asks for nothing in particular ("hey, how's it going?") is answered with; a message about an old
    episode, or one at the "building" stage about anything but a fact, is answered from a memory that the
    density alone never handed to the model (docs/benchmarks.md, "What the model is handed"). One search: a
    stage that holds some types asks for them as its background (`Background`: a candidate source of their
    own, ranked with the rest), its best 40 of those types, episodes only the recent ones — read as such
    before the cut, so a message close to many old episodes still gets the last month's. The budget gives the
    leading at most half of itself before the background's turn (`context_assemble`), so small talk at
    "building" is still answered with the contact's facts."""
    everything = _holds_everything(density)
    background = (
        Background(
            memory_types=density.memory_types,
            limit=CONTEXT_CANDIDATES,
            episodes_since=_recent_since(density, reference),
        )
        if _has_background(density)
        else None
    )
    result = memory_search(
        tenant=tenant,
        contact=contact,
        query=query,
        top_k=CONTEXT_CANDIDATES,  # deeper than QUERY_LED: episodes still in the chat window are left out next
        now=now,  # every type, as POST /memories/search ranks them
        reference_time=reference,
        background=background,
    )
    found = _not_in_window(result.results, conversation)
    leading = found[:QUERY_LED]
    if everything:
        return found, len(leading)
    if background is not None:
        behind = _not_in_window(result.background, conversation)
    else:  # the last topic
        behind = last_episode(tenant=tenant, contact=contact, now=now)
    chosen = {item.memory.pk for item in leading}
    return leading + [item for item in behind if item.memory.pk not in chosen], len(leading)


def context_assemble(
    *,
    tenant: Tenant,
    contact: Contact,
    query: str,
    state: dict[str, Any],
    conversation: Conversation | None = None,
    token_budget: int | None = None,
    emotional_block: str = "",
    profile_block: str = "",
    now: datetime | None = None,
    reference_time: datetime | None = None,
) -> ContextBundle:
    """The stage sets the budget and the density (`stages.STAGE_DENSITY`: which memory types, episodes how
    recent, or only the last topic); a caller's `token_budget` sets the budget and opens every type. The
    query's QUERY_LED best matches are in the context whatever the density (`_query_led`): they take up to half
    the budget first, the stage's background then has its turn, and matches that waited take what it leaves
    (a stage of every type, or of the last topic alone, leaves them the whole budget). `reference_time`
    (GET /context's `as_of`, else now): what the query's time expressions and "recent" episodes count from."""
    now = now or timezone.now()
    reference = reference_time or now
    stage = state.get("relationship_stage", "new")
    budget = token_budget if token_budget is not None else STAGE_MEMORY_BUDGETS.get(stage, 0)
    density = EVERYTHING if token_budget is not None else STAGE_DENSITY.get(stage, EVERYTHING)
    scored: list[ScoredMemory] = []
    leading = 0
    opened = bool(density.memory_types) or density.last_topic_only
    if budget > 0 and opened:
        gather = _query_led if query.strip() else _density
        scored, leading = gather(
            tenant=tenant,
            contact=contact,
            query=query,
            density=density,
            conversation=conversation,
            now=now,
            reference=reference,
        )
    with phase("assembly"):
        budgeted = budget_memories(
            scored,
            budget=budget,
            count_tokens=count_tokens,
            leading=leading,
            # the query's best matches take at most half the budget before a stage's background has its turn
            leading_budget=budget // 2 if _has_background(density) else None,
        )
    entities: dict[str, EntityRef] = {}
    linked = memory_entities(memory_ids=[item.memory.pk for item in budgeted.selected])
    for item in budgeted.selected:
        for entity in linked[item.memory.pk]:
            entities.setdefault(entity.key, entity)
    text = render_context_text(
        contact=contact,
        state=state,
        lines=budgeted.lines,
        emotional_block=emotional_block,
        profile_block=profile_block,
    )
    return ContextBundle(
        contact=contact,
        state=state,
        memories=budgeted.selected,
        entities=list(entities.values()),
        context_text=text,
        memory_budget=budget,
        tokens_used=budgeted.tokens_used,
        dropped=budgeted.dropped,
        query_led=frozenset(item.memory.pk for item in scored[:leading]),
    )
