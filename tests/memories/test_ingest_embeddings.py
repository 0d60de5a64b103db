"""What ingest embeds (issue 29 item 2, session 17's diagnosis): one text per candidate — a turn's episode
and each fact or preference stated in it — each distinct text once per request, nothing else; on LoCoMo
that is 1.07 texts per turn, of about a turn's tokens. The embedding phase's wall time above the bound's
per turn was waiting for a core, not more texts: this test keeps the count from growing unseen."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from apps.core import embeddings
from apps.core.embeddings import CachedEmbedder, LocalOnnxEmbedder, memory_text
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.models import Memory

pytestmark = pytest.mark.django_db


class RecordingEmbedder:
    """The local model, recording every text it is asked to embed."""

    def __init__(self) -> None:
        self.inner = LocalOnnxEmbedder()
        self.name = self.inner.name
        self.dimensions = self.inner.dimensions
        self.texts: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed_batch(texts)


@pytest.fixture
def recording(monkeypatch):
    recorder = RecordingEmbedder()
    monkeypatch.setattr(embeddings, "_embedder", CachedEmbedder(recorder))
    return recorder


def _turn(index: int, text: str) -> IngestItem:
    return IngestItem(
        contact_id="arjun",
        conversation_id="c1",
        message=text,
        speaker="Arjun",
        message_id=f"m{index}",
        occurred_at=datetime(2026, 5, 8, 10, index, tzinfo=UTC),
    )


def test_a_batch_embeds_each_candidate_text_once_and_nothing_else(tenant, recording):
    turns = [
        "My dog Bruno is a beagle and I work at Infosys",
        "We went hiking near the lake on Saturday with my sister Priya",
        "We went hiking near the lake on Saturday with my sister Priya",  # said twice: one text, embedded once
        "I love spicy food, especially Thai curries",
        "lol",  # low content: no memory, nothing embedded
    ]
    ingest_messages(tenant=tenant, items=[_turn(index, text) for index, text in enumerate(turns)], actor="test")

    stored = Memory.objects.filter(tenant=tenant)
    texts = {memory_text(content=memory.content, index_terms=memory.index_terms) for memory in stored}
    episodes = [memory for memory in stored if memory.memory_type == "episode"]
    assert len(episodes) == 3  # three distinct turns with content; the repeated one is the same episode
    assert len(texts) > len(episodes)  # facts and preferences of their own
    assert len(recording.texts) == len(set(recording.texts))  # no text twice
    assert set(recording.texts) == texts  # exactly the stored memories' texts: one per candidate
