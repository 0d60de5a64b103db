"""The fitted ranker: a linear score over each candidate's raw retrieval signals, its weights learnt from data.

The hand-set similarity composite (relevance.WEIGHTS) and the weighted sum of the signals (scoring.Weights)
were tuned by hand on LoCoMo and traded one development set for the other (docs/benchmarks.md). Here the
weights of every per-candidate feature are fitted instead — a pairwise logistic model (RankNet with a linear
scorer) on LoCoMo's tune half only (`manage.py fit_ranker`, apps/memories/benchmarks/ranker_fit.py) — and
kept, versioned, in `ranker_weights.json` beside this module.

    s = Σ weight_f · feature_f                      (one number per candidate of the query)
    relevance = min-max(s) over the candidates      (in [0, 1], 1 for the best)
    score = relevance · (w_similarity + recency · w_recency + access_frequency · w_access)   (scoring.ranked_score)
            × (1 − 0.5 · specificity) outside every time window the query names (as the hand formula)

The usage signals (recency, access frequency) stay outside the fit, counted in proportion to the relevance as
the hand formula counts them: they are written by retrieval itself and a replayed benchmark cannot teach
them. An outdated episode is still halved (scoring.OUTDATED_FACTOR): a product rule, not a relevance signal.

`active()` loads the file once per process; when it is absent or invalid the search falls back to the hand
weights and says so once in the log. A tenant that set its own `retrieval_weights` keeps the hand formula
with its weights (search.py).

Pure (no Django): numpy only.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from apps.memories.retrieval.relevance import TERMS

logger = logging.getLogger(__name__)

WEIGHTS_PATH = Path(__file__).with_name("ranker_weights.json")
FORMAT = 1  # the file's layout (bumped if its keys change)

# Every feature search computes for a candidate (ScoredMemory.features); a weights file uses any subset.
FEATURES: tuple[str, ...] = (
    *TERMS,  # relevance.normalized: cos′, context_cos′, bm25′, context_bm25′, session′, length, short question
    "cosine_raw",  # the cosine itself (how close the best candidate is, not only who is closest)
    "context_cosine_raw",
    "entity_match",  # signals/specificity.py: IDF weight of the named entities the memory links
    "speaker_match",  # signals/speaker.py: said by the one speaker the query names
    "speaker_match_gated",  # the same, times (bm25′ + cos′) / 2: a hint among relevant memories only
    "time_match",  # signals/time_window.py: the specificity of the query's window it falls in
    "outside_window",  # the query names a time and the memory falls in none of its windows
    "importance",
)
# what `fit_ranker` fits by default: all but outside_window, which search applies as the hand formula's
# discount (time_window.miss_factor) after the fitted score — a rule, too rarely exercised to learn
DEFAULT_FEATURES: tuple[str, ...] = tuple(name for name in FEATURES if name != "outside_window")


@dataclass(frozen=True)
class Ranker:
    version: str
    features: tuple[str, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights):
            raise ValueError(f"{len(self.features)} features and {len(self.weights)} weights")

    def score(self, row: Mapping[str, float]) -> float:
        # the products summed in the features' order: the same float as a generator of them, 0.9 instead of 1.4 µs
        # (the shipped 12 features); it runs for every candidate of every search
        return sum(map(operator.mul, self.weights, map(row.get, self.features, itertools.repeat(0.0))))

    def contributions(self, row: Mapping[str, float]) -> dict[str, float]:
        pairs = zip(self.features, self.weights, strict=True)
        return {name: round(weight * row.get(name, 0.0), 4) for name, weight in pairs}


def candidate_features(
    terms: Mapping[str, float],
    *,
    cosine: float,
    context_cosine: float,
    entity_match: float,
    speaker_match: float,
    time_match: float,
    outside_window: bool,
    importance: float,
) -> dict[str, float]:
    """One candidate's features (FEATURES, in order) from its normalised terms and its raw signals."""
    return {
        **{name: float(terms[name]) for name in TERMS},
        "cosine_raw": cosine,
        "context_cosine_raw": context_cosine,
        "entity_match": entity_match,
        "speaker_match": speaker_match,
        "speaker_match_gated": speaker_match * 0.5 * (terms["bm25"] + terms["cosine"]),
        "time_match": time_match,
        "outside_window": 1.0 if outside_window else 0.0,
        "importance": importance,
    }


def relevances(ranker: Ranker, rows: Sequence[Mapping[str, float]]) -> list[float]:
    """Each candidate's fitted score, min-max normalised over the query's candidates: in [0, 1]."""
    raw = [ranker.score(row) for row in rows]
    if not raw:
        return []
    low, high = min(raw), max(raw)
    if high <= low:
        return [1.0 for _ in raw]  # one candidate, or all alike: equally the best there is
    return [round((value - low) / (high - low), 6) for value in raw]


