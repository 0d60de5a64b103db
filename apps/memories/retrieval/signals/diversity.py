"""Diversity for questions that ask for many things: "What are all the places he travelled?", "How many times
did she…?", "Which books has he read?", "What kinds of music does she like?".

Their answer is spread over many conversations, while the plain ranking fills the top with paraphrases of
the one episode that matches best (its turn, the fact stated in it, the turn before…). For such a question
the ranking is re-ordered by maximal marginal relevance: each next result is the candidate whose score,
minus a penalty for its redundancy with the results already placed, is highest. Redundancy with a placed
result is its share of the candidate's content words (`overlap.content_words`) plus a fixed part when both
come from the same conversation; the penalty is the largest redundancy times DIVERSITY_PENALTY. A question
that asks for one thing keeps the plain ranking. So does a question that asks for a duration ("How many days
passed between the meeting and the deadline?"): it asks "how long", one span between two moments; its answer
is the turns that date them, which spreading the list over other conversations pushes down
(docs/benchmarks.md, Session 18).

Pure (no Django).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from apps.memories.retrieval.overlap import content_words

T = TypeVar("T")

DIVERSITY_PENALTY = 0.15  # score units (the best candidate scores ~0.5–0.9)
SAME_SESSION = 0.5  # the redundancy two results of one conversation have before their words are compared
RERANKED = 50  # how deep the re-ordering looks

_MANY = re.compile(r"\b(?:how many|how often|all|every|list|several|various)\b", re.IGNORECASE)
# "how many days / weeks / total hours …": a length of time, the question "how long" asks (not a cue either)
_DURATION = re.compile(
    r"\bhow many\s+(?:[a-z]+\s+)?(?:seconds|minutes|hours|days|weeks|months|years|decades)\b", re.IGNORECASE
)
# "What books has John read?", "Which countries did they visit?": a plural noun right after the question word
_PLURAL_HEAD = re.compile(r"^\s*(?:what|which)\s+([a-z]{3,}s)\s+(?:has|have|had|did|does|do|are|were)\b", re.IGNORECASE)


def asks_for_many(query: str) -> bool:
    """Does the question ask for a count or a list ("how many", "all", "every", "list", or a plural noun
    right after "what"/"which")? Broader cues ("what kind of", "both", any plural noun) also caught
    one-answer questions and lost recall on both development sets (docs/benchmarks.md). "How many" with a
    unit of time asks for a duration, not a count: it is no cue (another cue in the question still is)."""
    if _MANY.search(_DURATION.sub(" ", query)):
        return True
    head = _PLURAL_HEAD.search(query)
    return bool(head and not head.group(1).lower().endswith(("ss", "us", "is")))


@dataclass(frozen=True)
class Placed(Generic[T]):
    item: T
    penalty: float  # what its redundancy with the results placed before it cost (0 for the first)


def diversified(
    items: Sequence[T],
    *,
    score: Callable[[T], float],
    session: Callable[[T], str],
    text: Callable[[T], str],
    penalty: float = DIVERSITY_PENALTY,
    depth: int = RERANKED,
) -> list[Placed[T]]:
    """`items` (in rank order) re-ordered by maximal marginal relevance; those beyond `depth` follow as they
    were. Each comes with the penalty it was placed with."""
    head, tail = list(items[:depth]), list(items[depth:])
    words = [content_words(text(item)) for item in head]
    sessions = [session(item) for item in head]
    redundancy = [0.0] * len(head)
    remaining = list(range(len(head)))
    placed: list[Placed[T]] = []
    while remaining:
        best = max(remaining, key=lambda index: (score(head[index]) - penalty * redundancy[index], -index))
        remaining.remove(best)
        placed.append(Placed(head[best], round(penalty * redundancy[best], 4)))
        for index in remaining:
            same = SAME_SESSION if sessions[index] and sessions[index] == sessions[best] else 0.0
            shared = len(words[index] & words[best]) / len(words[index]) if words[index] else 0.0
            redundancy[index] = max(redundancy[index], min(1.0, same + (1.0 - SAME_SESSION) * shared))
    return placed + [Placed(item, 0.0) for item in tail]
