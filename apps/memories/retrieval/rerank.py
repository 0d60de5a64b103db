"""The results' order, and the optional cross-encoder rerank of their top.

`rank_key` orders scored memories (score, then similarity, then id: the same query gives the same order).
`factored` applies the rules that multiply a score after the formula (signals.FACTORS: outside every time
window the query names, one of the chunks of a long message, a pattern or a session's summary where no summary
is asked for), with either ranker and again under the reranker. With ENGRAM_RERANKER_ENABLED, `reranked`
lets a cross-encoder's relevance (settings ENGRAM["RERANKER_MODEL"], sentence-transformers, loaded once)
replace the similarity signal of the top RERANK_TOP results and scores them again (the factors applied again,
the follow-up gain dropped, met conditions and fitting advice raised again); without the setting or the model
the blended order stands.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from typing import Any

from django.conf import settings

from apps.memories import scoring
from apps.memories.retrieval.signals import condition
from apps.memories.retrieval.types import HAND, ScoredMemory

RERANK_TOP = 30
logger = logging.getLogger(__name__)


def rank_key(item: ScoredMemory) -> tuple[float, float, str]:
    return rank_key_of(item.score, item.signals.similarity, item)


def rank_key_of(score: float, similarity: float, item: Any) -> tuple[float, float, str]:
    """rank_key of a candidate not yet a ScoredMemory: its score, its similarity and `item.memory.pk`."""
    return (-score, -similarity, str(item.memory.pk))


@functools.lru_cache(maxsize=1)
def _cross_encoder() -> Any:
    """The optional reranker model, or None when it cannot be loaded (then the blended score stands)."""
    try:
        from sentence_transformers import CrossEncoder  # type: ignore[import-not-found]

        return CrossEncoder(settings.ENGRAM["RERANKER_MODEL"])
    except Exception as exc:  # not installed, no model files offline, …: fall back, say so once
        logger.warning("Reranker unavailable (%s): using the blended score", exc)
        return None


def factored(score: float, *, window_factor: float, chunk_factor: float, pattern_factor: float) -> float:
    """`score` after the rules that multiply it, with either ranker and under the reranker (signals.FACTORS):
    outside every time window the query names (a soft filter, time_window.miss_factor), one of the chunks of a
    long message (chunk_share.factor), a pattern where no summary is asked for (pattern_share.factor). A factor
    of 1.0 leaves the score as it is."""
    for factor in (window_factor, chunk_factor, pattern_factor):
        if factor != 1.0:
            score = round(score * factor, 6)
    return score


def reranked(query: str, scored: list[ScoredMemory], weights: scoring.Weights) -> list[ScoredMemory]:
    """With ENGRAM_RERANKER_ENABLED, a cross-encoder's relevance replaces the similarity signal of the top
    candidates (memory-logic.txt §2.5); without the setting or the model, the blended order stands."""
    if not settings.ENGRAM["RERANKER_ENABLED"]:
        return scored
    model = _cross_encoder()
    if model is None:
        return scored
    head, tail = scored[:RERANK_TOP], scored[RERANK_TOP:]
    raw = model.predict([(query, item.memory.content) for item in head])
    rescored = []
    for item, value in zip(head, raw, strict=True):
        signals = dataclasses.replace(item.signals, similarity=1.0 / (1.0 + math.exp(-float(value))))
        score = (
            scoring.retrieval_score(signals, weights, outdated=item.memory.outdated)
            if item.ranker_version == HAND
            else scoring.ranked_score(
                relevance=signals.similarity, signals=signals, weights=weights, outdated=item.memory.outdated
            )
        )
        score = factored(
            score,
            window_factor=item.window_factor,
            chunk_factor=item.chunk_factor,
            pattern_factor=item.pattern_factor,
        )
        # the follow-up stage's gain was a share of the blended scores' gaps: the cross-encoder's order stands alone
        rescored.append(dataclasses.replace(item, signals=signals, score=score, follow_up=0.0))
    # an instruction whose condition the query meets, a preference that fits a request for advice, still go
    # first (signals/condition.py, signals/advice.py)
    raised = condition.raised(
        [item.score for item in rescored], [item.condition_met or item.advice_fit for item in rescored]
    )
    rescored = [dataclasses.replace(item, score=score) for item, score in zip(rescored, raised, strict=True)]
    return sorted(rescored, key=rank_key) + tail
