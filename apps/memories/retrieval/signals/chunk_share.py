"""A long message's share: a memory taken from one of the `n` chunks of a message scores × n^−EXPONENT.

Ingest splits a message longer than an episode (1,000 characters) into semantic chunks of at most 200 tokens
and stores each as a memory with the message as its source (`ingest/services.py`, metadata `chunk` i of
`chunks` n). Each chunk is then a candidate of its own, so a long message has n chances to match a query where
a short turn has one: the best of n similarities is higher than one text's by chance alone (the expected
maximum of n noisy draws grows with √(2 ln n)). An assistant's 4,000-character reply becomes ten chunks, and
its chunks crowd out the short turns in which the user said what they want — the evidence of most questions
about a user. The factor takes that advantage back, softly: a relevant chunk of a long message still ranks
(two chunks 0.87, ten 0.63), and a turn that was not split (n = 1) is not touched.

How it was set (docs/benchmarks.md, "Session 22"): re-ranking BEAM's settled candidates in process, every
exponent from 0.1 to 0.5 helped both halves of BEAM; 0.2 was chosen on chats 1–10 only and reported on chats
11–20, BEAM whole and LoCoMo (whose turns are rarely long enough to be split, so it hardly changes). The rule
reads no role and no dataset's phrasing: a user's pasted document is discounted as an assistant's reply is.

A request for a summary ("Can you summarize how my project has evolved?", "a recap of…", "an overview of…") is
the exception (`asks_for_summary`): it asks for everything said about its subject, and what was explained at
length, in the long messages, is what a summary covers. Its candidates keep their whole score. BEAM's 36
summary requests, any@10: 0.28 → 0.50 (chats 1–10 0.22 → 0.44, chats 11–20 0.33 → 0.56; their evidence is a
third the assistant's long replies); no other question of BEAM or LoCoMo names a summary, so nothing else
moved (docs/benchmarks.md, "Session 25").

Pure (no Django).
"""

from __future__ import annotations

import re

EXPONENT = 0.2

_SUMMARY = re.compile(
    r"\b(?:summar(?:y|ies|ise|ised|ises|ising|ize|ized|izes|izing)|recap|overview|sum\s+(?:it\s+|this\s+)?up)\b",
    re.IGNORECASE,
)


def asks_for_summary(query: str) -> bool:
    """Does the query ask for a summary, a recap or an overview (of a project, of what was discussed)?"""
    return bool(_SUMMARY.search(query))


def split_into(chunk: str | None, chunks: str | None) -> int:
    """How many chunks a memory's message was split into, from ingest's metadata (`chunk` i of `chunks` n; JSON
    numbers, read as text), or 1: a memory that is not one of a split message's, including one whose metadata
    a client set to anything else."""
    if chunk and chunks and chunk.isdigit() and chunks.isdigit() and int(chunk) < int(chunks):
        return int(chunks)
    return 1


def factor(chunks: int, *, summary: bool = False) -> float:
    """What the score of a memory from one of `chunks` chunks of a message is multiplied by (1.0 when the
    message was not split, or for a request for a summary: `asks_for_summary`)."""
    if chunks <= 1 or summary:
        return 1.0
    return round(chunks**-EXPONENT, 4)
