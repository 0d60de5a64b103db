"""Flat retrievers over the raw turns: what Engram's retrieval is measured against (docs/benchmarks.md).

Each conversation's turns are one flat index, `"<speaker or role>: <text>"` per turn, no extraction, no
memory types, no time. Three rankings per question:
- `cosine`: the query's embedding against each turn's, with the embedder Engram is configured with;
- `bm25`: Okapi BM25 (k1 1.2, b 0.75) over the turns' lexemes from PostgreSQL's `english` parser and stemmer
  (what Engram's own full-text index uses, so the two differ in ranking, not in tokenising);
- `hybrid`: the sum of both scores z-normalised over the conversation's turns (mean 0, deviation 1).

The turn embeddings are cached under var/bench (keyed by the embedder and the texts): a flat run then costs
only its questions.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from apps.memories.benchmarks.datasets import Conversation, Dataset

BM25_K1 = 1.2
BM25_B = 0.75
RETRIEVERS = ("cosine", "bm25", "hybrid")


def turn_text(speaker: str, role: str, text: str) -> str:
    return f"{speaker or role}: {text}"


@dataclass
class FlatIndex:
    """One conversation's turns as vectors and term counts."""

    turn_ids: list[str]
    vectors: np.ndarray  # (turns, dims), L2-normalised
    term_counts: list[Counter[str]]
    document_frequency: Counter[str]
    average_length: float

    def bm25(self, lexemes: Sequence[str]) -> np.ndarray:
        total = len(self.turn_ids)
        scores = np.zeros(total)
        for lexeme in set(lexemes):
            df = self.document_frequency.get(lexeme, 0)
            if not df:
                continue
            weight = math.log(1 + (total - df + 0.5) / (df + 0.5))
            for index, counts in enumerate(self.term_counts):
                tf = counts.get(lexeme, 0)
                if tf:
                    length = sum(counts.values())
                    norm = tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / self.average_length))
                    scores[index] += weight * norm
        return scores

    def rankings(self, *, vector: np.ndarray, lexemes: Sequence[str], top: int = 50) -> dict[str, list[str]]:
        cosine = self.vectors @ vector
        bm25 = self.bm25(lexemes)
        hybrid = _z(cosine) + _z(bm25)
        return {
            name: [self.turn_ids[index] for index in np.argsort(-scores, kind="stable")[:top]]
            for name, scores in (("cosine", cosine), ("bm25", bm25), ("hybrid", hybrid))
        }


def _z(scores: np.ndarray) -> np.ndarray:
    deviation = float(scores.std())
    return (scores - scores.mean()) / deviation if deviation > 0 else np.zeros_like(scores)


def build_indexes(
    dataset: Dataset,
    *,
    embed: Callable[[list[str]], np.ndarray],
    lexemes_of: Callable[[list[str]], list[Counter[str]]],
    cache_dir: Path,
    embedder_name: str,
) -> dict[str, FlatIndex]:
    indexes = {}
    for conversation in dataset.conversations:
        texts = [turn_text(turn.speaker, turn.role, turn.text) for turn in conversation.turns]
        vectors = _cached_vectors(texts, embed=embed, cache_dir=cache_dir, embedder_name=embedder_name)
        counts = lexemes_of(texts)
        frequency: Counter[str] = Counter()
        for item in counts:
            frequency.update(item.keys())
        lengths = [sum(item.values()) for item in counts]
        indexes[conversation.id] = FlatIndex(
            turn_ids=[turn.id for turn in conversation.turns],
            vectors=vectors,
            term_counts=counts,
            document_frequency=frequency,
            average_length=(sum(lengths) / len(lengths)) if lengths else 1.0,
        )
    return indexes


def _cached_vectors(
    texts: list[str], *, embed: Callable[[list[str]], np.ndarray], cache_dir: Path, embedder_name: str
) -> np.ndarray:
    digest = hashlib.sha256(("\x00".join([embedder_name, *texts])).encode()).hexdigest()[:24]
    path = cache_dir / f"flat-{digest}.npy"
    if path.exists():
        return np.load(path)
    vectors = np.asarray(embed(texts), dtype=np.float32)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def conversation_of(dataset: Dataset, conversation_id: str) -> Conversation:
    return next(conversation for conversation in dataset.conversations if conversation.id == conversation_id)
