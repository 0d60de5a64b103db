"""What the logs hold at INFO: never a message's text, a memory's content, a query, contact metadata or an API
key — the web process's records and a real worker's output, through a conversation that touches every write
and read path, a rejected request and the deferred consolidation (docs/reliability.md, "Production
settings")."""

from __future__ import annotations

import logging

import pytest

from apps.memories.models import ConsolidationRun
from tests.conftest import ROOT, start_celery_worker, stop_celery_worker, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]

# words no code path would log unless it logged what clients send
SAID = "My cousin Zanzibarina keeps her boat Quillwhistle in Tromsoe harbour."
QUERY = "where does Zanzibarina keep Quillwhistle?"
WRITTEN = "Prefers Marmalunket tea in the mornings."
METADATA = "Vexborough Lane 17"
REJECTED = "Ploverhazel wants a refund"


def test_no_client_text_or_key_reaches_the_logs_at_info(api, issued_key, settings, caplog, test_database_url):
    settings.ENGRAM = {**settings.ENGRAM, "CONSOLIDATION_DELAY_SECONDS": 1}
    worker = start_celery_worker(database_url=test_database_url, name="logs")
    caplog.set_level(logging.INFO)
    try:
        turn = {"contact_id": "c-1", "conversation_id": "v-1", "role": "user", "message_id": "m1", "message": SAID}
        assert api.post("/api/v1/ingest", turn, format="json").status_code == 202
        batch = {"messages": [{**turn, "message_id": "m2", "message": f"{SAID} Really."}]}
        assert api.post("/api/v1/ingest/batch", batch, format="json").status_code == 202
        assert api.get("/api/v1/context/c-1", {"query": QUERY}).status_code == 200
        assert (
            api.post("/api/v1/memories/search", {"query": QUERY, "contact_id": "c-1"}, format="json").status_code == 200
        )
        body = {"contact_id": "c-1", "content": WRITTEN, "memory_type": "preference"}
        assert api.post("/api/v1/memories", body, format="json").status_code == 201
        patch = api.patch("/api/v1/contacts/c-1", {"metadata": {"address": METADATA}}, format="json")
        assert patch.status_code == 200
        rejected = api.post("/api/v1/ingest", {"contact_id": "c-1", "message": REJECTED}, format="json")
        assert rejected.status_code == 400  # no role, no conversation: logged as a bad request
        assert api.get("/api/v1/context/c-1", {"query": QUERY, "token_budget": "many"}).status_code == 400
        assert wait_until(lambda: ConsolidationRun.objects.filter(kind="deferred", status="done").exists())
    finally:
        stop_celery_worker(worker)

    worker_log = (ROOT / "var" / "test" / "celery-logs.log").read_text()
    assert "consolidate_conversation_task" in worker_log  # the worker did log its tasks at INFO
    assert caplog.records  # and so did the web process (the bad requests, at least)
    web_log = "\n".join(record.getMessage() for record in caplog.records if record.levelno >= logging.INFO)
    secrets = ["Zanzibarina", "Quillwhistle", "Marmalunket", "Vexborough", "Ploverhazel", issued_key.plaintext]
    for log_name, text in (("web", web_log), ("worker", worker_log)):
        leaked = [secret for secret in secrets if secret.lower() in text.lower()]
        assert leaked == [], f"{log_name} log holds {leaked}"
