"""What the read path hands out: light rows, never model objects.

`RetrievedMemory` is a memory as a prompt line or an API row needs it (the candidate statement reads exactly
these columns, candidates.MEMORY_COLUMNS); `ScoredMemory` is one ranked result with its signals, its
features and what produced its score (`explain()`: the `explain` breakdown of POST /memories/search and
the inspector); `SearchResult` is what `search.memory_search` returns. `EntityRef` is an entity as the
read path hands it out. Pure: no Django.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from apps.memories import scoring
from apps.memories.retrieval.ranker import Ranker
from apps.memories.retrieval.signals import time_window

HAND: Literal["hand"] = "hand"  # the ranker version of the hand-set weights (relevance.WEIGHTS, scoring.Weights)


@dataclass(frozen=True, slots=True)
class EntityRef:
    """An entity as the read path hands it out (no model object)."""

    id: uuid.UUID
    entity_type: str
    slug: str
    display_name: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.entity_type}:{self.slug}"


@dataclass(frozen=True, slots=True)
class RetrievedMemory:
    """A memory as the read path hands it out: what a prompt line or an API row needs, no model object."""

    pk: uuid.UUID
    memory_type: str
    content: str
    importance: float
    occurred_at: datetime
    is_compressed: bool
    source_message_ids: tuple[str, ...]
    outdated: bool = False  # an episode that stated a value since corrected (Memory.outdated_by)
    # who said it when that was not the contact (or a labelled speaker): the role of its source message,
    # "assistant" for the AI's own replies (`metadata.role`, ingest); "" for the contact's words and what was
    # derived from several messages
    role: str = ""


@dataclass(frozen=True)
class ScoredMemory:
    memory: RetrievedMemory
    score: float
    signals: scoring.Signals
    cosine: float
    bm25: float
    # "vector", "keyword", "entity", "time", "condition", "preference", "background", "neighbour" (or "importance"
    # with no query, "last" for the last topic)
    found_by: tuple[str, ...]
    matched_entities: tuple[str, ...] = ()
    context_cosine: float = 0.0
    entity_weights: tuple[float, ...] = ()  # the specificity (IDF weight) of each matched entity, in order
    speaker: str = ""  # who said it, when it was said by the speaker the query names
    time_window: time_window.TimeWindow | None = None  # the query's window its event time falls in
    diversity_penalty: float = 0.0  # what its redundancy with higher results cost (list questions only)
    # what its score was multiplied by for falling outside every time window the query names
    # (time_window.miss_factor); 1.0: none applied (the query names no time, or it falls in a window)
    window_factor: float = 1.0
    # what its score was multiplied by for coming from one of the chunks of a long message (chunk_share.factor);
    # 1.0: its source message was not split
    chunk_factor: float = 1.0
    # what its score was multiplied by for being a pattern when no summary was asked for (pattern_share.factor)
    pattern_factor: float = 1.0
    # a standing instruction's condition (its context_cosine is the query's cosine to it) and whether the query
    # meets it: then its score was raised to the query's best (signals/condition.py)
    condition: str = ""
    condition_met: bool = False
    # a preference of the asker that fits the query's request for advice: its score was raised to the query's
    # best (signals/advice.py)
    advice_fit: bool = False
    # what it gained for following a higher turn of its conversation (signals/follow_up.py); 0: nothing
    follow_up: float = 0.0
    # the ranker's features of this candidate (ranker.FEATURES), and the fitted ranker that scored it (None: the
    # hand weights), which says what each feature added when asked (`contributions`)
    features: dict[str, float] = field(default_factory=dict)
    ranker_version: str = HAND
    ranker: Ranker | None = field(default=None, repr=False, compare=False)

    @property
    def contributions(self) -> dict[str, float]:
        """What each feature added to the fitted ranker's linear score ({} with the hand weights): computed when
        an explanation asks, not for every ranked row (docs/benchmarks.md, "Session 46")."""
        return self.ranker.contributions(self.features) if self.ranker is not None else {}

    def explain(self) -> dict[str, Any]:
        return {
            "signals": {
                "similarity": round(self.signals.similarity, 4),
                "recency": round(self.signals.recency, 4),
                "importance": round(self.signals.importance, 4),
                "access_frequency": round(self.signals.access_frequency, 4),
                "entity_match": self.signals.entity_match,
                "speaker_match": self.signals.speaker_match,
                "time_match": self.signals.time_match,
            },
            "cosine": round(self.cosine, 4),
            "context_cosine": round(self.context_cosine, 4),
            "bm25": round(self.bm25, 4),
            "found_by": list(self.found_by),
            "matched_entities": list(self.matched_entities),
            "entity_idf_weights": dict(zip(self.matched_entities, self.entity_weights, strict=False)),
            "speaker_matched": self.speaker,
            "time_window": self.time_window.explain() if self.time_window is not None else None,
            "time_window_factor": self.window_factor,
            "chunk_factor": self.chunk_factor,
            "pattern_factor": self.pattern_factor,
            "diversity_penalty": self.diversity_penalty,
            "condition": {"text": self.condition, "cosine": round(self.context_cosine, 4), "met": self.condition_met}
            if self.condition
            else None,
            "advice": {"cosine": round(self.cosine, 4), "fits": True} if self.advice_fit else None,
            "follow_up": self.follow_up,
            "ranker": {
                "version": self.ranker_version,
                "features": {name: round(value, 4) for name, value in self.features.items()},
                "contributions": self.contributions,
            },
        }


@dataclass(frozen=True)
class Background:
    """What a caller wants ranked beside the query's best matches, from the same candidates: the scope's
    memories of `memory_types` (episodes only since `episodes_since`, when given), at most `limit` of them.
    GET /context's stage density (apps/context/contact.py): a "building" contact's facts, say, ranked for a
    message that asks about an episode. A source of its own finds them (candidates.fetch, "background")."""

    memory_types: tuple[str, ...]
    limit: int
    episodes_since: datetime | None = None

    def admits(self, memory: RetrievedMemory) -> bool:
        if memory.memory_type not in self.memory_types:
            return False
        return (
            self.episodes_since is None
            or memory.memory_type != scoring.EPISODE
            or memory.occurred_at >= self.episodes_since
        )


@dataclass
class SearchResult:
    results: list[ScoredMemory]
    query_entities: list[EntityRef] = field(default_factory=list)
    candidates: int = 0
    time_windows: tuple[time_window.TimeWindow, ...] = ()
    speakers: tuple[str, ...] = ()  # the speakers the query names (their slugs)
    # the text the query was embedded as: from the side of the speakers it names (signals/speaker.py)
    embedded_as: str = ""
    diversified: bool = False  # a list or count question: ranked for coverage (signals/diversity.py)
    summary: bool = False  # a request for a summary: no chunk share (signals/chunk_share.asks_for_summary)
    advice: bool = False  # a request for advice: the asker's fitting preferences go first (signals/advice.py)
    # the lexemes of each irregular verb the query uses, searched as one term (retrieval/inflections.py)
    verbs: tuple[tuple[str, ...], ...] = ()
    # the lexemes of each word of the query chat spells other ways, searched as one term (retrieval/spellings.py)
    spellings: tuple[tuple[str, ...], ...] = ()
    # the best `Background.limit` candidates a `background` request admits, in the results' order (they may
    # repeat results); [] when none was asked for
    background: list[ScoredMemory] = field(default_factory=list)
