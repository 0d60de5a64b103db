"""Sentences and clauses of a turn, with the question, correction and hedge signals the rules read
(docs/extraction.md, "Pipeline" steps 3 and 4).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.memories.extraction.rules._text import _fold

_SENTENCE = re.compile(r"(?:[^.!?…\n]|[.!?…]+(?=[^\s.!?…]))+[.!?…]*")
_FIRST_PERSON_AHEAD = (
    r"(?=(?:(?:also|actually|now|then|honestly|btw|plus|still|yeah|oh|anyway|correction)\s*[:,]?\s+)*"
    r"(?:i|i'm|im|i've|ive|i'd|i'll|my|we|we're|we've|our|let's|lets|can\s+we|could\s+we|please|don't)\b)"
)
_CLAUSE_BOUNDARY = re.compile(
    r"\s*(?:[;:\u2013—]|,|\s-\s)\s*(?:(?:and|but|so|plus|though|although|because|cause|cuz|since|while|whereas|or)\s+)?"
    + _FIRST_PERSON_AHEAD
    + r"|\s+(?:and|but|so|plus|though|although|because|cause|cuz|since|while|whereas|or|also|(?P<that>that))\s+"
    + _FIRST_PERSON_AHEAD,
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^\W*(?:do|does|did|is|are|was|were|am|can|could|would|will|should|shall|may|might|have|has|had|what|why|"
    r"how|where|when|who|whom|whose|which|isn't|aren't|don't|doesn't|didn't|won't|wouldn't|right|so)\b",
    re.IGNORECASE,
)
# "anymore", or "any more" closing a clause ("not any more"), but not "any more emails"
_ANYMORE = re.compile(r"\banymore\b|\bany\s+more\b(?=\s*(?:[^\w\s]|$))", re.IGNORECASE)
_CORRECTION = re.compile(
    r"\b(?:actually|correction|no\s+longer|anymore|i\s+meant|to\s+clarify)\b|\bany\s+more\b(?=\s*(?:[^\w\s]|$))"
    r"|\b(?:i|we)\s*(?:'\s*ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|now\s+)?moved\s+to\b|\bive\s+moved\b",
    re.IGNORECASE,
)
# Words before a trigger that make it hypothetical, reported or negated: "if I had a dog", "not sure I like it".
_HEDGE = re.compile(
    r"\b(?:if|unless|whether|wish|suppose|pretend|imagine|not|never|doubt|nobody|hope)\b|n't\b", re.IGNORECASE
)


@dataclass(frozen=True)
class _Clause:
    text: str  # original characters
    folded: str  # same length, for matching
    offset: int
    is_question: bool
    is_correction: bool
    lead_in: str = ""  # the sentence before "that" ("I don't think that ..."), read by the hedge check


def _clauses(text: str) -> list[_Clause]:
    folded = _fold(text)
    clauses: list[_Clause] = []
    for sentence in _SENTENCE.finditer(folded):
        sentence_text = sentence.group(0)
        is_question = sentence_text.rstrip().endswith("?")
        is_correction = bool(_CORRECTION.search(sentence_text))
        start = 0
        bounds: list[tuple[int, int, bool]] = []
        follows_that = False
        for boundary in _CLAUSE_BOUNDARY.finditer(sentence_text):
            bounds.append((start, boundary.start(), follows_that))
            start = boundary.end()
            follows_that = boundary.group("that") is not None
        bounds.append((start, len(sentence_text), follows_that))
        for clause_start, clause_end, is_after_that in bounds:
            absolute_start = sentence.start() + clause_start
            absolute_end = sentence.start() + clause_end
            piece = folded[absolute_start:absolute_end]
            leading = len(piece) - len(piece.lstrip())
            absolute_start += leading
            if absolute_start >= absolute_end:
                continue
            clause_folded = folded[absolute_start:absolute_end]
            clauses.append(
                _Clause(
                    text=text[absolute_start:absolute_end],
                    folded=clause_folded,
                    offset=absolute_start,
                    is_question=is_question and bool(_QUESTION_START.match(clause_folded)),
                    is_correction=is_correction,
                    lead_in=sentence_text[:clause_start] if is_after_that else "",
                )
            )
    return clauses
