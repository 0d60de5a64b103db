"""A real Celery worker process consumes a task through the real Redis broker and writes to PostgreSQL."""

from __future__ import annotations

import pytest

from apps.conversations.models import Conversation
from apps.memories.models import ConsolidationRun
from apps.memories.tasks import consolidate_conversation_task
from tests.conftest import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]


def test_a_queued_task_runs_on_the_worker_and_writes_to_postgresql(api, tenant, celery_worker_process):
    body = {"contact_id": "c", "conversation_id": "v", "message": "I live in Pune", "role": "user"}
    assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    conversation = Conversation.objects.get(tenant=tenant, external_id="v")
    consolidate_conversation_task.delay(conversation_id=str(conversation.pk))
    run = wait_until(lambda: ConsolidationRun.objects.filter(tenant=tenant, kind="deferred", status="done").first())
    assert run is not None
    assert celery_worker_process.poll() is None  # the worker is still alive and consuming
