"""The signals of the retrieval score, each in a module of its own, registered here in one place.

A signal is a number in [0, 1] per candidate memory, named as `scoring.Signals` names it and weighted by the
`scoring.Weights` field of the same name (per scope; a tenant overrides them in
`settings.retrieval_weights`) — or, by default, by the fitted ranker's weight of its feature
(`retrieval/ranker.py`, `ranker_weights.json`). `search.py` computes each from its module and
`scoring.retrieval_score` sums them; `ScoredMemory.explain()` shows each value and what produced it. A
*factor* multiplies the score after the formula (outside the query's time windows, a long message's
chunk, a pattern or a session's summary); a *stage* re-orders the ranked list instead of scoring a memory
(condition, advice, follow-up, diversity).

To add a signal: a module here (pure, no Django: import-linter checks it), a field on `scoring.Signals` and
`scoring.Weights`, an entry below; `tests/unit/memories/test_retrieval_signals.py` fails until all three
agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    name: str  # the Signals / Weights field
    module: str  # where its value is computed
    gated: bool  # counted in proportion to the memory's similarity (a hint among relevant memories only)
    description: str


REGISTRY: tuple[Signal, ...] = (
    Signal(
        "similarity",
        "apps.memories.retrieval.relevance",
        False,
        "cosine and BM25 of the memory and its conversation context, session and length priors",
    ),
    Signal("recency", "apps.memories.scoring", True, "1 − days since the last use / 365"),
    Signal("importance", "apps.memories.scoring", False, "the memory's importance after decay"),
    Signal("access_frequency", "apps.memories.scoring", True, "uses (an hour apart) / 20"),
    Signal(
        "entity_match",
        "apps.memories.retrieval.signals.specificity",
        False,
        "the IDF weight of the entities the query names that the memory links (a name on half the memories "
        "counts ~0.1, a rare one ~1)",
    ),
    Signal(
        "speaker_match",
        "apps.memories.retrieval.signals.speaker",
        True,
        "said by the one speaker the query names, by label or alias",
    ),
    Signal(
        "time_match",
        "apps.memories.retrieval.signals.time_window",
        False,
        "said on, or naming, a day inside a window the query's time expressions name",
    ),
)

# rules that multiply a memory's score after the formula, with either ranker (`explain.<name>`)
FACTORS: tuple[Signal, ...] = (
    Signal(
        "time_window_factor",
        "apps.memories.retrieval.signals.time_window",
        False,
        "outside every time window the query names: 1 − 0.5 × the narrowest window's specificity",
    ),
    Signal(
        "chunk_factor",
        "apps.memories.retrieval.signals.chunk_share",
        False,
        "one of the n chunks of a long message (a message split at ingest): n^−0.2, so it is not n chances; "
        "1 for a request for a summary, which covers the long messages too",
    ),
    Signal(
        "pattern_factor",
        "apps.memories.retrieval.signals.pattern_share",
        False,
        "a pattern (a theme of 5+ episodes summed up): 0.5, so the episodes that answer go first; 1 for a "
        "request for a summary",
    ),
)

STAGES: tuple[Signal, ...] = (
    Signal(
        "condition",
        "apps.memories.retrieval.signals.condition",
        False,
        "a standing instruction whose condition the query meets (cosine of the query with its condition ≥ 0.5): "
        "raised to the query's best score, so it goes first",
    ),
    Signal(
        "advice",
        "apps.memories.retrieval.signals.advice",
        False,
        "a request for advice: the asker's two preferences closest to it, where the cosine reaches 0.35, raised "
        "to the query's best score, so they go first",
    ),
    Signal(
        "follow_up",
        "apps.memories.retrieval.signals.follow_up",
        False,
        "an episode whose previous turn, or the one before, scores higher gains 0.15 of the difference (the reply "
        "to a relevant turn); not for list and count questions",
    ),
    Signal(
        "diversity",
        "apps.memories.retrieval.signals.diversity",
        False,
        "list and count questions: maximal marginal relevance across conversations and near-duplicates",
    ),
)
