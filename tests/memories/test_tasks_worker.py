"""Lifecycle tasks through a real Celery worker process, the real Redis broker and PostgreSQL."""

from __future__ import annotations

import json
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.conversations.models import Conversation
from apps.core.redis import get_redis
from apps.memories.dispatch import consolidation_debounce_key
from apps.memories.lifecycle.scheduling import lost_consolidations_requeue
from apps.memories.models import ConsolidationRun, ContextEvent, Memory, MemoryEntity, ProfileAudit
from apps.memories.tasks import extract_pending_events_task, periodic_consolidation_task, process_context_events_task
from tests.conftest import start_celery_worker, stop_celery_worker, wait_until
from tests.factories import TenantFactory
from tests.fake_openai import fake_openai_fixture  # noqa: F401  (the fixture is `fake_openai`)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]


def test_ingest_queues_debounced_consolidation_that_the_worker_runs(api, settings, celery_worker_process):
    # a burst is turns closer together than the delay: 5 s holds three requests even on a loaded machine (at 1 s
    # the third request of a busy run came after the first run had started, and a second run was right)
    settings.ENGRAM = {**settings.ENGRAM, "CONSOLIDATION_DELAY_SECONDS": 5}
    for index, text in enumerate(["I live in Pune", "I work at Infosys", "My dog Bruno is a beagle"]):
        body = {
            "contact_id": "arjun",
            "conversation_id": "burst",
            "message": text,
            "role": "user",
            "message_id": f"b{index}",
        }
        assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    run = wait_until(lambda: ConsolidationRun.objects.filter(kind="deferred", status="done").first())
    assert run is not None, "the worker never ran the deferred consolidation"
    assert run.contact.external_id == "arjun"
    # three turns in a burst, one run (debounced)
    assert ConsolidationRun.objects.filter(kind="deferred").count() == 1


def test_a_consolidation_lost_with_the_broker_is_found_in_postgres_and_run(api, settings, celery_worker_process):
    """The countdown task of a deferred consolidation lives only in Redis: after a Redis restart (task and
    debounce key gone) the per-minute sweep finds the conversation in PostgreSQL and queues it again."""
    settings.ENGRAM = {**settings.ENGRAM, "CONSOLIDATION_DELAY_SECONDS": 3600}  # its own task would wait an hour
    body = {
        "contact_id": "arjun",
        "conversation_id": "lost",
        "message": "I live in Pune",
        "role": "user",
        "occurred_at": (timezone.now() - timedelta(hours=2)).isoformat(),
    }
    assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    conversation = Conversation.objects.get(external_id="lost")
    assert lost_consolidations_requeue() == 0  # its task is pending (the debounce key says so)

    get_redis().delete(consolidation_debounce_key(conversation.pk))  # Redis restarted: task and key lost
    assert lost_consolidations_requeue() == 1

    run = wait_until(lambda: ConsolidationRun.objects.filter(kind="deferred", status="done").first())
    assert run is not None and run.contact.external_id == "arjun"
    conversation.refresh_from_db()
    assert conversation.consolidated_at > conversation.last_message_at
    assert lost_consolidations_requeue() == 0  # done: nothing due


def test_periodic_consolidation_fans_out_per_tenant_scope_and_purge(api, tenant, celery_worker_process):
    """Beat's task queues one task per tenant, which queues one per scope (each contact with memories, the
    brain) and one purge: every scope its own run."""
    other = TenantFactory()
    for contact_id in ("ann", "bob"):
        body = {
            "contact_id": contact_id,
            "conversation_id": f"c-{contact_id}",
            "message": "I live in Pune",
            "role": "user",
        }
        assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    periodic_consolidation_task.delay()
    done = wait_until(
        lambda: (
            ConsolidationRun.objects.filter(tenant=tenant, status="done").count() >= 4
            and ConsolidationRun.objects.filter(tenant=other, status="done").count() >= 2
        ),
        timeout=60,
    )
    assert done
    runs = ConsolidationRun.objects.filter(tenant=tenant)
    scopes = sorted((run.contact.external_id if run.contact else "brain") for run in runs.filter(kind="periodic"))
    assert scopes == ["ann", "bob", "brain"]
    assert runs.filter(kind="purge", status="done").count() == 1


