"""The tenant brain learns from the owner's own conversations (ai-brain-memory.txt §4.1-4.2): ingest without a
contact runs the tenant rules inline."""

from __future__ import annotations

import pytest

from apps.memories.models import Memory

pytestmark = pytest.mark.django_db


def _brain_say(api, text: str, message_id: str, role: str = "user", conversation: str = "owner-1"):
    body = {"conversation_id": conversation, "message": text, "role": role, "message_id": message_id}
    return api.post("/api/v1/ingest", body, format="json")


def test_the_owners_turns_teach_the_brain(api, tenant):
    assert _brain_say(api, "We sell sourdough bread and cakes from our bakery in Mumbai.", "o1").status_code == 202
    assert _brain_say(api, "I don't want blog posts longer than 800 words.", "o2").status_code == 202
    assert (
        _brain_say(
            api, "Published the post 'Monsoon recipes' to the blog: the owner asked for it.", "t1", role="tool"
        ).status_code
        == 202
    )

    brain = Memory.objects.filter(tenant=tenant, contact__isnull=True)
    types = {memory.memory_type for memory in brain}
    assert {"fact", "preference", "episode"} <= types
    assert all(memory.decay_rate == 0.01 for memory in brain)  # tenant memory decays at the brain's rate
    tool_episode = brain.get(source_message_ids=["t1"], memory_type="episode")
    assert "Monsoon recipes" in tool_episode.content

    found = api.post("/api/v1/memories/search", {"query": "how long should blog posts be?"}, format="json").json()
    assert "800" in found["results"][0]["content"]
    context = api.post("/api/v1/brain/context", {"query": "what do we sell?"}, format="json").json()
    assert any("sourdough" in memory["content"] for memory in context["memories"])


def test_brain_and_contact_conversations_do_not_mix(api):
    assert _brain_say(api, "We sell sourdough bread.", "o1", conversation="shared").status_code == 202
    as_contact = api.post(
        "/api/v1/ingest",
        {"contact_id": "asha", "conversation_id": "shared", "message": "Hi!", "role": "user"},
        format="json",
    )
    assert as_contact.status_code == 409
    assert "tenant's own" in as_contact.json()["error"]["message"]
    api.post(
        "/api/v1/ingest",
        {"contact_id": "asha", "conversation_id": "c-asha", "message": "Hi", "role": "user"},
        format="json",
    )
    assert _brain_say(api, "Note to self.", "o2", conversation="c-asha").status_code == 409
