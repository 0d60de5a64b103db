"""A memory's score taken apart for the context preview ("Why each memory is there"), from the `explain` the
search hands out (apps/memories/retrieval/types.py, ScoredMemory.explain). Pure: no Django, no database.

Two formulas make the score, and `explain.ranker.version` says which one did:

- "hand" (a tenant with its own `retrieval_weights`, or no weights file): scoring.retrieval_score, the sum of
  each signal × its weight, recency, access frequency and speaker match counted in proportion to similarity.
- a fitted ranker's version (ranker_weights.json): scoring.ranked_score. Each feature × its fitted weight
  adds to a linear score (explain.ranker.contributions, signed); its min-max over the query's candidates is
  the relevance (explain.signals.similarity), and the score is relevance × (similarity weight + recency ×
  weight + access frequency × weight).

Either way an outdated episode counts scoring.OUTDATED_FACTOR and a memory outside every time window the
query names is discounted by the factor the search applied (time_window.miss_factor), `explain.time_window_factor`;
a memory from one of the chunks of a long message by `explain.chunk_factor` (chunk_share.factor). A standing
instruction whose condition the question meets (`explain.condition.met`), and a preference that fits a request for
advice (`explain.advice`), were raised to the query's best score. An episode that follows a higher turn of its
conversation gained `explain.follow_up` (signals/follow_up.py), shown as the factor it comes to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.memories import scoring

HAND = "hand"
# hand formula: these signals count in proportion to similarity (scoring.retrieval_score)
SCALED_BY_SIMILARITY = frozenset({"recency", "access_frequency", "speaker_match"})


@dataclass(frozen=True)
class Term:
    """One addend of the score: a signal (hand) or a feature (fitted), its value, its weight and what it adds."""

    name: str
    value: float
    weight: float | None  # None: the fitted weight is unknown here (another ranker version than this process's)
    contribution: float
    similarity: float | None = None  # hand: the similarity it is counted in proportion to
    share: int = 0  # fitted: percent of the bar, |contribution| / Σ |contributions|

    @property
    def is_negative(self) -> bool:
        return self.contribution < 0


@dataclass(frozen=True)
class Factor:
    """A multiplier applied after the sum: outdated, outside the query's time windows, one of a long message's
    chunks."""

    name: str
    value: float


@dataclass(frozen=True)
class Usage:
    """The fitted formula's second factor: similarity weight + recency × weight + access frequency × weight."""

    similarity_weight: float
    recency: float
    recency_weight: float
    access_frequency: float
    access_frequency_weight: float

    @property
    def total(self) -> float:
        return (
            self.similarity_weight
            + self.recency * self.recency_weight
            + self.access_frequency * self.access_frequency_weight
        )


@dataclass(frozen=True)
class Breakdown:
    version: str
    terms: tuple[Term, ...]
    factors: tuple[Factor, ...]
    score: float  # the score the search gave
    composed: float  # what the terms (and factors) give: equal to `score` up to rounding
    linear_score: float  # Σ contributions (fitted: the linear score the relevance is ranked on)
    relevance: float = 0.0  # fitted: min-max of the linear score over the query's candidates
    usage: Usage | None = None  # fitted

    @property
    def is_fitted(self) -> bool:
        return self.version != HAND

    @property
    def positive_terms(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if not term.is_negative)

    @property
    def negative_terms(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if term.is_negative)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _hand_terms(signals: Mapping[str, Any], weights: scoring.Weights) -> tuple[Term, ...]:
    similarity = _number(signals.get("similarity"))
    terms = []
    for name, raw in signals.items():
        value, weight = _number(raw), float(getattr(weights, name, 0.0))
        scaled = name in SCALED_BY_SIMILARITY
        contribution = value * weight * (similarity if scaled else 1.0)
        terms.append(Term(name, value, weight, round(contribution, 4), similarity=similarity if scaled else None))
    return tuple(terms)


def _fitted_terms(
    features: Mapping[str, Any], contributions: Mapping[str, Any], fitted_weights: Mapping[str, float]
) -> tuple[Term, ...]:
    """Every feature that added something, largest first, positive ones before negative ones."""
    nonzero = {name: _number(value) for name, value in contributions.items() if _number(value) != 0}
    magnitude = sum(abs(value) for value in nonzero.values())
    ordered = sorted(nonzero.items(), key=lambda item: (item[1] < 0, -abs(item[1]), item[0]))
    return tuple(
        Term(
            name=name,
            value=_number(features.get(name)),
            weight=fitted_weights.get(name),
            contribution=contribution,
            share=round(100 * abs(contribution) / magnitude),
        )
        for name, contribution in ordered
    )


