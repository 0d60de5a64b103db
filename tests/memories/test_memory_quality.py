"""Memory quality through the public API (issue: memory quality and the specs' remaining gaps)."""

from __future__ import annotations

import pytest

from apps.memories.models import Memory

pytestmark = pytest.mark.django_db


def _say(api, text: str, message_id: str, *, conversation: str = "c1", contact: str = "asha") -> dict:
    body = {"contact_id": contact, "conversation_id": conversation, "message": text, "role": "user"}
    response = api.post("/api/v1/ingest", {**body, "message_id": message_id}, format="json")
    assert response.status_code == 202, response.content
    return response.json()


def test_a_correction_outranks_the_turn_that_stated_the_old_value(api):
    _say(api, "Our blog traffic was 500 visits last week.", "m1")
    _say(api, "Update: our blog traffic is now 800 visits a week.", "m2")

    found = api.post("/api/v1/memories/search", {"query": "blog traffic", "contact_id": "asha"}, format="json").json()[
        "results"
    ]
    stale = next(row for row in found if "500" in row["content"])
    assert stale["memory_type"] == "episode" and stale["outdated"] is True
    assert [row["outdated"] for row in found if "800" in row["content"]] == [False, False]  # the fact, the turn
    assert found[0]["memory_type"] == "fact" and "800" in found[0]["content"]  # the correction ranks first

    history = api.get(f"/api/v1/memories/{stale['id']}/history").json()["history"]
    outdated = [entry for entry in history if entry["action"] == "outdated"]
    assert len(outdated) == 1
    fact = Memory.objects.get(memory_type="fact", content__contains="800")
    assert Memory.objects.get(pk=stale["id"]).outdated_by_id == fact.pk

    context = api.get("/api/v1/context/asha", {"query": "how is the blog traffic?", "token_budget": 500}).json()
    lines = context["context_text"].splitlines()
    assert any("500 visits" in line and "(outdated" in line for line in lines)
    assert not any("800" in line and "(outdated" in line for line in lines)
    memory_lines = [line for line in lines if line.startswith("[")]
    assert memory_lines[0] == "[FACT] Blog traffic is 800 visits a week"


def test_a_repeated_statement_is_not_outdated_by_its_own_correction_turn(api):
    """The turn that carries the correction is not 'the old value': its episode stays current."""
    _say(api, "I live in Pune.", "p1")
    _say(api, "Actually I moved, I live in Mumbai now.", "p2")
    episodes = {m.content: m.outdated_by_id for m in Memory.objects.filter(memory_type="episode")}
    assert episodes["I live in Pune."] is not None
    assert episodes["Actually I moved, I live in Mumbai now."] is None
