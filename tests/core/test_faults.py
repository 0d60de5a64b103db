"""Faults with real processes: nothing lost, nothing duplicated (docs/reliability.md)."""

from __future__ import annotations

import os
import shutil
import socket

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection
from django.test import Client

from apps.conversations.models import Conversation, Message
from apps.conversations.window import window_get, window_keys
from apps.core.embeddings import reset_embedder
from apps.core.redis import get_redis
from apps.memories.models import ConsolidationRun, ContextEvent, Memory
from config import embedded
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # windows are written when the ingest commits


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def own_redis(settings):
    """A redis-server of this test's own (the session's is shared), which the test may stop and restart."""
    profile = embedded.EmbeddedProfile(name=f"test-faults-{_free_port()}", redis_port=_free_port())
    settings.REDIS_URL = embedded.redis_url(profile)
    get_redis.cache_clear()
    reset_embedder()
    yield profile
    embedded.stop_redis(profile)
    shutil.rmtree(profile.root, ignore_errors=True)
    get_redis.cache_clear()
    reset_embedder()


def _say(api, text: str, message_id: str):
    body = {"contact_id": "asha", "conversation_id": "c1", "message": text, "role": "user", "message_id": message_id}
    return api.post("/api/v1/ingest", body, format="json")


def test_redis_stopped_during_ingest_loses_nothing_and_the_window_comes_back(api, own_redis):
    said = {
        "m1": "My dog Bruno is a beagle.",
        "m2": "I work as a nurse at the city hospital.",
        "m3": "My sister Priya lives in Berlin.",
        "m4": "I am learning to play the violin.",
    }
    assert _say(api, said["m1"], "m1").status_code == 202
    conversation = Conversation.objects.get(external_id="c1")
    assert get_redis().exists(window_keys(conversation)[0])

    embedded.stop_redis(own_redis)  # Redis goes away mid-conversation
    for message_id in ("m2", "m3"):
        answer = _say(api, said[message_id], message_id)
        assert answer.status_code == 202, answer.content  # accepted, and durable in PostgreSQL
        assert answer.json()["memories"]  # extracted inline all the same
    assert api.get("/api/v1/context/asha", {"query": "who is Priya?", "token_budget": 500}).status_code == 200
    assert [turn.message_id for turn in window_get(conversation=conversation)] == ["m1", "m2", "m3"]  # the ledger

    embedded.redis_url(own_redis)  # back, empty (no persistence)
    assert _say(api, said["m4"], "m4").status_code == 202
    assert [turn.message_id for turn in window_get(conversation=conversation)] == ["m1", "m2", "m3", "m4"]
    assert get_redis().exists(window_keys(conversation)[0])  # rebuilt in Redis from the ledger

    # in = out: every message once in the ledger, once as an event, extracted; each turn's episode once
    assert sorted(Message.objects.values_list("external_id", flat=True)) == ["m1", "m2", "m3", "m4"]
    assert ContextEvent.objects.filter(extracted_at__isnull=False).count() == 4
    episodes = Memory.objects.filter(memory_type="episode")
    assert sorted(source for episode in episodes for source in episode.source_message_ids) == ["m1", "m2", "m3", "m4"]
    assert _say(api, said["m2"], "m2").json()["duplicate"] is True  # a client's retry adds nothing
    assert Message.objects.count() == 4


