"""Semantic chunking (memory-logic §1.3): paragraphs first, sentences when a paragraph is too long,
then small neighbours merged. Pure: no ORM, no I/O besides the token counter.

Every chunk is a stripped substring of the input, so the separators between merged pieces
(a blank line, a space after a full stop) are the original ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from apps.core.tokens import count_tokens

TokenCounter = Callable[[str], int]
Span = tuple[int, int]  # [start, end) offsets into the text being chunked

PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# a sentence ends at ., ! or ? followed by whitespace; it is a boundary only if a capital letter follows
SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+(?=\S)")
WORD = re.compile(r"\S+")


def semantic_chunks(
    text: str, *, max_tokens: int = 300, min_tokens: int = 50, count: TokenCounter = count_tokens
) -> list[str]:
    """Split `text` into chunks of at most `max_tokens` tokens, merging chunks under `min_tokens` with a neighbour.

    1. split on blank lines; 2. a paragraph over `max_tokens` is split at sentence boundaries (sentences
    packed greedily up to `max_tokens`); a single sentence still over the limit is split between words
    (and a single over-long word between characters) as a last resort; 3. a chunk under `min_tokens` merges
    with the following chunk (the last one with the preceding chunk) when the result stays within `max_tokens`.
    A text shorter than `min_tokens` is one chunk; an empty or blank text gives no chunks.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    spans: list[Span] = []
    for paragraph in _paragraph_spans(text):
        spans.extend(_split_to_fit(text, paragraph, max_tokens, count, _SPLITTERS))
    spans = _merge_small(text, spans, max_tokens, min_tokens, count)
    return [text[start:end] for start, end in spans]


def _paragraph_spans(text: str) -> Iterator[Span]:
    start = 0
    for match in PARAGRAPH_BREAK.finditer(text):
        yield from _stripped(text, (start, match.start()))
        start = match.end()
    yield from _stripped(text, (start, len(text)))


def _stripped(text: str, span: Span) -> Iterator[Span]:
    start, end = span
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        yield (start, end)


def _sentence_spans(text: str, span: Span) -> list[Span]:
    start, end = span
    spans: list[Span] = []
    sentence_start = start
    for match in SENTENCE_GAP.finditer(text, start, end):
        if text[match.end()].isupper():
            spans.append((sentence_start, match.start()))
            sentence_start = match.end()
    spans.append((sentence_start, end))
    return spans


def _word_spans(text: str, span: Span) -> list[Span]:
    return [match.span() for match in WORD.finditer(text, span[0], span[1])]


def _character_spans(text: str, span: Span) -> list[Span]:
    return [(index, index + 1) for index in range(span[0], span[1])]


_SPLITTERS: tuple[Callable[[str, Span], list[Span]], ...] = (_sentence_spans, _word_spans, _character_spans)


def _split_to_fit(
    text: str,
    span: Span,
    max_tokens: int,
    count: TokenCounter,
    splitters: tuple[Callable[[str, Span], list[Span]], ...],
) -> list[Span]:
    """`span` as consecutive pieces of at most `max_tokens`, each as long as fits, cut at the coarsest unit."""
    if count(text[span[0] : span[1]]) <= max_tokens:
        return [span]
    split, *finer = splitters
    units = split(text, span)
    pieces: list[Span] = []
    index = 0
    while index < len(units):
        taken = _longest_fitting_run(text, units, index, max_tokens, count)
        if taken:
            pieces.append((units[index][0], units[index + taken - 1][1]))
            index += taken
        elif finer:  # this unit alone is over the limit: cut it at the next finer unit
            pieces.extend(_split_to_fit(text, units[index], max_tokens, count, tuple(finer)))
            index += 1
        else:  # one character over the limit (max_tokens below a character's tokens): keep it whole
            pieces.append(units[index])
            index += 1
    return pieces


def _longest_fitting_run(text: str, units: list[Span], first: int, max_tokens: int, count: TokenCounter) -> int:
    """How many units from `first` on fit together in `max_tokens` (0 if not even one).

    Galloping search: the texts counted are at most about twice the answer, so splitting a long text
    costs time proportional to its length, not its square.
    """

    def fits(length: int) -> bool:
        return count(text[units[first][0] : units[first + length - 1][1]]) <= max_tokens

    available = len(units) - first
    if not fits(1):
        return 0
    fitting, too_long = 1, 2
    while too_long <= available and fits(too_long):
        fitting, too_long = too_long, too_long * 2
    too_long = min(too_long, available + 1)
    while too_long - fitting > 1:
        middle = (fitting + too_long) // 2
        if fits(middle):
            fitting = middle
        else:
            too_long = middle
    return fitting


def _merge_small(text: str, spans: list[Span], max_tokens: int, min_tokens: int, count: TokenCounter) -> list[Span]:
    spans = list(spans)
    index = 0
    while index < len(spans):
        start, end = spans[index]
        if len(spans) > 1 and count(text[start:end]) < min_tokens:
            if index + 1 < len(spans) and count(text[start : spans[index + 1][1]]) <= max_tokens:
                spans[index : index + 2] = [(start, spans[index + 1][1])]
                continue  # the merged chunk may still be small: look at it again
            if index > 0 and count(text[spans[index - 1][0] : end]) <= max_tokens:
                spans[index - 1 : index + 1] = [(spans[index - 1][0], end)]
                index -= 1
                continue
        index += 1
    return spans
