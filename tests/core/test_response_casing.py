"""One casing in every response body: snake_case field names (docs/api.md). Values that are the client's
or the model's own data (metadata, the information scaffold) keep whatever keys they were given."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.django_db

DATA_VALUED = {"metadata", "scaffold"}
SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")


def _field_names(body: Any, path: str = "") -> list[str]:
    names: list[str] = []
    if isinstance(body, dict):
        for key, value in body.items():
            names.append(f"{path}.{key}")
            if key not in DATA_VALUED:
                names.extend(_field_names(value, f"{path}.{key}"))
    elif isinstance(body, list):
        for item in body:
            names.extend(_field_names(item, f"{path}[]"))
    return names


def test_ingest_context_and_state_bodies_are_snake_case(api):
    ingested = api.post(
        "/api/v1/ingest",
        {
            "contact_id": "asha",
            "conversation_id": "c1",
            "message": "I feel so lonely lately. My sister Priya lives in Pune.",
            "role": "user",
            "metadata": {"clientTag": "kept as given"},
        },
        format="json",
    )
    context = api.get("/api/v1/context/asha", {"query": "who is Priya?", "explain": "true"})
    state = api.get("/api/v1/contacts/asha/state")
    bodies = {"ingest": ingested, "context": context, "state": state}
    assert {name: response.status_code for name, response in bodies.items()} == {
        "ingest": 202,
        "context": 200,
        "state": 200,
    }
    assert "relationship_stage" in context.json()["state"] and "mood_confidence" in ingested.json()["state"]
    wrong = [
        f"{name}: {field}"
        for name, response in bodies.items()
        for field in _field_names(response.json())
        if not SNAKE.match(field.rsplit(".", 1)[-1])
    ]
    assert wrong == []
