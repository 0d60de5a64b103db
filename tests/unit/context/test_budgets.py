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
    role: str = ""


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


def test_the_ai_s_own_earlier_reply_says_it_was_the_assistant_s():
    # the contact's words are the contact's; the AI's reply is not something the contact said
    assert (
        memory_line("episode", "I'd try the Dunk Low.", role="assistant")
        == "[EPISODE] Assistant: I'd try the Dunk Low."
    )
    budgeted = budget_memories(
        [
            Scored(Line("a", "episode", "I want new sneakers"), 0.9),
            Scored(Line("b", "episode", "Try the Dunk Low", role="assistant"), 0.8),
        ],
        budget=100,
        count_tokens=words,
    )
    assert budgeted.lines == ["[EPISODE] I want new sneakers", "[EPISODE] Assistant: Try the Dunk Low"]


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


def test_the_query_s_best_matches_lead_and_a_fact_comes_before_the_episode_it_was_drawn_from():
    # the first two are the query's best matches: they are placed before a preference of the stage's and
    # take the budget first; among them the fact goes before the higher-scored episode that repeats it
    episode = Scored(Line("a", "episode", "I work at Infosys in Chennai"), 0.9)
    fact = Scored(Line("b", "fact", "Works at Infosys in Chennai"), 0.7)
    preference = Scored(Line("c", "preference", "Avoids politics"), 0.1)
    other = Scored(Line("d", "episode", "Went trekking in Coorg last weekend"), 0.8)
    budgeted = budget_memories([episode, fact, preference, other], budget=9, count_tokens=words, leading=2)
    assert budgeted.selected == [fact, preference]
    assert budgeted.dropped == [episode, other]  # a repeat of the fact; then what does not fit
    unled = budget_memories([episode, fact, preference, other], budget=100, count_tokens=words)
    assert unled.selected == [preference, episode, other]  # without leading: the fact is a repeat of the episode
    assert unled.dropped == [fact]


def test_the_query_s_matches_past_their_share_wait_behind_the_stage_s_and_take_what_is_left():
    # four matches lead within half of a 24-token budget: two fit their 12 tokens (6 each); the stage's two
    # facts (5 and 4) then have their turn; the matches that waited take what they leave, in their order
    matches = [
        Scored(Line(f"q{index}", "episode", f"Went to the {place} fair"), 0.9 - index / 10)
        for index, place in enumerate(["pottery", "book", "food", "craft"])
    ]
    stage = [Scored(Line("f1", "fact", "Works as a nurse"), 0.3), Scored(Line("f2", "fact", "Lives in Pune"), 0.2)]
    budgeted = budget_memories([*matches, *stage], budget=24, count_tokens=words, leading=4, leading_budget=12)
    assert budgeted.selected == [matches[0], matches[1], stage[0], stage[1]]
    assert budgeted.dropped == [matches[2], matches[3]] and budgeted.tokens_used == 21
    roomier = budget_memories([*matches, *stage], budget=27, count_tokens=words, leading=4, leading_budget=12)
    assert roomier.selected == [matches[0], matches[1], stage[0], stage[1], matches[2]]
    whole = budget_memories([*matches, *stage], budget=24, count_tokens=words, leading=4)  # no share: all theirs
    assert whole.selected == matches


def test_once_the_lines_are_full_the_rest_are_dropped_without_counting_their_tokens():
    counted: list[str] = []

    def counting(text: str) -> int:
        counted.append(text)
        return words(text)

    items = [
        Scored(Line(f"m{number:02d}", "episode", f"Went to market {number}"), 1 - number / 100) for number in range(30)
    ]
    budgeted = budget_memories(items, budget=10_000, count_tokens=counting, max_items=20, leading=5)
    assert [item.memory.pk for item in budgeted.selected] == [f"m{number:02d}" for number in range(20)]
    assert {item.memory.pk for item in budgeted.dropped} == {f"m{number:02d}" for number in range(20, 30)}
    assert len(counted) == 20  # a GET /context reads 40 candidates for at most 20 lines: half the work