def test_killing_a_worker_mid_run_loses_nothing(api, tenant, fake_openai, test_database_url):
    """A worker killed while a task waits on the model: the task was taken but never acknowledged (acks_late), so
    the broker hands it out again once its visibility timeout has passed (here 2 s, ENGRAM_BROKER_VISIBILITY_TIMEOUT;
    an hour by default) — nothing sends it a second time — and the next worker runs it, once in effect."""
    body = {
        "contact_id": "arjun",
        "conversation_id": "c1",
        "message": "I work at Infosys",
        "role": "user",
        "message_id": "k1",
    }
    assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    worker_env = {
        "LLM_BASE_URL": fake_openai.base_url + "/v1",
        "LLM_API_KEY": "test",
        "LLM_TIMEOUT_SECONDS": "60",
        "ENGRAM_BROKER_VISIBILITY_TIMEOUT": "2",
    }
    answer = json.dumps(
        {"updated_scaffold": {"Work": "Infosys"}, "updated_working_memory": "Works at Infosys.", "facts_to_embed": []}
    )

    fake_openai.enqueue_delay(30, then=answer)  # the model is slow: the worker is killed while it waits
    worker = start_celery_worker(
        database_url=test_database_url, name="doomed", queues="lifecycle-test", extra_env=worker_env
    )
    try:
        process_context_events_task.apply_async(queue="lifecycle-test")
        assert wait_until(lambda: fake_openai.chat_requests, timeout=30), "the task never reached the model"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert ContextEvent.objects.filter(tenant=tenant, processed=False).count() == 1
    assert not ProfileAudit.objects.exists()
    asked = len(fake_openai.chat_requests)

    fake_openai.default_chat_content = answer
    time.sleep(2.5)  # past the visibility timeout of the message the killed worker took
    worker = start_celery_worker(
        database_url=test_database_url, name="retry", queues="lifecycle-test", extra_env=worker_env
    )
    try:
        assert wait_until(lambda: not ContextEvent.objects.filter(tenant=tenant, processed=False).exists(), timeout=30)
    finally:
        stop_celery_worker(worker)
    assert len(fake_openai.chat_requests) == asked + 1  # the one task, handed out again and run once
    audit = ProfileAudit.objects.get()
    assert (audit.source, audit.scaffold_after) == ("llm", {"Work": "Infosys"})


def test_a_context_embedding_left_to_the_worker_is_computed_by_it(api, tenant, celery_worker_process):
    """Ingest stores context embeddings inline; context_embed_task drains what an older version queued (and
    serves backfills): through the real broker and worker, the same mix ingest computes."""
    import numpy as np

    from apps.core.embeddings import memory_text
    from apps.memories.models import Memory
    from apps.memories.tasks import context_embed_task

    turns = [
        ("w1", "My family has been amazing, they helped me through a rough winter"),
        ("w2", "They're a real support. I appreciate them a lot."),
    ]
    for message_id, text in turns:
        body = {
            "contact_id": "mel",
            "conversation_id": "s1",
            "message": text,
            "role": "user",
            "message_id": message_id,
            "speaker": "Melanie",
        }
        assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    first = Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids__contains=["w1"])
    episode = Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids__contains=["w2"])
    inline = np.asarray(episode.context_embedding, dtype=np.float32)
    Memory.objects.filter(pk=episode.pk).update(context_embedding=None)
    context_embed_task.delay(memory_ids=[str(episode.pk)])
    done = wait_until(lambda: Memory.objects.filter(pk=episode.pk, context_embedding__isnull=False).exists())
    assert done, "the worker never computed the context embedding"
    episode.refresh_from_db()
    own_text = memory_text(content=episode.content, index_terms=episode.index_terms)
    first_text = memory_text(content=first.content, index_terms=first.index_terms)
    mixed = len(own_text.split()) * np.asarray(episode.embedding) + len(first_text.split()) * np.asarray(
        first.embedding
    )
    assert float(mixed / np.linalg.norm(mixed) @ episode.context_embedding) == pytest.approx(1.0, abs=5e-4)
    assert float(inline @ episode.context_embedding) == pytest.approx(1.0, abs=5e-4)  # what ingest stored


