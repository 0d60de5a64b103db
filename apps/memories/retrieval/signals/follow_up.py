"""The turn that follows a relevant turn shares some of its relevance.

In a conversation the answer to a question is often in the turn after the one that names the subject: "The
official opening night of my studio is tomorrow" is found by "How does Jon feel about the opening night?", and
the answer is two turns later, "Thanks! I'm excited, it's been a wild ride" — a turn that names neither the
studio nor the night. The context embedding once carried this (each episode mixed with the one before it), and
cost the user↔assistant chats more than it gave (docs/benchmarks.md, "Session 17"). This stage carries it by
rank instead: an episode whose previous turn, or the one before that, scores higher than it gains a share
(FOLLOW_UP_SHARE) of the difference; one that scores higher than both keeps its score. So a reply rises towards
the turn it answers, never above it, and a turn whose neighbours are irrelevant is untouched.

Which candidate is the turn before which needs no query of its own (`previous_turns`): the neighbour source
puts the turns just before and after every seed episode (one found by another source) among the candidates, so
in a session's candidate turns, sorted by their place in the conversation, the turn before a seed's turn is its
previous turn, and so is a seed's turn for the turn after it. Between two turns neither of which holds a seed
there may be turns that are not candidates: no link. The turn two back is the previous turn's own previous turn.
A turn's score is the best of its episodes (a long message's chunks). What was added is each result's
`explain.follow_up`.

A list or count question (signals/diversity.py) is left as it is: its answer is spread over many conversations,
and raising the turns around the best matches gathers its results into them.

FOLLOW_UP_SHARE (0.15) and FOLLOW_UP_TURNS (2) were chosen on LoCoMo's tuning half, on the candidates of the
session-30 stores re-scored offline (0.10 / 0.15 / 0.20 / 0.25 / 0.30, one or two turns back), and reported on
its other half and on BEAM (docs/benchmarks.md, "Session 31").

Pure (no Django).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from datetime import datetime
from itertools import pairwise

FOLLOW_UP_SHARE = 0.15  # the share of the score difference an episode gains from a higher previous turn
FOLLOW_UP_TURNS = 2  # how many turns back a higher turn lends it


def gains(
    scores: Sequence[float],
    places: Sequence[tuple[str, tuple[datetime, int]] | None],
    seeds: Sequence[bool],
    *,
    many: bool,
) -> list[float]:
    """What each candidate gains from the turns before it (`previous_turns`, then `carried`); nothing read for a
    list question."""
    if many or FOLLOW_UP_SHARE <= 0 or FOLLOW_UP_TURNS <= 0:
        return [0.0] * len(scores)
    return carried(scores, previous_turns(places, seeds), places, many=False)


def previous_turns(
    places: Sequence[tuple[str, tuple[datetime, int]] | None], seeds: Sequence[bool]
) -> list[int | None]:
    """For each candidate, the index of a candidate of its previous turn, where the candidates tell it (None
    otherwise). `places[i]`: candidate i's session and its place in it ((occurred_at, ledger position): a long
    message's chunks share one), None for a candidate that is not an episode of a session;
    `seeds[i]`: found by a source other than the neighbour one (its neighbours are candidates too)."""
    turns: dict[str, dict[tuple[datetime, int], list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, place in enumerate(places):
        if place is not None:
            session, position = place
            turns[session][position].append(index)
    previous: list[int | None] = [None] * len(places)
    for by_position in turns.values():
        ordered = sorted(by_position)
        for before, after in pairwise(ordered):
            members_before, members_after = by_position[before], by_position[after]
            if any(seeds[index] for index in members_before) or any(seeds[index] for index in members_after):
                for index in members_after:
                    previous[index] = members_before[0]
    return previous


def carried(
    scores: Sequence[float],
    previous: Sequence[int | None],
    turns: Sequence[Hashable | None],
    *,
    many: bool,
    share: float | None = None,
    depth: int | None = None,
) -> list[float]:
    """What each candidate gains from the turns before it. `previous[i]`: the index of a candidate of candidate
    i's previous turn in its conversation (`previous_turns`; None: not known, or none). `turns[i]`: the turn
    candidate i belongs to (a long message's chunks share it), whose best score is the turn's; None for a
    candidate that is not an episode. Nothing for a list question."""
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
