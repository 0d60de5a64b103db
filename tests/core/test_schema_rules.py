"""The OpenAPI schema states what the code checks (issue 30 item 4): for each rule, a value the schema refuses is
refused by the API (400, naming the field), and a value the schema admits is taken. A rule checked in code but not
declared fails here, as it fails the fuzz run (tests/core/test_fuzz.py, "mostly rejected generated data")."""

from __future__ import annotations

import re
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def components() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


def _admits(schema: dict[str, Any], value: str) -> bool:
    """The string rules of one property: pattern (a search, as JSON Schema reads it), lengths."""
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return False
    return schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value))


TURN = {"contact_id": "wa:1", "conversation_id": "c1", "role": "user", "message": "I have a dog named Bruno"}

# (component, field, path, a valid body, the refused value, an admitted value)
STRING_RULES = [
    ("IngestMessage", "message", "/api/v1/ingest", TURN, " \n\t ", "  hi  "),
    ("IngestMessage", "contact_id", "/api/v1/ingest", TURN, "wa/1", "wa:+91 98"),
    ("IngestMessage", "conversation_id", "/api/v1/ingest", TURN, "   ", "chat 42"),
    ("IngestMessage", "message_id", "/api/v1/ingest", TURN, " ", "m-1"),
    ("ContactListCreateApiInput", "contact_id", "/api/v1/contacts", {"contact_id": "x"}, "x/y", "x y"),
    (
        "MemoryListCreateApiInput",
        "content",
        "/api/v1/memories",
        {"content": "Likes tea", "memory_type": "fact"},
        " ",
        "Tea",
    ),
    ("MemorySearchApiInput", "query", "/api/v1/memories/search", {"query": "tea"}, "\n", "tea?"),
    (
        "ObservationApiInput",
        "content",
        "/api/v1/observations",
        {"content": "x", "category": "fact"},
        "  ",
        "Prefers tea",
    ),
    ("BrainContextApiInput", "query", "/api/v1/brain/context", {"query": "x"}, " ", "what do we sell"),
]


@pytest.mark.parametrize(
    ("component", "field", "path", "body", "refused", "admitted"),
    STRING_RULES,
    ids=[f"{rule[0]}.{rule[1]}" for rule in STRING_RULES],
)
def test_a_string_the_schema_refuses_is_refused_and_one_it_admits_is_taken(
    api, components, component, field, path, body, refused, admitted
):
    schema = components[component]["properties"][field]
    assert not _admits(schema, refused)
    response = api.post(path, {**body, field: refused}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["details"]

    assert _admits(schema, admitted)
    response = api.post(path, {**body, field: admitted}, format="json")
    assert response.status_code in (200, 201, 202), response.json()


def test_a_batch_of_no_message_is_stated_and_refused(api, components):
    assert components["IngestBatchApiInput"]["properties"]["messages"]["minItems"] == 1
    assert api.post("/api/v1/ingest/batch", {"messages": []}, format="json").status_code == 400


def test_a_memory_patch_needs_one_field_and_the_schema_says_which(api, components):
    names = ("content", "importance", "is_pinned")
    assert components["PatchedMemoryDetailApiUpdate"]["anyOf"] == [{"required": [name]} for name in names]
    created = api.post("/api/v1/memories", {"content": "Likes green tea", "memory_type": "fact"}, format="json")
    path = f"/api/v1/memories/{created.json()['id']}"
    refused = api.patch(path, {"note": "not a field"}, format="json")
    assert refused.status_code == 400
    assert "content, importance, is_pinned" in refused.json()["error"]["message"]
    assert api.patch(path, {"is_pinned": True}, format="json").status_code == 200


def test_the_memory_type_filter_is_a_stated_list(api, tenant):
    ContactFactory(tenant=tenant, external_id="wa:1")
    schema = SchemaGenerator().get_schema(request=None, public=True)
    (parameter,) = [p for p in schema["paths"]["/api/v1/memories"]["get"]["parameters"] if p["name"] == "type"]
    pattern = parameter["schema"]["oneOf"][0]["pattern"]
    for value, status in (("fact,bogus", 400), ("fact, semantic ,", 200), ("episode", 200), ("", 200)):
        assert bool(re.search(pattern, value)) is (status == 200), value
        assert api.get("/api/v1/memories", {"type": value}).status_code == status, value
