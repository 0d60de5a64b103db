"""Fitting the ranker (apps/memories/retrieval/ranker.py) on a development set, in process.

Each conversation is ingested as one contact of its own tenant through the real ingest service (as the
in-process `bench_retrieval` does), every question is asked through `memory_search` with the hand weights
and all its candidates are kept with their features (`ScoredMemory.features`) and whether they answer it (a
candidate is relevant when one of its source turns is an evidence turn). The pairwise model is fitted on
those, and every question is asked again with the fitted ranker: R@k before and after, exactly as search
ranks (the diversity stage included). Only LoCoMo's tune half is ever fitted on (`manage.py fit_ranker`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils import timezone

from apps.contacts.models import Contact
from apps.memories.benchmarks import as_in_production, datasets
from apps.memories.benchmarks.end_to_end import ingest_items
from apps.memories.ingest.services import ingest_messages
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval.search import HAND, memory_search
from apps.tenants.models import Tenant
from apps.tenants.services import tenant_create, tenant_delete

BATCH = 200  # turns per ingest call, as the HTTP benchmark sends them
CANDIDATES = 10_000  # every candidate of a question (search finds ~100–250)


@dataclass(frozen=True)
class Asked:
    """One question asked of its ingested conversation."""

    question: datasets.Question
    tenant: Tenant
    contact: Contact
    reference_time: object


@dataclass(frozen=True)
class Collected:
    """One question's candidates in the hand ranking's order: features, sources and relevance."""

    question: datasets.Question
    rows: list[dict[str, float]]
    sources: list[list[str]]
    relevant: list[bool]

    def group(self, features: Sequence[str], *, depth: int = 0) -> ranking.Group:
        """Its candidates as a fitting group; `depth` > 0 keeps the irrelevant ones among the hand ranking's
        first `depth` only (the hard negatives: those that push answers out of the top), every relevant one."""
        keep = [index for index, relevant in enumerate(self.relevant) if relevant or not depth or index < depth]
        matrix = np.array([[self.rows[index][name] for name in features] for index in keep], dtype=float)
        return ranking.Group(
            features=matrix.reshape(len(keep), len(features)),
            relevant=np.array([self.relevant[index] for index in keep], dtype=bool),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "question": dataclasses.asdict(self.question),
            "rows": self.rows,
            "sources": self.sources,
            "relevant": self.relevant,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Collected:
        question = data["question"]
        return cls(
            question=datasets.Question(**{**question, "evidence": tuple(question["evidence"])}),
            rows=data["rows"],
            sources=data["sources"],
            relevant=data["relevant"],
        )


@contextmanager
def ingested(
    dataset: datasets.Dataset, *, progress: Callable[[str], None] = lambda _: None, keep: bool = False
) -> Iterator[list[Asked]]:
    """The set ingested in process (a tenant per conversation, deleted afterwards unless `keep`), as the
    questions to ask of it."""
    run = timezone.now().strftime("%Y%m%d%H%M%S")
    tenants: list[Tenant] = []
    asked: list[Asked] = []
    questions = datasets.by_conversation(dataset.questions)
    try:
        with as_in_production():
            for conversation in dataset.conversations:
                label = f"{dataset.name.lower()}-{conversation.id}"
                tenant = tenant_create(name=f"fit {label} {run}", slug=f"fit-{label}-{run}"[:50])
                tenants.append(tenant)
                items = ingest_items(conversation)
                for start in range(0, len(items), BATCH):
                    ingest_messages(tenant=tenant, items=items[start : start + BATCH], actor="bench")
                contact = Contact.objects.get(tenant=tenant, external_id=conversation.id)
                asked += [
                    Asked(question, tenant, contact, conversation.last_at)
                    for question in questions.get(conversation.id, [])
                ]
                progress(f"ingested {conversation.id}: {len(conversation.turns)} turns")
            yield asked
    finally:
        if not keep:
            for tenant in tenants:
                tenant_delete(tenant=tenant)


def _turns(asked: Asked, sources: Sequence[str]) -> list[str]:
    prefix = f"{asked.question.conversation}:"
    return [source.removeprefix(prefix) for source in sources]


def ask(asked: Sequence[Asked], *, ranker: ranking.Ranker | None) -> tuple[datasets.Scores, list[Collected]]:
    """Every question asked with `ranker` (None: the hand weights): the scores and each question's candidates."""
    scores = datasets.Scores()
    collected: list[Collected] = []
    with as_in_production():
        for item in asked:
            result = memory_search(
                tenant=item.tenant,
                contact=item.contact,
                query=item.question.text,
                top_k=CANDIDATES,
                reference_time=item.reference_time,  # type: ignore[arg-type]
                ranker=HAND if ranker is None else ranker,
            )
            sources = [_turns(item, scored.memory.source_message_ids) for scored in result.results]
            scores.add(item.question, datasets.ranked_turns(sources))
            evidence = set(item.question.evidence)
            collected.append(
                Collected(
                    question=item.question,
                    rows=[scored.features for scored in result.results],
                    sources=sources,
                    relevant=[bool(evidence & set(turns)) for turns in sources],
                )
            )
    return scores, collected


def offline_recall(
    collected: Sequence[Collected], features: Sequence[str], weights: np.ndarray, *, k: int = 10
) -> float:
    """Mean R@k with the candidates re-ranked by `weights` (no diversity stage, no usage signals): for
    comparing fits on the candidates already collected, e.g. across folds of the tune half."""
    values: list[float] = []
    for item in collected:
        if not item.rows:
            values.append(datasets.recall_at([], item.question.evidence, k))
            continue
        scores = item.group(features).features @ weights
        order = np.argsort(-scores, kind="stable")
        ranked = datasets.ranked_turns(item.sources[index] for index in order)
        values.append(datasets.recall_at(ranked, item.question.evidence, k))
    return round(float(np.mean(values)), 4) if values else 0.0


def cross_validated(
    collected: Sequence[Collected], features: Sequence[str], *, l2: float, folds: Sequence[str], depth: int = 0
) -> dict[str, float]:
    """Leave one conversation out, within the collected set: fit on the others, R@10 offline on it."""
    out: dict[str, float] = {}
    for held in folds:
        train = [item.group(features, depth=depth) for item in collected if item.question.conversation != held]
        test = [item for item in collected if item.question.conversation == held]
        weights = ranking.fit(train, l2=l2)
        out[held] = offline_recall(test, features, weights)
    return out
