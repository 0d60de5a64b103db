"""Speaker: the memory was said by the person the query asks about.

In a chat between two people, "What did Caroline paint?" is answered by what Caroline said far more often
than by what she was told (LoCoMo: 83% of the evidence turns of questions naming one speaker are that
speaker's own). The speaker of a memory is the `speaker` its message was ingested with; a query names a
speaker by the name the speaker is labelled with or by any alias linked to them (a nickname the other speaker
addresses them by: "Thanks, Mel!" makes "Mel" an alias of the speaker labelled "Melanie";
apps/entities/services.py `entity_aliases_link`). A query naming both speakers, or none, matches nobody: the
signal only separates when the question is about one of them.

Pure (no Django): `search.py` resolves the query's names to speaker slugs and reads each candidate's speaker.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from apps.memories.extraction.rules import slugify


def slug(speaker: str) -> str:
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
    alternation = "|".join(re.escape(name) for name in sorted(set(names), key=len, reverse=True))
    rewritten = re.sub(rf"\b(?:{alternation})['’]s\b", "my", query)

    def person(match: re.Match[str]) -> str:
        return "me" if _OBJECT_BEFORE.search(rewritten[: match.start()]) else "I"

    return re.sub(rf"\b(?:{alternation})\b", person, rewritten)
