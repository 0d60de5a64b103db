"""The README's 2-minute tour, steps 3 and 4, as its reader sends them: what it says each answer holds."""

from __future__ import annotations

import pytest

from tests.context_blocks import memory_block

pytestmark = pytest.mark.django_db

CONTACT = "wa:+91-98"


def memory_lines(context_text: str) -> list[str]:
    return memory_block(context_text).splitlines()


def ingest(api, message: str) -> dict:
    response = api.post(
        "/api/v1/ingest",
        {"contact_id": CONTACT, "conversation_id": "c1", "role": "user", "message": message},
        format="json",
    )
    assert response.status_code == 202, response.content
    return response.json()


def test_the_tour_teaches_asks_and_corrects_as_the_readme_says(api):
    created = api.post("/api/v1/contacts", {"contact_id": CONTACT, "display_name": "Arjun"}, format="json")
    assert created.status_code == 201, created.content
    assert [contact["contact_id"] for contact in api.get("/api/v1/contacts").json()["results"]] == [CONTACT]

    taught = ingest(api, "My dog Bruno is a beagle and I work at Infosys")
    assert [memory["content"] for memory in taught["memories"]] == [
        "Has a dog named Bruno",
        "Works at Infosys",
        "My dog Bruno is a beagle and I work at Infosys",
    ]
    context = api.get(f"/api/v1/context/{CONTACT}", {"query": "how is the dog", "token_budget": 500}).json()
    # the facts first, then the episode they were drawn from (it still adds "beagle")
    assert memory_lines(context["context_text"]) == [
        "[FACT] Has a dog named Bruno",
        "[FACT] Works at Infosys",
        "[EPISODE] My dog Bruno is a beagle and I work at Infosys",
    ]
    unbudgeted = api.get(f"/api/v1/context/{CONTACT}", {"query": "how is the dog"}).json()
    assert "<memory>" not in unbudgeted["context_text"]  # a new contact's stage budget is 0

    ingest(api, "Actually I left Infosys, I work at Wipro now")
    current = api.get("/api/v1/memories", {"contact_id": CONTACT}).json()["results"]
    assert {"Works at Wipro", "Has a dog named Bruno"} <= {memory["content"] for memory in current}
    assert "Works at Infosys" not in {memory["content"] for memory in current}
    every = api.get("/api/v1/memories", {"contact_id": CONTACT, "include_superseded": "true"}).json()["results"]
    old = next(memory for memory in every if memory["content"] == "Works at Infosys")
    wipro = next(memory for memory in every if memory["content"] == "Works at Wipro")
    assert (old["is_current"], old["superseded_by"]) == (False, wipro["id"])
    history = api.get(f"/api/v1/memories/{old['id']}/history").json()["history"]
    assert [(entry["action"], entry["related_memory"]) for entry in history] == [
        ("created", None),
        ("superseded", wipro["id"]),
    ]
    after = api.get(f"/api/v1/context/{CONTACT}", {"query": "where does he work", "token_budget": 500}).json()
    assert "[EPISODE] My dog Bruno is a beagle and I work at Infosys (outdated: corrected since)" in memory_lines(
        after["context_text"]
    )
