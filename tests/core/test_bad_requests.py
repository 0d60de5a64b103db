"""Bad requests get a 4xx with the error shape, never a 500: a body over the size cap, JSON nested too deep,
NUL in an id of the URL."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def test_a_body_over_the_size_cap_is_413(api):
    body = json.dumps(
        {"messages": [{"contact_id": "c", "conversation_id": "v", "role": "user", "message": "x" * 30_000}] * 150}
    )
    assert len(body) > 3 * 1024 * 1024
    response = api.generic("POST", "/api/v1/ingest/batch", body, content_type="application/json")
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "too_large"


def test_json_nested_too_deep_is_400(api):
    body = "[" * 100_000 + "]" * 100_000
    response = api.generic("POST", "/api/v1/memories/search", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "parse_error"


@pytest.mark.parametrize(
    "path",
    ["/api/v1/contacts/ab%00c", "/api/v1/memories/ab%00c", "/api/v1/conversations/ab%00c", "/api/v1/context/ab%00c"],
    ids=["contact", "memory", "conversation", "context"],
)
def test_nul_in_an_id_of_the_url_is_404(api, path):
    response = api.get(path)
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"


@pytest.fixture
def embedder_down(settings):
    """A remote embedding service on a closed port, for the test; the process embedder rebuilt after it."""
    from apps.core.embeddings import reset_embedder

    settings.ENGRAM = {
        **settings.ENGRAM,
        "EMBEDDER": "openai",
        "EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1",
        "EMBEDDING_API_KEY": "k",
        "EMBEDDING_TIMEOUT_SECONDS": 1.0,
    }
    reset_embedder()
    yield
    reset_embedder()


def test_an_embedder_that_is_down_is_503_with_a_public_message(api, embedder_down):
    """A remote embedding service on a closed port: search and context answer 503, the host stays private."""

    search = api.post("/api/v1/memories/search", {"query": "a question never asked before 7c1f"}, format="json")
    assert search.status_code == 503, search.content
    assert search.json()["error"] == {
        "code": "embedder_unavailable",
        "message": "The embedding service is unavailable; retry shortly.",
        "details": {},
    }
    assert "127.0.0.1" not in search.content.decode()


def test_ingest_with_the_embedder_down_keeps_the_message_and_answers_202(api, tenant, embedder_down):
    """The message is committed before extraction: with the embedder down it is accepted (no memories yet),
    its event pending with the reason, and the retry task extracts it once the embedder is back."""
    from apps.memories.models import ContextEvent, Memory

    body = {"contact_id": "c", "conversation_id": "v", "role": "user", "message": "I work at Infosys, zq81"}
    response = api.post("/api/v1/ingest", body, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["memories"] == []
    event = ContextEvent.objects.get(tenant=tenant)
    assert event.extracted_at is None and event.attempts == 1 and "EmbedderUnavailable" in event.last_error
    assert not Memory.objects.filter(tenant=tenant).exists()


@pytest.mark.parametrize("escaped", ["a\\u0000b", "lone \\ud83d surrogate"], ids=["nul", "surrogate"])
def test_json_that_postgres_cannot_store_is_a_400(api, escaped):
    """Found by the fuzz test: a NUL or an unpaired surrogate inside free-form JSON (metadata) was a 500."""
    api.post("/api/v1/contacts", {"contact_id": "asha"}, format="json")
    in_a_value = '{"metadata": {"note": "' + escaped + '"}}'
    response = api.patch("/api/v1/contacts/asha", in_a_value, content_type="application/json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_text" and error["message"].startswith("metadata.note must not contain NUL")
    assert error["details"] == {
        "metadata.note": ["This field must not contain NUL (\\u0000) or unpaired surrogate characters."]
    }
    in_a_key = '{"contact_id": "b", "metadata": {"' + escaped + '": 1}}'
    assert api.post("/api/v1/contacts", in_a_key, content_type="application/json").status_code == 400
