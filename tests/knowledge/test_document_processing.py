"""A knowledge document is processed on the worker (issue 32 item 5): the upload answers 202 with a status URL,
the worker makes it ready (or failed, with a message), and search reads ready documents only."""

from __future__ import annotations

import time

import pytest

from apps.core.embeddings import reset_embedder
from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from apps.knowledge.services import document_delete, document_process
from apps.knowledge.tasks import document_process_task
from tests.conftest import wait_until
from tests.knowledge.uploads import upload_processed

RETURNS = "Refunds go back to the original card within five working days of the return. " * 4
HOURS = "The bakery opens at nine and closes at six, Monday to Saturday; sourdough sells out by noon. " * 4


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_an_upload_is_accepted_then_made_ready_by_the_worker(api, tenant, celery_worker_process):
    response = api.post("/api/v1/knowledge/documents", {"title": "Returns", "content": RETURNS}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "processing" and body["chunk_count"] == 0 and body["processed_at"] is None
    assert body["status_url"] == f"/api/v1/knowledge/documents/{body['id']}" == response["Location"]

    def ready() -> dict | None:
        polled = api.get(body["status_url"]).json()
        return polled if polled["status"] != "processing" else None

    polled = wait_until(ready, timeout=60)
    assert polled is not None, "the worker never processed the document"
    assert polled["status"] == "ready" and polled["status_message"] == "" and polled["chunk_count"] >= 1
    hits = api.get("/api/v1/knowledge/search", {"query": "how long do refunds take?"}).json()["results"]
    assert hits and hits[0]["document_id"] == body["id"]


@pytest.mark.django_db
def test_search_reads_ready_documents_only(api, tenant):
    ready = upload_processed(api, {"title": "Returns", "content": RETURNS})
    hours = upload_processed(api, {"title": "Hours", "content": HOURS})
    failed = upload_processed(api, {"title": "Hours again", "content": HOURS})
    KnowledgeDocument.objects.filter(pk=hours["id"]).update(status="processing")  # as if its chunks were new
    KnowledgeDocument.objects.filter(pk=failed["id"]).update(status="failed")
    for query in ("when does the bakery open?", "sourdough noon Saturday"):  # by meaning, by keywords
        hits = api.get("/api/v1/knowledge/search", {"query": query, "top_k": 50}).json()["results"]
        assert {hit["document_id"] for hit in hits} <= {ready["id"]}, query
    assert api.get("/api/v1/knowledge/search", {"query": "refunds original card"}).json()["results"]

    chunks = KnowledgeChunk.objects.filter(document_id=ready["id"]).count()
    document_process(document=KnowledgeDocument.objects.get(pk=ready["id"]))  # a task delivered again
    assert KnowledgeChunk.objects.filter(document_id=ready["id"]).count() == chunks


@pytest.mark.django_db
def test_a_document_the_embedder_cannot_take_fails_with_a_public_message(api, tenant, settings):
    response = api.post("/api/v1/knowledge/documents", {"title": "Returns", "content": RETURNS}, format="json")
    document_id = response.json()["id"]
    settings.ENGRAM = {
        **settings.ENGRAM,
        "EMBEDDER": "openai",
        "EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1",  # nothing listens there
        "EMBEDDING_API_KEY": "k",
        "EMBEDDING_TIMEOUT_SECONDS": 1.0,
    }
    reset_embedder()
    try:
        # run here, eagerly: its retries run at once instead of a minute apart, then it gives up
        document_process_task.apply(kwargs={"tenant_id": str(tenant.pk), "document_id": document_id})
    finally:
        reset_embedder()
    body = api.get(response.json()["status_url"]).json()
    assert (body["status"], body["status_message"]) == (
        "failed",
        "The embedding service is unavailable; retry shortly.",
    )
    assert body["chunk_count"] == 0 and not KnowledgeChunk.objects.filter(document_id=document_id).exists()
    assert "127.0.0.1" not in str(body)


@pytest.mark.django_db(transaction=True)
def test_a_document_deleted_while_the_worker_writes_its_chunks_goes_with_them(api, tenant):
    """The worker writes a document's chunks holding its row lock; a deletion meanwhile waits for it and takes
    the new chunks along (collected before the lock, they broke the deletion's foreign key: a 500, seen by the
    stateful fuzz test)."""
    import threading

    from django.db import connection, transaction

    document = KnowledgeDocument.objects.get(
        pk=api.post("/api/v1/knowledge/documents", {"title": "Hours", "content": HOURS}, format="json").json()["id"]
    )
    locked, failures = threading.Event(), []

    def worker() -> None:
        try:
            with transaction.atomic():
                KnowledgeDocument.objects.select_for_update().get(pk=document.pk)
                locked.set()
                time.sleep(0.5)  # the deletion arrives now
                KnowledgeChunk.objects.create(
                    tenant_id=document.tenant_id, document=document, position=0, content=HOURS, token_count=20
                )
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    writer = threading.Thread(target=worker)
    writer.start()
    assert locked.wait(10)
    document_delete(document=document)
    writer.join()
    assert failures == []
    assert not KnowledgeDocument.objects.filter(pk=document.pk).exists()
    assert not KnowledgeChunk.objects.filter(document_id=document.pk).exists()


@pytest.mark.django_db
def test_a_document_whose_task_was_lost_is_queued_again_then_given_up(api, tenant):
    """The broker lost the task (the embedded Redis keeps nothing over a restart): the 5-minute sweep queues a
    document still processing 10 minutes on, twice more, then fails it."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.core.redis import get_redis
    from apps.knowledge.services import documents_requeue_stale

    lost = api.post("/api/v1/knowledge/documents", {"title": "Hours", "content": HOURS}, format="json").json()
    fresh = api.post("/api/v1/knowledge/documents", {"title": "Returns", "content": RETURNS}, format="json").json()
    stale_since = timezone.now() - timedelta(minutes=11)
    KnowledgeDocument.objects.filter(pk=lost["id"]).update(updated_at=stale_since)
    queued_before = get_redis().llen("celery")  # the broker's queue (Celery's default, a Redis list)

    assert documents_requeue_stale() == 1
    assert get_redis().llen("celery") == queued_before + 1
    assert documents_requeue_stale() == 0  # touched: not stale again for 10 minutes
    KnowledgeDocument.objects.filter(pk=lost["id"]).update(updated_at=stale_since)
    assert documents_requeue_stale() == 1  # the third time it is queued
    KnowledgeDocument.objects.filter(pk=lost["id"]).update(updated_at=stale_since)
    assert documents_requeue_stale() == 1
    assert get_redis().llen("celery") == queued_before + 2
    body = api.get(lost["status_url"]).json()
    assert (body["status"], body["status_message"]) == (
        "failed",
        "The document could not be processed after three attempts; upload it again.",
    )
    assert api.get(fresh["status_url"]).json()["status"] == "processing"
