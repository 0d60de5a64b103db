"""Pure scoring formulas: importance at write time, decay, and the multi-signal retrieval score.

No ORM imports: every function here is plain arithmetic, tested in microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np


class MemoryType(StrEnum):
    """The one vocabulary of memory types (the model's choices, the API's, the rules'); a member is its
    string, so `"fact" == MemoryType.FACT`. The seed specs' names map onto it (SEED_TYPE_MAP)."""

    FACT = "fact"
    PREFERENCE = "preference"
    EPISODE = "episode"
    PATTERN = "pattern"


FACT, PREFERENCE, EPISODE, PATTERN = MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.EPISODE, MemoryType.PATTERN
MEMORY_TYPES = tuple(MemoryType)

# Contact memory defaults (contact-intelligence.txt §2.2): (importance, decay per day)
CONTACT_TYPE_DEFAULTS: dict[str, tuple[float, float]] = {
    FACT: (0.7, 0.003),
    PREFERENCE: (0.8, 0.005),
    EPISODE: (0.5, 0.008),
    PATTERN: (0.8, 0.004),
}
TENANT_DECAY_RATE = 0.01  # business context changes fast (ai-brain-memory.txt §4.4)

# The seed specs name memory types differently (memory-logic.txt §1.6); this is how they map.
SEED_TYPE_MAP: dict[str, str] = {
    "semantic": FACT,
    "procedural": PREFERENCE,
    "episodic": EPISODE,
    "working": EPISODE,  # session-bound: stored as an episode that expires with the session window (24 h)
}
# what the API accepts as a memory type: Engram's four and the seed specs' names
ACCEPTED_MEMORY_TYPES = (*MEMORY_TYPES, *SEED_TYPE_MAP)

STORE_THRESHOLD = 0.3  # below this a chunk is not stored as semantic memory (the message stays in the ledger)


def is_discarded(*, memory_type: str, raw: float, replaces: bool) -> bool:
    """memory-logic.txt §1.5: an extracted fact or preference whose importance — the spec's formula, novelty ×
    0.6 + salience × 0.4, before any blending with the type default — is below STORE_THRESHOLD is not stored
    (the turn stays in the ledger and its episode in memory; a later mention may store it). A correction is
    always stored: dropping it would leave the value it corrects current. Episodes are never discarded: an
    episode is the record that a turn was said, and finding what was said depends on it — discarding them by
    this rule cut LoCoMo R@10 through HTTP from 0.805 to 0.579 (docs/benchmarks.md). Memories with an
    explicit importance (API adds, patterns) are never judged. What is stored keeps the blended importance,
    which the type's decay floor (DECAY_FLOOR) bounds later."""
    return memory_type != EPISODE and raw < STORE_THRESHOLD and not replaces


REINFORCE_BOOST = 0.05
MERGE_BOOST = 0.05
OUTCOME_BOOST = 0.1
DECAY_GRACE_DAYS = 7
# Stated facts and preferences are never forgotten by decay alone: they fall no lower than this and so
# stay retrievable (≥ RETRIEVAL_MIN_IMPORTANCE) and are never pruned; only supersession or deletion
# removes them. Episodes and patterns decay to zero and are pruned.
DECAY_FLOOR: dict[str, float] = {FACT: 0.2, PREFERENCE: 0.2, EPISODE: 0.0, PATTERN: 0.0}
PRUNE_BELOW = 0.1
PRUNE_IDLE_DAYS = 30
RETRIEVAL_MIN_IMPORTANCE = 0.1
DUPLICATE_SIMILARITY = 0.90  # inline dedup of facts, preferences, patterns (contact-intelligence.txt §3.2)
# Episodes are events: "Bruno ate my shoes" on Monday and again on Friday are two events, so only a
# near-verbatim repeat (a resent message) reinforces an episode instead of recording it.
EPISODE_DUPLICATE_SIMILARITY = 0.97


def duplicate_threshold(memory_type: str) -> float:
    return EPISODE_DUPLICATE_SIMILARITY if memory_type == EPISODE else DUPLICATE_SIMILARITY


MERGE_SIMILARITY = 0.92  # deferred merge (ai-brain-memory.txt §4.3)


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))


def type_defaults(memory_type: str, *, is_tenant_scope: bool) -> tuple[float, float]:
    importance, decay = CONTACT_TYPE_DEFAULTS[memory_type]
    return importance, TENANT_DECAY_RATE if is_tenant_scope else decay


def novelty(embedding: Sequence[float], centroid: Sequence[float] | None) -> float:
    """Cosine distance to the centroid of the scope's memories; 1.0 for an empty scope."""
    return Novelty(None if centroid is None else np.asarray(centroid))(np.asarray(embedding))


class Novelty:
    """`novelty(vector, centroid)` against one centroid for many vectors, in numpy: the products of the vectors'
    values as doubles, added left to right (a running sum, as Python's `sum` over floats adds before 3.12), so
    every result is the one a Python loop over the two lists gives, to the last bit
    (tests/unit/memories/test_scoring.py) — at a fraction of its cost (~0.1 ms of each ingested message, two
    384-float lists walked in Python)."""

    def __init__(self, centroid: np.ndarray | None) -> None:
        self.centroid = None if centroid is None else np.asarray(centroid).astype(np.float64)
        self.centroid_norm = 0.0 if self.centroid is None else math.sqrt(_running_sum(self.centroid * self.centroid))

    def __call__(self, vector: np.ndarray) -> float:
        if self.centroid is None:
            return 1.0
        values = np.asarray(vector).astype(np.float64)
        dot = _running_sum(values * self.centroid)
        norm = math.sqrt(_running_sum(values * values)) * self.centroid_norm
        return clamp(1.0 - (dot / norm if norm else 0.0))


