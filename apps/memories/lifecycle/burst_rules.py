"""Which messages of a conversation are one burst: one thought sent as several messages in a row.

On a messaging app people send a thought as a burst of short messages ("I went to the concert yesterday." /
"Sam came too!"), and ingest stores one episode per message: a fragment then scores on its own words and
embedding, and "Sam came too!" says nothing of the concert. LoCoMo sent that way (`bench_retrieval --bursts`)
ranks at R@10 0.808 against its whole turns' 0.840 (docs/benchmarks.md, Session 32). Deferred consolidation
(lifecycle/deferred.py `conversation_bursts_merge`) joins each burst's episodes into one.

A burst is a run of two or more consecutive messages of the conversation's ledger (time, then arrival) said by
one named speaker — nobody's message between — each within BURST_SECONDS of the one before. Messages without a
speaker name (a client that sends roles only) are never a burst: whose turn it is is not known.

Pure (no Django).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

BURST_SECONDS = 120  # at most this long between two messages of one burst
BURST_MAX_CHARS = 1_000  # a joined burst stays one episode's length (ingest chunks longer messages)


@dataclass(frozen=True)
class LedgerTurn:
    sequence: int  # its ledger position (conversations_message.id)
    speaker: str
    occurred_at: datetime


def bursts(turns: Sequence[LedgerTurn]) -> list[list[int]]:
    """The sequences of each burst among `turns` (given in ledger order), in order."""
    found: list[list[int]] = []
    run: list[LedgerTurn] = []
    for turn in turns:
        continues = (
            bool(run)
            and bool(turn.speaker.strip())
            and turn.speaker == run[-1].speaker
            and (turn.occurred_at - run[-1].occurred_at).total_seconds() <= BURST_SECONDS
        )
        if not continues:
            if len(run) > 1:
                found.append([item.sequence for item in run])
            run = []
        run.append(turn)
    if len(run) > 1:
        found.append([item.sequence for item in run])
    return [burst for burst in found if burst]


def joined(contents: Sequence[str], *, speaker: str) -> str:
    """One episode's text for a burst's episodes (each stored as "<speaker>: <text>"): the first as it is, the
    others after it without the speaker's name ("Sam: I went to the concert. Sam came too!")."""
    prefix = f"{speaker}: "
    parts = [contents[0].strip()]
    parts += [content.strip().removeprefix(prefix) for content in contents[1:]]
    return " ".join(part for part in parts if part)
