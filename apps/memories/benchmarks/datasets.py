"""Retrieval development sets as one shape, and their recall metrics.

Two sets are measured side by side (docs/benchmarks.md): LoCoMo (persona chit-chat between two people,
`locomo.py`) and BEAM (long user↔assistant project chats over dated sessions, `beam.py`), both read in place
from ../shared/data and never copied. A set is conversations of turns (each a contact of one tenant when
measured through HTTP) and questions with the turn ids that answer them.

Metrics, per question, over the distinct turns retrieved in rank order (a returned memory maps back to its
turns through its source message ids):
- `R@k`: the share of the question's evidence turns among the first k (LoCoMo's own definition; a question
  without evidence scores 1);
- `any@k`: 1 when at least one evidence turn is among the first k (BEAM's recall_any); `all@k`: 1 when all are.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

KS = (5, 10, 25)
DETAIL_DEPTH = max(KS)  # the turns a `--details` line keeps of each question's ranking
METRICS = ("R", "any", "all")


@dataclass(frozen=True)
class Turn:
    id: str  # unique within its conversation (LoCoMo's dia_id, BEAM's message id)
    session: int
    speaker: str
    role: str  # "user" or "assistant"
    text: str
    occurred_at: datetime
    shares_media: bool = False  # the turn shared a photo (LoCoMo: its caption is in `text`)


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]
    display_name: str = ""

    @property
    def last_at(self) -> datetime:
        return max(turn.occurred_at for turn in self.turns)


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: str
    evidence: tuple[str, ...]  # turn ids of its conversation
    answer: str = ""  # the set's reference answer, where it gives one (read only by `bench_misses`)


@dataclass(frozen=True)
class Dataset:
    name: str
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]
    categories: tuple[str, ...]  # in report order
    headline: tuple[str, ...]  # the categories the set's headline averages
    metric: str  # the headline metric: "R" (LoCoMo) or "any" (BEAM)
    # named subsets of conversations reported separately (LoCoMo: the half tuned on, the half reported)
    splits: dict[str, frozenset[str]] = field(default_factory=dict)

    def split_of(self, conversation: str) -> list[str]:
        return [name for name, members in self.splits.items() if conversation in members]

    def subset(self, conversations: Iterable[str]) -> Dataset:
        keep = set(conversations)
        return Dataset(
            name=self.name,
            conversations=tuple(c for c in self.conversations if c.id in keep),
            questions=tuple(q for q in self.questions if q.conversation in keep),
            categories=self.categories,
            headline=self.headline,
            metric=self.metric,
            splits={name: frozenset(members & keep) for name, members in self.splits.items()},
        )


PART = "#"  # a turn sent as several messages (`as_bursts`): its parts are "<turn id>", "<turn id>#2", …
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def turn_of(message_id: str) -> str:
    """The turn a message id belongs to: itself, or the turn a part (`as_bursts`) was cut from."""
    return message_id.split(PART, 1)[0]


def as_bursts(dataset: Dataset, *, parts: int = 3) -> Dataset:
    """The set as a messaging app's users send it: a turn of several sentences arrives as up to `parts`
    consecutive messages of its speaker (its sentences in order, as evenly as they divide; "I went to the
    concert yesterday." / "Sam came too!"), each a message of its own with the turn's time. The first part
    keeps the turn's id, the others are "<id>#2", "<id>#3"; a retrieved part counts as its turn (`turn_of`),
    so the questions and their evidence are the set's own."""
    conversations = []
    for conversation in dataset.conversations:
        split: list[Turn] = []
        for turn in conversation.turns:
            sentences = [item for item in _SENTENCE_END.split(turn.text.strip()) if item]
            count = max(1, min(parts, len(sentences)))
            bounds = [round(index * len(sentences) / count) for index in range(count + 1)]
            for index in range(count):
                text = " ".join(sentences[bounds[index] : bounds[index + 1]]) if count > 1 else turn.text
                part_id = turn.id if index == 0 else f"{turn.id}{PART}{index + 1}"
                split.append(dataclasses.replace(turn, id=part_id, text=text))
        conversations.append(dataclasses.replace(conversation, turns=tuple(split)))
    return dataclasses.replace(dataset, name=f"{dataset.name}-bursts", conversations=tuple(conversations))


MEDIA = "~media"  # the placeholder a chat export shows after a turn that shared a photo (`as_export`)
MEDIA_PLACEHOLDER = "<Media omitted>"


def as_export(dataset: Dataset, *, placeholder: str = MEDIA_PLACEHOLDER) -> Dataset:
    """The set as a messaging app's chat export reads: a shared photo is a message of its own, a placeholder
    ("<Media omitted>" in WhatsApp's export), from the same speaker right after the turn. The turn keeps its
    text (and LoCoMo's caption of the photo), so only the placeholders differ from the set as given; each has
    the id "<turn id>~media", never evidence, so a retrieved placeholder takes a place in the top k and
    answers nothing."""
    conversations = []
    for conversation in dataset.conversations:
        turns: list[Turn] = []
        for turn in conversation.turns:
            turns.append(turn)
            if turn.shares_media and PART not in turn.id:
                turns.append(dataclasses.replace(turn, id=f"{turn.id}{MEDIA}", text=placeholder, shares_media=False))
        conversations.append(dataclasses.replace(conversation, turns=tuple(turns)))
    return dataclasses.replace(dataset, name=f"{dataset.name}-export", conversations=tuple(conversations))


def ranked_turns(sources_per_result: Iterable[Sequence[str]]) -> list[str]:
    """Results in rank order, each with its source turn ids → the distinct turns in the order met (a part of a
    turn sent as several messages counts as its turn: `turn_of`)."""
    ranked: list[str] = []
    seen: set[str] = set()
    for sources in sources_per_result:
        for turn_id in map(turn_of, sources):
            if turn_id not in seen:
                seen.add(turn_id)
                ranked.append(turn_id)
    return ranked


def detail(question: Question, ranked: Sequence[str]) -> dict[str, Any]:
    """One question's line of a `--details` file: what was asked, its evidence and the first DETAIL_DEPTH turns
    returned."""
    return {
        "conversation": question.conversation,
        "question": question.text,
        "category": question.category,
        "evidence": list(question.evidence),
        "ranked": list(ranked[:DETAIL_DEPTH]),
    }


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    if not evidence:
        return 1.0
    top = set(ranked[:k])
    return sum(1 for item in evidence if item in top) / len(evidence)


def metric_at(ranked: Sequence[str], evidence: Sequence[str], metric: str, k: int) -> float:
    """One question's R@k (the share of its evidence in the top k), any@k or all@k (METRICS)."""
    fraction = recall_at(ranked, evidence, k)
    if metric == "any":
        return 1.0 if not evidence or fraction > 0 else 0.0
    if metric == "all":
        return 1.0 if fraction >= 1.0 else 0.0
    return fraction


def question_scores(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """{"R@5": …, "any@5": …, "all@5": …, …} for one question."""
    return {f"{metric}@{k}": metric_at(ranked, evidence, metric, k) for k in KS for metric in METRICS}


@dataclass
class Scores:
    """Per-question scores of one retriever, grouped for reporting."""

    rows: list[tuple[Question, dict[str, float]]] = field(default_factory=list)

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        ranked = ranked_turns([item] for item in ranked)  # parts of one turn count once, as their turn
        self.rows.append((question, question_scores(ranked, question.evidence)))

    def mean(
        self, key: str, *, categories: Iterable[str] | None = None, conversations: Iterable[str] | None = None
    ) -> float | None:
        wanted = set(categories) if categories is not None else None
        within = set(conversations) if conversations is not None else None
        values = [
            scores[key]
            for question, scores in self.rows
            if (wanted is None or question.category in wanted) and (within is None or question.conversation in within)
        ]
        return round(sum(values) / len(values), 4) if values else None

    def count(self, *, categories: Iterable[str] | None = None, conversations: Iterable[str] | None = None) -> int:
        wanted = set(categories) if categories is not None else None
        within = set(conversations) if conversations is not None else None
        return sum(
            1
            for question, _ in self.rows
            if (wanted is None or question.category in wanted) and (within is None or question.conversation in within)
        )

    def figures(self, dataset: Dataset) -> dict[str, Any]:
        """{group: {category | "overall" | "headline": {metric@k: mean}}} for every split and the whole set."""
        groups: dict[str, set[str] | None] = {"all": None, **{name: set(ids) for name, ids in dataset.splits.items()}}
        out: dict[str, Any] = {}
        for group, conversations in groups.items():
            rows: dict[str, Any] = {}
            for label, categories in [
                *[(category, [category]) for category in dataset.categories],
                ("headline", list(dataset.headline)),
                ("overall", None),
            ]:
                rows[label] = {
                    f"{metric}@{k}": self.mean(f"{metric}@{k}", categories=categories, conversations=conversations)
                    for metric in METRICS
                    for k in KS
                } | {"n": self.count(categories=categories, conversations=conversations)}
            out[group] = rows
        return out


def comparison_table(
    dataset: Dataset, columns: dict[str, Scores], *, k: int = 10, lead_over: str = "", leads: Sequence[str] = ()
) -> str:
    """One block per group (the whole set, then each split), a row per category and the headline, a column
    per retriever at the set's metric@k, and the lead of each of `leads` over `lead_over`."""
    key = f"{dataset.metric}@{k}"
    names = list(columns)
    width = max(10, *(len(name) + 2 for name in names))
    lead_names = [name for name in leads if lead_over and name in columns]
    lines = [f"{dataset.name}: {key} (n = questions)"]
    groups: list[tuple[str, set[str] | None]] = [("all", None)]
    groups += [(name, set(ids)) for name, ids in dataset.splits.items()]
    first = names[0]
    for group, conversations in groups:
        header = f"  [{group}]".ljust(24) + "n".rjust(5) + "".join(name.rjust(width) for name in names)
        header += "".join(f"{name}-{lead_over}".rjust(len(name) + len(lead_over) + 3) for name in lead_names)
        lines.append(header)
        labels: list[tuple[str, list[str] | None]] = [(category, [category]) for category in dataset.categories]
        if dataset.headline != dataset.categories:
            labels.append(("headline", list(dataset.headline)))
        labels.append(("overall", None))
        for label, categories in labels:
            count = columns[first].count(categories=categories, conversations=conversations)
            if not count:
                continue
            cells = {
                name: columns[name].mean(key, categories=categories, conversations=conversations) for name in names
            }
            row = f"    {label}".ljust(24) + str(count).rjust(5)
            row += "".join(("" if cells[name] is None else f"{cells[name]:.3f}").rjust(width) for name in names)
            for name in lead_names:
                lead = (cells[name] or 0.0) - (cells[lead_over] or 0.0)
                row += f"{lead:+.3f}".rjust(len(name) + len(lead_over) + 3)
            lines.append(row)
    return "\n".join(lines)


def percentiles(latencies_ms: Sequence[float]) -> dict[str, float | None]:
    if not latencies_ms:
        return {"p50": None, "p95": None, "p99": None}
    return {
        "p50": round(statistics.median(latencies_ms), 1),
        "p95": round(float(np.percentile(latencies_ms, 95)), 1),
        "p99": round(float(np.percentile(latencies_ms, 99)), 1),
    }


def by_conversation(questions: Iterable[Question]) -> dict[str, list[Question]]:
    grouped: dict[str, list[Question]] = defaultdict(list)
    for question in questions:
        grouped[question.conversation].append(question)
    return grouped
