"""Speaker: the memory was said by the person the query asks about.

In a chat between two people, "What did Caroline paint?" is answered by what Caroline said far more often
than by what she was told (LoCoMo: 83% of the evidence turns of questions naming one speaker are that
speaker's own). The speaker of a memory is the `speaker` its message was ingested with; a query names a
speaker by the name the speaker is labelled with or by any alias linked to them (a nickname the other speaker
addresses them by: "Thanks, Mel!", said twice (ALIAS_MIN_ADDRESSED), makes "Mel" an alias of the speaker
labelled "Melanie"; apps/entities/services.py `entity_aliases_add`). A query naming both speakers, or none,
matches nobody: the signal only separates when the question is about one of them.

The query is embedded from the speakers' side (`perspective_for`): turns are said in the first person to the
other person ("I painted a sunrise", "your store looks great"), so a question about one speaker is put as they
would say it ("What did Caroline paint?" → "What did I paint?"), and one about both as they would say it to
each other ("What did Jon say about Gina's store?" → "What did I say about your store?", "What do Jon and Gina
both like?" → "What do we both like?"). With the names left in, the question's embedding was closest to the
turns that greet a speaker by name.

Pure (no Django): `search.py` resolves the query's names to speaker slugs and reads each candidate's speaker.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence

from apps.memories.extraction.rules import slugify


@functools.lru_cache(maxsize=1024)
def slug(speaker: str) -> str:
    """The speaker label's slug. Cached: a search asks it of every candidate (~150), and a scope has a few
    speakers (re-slugifying each was ~2% of a LoCoMo search, profiled)."""
    return slugify(speaker.strip()) if speaker else ""


def match(*, memory_speaker: str, named_speakers: Collection[str]) -> float:
    """1.0 when the memory's speaker is the one person the query names (by label or alias), else 0."""
    if len(named_speakers) != 1 or not memory_speaker:
        return 0.0
    return 1.0 if slug(memory_speaker) in named_speakers else 0.0


_OBJECT_BEFORE = re.compile(
    r"\b(?:to|with|for|about|from|at|of|by|gave|give|gives|told|tell|tells|asked|ask|asks|help|helped|helps|"
    r"invited|invite|meet|met|visit|visited|call|called|thank|thanked|send|sent|show|showed|surprised)\s*$",
    re.IGNORECASE,
)


def perspective(query: str, *, names: Collection[str]) -> str:
    """The question as the one speaker it names would put it to themselves: their name (a label or an alias)
    becomes "I" ("me" after a verb or preposition that takes an object), "<name>'s" becomes "my". Turns are
    first-person ("I painted a sunrise last week"): the rewritten question is what their embedding is close
    to. Used for the query's embedding only; its words, entities and times are read from the question as
    asked."""
    if not names:
        return query
    alternation = _alternation(names)
    rewritten = re.sub(rf"\b(?:{alternation})['’]s\b", "my", query)

    def person(match: re.Match[str]) -> str:
        return "me" if _OBJECT_BEFORE.search(rewritten[: match.start()]) else "I"

    return re.sub(rf"\b(?:{alternation})\b", person, rewritten)


def perspective_of_two(query: str, *, first: Collection[str], second: Collection[str]) -> str:
    """The question about both speakers as they would put it to each other: the two together ("Jon and Gina",
    "Gina and Jon") become "we" ("us" after a verb or preposition that takes an object, "our" for "Jon and
    Gina's"); then the one named `first` becomes "I"/"me"/"my" (`perspective`) and the other "you"/"your".
    `first`, `second`: the words of the query that name each (a label or an alias)."""
    if not first or not second:
        return query
    one, other = _alternation(first), _alternation(second)
    both = rf"(?:(?:{one})\s+and\s+(?:{other})|(?:{other})\s+and\s+(?:{one}))"
    rewritten = re.sub(rf"\b{both}['’]s\b", "our", query)

    def together(match: re.Match[str]) -> str:
        return "us" if _OBJECT_BEFORE.search(rewritten[: match.start()]) else "we"

    rewritten = perspective(re.sub(rf"\b{both}\b", together, rewritten), names=first)
    rewritten = re.sub(rf"\b(?:{other})['’]s\b", "your", rewritten)
    return re.sub(rf"\b(?:{other})\b", "you", rewritten)


def perspective_for(query: str, names: Sequence[Collection[str]]) -> str:
    """The text to embed for `query`, given the words that name each speaker it names (one collection per
    speaker): one speaker's perspective, both speakers' (the one the question names first is "I"), or the
    query as asked when it names no speaker or more than two."""
    if len(names) == 1:
        return perspective(query, names=names[0])
    if len(names) != 2:
        return query
    first, second = sorted(names, key=lambda words: _first_position(query, words))
    return perspective_of_two(query, first=first, second=second)


def _alternation(names: Collection[str]) -> str:
    """The names as one regex alternation, longest first; a name given with its possessive ("Caroline's", as
    the query's words come) counts as the name."""
    bare = {re.sub(r"['’]s$", "", name) for name in names}
    return "|".join(re.escape(name) for name in sorted(bare, key=len, reverse=True))


def _first_position(query: str, names: Collection[str]) -> int:
    found = re.search(rf"\b(?:{_alternation(names)})\b", query) if names else None
    return found.start() if found else len(query)
