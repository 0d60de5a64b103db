"""Fitting memory lines into a token budget: pure rules, no database (a word is a token here)."""

from __future__ import annotations

from dataclasses import dataclass

from apps.context.budgets import budget_memories, memory_line


@dataclass(frozen=True)
class Line:
    pk: str
    memory_type: str
    content: str
    outdated: bool = False


@dataclass(frozen=True)
class Scored:
    memory: Line
    score: float


def words(text: str) -> int:
    return len(text.split())


def test_memory_line_is_the_seed_format_and_says_when_outdated():
    assert memory_line("fact", "Lives in Pune") == "[FACT] Lives in Pune"
    outdated = memory_line("episode", "Moved to Pune", outdated=True)
    assert outdated == "[EPISODE] Moved to Pune (outdated: corrected since)"


def test_preferences_first_then_by_score_and_what_does_not_fit_is_dropped():
    fact_high = Scored(Line("a", "fact", "Works at Infosys in Chennai"), 0.9)
    fact_low = Scored(Line("b", "fact", "Has a golden retriever named Bruno"), 0.2)
    preference = Scored(Line("c", "preference", "Avoids politics"), 0.1)
    budgeted = budget_memories([fact_low, fact_high, preference], budget=9, count_tokens=words)
    assert budgeted.selected == [preference, fact_high]
    assert budgeted.dropped == [fact_low]
    assert budgeted.lines == ["[PREFERENCE] Avoids politics", "[FACT] Works at Infosys in Chennai"]
    assert budgeted.tokens_used == 9


def test_a_line_that_an_earlier_one_already_says_is_dropped():
    first = Scored(Line("a", "fact", "Has a dog named Bruno"), 0.9)
    again = Scored(Line("b", "episode", "I have a dog named Bruno."), 0.8)
    budgeted = budget_memories([again, first], budget=100, count_tokens=words)
    assert (budgeted.selected, budgeted.dropped) == ([first], [again])


def test_at_most_max_items():
    items = [Scored(Line(str(index), "fact", f"Note {index}"), 1.0 - index / 10) for index in range(5)]
    budgeted = budget_memories(items, budget=100, count_tokens=words, max_items=3)
    assert budgeted.selected == items[:3] and budgeted.dropped == items[3:]