def _running_sum(values: np.ndarray) -> float:
    """Left to right, one addition at a time (numpy's `sum` adds pairwise: other roundings)."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def importance_score(*, novelty: float, salience: float, type_default: float) -> tuple[float, float]:
    """(raw, blended): raw = novelty × 0.6 + salience × 0.4 (memory-logic.txt §1.5); the stored importance
    blends it half-and-half with the type default, so a fact stays a fact-level memory even when
    repetitive, and a novel, salient episode can rise above the episode default."""
    raw = clamp(novelty * 0.6 + salience * 0.4)
    return round(raw, 4), round(clamp(0.5 * type_default + 0.5 * raw), 4)


def decayed_importance(
    *,
    base_importance: float,
    decay_rate: float,
    anchor_at: datetime,
    now: datetime,
    is_pinned: bool,
    memory_type: str = EPISODE,
    is_derived: bool = False,
) -> float:
    """Importance after decay, from elapsed time only (idempotent: the same at `now` however often the job ran).

    Decay starts after DECAY_GRACE_DAYS without access and then falls by `decay_rate` per day, down to
    the type's floor (never above the memory's own base). Pinned memories never decay.
    apps/memories/decay.py computes the same formula in SQL.
    """
    if is_pinned:
        return base_importance
    idle_days = (now - anchor_at).total_seconds() / 86400
    decaying_days = max(0.0, idle_days - DECAY_GRACE_DAYS)
    # a summary derived from episodes decays like them: only what the contact stated has a floor
    floor = 0.0 if is_derived else min(DECAY_FLOOR.get(memory_type, 0.0), base_importance)
    return round(max(floor, clamp(base_importance - decay_rate * decaying_days)), 4)


def recency(*, days_since_access: float) -> float:
    return clamp(1.0 - days_since_access / 365.0)


def access_frequency(*, access_count: int) -> float:
    return min(access_count / 20.0, 1.0)


@dataclass(frozen=True)
class Weights:
    similarity: float
    recency: float
    importance: float
    access_frequency: float
    entity_match: float
    # query-conditional signals (apps/memories/retrieval/signals): zero unless the query names a speaker or
    # a time
    speaker_match: float = 0.0
    time_match: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, fallback: Weights) -> Weights:
        merged = {**asdict(fallback), **{k: float(v) for k, v in data.items() if k in asdict(fallback)}}
        return cls(**merged)


TENANT_WEIGHTS = Weights(
    similarity=0.40,
    recency=0.25,
    importance=0.20,
    access_frequency=0.10,
    entity_match=0.05,
    speaker_match=0.05,
    time_match=0.30,
)
CONTACT_WEIGHTS = Weights(
    similarity=0.35,
    recency=0.25,
    importance=0.20,
    access_frequency=0.10,
    entity_match=0.10,
    speaker_match=0.10,
    time_match=0.30,
)


@dataclass(frozen=True)
class Signals:
    similarity: float
    recency: float
    importance: float
    access_frequency: float
    entity_match: float  # the specificity (IDF weight) of the query's entities the memory links, in [0, 1]
    speaker_match: float = 0.0  # said by the one speaker the query names (by label or alias)
    time_match: float = 0.0  # its event time falls in a window the query names


# An episode that stated a value since corrected (Memory.outdated_by) counts this much: still found (it was
# said), ranked below the correction (docs/retrieval.md §5).
OUTDATED_FACTOR = 0.5


def retrieval_score(signals: Signals, weights: Weights, *, outdated: bool = False) -> float:
    """The spec's weighted sum (ai-brain-memory.txt §3), with the two *usage* signals — recency of access and
    access frequency — counted in proportion to the memory's relevance to this query (its similarity signal,
    1 for the best candidate); so is the speaker match (the question names who said it: a strong hint among
    relevant memories, none for an irrelevant one — LoCoMo's questions that name the wrong speaker on purpose
    lost 0.05 R@10 more with it added in full). Accesses are written by retrieval itself, so counted in full
    they feed back: what earlier questions returned outranks what this one asks for (LoCoMo over HTTP, asked
    twice: R@10
    −0.014 the second time; docs/retrieval.md §4). The best candidate gets the spec's formula exactly.
    An outdated episode's score is scaled by OUTDATED_FACTOR."""
    usage = signals.recency * weights.recency + signals.access_frequency * weights.access_frequency
    score = (
        signals.similarity * weights.similarity
        + signals.similarity * usage
        + signals.importance * weights.importance
        + signals.entity_match * weights.entity_match
        + signals.similarity * signals.speaker_match * weights.speaker_match
        + signals.time_match * weights.time_match
    )
    return round(score * (OUTDATED_FACTOR if outdated else 1.0), 6)


def ranked_score(*, relevance: float, signals: Signals, weights: Weights, outdated: bool = False) -> float:
    """The score with the fitted ranker (retrieval/ranker.py): its relevance (the fitted linear score,
    min-max over the query's candidates, which already weighs similarity, entity, speaker and time matches
    and importance) with the usage signals counted in proportion to it, as `retrieval_score` counts them.
    An outdated episode's score is scaled by OUTDATED_FACTOR."""
    usage = signals.recency * weights.recency + signals.access_frequency * weights.access_frequency
    score = relevance * (weights.similarity + usage)
    return round(score * (OUTDATED_FACTOR if outdated else 1.0), 6)