# --- the weights file ------------------------------------------------------------------------------


class InvalidWeights(ValueError):
    pass


def parse(data: Any) -> Ranker:
    """A Ranker from the JSON file's content; InvalidWeights when it is not one this code can use."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidWeights(f"not a format-{FORMAT} ranker weights file")
    version, weights = data.get("version"), data.get("weights")
    if not isinstance(version, str) or not version or not isinstance(weights, dict) or not weights:
        raise InvalidWeights("needs a version and a {feature: weight} object")
    unknown = sorted(set(weights) - set(FEATURES))
    if unknown:
        raise InvalidWeights(f"unknown features {unknown}")
    values = {name: weights[name] for name in FEATURES if name in weights}
    if not all(isinstance(value, int | float) and math.isfinite(value) for value in values.values()):
        raise InvalidWeights("every weight must be a finite number")
    if not any(values.values()):
        raise InvalidWeights("all weights are zero")
    return Ranker(version=version, features=tuple(values), weights=tuple(float(value) for value in values.values()))


def load(path: Path) -> Ranker | None:
    """The ranker in `path`, or None (and a warning) when the file is absent or invalid: the caller then
    uses the hand weights."""
    try:
        return parse(json.loads(path.read_text()))
    except FileNotFoundError:
        logger.warning("No ranker weights at %s: retrieval uses the hand weights", path)
    except (OSError, ValueError) as exc:  # InvalidWeights and json's errors are ValueErrors
        logger.warning("Ranker weights at %s unusable (%s): retrieval uses the hand weights", path, exc)
    return None


@functools.lru_cache(maxsize=1)
def active() -> Ranker | None:
    """The ranker of WEIGHTS_PATH, loaded once per process (None: the hand weights; logged once)."""
    return load(WEIGHTS_PATH)


def document(ranker: Ranker, **provenance: Any) -> dict[str, Any]:
    """The weights file's content: format, version, the features and their weights, and how they were got."""
    return {
        "format": FORMAT,
        "version": ranker.version,
        "features": list(ranker.features),
        "weights": {name: round(weight, 6) for name, weight in zip(ranker.features, ranker.weights, strict=True)},
        **provenance,
    }


# --- fitting ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One question's candidates: a row of features each (columns in the fit's feature order) and whether it
    answers the question."""

    features: np.ndarray  # (candidates, features)
    relevant: np.ndarray  # (candidates,) bool


def pairs(groups: Sequence[Group]) -> tuple[np.ndarray, np.ndarray]:
    """Every (relevant, irrelevant) pair of candidates of each question as the difference of their features,
    and each pair's weight: every question counts the same (1 / its pairs / the questions with a pair)."""
    differences: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    usable = [group for group in groups if group.relevant.any() and not group.relevant.all()]
    for group in usable:
        good, bad = group.features[group.relevant], group.features[~group.relevant]
        diff = (good[:, None, :] - bad[None, :, :]).reshape(-1, group.features.shape[1])
        differences.append(diff)
        weights.append(np.full(len(diff), 1.0 / (len(diff) * len(usable))))
    if not differences:
        width = groups[0].features.shape[1] if groups else 0
        return np.zeros((0, width)), np.zeros(0)
    return np.concatenate(differences), np.concatenate(weights)


def fit(groups: Sequence[Group], *, l2: float = 1e-3, iterations: int = 50, tolerance: float = 1e-10) -> np.ndarray:
    """Pairwise logistic regression (RankNet with a linear scorer): the weights w minimising, over the pairs
    of every question, the mean of log(1 + exp(−w·(x_relevant − x_irrelevant))) plus l2/2·|w|². Newton's
    method with a halving step (the loss is convex; a few features: the Hessian is tiny)."""
    differences, pair_weights = pairs(groups)
    width = differences.shape[1]
    w = np.zeros(width)

    def loss(weights: np.ndarray) -> float:
        margins = differences @ weights
        return float(pair_weights @ np.logaddexp(0.0, -margins) + 0.5 * l2 * weights @ weights)

    current = loss(w)
    for _ in range(iterations):
        margins = differences @ w
        p = 1.0 / (1.0 + np.exp(margins))  # σ(−margin): how wrong each pair still is
        gradient = -(differences.T @ (pair_weights * p)) + l2 * w
        curvature = pair_weights * p * (1.0 - p)
        hessian = differences.T @ (differences * curvature[:, None]) + l2 * np.eye(width)
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while scale > 1e-6:
            candidate = w - scale * step
            value = loss(candidate)
            if value <= current:
                break
            scale /= 2
        else:
            break
        improvement = current - value
        w, current = candidate, value
        if improvement < tolerance:
            break
    return w
