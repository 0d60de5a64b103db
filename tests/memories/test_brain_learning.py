"""The tenant brain learns from the owner's own conversations (ai-brain-memory.txt §4.1-4.2): ingest without a
contact runs the tenant rules inline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.memories.lifecycle.periodic import scope_consolidate
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


def _contact_says(api, contact_id: str, text: str, days_ago: float, index: int) -> None:
    body = {
        "contact_id": contact_id,
        "conversation_id": f"c-{contact_id}-{index}",
        "message": text,
        "role": "user",
        "occurred_at": (timezone.now() - timedelta(days=days_ago)).isoformat(),
    }
    assert api.post("/api/v1/ingest", body, format="json").status_code == 202


def test_the_insight_engine_turns_trends_across_contacts_into_brain_memories(api, tenant):
    """Run with the brain's scope in the 6-hourly job: a name several contacts bring up this week (more than
    twice last week's) becomes a brain pattern; a shift in the share of negative moods a brain fact."""
    for index, contact_id in enumerate(["ann", "bob", "cyd", "dee"]):
        _contact_says(api, contact_id, "Our neighbourhood now orders everything from Zomato, it is great.", 1, index)
    _contact_says(api, "eve", "We ordered from Zomato once, long ago.", 10, 0)
    _contact_says(api, "eve", "I stopped using Swiggy this week.", 2, 1)  # one contact: no trend
    for index in range(12):  # last week: calm
        _contact_says(api, f"calm-{index}", "Thanks, all good here, lovely day today.", 9, index)
    for index in range(20):  # this week: upset
        _contact_says(api, f"upset-{index}", "I am so angry and frustrated with this, it is awful.", 2, index)

    stats = scope_consolidate(tenant=tenant, contact=None)

    assert stats["insights"] == 2
    brain = Memory.objects.filter(tenant=tenant, contact__isnull=True, valid_to__isnull=True)
    trend = brain.get(memory_type="pattern", slot="insight:topic:name:zomato")
    assert trend.content.startswith("Trending with contacts: Zomato") and "4 contacts this week, 1" in trend.content
    assert not brain.filter(slot__contains="swiggy").exists()
    mood = brain.get(memory_type="fact", slot="insight:mood")
    assert "up from 0%" in mood.content
    found = api.post("/api/v1/memories/search", {"query": "what are contacts talking about?"}, format="json")
    assert any("Zomato" in row["content"] for row in found.json()["results"])

    scope_consolidate(tenant=tenant, contact=None)  # the same trends again: reinforced, not repeated
    assert brain.filter(slot__startswith="insight:").count() == 2


@pytest.mark.parametrize(
    ("now", "before", "expected"),
    [
        ((10, 20), (2, 20), "up from 10%"),
        ((2, 20), (10, 20), "down from 50%"),
        ((4, 20), (2, 20), None),
        ((10, 19), (0, 20), None),
    ],
)
def test_mood_trend_rule(now, before, expected):
    from apps.memories.lifecycle.insight_rules import mood_trend

    trend = mood_trend(negative_now=now[0], total_now=now[1], negative_before=before[0], total_before=before[1])
    assert (trend.content if trend else None) == expected or expected in trend.content
