"""Does one line say what another already says? Pure word-overlap rules for context assembly and the
offline narrative: a line is redundant when the content words of a line placed before it cover ≥ 80% of its
own, and neither line is negated where the other is not ("Likes coffee" never hides "Doesn't like coffee")."""

from __future__ import annotations

from apps.memories.extraction.words import STOPWORDS, content_words

__all__ = ["COVERED_SHARE", "STOPWORDS", "content_words", "says_again"]

COVERED_SHARE = 0.8


def says_again(words: frozenset[str], earlier: frozenset[str]) -> bool:
    """True when a line of `words` adds nothing to an earlier line of `earlier` words."""
    if not words or ("not" in words) != ("not" in earlier):
        return False
    return len(words & earlier) >= COVERED_SHARE * len(words)
