"""POST /brain/context (the tenant copilot payload), through the API on real PostgreSQL, Redis and the embedder
(GET /knowledge/search: tests/knowledge/test_knowledge_search.py)."""

from __future__ import annotations

import pytest

from apps.context.budgets import SECTION_LIMITS, TOTAL_LIMIT, VERBATIM_TURNS
from apps.memories.ingest.services import memory_add
from tests.factories import ContactFactory
from tests.knowledge.uploads import upload_processed

pytestmark = pytest.mark.django_db

RETURNS_POLICY = (
    "Returns are accepted within thirty days of delivery with the receipt. Refunds go back to the original card "
    "within five working days. Sale items can be exchanged but not refunded. "
)


def _document(api, title="Returns policy", content=RETURNS_POLICY * 3):
    return upload_processed(api, {"title": title, "content": content})["id"]


def test_brain_context_sections_budget_and_tenant_scope(api, other_api, tenant):
    memory_add(tenant=tenant, contact=None, memory_type="fact", content="We ship refunds by bank transfer", actor="t")
    contact = ContactFactory(tenant=tenant, external_id="arjun")
    memory_add(tenant=tenant, contact=contact, memory_type="fact", content="Arjun wants a refund", actor="t")
    _document(api)
    service_data = {"orders_today": 42, "refund_requests": [{"id": 7, "amount": 12.5}]}
    body = api.post(
        "/api/v1/brain/context", {"query": "How do refunds work?", "service_data": service_data}, format="json"
    ).json()
    # tenant (brain) memories only: a contact's memory is not the copilot's
    assert [row["content"] for row in body["memories"]] == ["We ship refunds by bank transfer"]
    assert body["knowledge"][0]["document_title"] == "Returns policy"
    assert "refund_requests" in body["sections"]["service_data"]
    assert "We ship refunds by bank transfer" in body["prompt_text"]
    budget = body["budget"]
    for name, limit in SECTION_LIMITS.items():
        assert budget[name]["limit"] == limit
        assert budget[name]["used"] <= limit
    assert budget["total"] == {"limit": TOTAL_LIMIT, "used": body["total_tokens"]}
    assert body["total_tokens"] <= TOTAL_LIMIT
    assert body["overflow_actions"] == []

    other = other_api.post("/api/v1/brain/context", {"query": "How do refunds work?"}, format="json").json()
    assert other["memories"] == [] and other["knowledge"] == []


def test_brain_context_overflow_filters_service_data_and_summarises_older_turns(
    api, tenant, django_capture_on_commit_callbacks
):
    turns = [
        f"Turn {index} opens the topic. " + "We talked about stock levels and suppliers at length. " * 30
        for index in range(8)
    ]
    with django_capture_on_commit_callbacks(execute=True):  # the session window is written on commit
        for index, text in enumerate(turns):
            body = {  # the tenant's own conversation with its AI: no contact
                "conversation_id": "ops",
                "message": text,
                "role": "user",
                "message_id": f"o{index}",
            }
            assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    bulky = {f"metric_{index}": "lorem ipsum dolor sit amet " * 40 for index in range(40)}
    service_data = {**bulky, "supplier_invoices": ["INV-1", "INV-2"]}
    body = api.post(
        "/api/v1/brain/context",
        {"query": "Which supplier invoices are open?", "conversation_id": "ops", "service_data": service_data},
        format="json",
    ).json()
    assert "service_data filtered to query-relevant fields" in body["overflow_actions"]
    assert "supplier_invoices" in body["sections"]["service_data"]
    assert "metric_0" not in body["sections"]["service_data"]
    assert "older conversation turns summarised" in body["overflow_actions"]
    conversation = body["sections"]["conversation"]
    assert "Summary of earlier turns: user: Turn 0 opens the topic.;" in conversation
    for text in turns[-VERBATIM_TURNS:]:
        assert text.strip() in conversation  # the last four stay verbatim
    assert turns[0].strip() not in conversation
    assert body["budget"]["service_data"]["used"] <= SECTION_LIMITS["service_data"]
    assert body["total_tokens"] <= TOTAL_LIMIT


def test_brain_context_bad_input_and_unknown_conversation(api, other_api):
    assert api.post("/api/v1/brain/context", {}, format="json").status_code == 400
    assert api.post("/api/v1/brain/context", {"query": "x", "service_data": "nope"}, format="json").status_code == 400
    missing = api.post("/api/v1/brain/context", {"query": "x", "conversation_id": "nope"}, format="json")
    assert missing.status_code == 404
    api.post(
        "/api/v1/ingest",
        {"contact_id": "u-7", "conversation_id": "support-7", "message": "Hello there", "role": "user"},
        format="json",
    )
    mixed = api.post("/api/v1/brain/context", {"query": "x", "conversation_id": "support-7"}, format="json")
    assert mixed.status_code == 409 and "belongs to a contact" in mixed.json()["error"]["message"]
