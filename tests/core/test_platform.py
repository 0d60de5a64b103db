from __future__ import annotations

import pytest
from django.db import connection

from apps.core.health import worker_heartbeat_record

pytestmark = pytest.mark.django_db


def test_pgvector_is_installed_and_hnsw_works():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE probe (id int, embedding vector(3))")
        cursor.execute("CREATE INDEX ON probe USING hnsw (embedding vector_cosine_ops)")
        cursor.execute("INSERT INTO probe VALUES (1, '[1,0,0]'), (2, '[0,1,0]')")
        cursor.execute("SELECT id FROM probe ORDER BY embedding <=> '[0.9,0.1,0]' LIMIT 1")
        assert cursor.fetchone() == (1,)


def test_healthz_reports_components(client):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert body["database"]["ok"] is True
    assert body["database"]["pgvector"]
    assert body["redis"] == {"ok": True}
    assert body["worker"] == {"ok": False, "last_heartbeat_seconds_ago": None}
    assert body["status"] == "degraded"

    worker_heartbeat_record()
    body = client.get("/healthz").json()
    assert body["worker"]["ok"] is True
    assert body["status"] == "ok"


def test_healthz_does_not_publish_the_error_text_of_a_component_that_is_down(client, settings):
    """Redis really unreachable (a closed port): the public answer says so, the details stay in the log."""
    from apps.core.redis import get_redis

    settings.REDIS_URL = "redis://:s3cret-password@127.0.0.1:1/0"
    get_redis.cache_clear()
    try:
        response = client.get("/healthz")
    finally:
        get_redis.cache_clear()  # the settings fixture restores the URL after the test; the pool follows it
    body = response.json()
    assert response.status_code == 503
    assert body["redis"] == {"ok": False, "error": "unreachable"}
    assert "s3cret" not in response.content.decode() and "127.0.0.1" not in response.content.decode()


def test_unknown_api_route_is_json_404(client):
    response = client.get("/api/v1/does-not-exist")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Not found.", "details": {}}}


def test_schema_and_docs_are_served(client):
    schema = client.get("/api/v1/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/contacts" in schema.content
    assert client.get("/api/v1/docs/").status_code == 200


def test_method_not_allowed_has_error_shape(api):
    response = api.put("/api/v1/contacts", {}, format="json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
