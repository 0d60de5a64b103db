"""GET /knowledge/search, through the API on real PostgreSQL, Redis and the embedder."""

from __future__ import annotations

import pytest

from tests.knowledge.uploads import upload_processed

pytestmark = pytest.mark.django_db

RETURNS_POLICY = (
    "Returns are accepted within thirty days of delivery with the receipt. Refunds go back to the original card "
    "within five working days. Sale items can be exchanged but not refunded. "
)


def _document(api, title="Returns policy", content=RETURNS_POLICY * 3):
    return upload_processed(api, {"title": title, "content": content})["id"]


def test_knowledge_search_finds_the_chunk_and_is_scoped_to_the_tenant(api, other_api):
    document_id = _document(api)
    _document(api, title="Opening hours", content="We open at nine and close at six, Monday to Saturday. " * 5)
    body = api.get("/api/v1/knowledge/search", {"query": "how long do refunds take?"}).json()
    top = body["results"][0]
    assert (top["document_id"], top["document_title"]) == (document_id, "Returns policy")
    assert "Refunds go back" in top["content"]
    assert top["explain"]["cosine"] > 0 and top["explain"]["found_by"]
    assert other_api.get("/api/v1/knowledge/search", {"query": "how long do refunds take?"}).json()["results"] == []


@pytest.mark.parametrize("params", [{}, {"query": ""}, {"query": "refunds", "top_k": 0}, {"query": "x", "top_k": 51}])
def test_knowledge_search_bad_input_is_400(api, params):
    response = api.get("/api/v1/knowledge/search", params)
    assert response.status_code == 400
    assert response.json()["error"]["code"]
