"""A batch's inline extraction is bounded in time (issue 29 item 3): over the budget, the request stops
starting chunks and the real worker extracts the rest. On a starved write pool a 200-turn batch used to run
past gunicorn's 120 s timeout and be killed (a 502 after two minutes) instead of answering."""

from __future__ import annotations

import pytest

from apps.memories.ingest.services import EXTRACTION_CHUNK
from apps.memories.models import ContextEvent, Memory
from tests.conftest import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]

CITIES = ["Pune", "Lisbon", "Osaka", "Denver", "Nairobi", "Quito", "Tallinn", "Perth", "Hanoi", "Bergen"]


def _batch(count: int) -> dict:
    return {
        "messages": [
            {
                "contact_id": "arjun",
                "conversation_id": "long-batch",
                "message": f"My cousin number {index} moved to {CITIES[index % len(CITIES)]} last spring",
                "role": "user",
                "message_id": f"turn-{index}",
            }
            for index in range(count)
        ]
    }


def test_a_batch_over_its_inline_budget_answers_and_the_worker_extracts_the_rest(api, settings, celery_worker_process):
    settings.ENGRAM = {**settings.ENGRAM, "INGEST_INLINE_SECONDS": 0.0}  # over budget after the first chunk
    count = EXTRACTION_CHUNK + 6
    response = api.post("/api/v1/ingest/batch", _batch(count), format="json")

    assert response.status_code == 202, response.content
    results = response.json()["results"]
    assert [row["message_id"] for row in results] == [f"turn-{index}" for index in range(count)]
    # the first chunk inline, with its memories in the answer; the rest said to be pending
    assert [row["extraction"] for row in results] == ["done"] * EXTRACTION_CHUNK + ["pending"] * 6
    assert all(row["memories"] for row in results[:EXTRACTION_CHUNK])
    assert not any(row["memories"] for row in results[EXTRACTION_CHUNK:])
    # the contact state (crisis check) is never deferred
    assert all(row["crisis"]["detected"] is False for row in results)

    deferred = [row["event_id"] for row in results[EXTRACTION_CHUNK:]]
    done = wait_until(lambda: not ContextEvent.objects.filter(pk__in=deferred, extracted_at__isnull=True).exists())
    assert done, "the worker never extracted the deferred events"
    # what the worker extracted is stored: each deferred turn is the source of a memory
    for index in range(EXTRACTION_CHUNK, count):
        assert Memory.objects.filter(source_message_ids__contains=[f"turn-{index}"]).exists(), index

    # the event endpoint tells a client polling a pending event that it is done
    event = api.get(f"/api/v1/events/{deferred[-1]}")
    assert event.status_code == 200, event.content
    assert event.json()["extracted_at"] is not None
    assert event.json()["result"]["memories"]


def test_within_its_budget_a_batch_is_extracted_inline(api, settings):
    settings.ENGRAM = {**settings.ENGRAM, "INGEST_INLINE_SECONDS": 600.0}
    count = EXTRACTION_CHUNK + 6
    response = api.post("/api/v1/ingest/batch", _batch(count), format="json")

    assert response.status_code == 202, response.content
    assert {row["extraction"] for row in response.json()["results"]} == {"done"}
    assert not ContextEvent.objects.filter(extracted_at__isnull=True).exists()