def _factors(
    *, before: float, outdated: bool, window_factor: float, chunk_factor: float, pattern_factor: float
) -> tuple[tuple[Factor, ...], float]:
    """The factors applied after the sum and the score they give."""
    factors: list[Factor] = []
    if outdated:
        factors.append(Factor("outdated", scoring.OUTDATED_FACTOR))
        before *= scoring.OUTDATED_FACTOR
    if window_factor != 1.0:
        factors.append(Factor("outside the query's time window", window_factor))
        before *= window_factor
    if chunk_factor != 1.0:
        factors.append(Factor("one of a long message's chunks", chunk_factor))
        before *= chunk_factor
    if pattern_factor != 1.0:
        factors.append(Factor("a pattern: its episodes answer first", pattern_factor))
        before *= pattern_factor
    return tuple(factors), before


def score_breakdown(
    *,
    explain: Mapping[str, Any],
    score: float,
    outdated: bool,
    weights: scoring.Weights,
    fitted_weights: Mapping[str, float] | None = None,
) -> Breakdown:
    """How `score` was made, from the memory's `explain`. `weights`: the tenant's for the scope (the hand
    formula's, and the fitted formula's usage weights); `fitted_weights`: the fitted ranker's, when its version
    is the one in `explain` (only to print each feature's weight; the contributions are in `explain`)."""
    signals: Mapping[str, Any] = explain.get("signals") or {}
    ranker: Mapping[str, Any] = explain.get("ranker") or {}
    features: Mapping[str, Any] = ranker.get("features") or {}
    version = str(ranker.get("version") or HAND)
    window_factor = _number(explain.get("time_window_factor", 1.0))
    chunk_factor = _number(explain.get("chunk_factor", 1.0))
    pattern_factor = _number(explain.get("pattern_factor", 1.0))
    relevance, usage = 0.0, None
    if version == HAND:
        terms = _hand_terms(signals, weights)
        before = sum(term.contribution for term in terms)
    else:
        terms = _fitted_terms(features, ranker.get("contributions") or {}, fitted_weights or {})
        relevance = _number(signals.get("similarity"))  # with a fitted ranker the similarity signal is its relevance
        usage = Usage(
            similarity_weight=weights.similarity,
            recency=_number(signals.get("recency")),
            recency_weight=weights.recency,
            access_frequency=_number(signals.get("access_frequency")),
            access_frequency_weight=weights.access_frequency,
        )
        before = relevance * usage.total
    factors, composed = _factors(
        before=before,
        outdated=outdated,
        window_factor=window_factor,
        chunk_factor=chunk_factor,
        pattern_factor=pattern_factor,
    )
    follow_up = _number(explain.get("follow_up", 0.0))
    if follow_up > 0 and composed > 0:
        # an episode that follows a higher turn of its conversation gained a share of the difference
        # (apps/memories/retrieval/signals/follow_up.py): what that multiplied it by
        factors = (*factors, Factor("it follows a turn that ranks higher", round((composed + follow_up) / composed, 4)))
        composed += follow_up
    condition: Mapping[str, Any] = explain.get("condition") or {}
    if condition.get("met") and composed > 0 and score > composed:
        # a standing instruction whose condition the question meets is raised to the query's best score
        # (apps/memories/retrieval/signals/condition.py): what it was multiplied by to get there
        factors = (*factors, Factor(f"its condition ({condition.get('text', '')}) is met", round(score / composed, 4)))
        composed = score
    if explain.get("advice") and composed > 0 and score > composed:
        # a preference that fits a request for advice is raised the same way (retrieval/signals/advice.py)
        factors = (*factors, Factor("it fits the request for advice", round(score / composed, 4)))
        composed = score
    return Breakdown(
        version=version,
        terms=terms,
        factors=factors,
        score=score,
        composed=round(composed, 4),
        linear_score=round(sum(term.contribution for term in terms), 4),
        relevance=relevance,
        usage=usage,
    )