def test_a_task_delivered_again_and_again_is_dropped_after_the_cap(api, tenant):
    """A message whose task killed its worker comes back (acks_late); the fourth delivery of the same task
    id is dropped instead of killing workers forever."""
    from apps.core.task_base import MAX_DELIVERIES, deliveries_key
    from apps.memories.models import ConsolidationRun
    from apps.memories.tasks import consolidate_conversation_task

    body = {"contact_id": "c", "conversation_id": "v", "message": "I live in Pune", "role": "user"}
    assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    conversation = Conversation.objects.get(tenant=tenant, external_id="v")
    for delivery in range(1, MAX_DELIVERIES + 2):
        result = consolidate_conversation_task.apply(
            kwargs={"conversation_id": str(conversation.pk)}, task_id="same-message"
        ).get()
        assert (result is None) is (delivery > MAX_DELIVERIES)
    assert ConsolidationRun.objects.filter(tenant=tenant, kind="deferred").count() == MAX_DELIVERIES
    assert int(get_redis().get(deliveries_key("same-message"))) == MAX_DELIVERIES + 1


def test_a_burst_closed_by_the_other_speaker_is_joined_by_the_worker_soon_after(api, settings, celery_worker_process):
    """Messages with speaker names queue the join of the bursts they closed (debounced, BURSTS_JOIN_DELAY_SECONDS):
    the next request for context finds the whole thought, long before the deferred consolidation."""
    settings.ENGRAM = {**settings.ENGRAM, "BURSTS_JOIN_DELAY_SECONDS": 1, "CONSOLIDATION_DELAY_SECONDS": 3600}
    turns = [
        ("Sam", "I went to the concert yesterday."),
        ("Sam", "Ava came too!"),
        ("Ava", "Best night of the year, honestly."),
    ]
    body = {
        "messages": [
            {"contact_id": "sam", "conversation_id": "live", "message": text, "role": "user", "speaker": speaker}
            | {"message_id": f"m{i}"}
            for i, (speaker, text) in enumerate(turns)
        ]
    }
    assert api.post("/api/v1/ingest/batch", body, format="json").status_code == 202
    joined = wait_until(lambda: Memory.objects.filter(source_message_ids=["m0", "m1"], valid_to__isnull=True).first())
    assert joined is not None, "the worker never joined the burst"
    assert joined.content == "Sam: I went to the concert yesterday. Ava came too!"
    assert not ConsolidationRun.objects.filter(kind="deferred").exists()  # the join did not wait for it


def test_an_extraction_the_worker_retries_is_stored_with_its_entity_links(api, tenant, celery_worker_process):
    """An event whose inline extraction never completed (the request died) is retried by the worker's sweep,
    across tenants, as the maintenance login: its memories are stored, linked to the entities they name. The
    rows written there were marked with the `maintenance` alias and every retry failed on its first entity
    link ("the current database router prevents this relation"), so such a message never had a memory
    (docs/benchmarks.md, Session 34)."""
    body = {
        "contact_id": "jon",
        "conversation_id": "s1",
        "message": "I have a sister named Maya",
        "role": "user",
        "message_id": "m1",
        "speaker": "Jon",
    }
    event_id = api.post("/api/v1/ingest", body, format="json").json()["event_id"]
    Memory.objects.filter(tenant=tenant).delete()  # the entities stay: the retry links them again
    ContextEvent.objects.filter(pk=event_id).update(
        extracted_at=None, result={}, created_at=timezone.now() - timedelta(hours=1)
    )

    extract_pending_events_task.delay()
    finished = wait_until(
        lambda: ContextEvent.objects.filter(pk=event_id).exclude(extracted_at=None, attempts=0).exists()
    )
    assert finished, "the worker never retried the extraction"
    event = ContextEvent.objects.get(pk=event_id)
    assert event.extracted_at is not None, event.last_error
    assert Memory.objects.filter(tenant=tenant, source_message_ids__contains=["m1"]).exists()
    linked = MemoryEntity.objects.filter(memory__tenant=tenant).values_list("entity__slug", flat=True)
    assert "maya" in set(linked)