def test_a_postgres_restart_drops_connections_and_the_next_request_reconnects(api):
    """A restart ends every server connection. The web keeps running: the next request finds its connection
    dead (CONN_HEALTH_CHECKS), opens a new one and answers; nothing needs restarting."""
    assert _say(api, "My dog Bruno is a beagle.", "r1").status_code == 202
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        before = cursor.fetchone()[0]
    with psycopg.connect(_dsn(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
    # what Django does at the start of each request (request_started): drop a connection that fails its check
    close_old_connections()
    assert api.get("/api/v1/context/asha", {"query": "what is my dog called?"}).status_code == 200
    assert _say(api, "Bruno loves the beach.", "r2").status_code == 202
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != before  # a new server connection
    assert Message.objects.count() == 2


@pytest.mark.celery_worker
@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="an external server is not the tests' to stop")
def test_postgres_stopped_answers_503_and_web_and_worker_recover_when_it_is_back(api, settings, celery_worker_process):
    """The server itself stopped and started again (not just its connections ended), under a running web
    process (this one) and a running worker (the session's): while it is down every request is a clean 503
    the client may retry; when it is back both serve again without being restarted, and the retried message
    is stored once."""
    settings.ENGRAM = {**settings.ENGRAM, "CONSOLIDATION_DELAY_SECONDS": 1}
    assert _say(api, "My dog Bruno is a beagle.", "p1").status_code == 202
    assert wait_until(lambda: ConsolidationRun.objects.filter(kind="deferred", status="done").count() == 1)
    connection.close()

    embedded.stop_postgres(embedded.TEST)
    try:
        close_old_connections()  # request_started (the test client disconnects it)
        down = _say(api, "I work as a nurse at the city hospital.", "p2")
        assert down.status_code == 503, down.content
        assert down.json()["error"]["code"] == "database_unavailable"
        close_old_connections()
        read = api.get("/api/v1/context/asha", {"query": "what is my dog called?"})
        assert read.status_code == 503 and read.json()["error"]["code"] == "database_unavailable"
    finally:
        embedded.postgres_url(embedded.TEST)  # started again, same data directory

    close_old_connections()
    assert api.get("/api/v1/context/asha", {"query": "what is my dog called?"}).status_code == 200
    retried = _say(api, "I work as a nurse at the city hospital.", "p2")  # the client's retry
    assert retried.status_code == 202 and retried.json()["duplicate"] is False
    # the worker was not restarted: its dead connection is replaced at its next task, which it runs
    assert wait_until(lambda: ConsolidationRun.objects.filter(kind="deferred", status="done").count() == 2)
    assert sorted(Message.objects.values_list("external_id", flat=True)) == ["p1", "p2"]
    assert ContextEvent.objects.filter(extracted_at__isnull=False).count() == 2


def _dsn() -> str:
    settings_dict = connection.settings_dict
    parts = {
        "dbname": settings_dict["NAME"],
        "user": settings_dict["USER"],
        "password": settings_dict["PASSWORD"],
        "host": settings_dict["HOST"],
        "port": settings_dict["PORT"],
    }
    return " ".join(f"{key}={value}" for key, value in parts.items() if value)


def test_with_redis_stopped_the_limits_fail_open_and_apply_again_when_it_is_back(api, tenant, own_redis, settings):
    """The stated choice (docs/reliability.md "Limits when Redis is down"): the rate limit and the heavy-request
    cap are counted in Redis; while it is stopped every request runs uncounted, and once it is back both apply."""
    from apps.tenants.concurrency import heavy_slot_take

    settings.ENGRAM = {**settings.ENGRAM, "RATE_LIMIT_PER_MINUTE": 3, "HEAVY_REQUESTS_PER_TENANT": 1}
    batch = {"messages": [{"contact_id": "asha", "conversation_id": "c1", "message": "hi", "role": "user"}]}
    heavy_slot_take(tenant=tenant)  # a heavy request in flight when Redis goes away
    embedded.stop_redis(own_redis)
    answers = [api.get("/api/v1/contacts").status_code for _ in range(5)]
    answers += [api.post("/api/v1/ingest/batch", batch, format="json").status_code for _ in range(2)]
    assert answers == [200] * 5 + [202] * 2  # over both limits, served

    embedded.redis_url(own_redis)  # back, empty
    heavy_slot_take(tenant=tenant)
    refused = api.post("/api/v1/ingest/batch", batch, format="json")
    assert refused.status_code == 429 and "heavy request" in refused.json()["error"]["message"]
    assert [api.get("/api/v1/contacts").status_code for _ in range(3)] == [200, 200, 429]  # the 4th request


def test_with_redis_stopped_sign_in_works_unthrottled(own_redis, settings):
    """Sign-in failures are counted in Redis (apps/tenants/login_throttle.py); a cache outage must not lock
    operators out of the admin: with Redis stopped, more failures than allowed lock nothing and the right
    password signs in."""
    user = get_user_model().objects.create_user(username="olga", password="correct horse battery staple")
    user.is_staff = user.is_superuser = True
    user.save()
    embedded.stop_redis(own_redis)
    allowed = settings.ENGRAM["LOGIN_FAILURES_ALLOWED"]
    for attempt in range(allowed + 2):
        refused = Client(REMOTE_ADDR="203.0.113.7").post(
            "/admin/login/", {"username": "olga", "password": f"wrong-{attempt}", "next": "/admin/"}
        )
        assert refused.status_code == 200 and "Too many failed sign-ins" not in refused.content.decode()
    client = Client(REMOTE_ADDR="203.0.113.7")
    client.post("/admin/login/", {"username": "olga", "password": "correct horse battery staple", "next": "/admin/"})
    assert "_auth_user_id" in client.session
