"""Token budgets and how memories are fitted into them: pure rules, no Django (tested without a database).

The stage budgets of GET /context live with the stages (`apps.contacts.intelligence.stages`); the section
limits of the tenant brain and the greedy fitting of memory lines are here. Token counting is passed in
(`apps.core.tokens.count_tokens`), so this module needs no settings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from apps.context.fences import inline
from apps.memories import scoring
from apps.memories.retrieval import overlap

# The tenant brain (ai-brain-memory.txt §6): each section's limit, the total, the turns never summarised.
SECTION_LIMITS = {
    "system_prompt": 500,
    "tenant_profile": 200,
    "memories": 1500,
    "knowledge": 1000,
    "service_data": 2000,
    "conversation": 2000,
    "tools": 1500,
    "safety_buffer": 300,
}
TOTAL_LIMIT = 8000
VERBATIM_TURNS = 4

OUTDATED_NOTE = " (outdated: corrected since)"
MAX_LINES = 20  # the most memory lines a context holds, whatever its budget


class BudgetedMemory(Protocol):
    """What fitting reads of a memory handed out (`apps.memories.retrieval.types.RetrievedMemory`)."""

    @property
    def pk(self) -> Any: ...
    @property
    def memory_type(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def outdated(self) -> bool: ...
    @property
    def role(self) -> str: ...


class Scored(Protocol):
    """A scored memory (`apps.memories.retrieval.types.ScoredMemory`)."""

    @property
    def memory(self) -> BudgetedMemory: ...
    @property
    def score(self) -> float: ...


ScoredT = TypeVar("ScoredT", bound=Scored)


@dataclass(frozen=True)
class BudgetedMemories(Generic[ScoredT]):
    selected: list[ScoredT]
    dropped: list[ScoredT]
    lines: list[str]
    tokens_used: int


def memory_line(memory_type: str, content: str, *, outdated: bool = False, role: str = "") -> str:
    """The seed <memory> format (memory-logic.txt §4): one `[TYPE] content` line per memory; an episode
    that stated a value since corrected says so, so the model does not repeat the old value. Words the
    contact did not say name who did, as a labelled speaker's turn does ("John: …"): the AI's own earlier
    reply is "Assistant: …" (`role`), never read as the contact's. The content is data on one line
    (`fences.inline`): it never opens a line or a tag of its own."""
    said_by = f"{role.capitalize()}: " if role else ""
    return f"[{memory_type.upper()}] {said_by}{inline(content)}{OUTDATED_NOTE if outdated else ''}"


def budget_memories(
    scored: Sequence[ScoredT],
    *,
    budget: int,
    count_tokens: Callable[[str], int],
    max_items: int = MAX_LINES,
    leading: int = 0,
    leading_budget: int | None = None,
) -> BudgetedMemories[ScoredT]:
    """The first `leading` of `scored` (the query's best matches) before the others, within `leading_budget`
    tokens (default: the whole budget); a leading memory past that share waits behind the others, so they get
    the rest of the budget first and it still takes what they leave. Among the leading, preferences, then
    facts, then the rest, each by score: a fact drawn from an episode says it in fewer words and is the line
    an owner corrects, so it is placed before the episode that would make it a repeat. Among the others
    preferences first (small, always matter), then by score. A memory that does not fit the token budget is
    dropped — so the lowest-scored go first — while smaller ones after it may still fit. A memory that a line
    placed before it already says (`overlap.says_again`: "I have a dog named Bruno." after "Has a dog named
    Bruno") is dropped too: no tokens for a line the model has read."""
    distilled: dict[str, int] = {scoring.PREFERENCE: 0, scoring.FACT: 1}

    def leading_order(item: ScoredT) -> tuple[int, float, str]:
        return (distilled.get(item.memory.memory_type, 2), -item.score, str(item.memory.pk))

    def order(item: ScoredT) -> tuple[bool, float, str]:
        return (item.memory.memory_type != scoring.PREFERENCE, -item.score, str(item.memory.pk))

    selected: list[ScoredT] = []
    dropped: list[ScoredT] = []
    lines: list[str] = []
    said: list[frozenset[str]] = []
    used = 0

    def place(item: ScoredT, within: int) -> bool | None:
        """Placed (True), said already (dropped: None) or not within `within` tokens (False)."""
        nonlocal used
        if len(selected) >= max_items:
            return False  # full: no words to compare nor tokens to count (half a 40-candidate context's work)
        words = overlap.content_words(item.memory.content)
        if any(overlap.says_again(words, earlier) for earlier in said):
            return None
        memory = item.memory
        line = memory_line(memory.memory_type, memory.content, outdated=memory.outdated, role=memory.role)
        tokens = count_tokens(line)
        if used + tokens > within:
            return False
        selected.append(item)
        lines.append(line)
        said.append(words)
        used += tokens
        return True

    share = budget if leading_budget is None else min(leading_budget, budget)
    waiting: list[ScoredT] = []
    for item in sorted(scored[:leading], key=leading_order):
        placed = place(item, share)
        if placed is None:
            dropped.append(item)
        elif not placed:
            waiting.append(item)
    for item in sorted(scored[leading:], key=order) + waiting:
        if not place(item, budget):
            dropped.append(item)
    return BudgetedMemories(selected=selected, dropped=dropped, lines=lines, tokens_used=used)
