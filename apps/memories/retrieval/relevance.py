"""How keyword relevance joins similarity: the `similarity` signal of the retrieval score.

Pure functions over per-candidate features (no ORM). Tuned and ablated on LoCoMo (docs/retrieval.md):

    composite = 0.7·cos′ + 0.4·context_cos′ + 0.4·bm25′ + 0.5·context_bm25′ + 1.0·session′ + 1.0·length
                − 0.2·is_question
    similarity = min-max(composite) over the candidates, in [0, 1]

′ = min-max normalised over the candidates of this query.
- cos: cosine between the query and the memory embedding (semantic match);
- context_cos: cosine between the query and the memory's context embedding (the turn before and the memory
  embedded together: "They're a real support" is about family after "my family helped me through"); the
  plain cosine for a memory without one;
- bm25: BM25 over the memory's own lexemes (exact words, names, numbers);
- context_bm25: BM25 over the lexemes of the memory's neighbouring turns (questions often match the
  turn before or after the one that answers them);
- session: the best 0.5·bm25′ + 0.5·cos′ among candidates of the same conversation (evidence clusters in
  the conversation where the topic came up);
- length: min(1, ln(1 + lexemes) / ln 41) — a one-word turn rarely holds an answer;
- is_question: a memory that is only a question rarely is the answer: a short one (at most
  QUESTION_MAX_LEXEMES lexemes) ending in "?". A long message that ends with a question — "I'm working on
  sprints that end on March 29 … can you help me plan them?", how people ask an assistant — states facts
  first and is not penalised (BEAM's evidence is mostly such messages: penalising every "?" cost its
  headline recall_any@10 0.06, while LoCoMo's question turns are short and keep the penalty; same R@10).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WEIGHTS = {
    "cosine": 0.7,
    "context_cosine": 0.4,
    "bm25": 0.4,
    "context": 0.5,
    "session": 1.0,
    "length": 1.0,
    "question": -0.2,
}
LENGTH_SATURATION = 40
QUESTION_MAX_LEXEMES = 20


@dataclass(frozen=True)
class Features:
    cosine: float
    context_cosine: float
    bm25: float
    context_bm25: float
    session: str  # "" when the memory belongs to no conversation
    lexemes: int
    is_question: bool


def min_max(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    if high <= low:
        return [0.0 for _ in values]
    return [(value - low) / (high - low) for value in values]


def length_prior(lexemes: int) -> float:
    return min(1.0, math.log1p(lexemes) / math.log1p(LENGTH_SATURATION))


# the normalised terms of the composite, per candidate: what the fitted ranker (ranker.py) reads as features
TERMS = ("cosine", "context_cosine", "bm25", "context_bm25", "session", "length", "short_question")


def normalized(features: Sequence[Features]) -> list[dict[str, float]]:
    """Each candidate's terms of the composite (′ = min-max over the candidates of this query): cos′,
    context_cos′, bm25′, context_bm25′, session′, the length prior and whether it is a short question."""
    if not features:
        return []
    cosine = min_max([item.cosine for item in features])
    context_cosine = min_max([item.context_cosine for item in features])
    bm25 = min_max([item.bm25 for item in features])
    context = min_max([item.context_bm25 for item in features])
    base = [0.5 * b + 0.5 * c for b, c in zip(bm25, cosine, strict=True)]
    best_in_session: dict[str, float] = {}
    for item, value in zip(features, base, strict=True):
        key = item.session or f"#{id(item)}"
        best_in_session[key] = max(best_in_session.get(key, 0.0), value)
    session = min_max([best_in_session[item.session or f"#{id(item)}"] for item in features])
    return [
        {
            "cosine": cosine[index],
            "context_cosine": context_cosine[index],
            "bm25": bm25[index],
            "context_bm25": context[index],
            "session": session[index],
            "length": length_prior(item.lexemes),
            "short_question": 1.0 if item.is_question and item.lexemes <= QUESTION_MAX_LEXEMES else 0.0,
        }
        for index, item in enumerate(features)
    ]


def similarities(features: Sequence[Features], terms: Sequence[dict[str, float]] | None = None) -> list[float]:
    """The similarity signal of each candidate, in [0, 1] (1 for the best candidate of the query): the
    hand-weighted composite (WEIGHTS). `terms`: `normalized(features)` when the caller has it already."""
    if not features:
        return []
    terms = normalized(features) if terms is None else terms
    composite = [
        WEIGHTS["cosine"] * term["cosine"]
        + WEIGHTS["context_cosine"] * term["context_cosine"]
        + WEIGHTS["bm25"] * term["bm25"]
        + WEIGHTS["context"] * term["context_bm25"]
        + WEIGHTS["session"] * term["session"]
        + WEIGHTS["length"] * term["length"]
        + WEIGHTS["question"] * term["short_question"]
        for term in terms
    ]
    if max(composite) <= min(composite):
        return [1.0 for _ in composite]  # one candidate, or all alike: equally the best there is
    return [round(value, 6) for value in min_max(composite)]
