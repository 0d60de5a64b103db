"""The turn that follows a relevant turn shares some of its relevance.

In a conversation the answer to a question is often in the turn after the one that names the subject: "The
official opening night of my studio is tomorrow" is found by "How does Jon feel about the opening night?", and
the answer is two turns later, "Thanks! I'm excited, it's been a wild ride" — a turn that names neither the
studio nor the night. The context embedding once carried this (each episode mixed with the one before it), and
cost the user↔assistant chats more than it gave (docs/benchmarks.md, "Session 17"). This stage carries it by
rank instead: an episode whose previous turn, or the one before that, scores higher than it gains a share
(FOLLOW_UP_SHARE) of the difference; one that scores higher than both keeps its score. So a reply rises towards
the turn it answers, never above it, and a turn whose neighbours are irrelevant is untouched.

The previous turn of each candidate episode in its conversation comes with the candidate statement (the same
index probe as the neighbour source, `candidates._NEIGHBOUR_TURN`); the turn two back is the previous turn's
own previous turn when that is a candidate too. A turn's score is the best of the episodes of its message (a
long message's chunks). What was added is each result's `explain.follow_up`.

A list or count question (signals/diversity.py) is left as it is: its answer is spread over many conversations,
and raising the turns around the best matches gathers its results into them.

FOLLOW_UP_SHARE (0.15) and FOLLOW_UP_TURNS (2) were chosen on LoCoMo's tuning half, on the candidates of the
session-30 stores re-scored offline (0.10 / 0.15 / 0.20 / 0.25 / 0.30, one or two turns back), and reported on
its other half and on BEAM (docs/benchmarks.md, "Session 31").

Pure (no Django).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

FOLLOW_UP_SHARE = 0.15  # the share of the score difference an episode gains from a higher previous turn
FOLLOW_UP_TURNS = 2  # how many turns back a higher turn lends it


def applies(*, many: bool) -> bool:
    """Whether the stage re-scores this query (the candidate statement reads the previous turns only then)."""
    return not many and FOLLOW_UP_SHARE > 0 and FOLLOW_UP_TURNS > 0


def carried(
    scores: Sequence[float],
    previous: Sequence[int | None],
    turns: Sequence[Hashable | None],
    *,
    many: bool,
    share: float | None = None,
    depth: int | None = None,
) -> list[float]:
    """What each candidate gains from the turns before it. `previous[i]`: the index of the candidate that is
    candidate i's previous turn in its conversation (None: it is not an episode, its previous turn is not a
    candidate, or it has none). `turns[i]`: the message candidate i comes from (its chunks share it), whose
    best score is the turn's; None for a candidate that is not an episode. Nothing for a list question."""
    share = FOLLOW_UP_SHARE if share is None else share
    depth = FOLLOW_UP_TURNS if depth is None else depth
    gains = [0.0] * len(scores)
    if many or share <= 0 or depth <= 0:
        return gains
    turn_best: dict[Hashable, float] = {}
    for score, turn in zip(scores, turns, strict=True):
        if turn is not None:
            turn_best[turn] = max(turn_best.get(turn, score), score)
    for index, score in enumerate(scores):
        back, best, step = previous[index], None, 0
        while back is not None and step < depth:
            turn = turns[back]
            value = turn_best[turn] if turn is not None else scores[back]
            best = value if best is None else max(best, value)
            back, step = previous[back], step + 1
        if best is not None and best > score:
            gains[index] = share * (best - score)
    return gains
