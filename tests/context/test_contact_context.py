"""GET /context/{contact_id}: the stage's budget, preferences first, superseded facts out, tenant scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.contacts.models import ContactState
from apps.core.tokens import count_tokens
from apps.memories.ingest.services import memory_add
from apps.memories.models import Memory
from tests.factories import GARDEN_TOPICS, ContactFactory, MemoryFactory

pytestmark = pytest.mark.django_db


def add(tenant, contact, content, memory_type="fact", **extra):
    """Through the write path (dedup, supersession), as the API writes a memory."""
    change = memory_add(tenant=tenant, contact=contact, memory_type=memory_type, content=content, actor="test", **extra)
    assert change.action == "created", change
    return change.memory


@pytest.fixture
def contact(tenant):
    return ContactFactory(tenant=tenant, external_id="arjun", display_name="Arjun")


@pytest.mark.parametrize(
    ("stage", "budget"),
    [("new", 0), ("building", 500), ("established", 1200), ("deep", 2000), ("fading", 800), ("dormant", 200)],
)
def test_context_budget_follows_the_relationship_stage(api, tenant, contact, stage, budget):
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage=stage)
    MemoryFactory.bulk(
        tenant=tenant,
        contact=contact,
        contents=[f"Garden note {index}: {topic}" for index, topic in enumerate(GARDEN_TOPICS * 4)],
    )
    body = api.get("/api/v1/context/arjun", {"query": "garden"}).json()
    assert body["memory_budget"] == budget
    assert body["tokens_used"] <= budget
    assert body["state"]["relationship_stage"] == stage
    lines = [line for line in body["context_text"].splitlines() if line.startswith("[")]
    assert len(lines) == len(body["memories"])
    assert body["tokens_used"] == sum(count_tokens(line) for line in lines)
    if budget == 0:
        assert body["memories"] == [] and "<memory>" not in body["context_text"]
    else:  # dormant too: its last topic (none here: these are facts) after the query's best matches
        assert body["memories"] and "<memory>" in body["context_text"]


def test_a_context_as_of_a_replayed_history_s_last_message_is_assembled_as_it_would_have_been_then(
    api, tenant, contact
):
    """`as_of` (a history imported, then asked about as of its last message): the stage it had then — not
    "dormant" for having ended long ago — with that stage's budget, and "recent" episodes counted from then."""
    last_seen = datetime(2023, 5, 8, 20, 0, tzinfo=UTC)
    ContactState.objects.create(
        contact=contact,
        tenant=tenant,
        relationship_stage="dormant",  # what the periodic refresh makes of it as time passes
        sessions_count=20,
        active_streak=1,
        last_seen_at=last_seen,
    )
    for content, occurred_at in [
        ("Planted basil and mint on the balcony", last_seen - timedelta(days=5)),  # recent as of then
        ("Moved into the flat with the balcony", last_seen - timedelta(days=200)),
    ]:
        memory = add(tenant, contact, content, memory_type="episode")
        Memory.objects.filter(pk=memory.pk).update(occurred_at=occurred_at)
    add(tenant, contact, "Works as a teacher")

    today = api.get("/api/v1/context/arjun").json()
    then = api.get("/api/v1/context/arjun", {"as_of": last_seen.isoformat()}).json()

    assert (today["state"]["relationship_stage"], today["memory_budget"]) == ("dormant", 200)
    assert (then["state"]["relationship_stage"], then["memory_budget"]) == ("established", 1200)
    # established: facts, preferences and the episodes of the 30 days before `as_of` (no query: the density alone)
    assert {memory["content"] for memory in then["memories"]} == {
        "Planted basil and mint on the balcony",
        "Works as a teacher",
    }
    assert api.get("/api/v1/context/arjun", {"as_of": "last spring"}).status_code == 400
    # at the calendar's edges ("the 30 days before" the first day is no date)
    for edge, stage in (("0001-01-01T00:00:00Z", "established"), ("9999-12-31T23:59:59Z", "dormant")):
        at_edge = api.get("/api/v1/context/arjun", {"query": "what did I do last week?", "as_of": edge})
        assert at_edge.status_code == 200 and at_edge.json()["state"]["relationship_stage"] == stage


def test_a_new_contacts_context_opened_by_a_token_budget_does_not_claim_it_knows_nothing(api, tenant, contact):
    # the "new" stage has no memory budget of its own, but a caller's token_budget opens the block: the guidance
    # above it must not tell the model there are no memories while the block below holds one
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="new")
    add(tenant, contact, "Has a dog named Bruno")
    body = api.get("/api/v1/context/arjun", {"query": "how is the dog", "token_budget": 500}).json()
    assert [memory["content"] for memory in body["memories"]] == ["Has a dog named Bruno"]
    assert "[FACT] Has a dog named Bruno" in body["context_text"]
    assert "no memories" not in body["context_text"].lower()
    assert "New contact: you know little about them yet" in body["context_text"]


def test_context_puts_preferences_first_and_drops_the_lowest_scored(api, tenant, contact):
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="deep")
    add(tenant, contact, "Works at Infosys in Chennai", importance=0.9)
    add(tenant, contact, "Has a golden retriever named Bruno", importance=0.8)
    add(tenant, contact, "Doesn't like talking about politics", memory_type="preference", importance=0.3)
    body = api.get("/api/v1/context/arjun", {"query": "work", "token_budget": 1000, "explain": "true"}).json()
    assert body["memories"][0]["memory_type"] == "preference"
    lines = body["context_text"].splitlines()
    assert lines[lines.index("<memory>") + 1] == "[PREFERENCE] Doesn't like talking about politics"
    scores = [m["score"] for m in body["memories"][1:]]
    assert scores == sorted(scores, reverse=True)
    # a budget that fits the preference and one fact drops the lowest-scored fact
    small = api.get("/api/v1/context/arjun", {"query": "work", "token_budget": 20, "explain": "true"}).json()
    kept = [m["content"] for m in small["memories"]]
    assert kept[0] == "Doesn't like talking about politics"
    assert small["tokens_used"] <= 20
    assert len(small["dropped"]) >= 1
    assert (
        min(m["score"] for m in small["memories"][1:] or [{"score": 1}]) >= max(d["score"] for d in small["dropped"])
        or len(kept) == 1
    )


def test_a_standing_instruction_said_in_chat_heads_the_context_on_its_topic(api, tenant, contact):
    """Said once as a message, "always include version numbers when I ask about libraries" is kept as a
    preference (before: only as an episode, ranked among the chat's other turns) and heads the memory block
    of a later question on that topic."""
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="deep")
    turns = [
        ("user", "I'm building a budget tracker in Flask."),
        ("assistant", "Great choice! Flask keeps things simple for a small app."),
        ("user", "Always include version numbers when I ask about libraries."),
        ("assistant", "Noted, I will."),
        ("user", "I also need charts for the monthly report."),
    ]
    messages = [
        {"contact_id": "arjun", "conversation_id": "c1", "message": text, "role": role, "message_id": f"m{index}"}
        for index, (role, text) in enumerate(turns)
    ]
    assert api.post("/api/v1/ingest/batch", {"messages": messages}, format="json").status_code == 202
    query = {"query": "Which libraries should I use for the charts?", "token_budget": 1000}
    body = api.get("/api/v1/context/arjun", query).json()
    lines = body["context_text"].splitlines()
    assert lines[lines.index("<memory>") + 1] == (
        "[PREFERENCE] Wants you to always include version numbers when they ask about libraries"
    )


def test_context_excludes_superseded_facts(api, tenant, contact):
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="established")
    old = add(tenant, contact, "Lives in Pune")
    new = add(tenant, contact, "Lives in Mumbai")
    Memory.objects.filter(pk=old.pk).update(valid_to=timezone.now(), superseded_by=new)
    body = api.get("/api/v1/context/arjun", {"query": "where does he live"}).json()
    contents = [m["content"] for m in body["memories"]]
    assert "Lives in Mumbai" in contents
    assert "Lives in Pune" not in contents


def test_context_isolation_and_bad_input(api, other_api, tenant, contact):
    assert other_api.get("/api/v1/context/arjun").status_code == 404
    assert api.get("/api/v1/context/nobody").status_code == 404
    assert api.get("/api/v1/context/arjun", {"token_budget": -1}).status_code == 400
    assert api.get("/api/v1/context/arjun", {"token_budget": "lots"}).status_code == 400


@pytest.mark.parametrize("enabled", [True, False], ids=["server-timing-on", "off-by-default"])
def test_reads_tell_where_their_time_went_only_when_asked(api, settings, tenant, contact, enabled):
    settings.ENGRAM = {**settings.ENGRAM, "SERVER_TIMING": enabled}
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="deep")
    add(tenant, contact, "Arjun grows tomatoes in his garden")
    from apps.core.timing import parse_server_timing

    answers = {
        "context": api.get("/api/v1/context/arjun", {"query": "what does he grow in the garden?"}),
        "search": api.post("/api/v1/memories/search", {"query": "tomato garden", "contact_id": "arjun"}, format="json"),
    }
    for name, response in answers.items():
        assert response.status_code == 200, (name, response.content)
        if not enabled:
            assert "Server-Timing" not in response
            continue
        timing = parse_server_timing(response["Server-Timing"])
        expected = ("embedding", "retrieval", "sql", "total") + (
            ("crisis", "state", "assembly") if name == "context" else ()
        )
        for phase in expected:
            assert timing.get(phase, 0) > 0, (name, phase, timing)
        assert sum(value for phase, value in timing.items() if phase != "total") == pytest.approx(
            timing["total"], abs=0.1
        )


@pytest.mark.parametrize("stage", ["established", "deep"])
def test_turns_still_in_the_chat_window_are_not_repeated_in_the_context(
    api, tenant, contact, stage, django_capture_on_commit_callbacks
):
    """With `conversation_id`, the episodes of turns still in that conversation's session window are left
    out of the memory block (the prompt's chat history holds them), the query's leading matches included;
    without it they are in."""
    texts = ["My sister Priya is getting married in Goa next month.", "We are all flying there for the wedding."]
    with django_capture_on_commit_callbacks(execute=True):  # the session window is written on commit
        for index, text in enumerate(texts):
            body = {
                "contact_id": "arjun",
                "conversation_id": "c1",
                "message": text,
                "role": "user",
                "message_id": f"w{index}",
            }
            assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    ContactState.objects.filter(contact=contact).update(relationship_stage=stage)  # ingest made it "new"
    query = {"query": "when is the wedding in Goa?", "explain": "true"}

    everything = api.get("/api/v1/context/arjun", query).json()
    in_window = api.get("/api/v1/context/arjun", {**query, "conversation_id": "c1"}).json()

    def episodes(body):
        return [memory["content"] for memory in body["memories"] if memory["memory_type"] == "episode"]

    assert set(texts) <= set(episodes(everything))
    assert not set(texts) & set(episodes(in_window))


def test_the_ai_s_own_earlier_reply_is_handed_over_as_the_assistant_s_not_the_contact_s(api, tenant, contact):
    # a user <-> assistant chat has no speaker labels: without the role, "I'd pick the trail runners" would read
    # as something the contact said
    turns = [
        ("user", "I need new running shoes for the Lonavala trail race in March."),
        ("assistant", "For the Lonavala trail race I'd pick trail runners with a rock plate and deep lugs."),
    ]
    response = api.post(
        "/api/v1/ingest/batch",
        {
            "messages": [
                {"contact_id": "arjun", "conversation_id": "c1", "role": role, "message": text} for role, text in turns
            ]
        },
        format="json",
    )
    assert response.status_code == 202, response.content
    body = api.get("/api/v1/context/arjun", {"query": "Lonavala trail race shoes", "token_budget": 2000}).json()
    roles = {row["content"]: row["role"] for row in body["memories"] if row["memory_type"] == "episode"}
    assert roles == {turns[0][1]: "", turns[1][1]: "assistant"}
    lines = body["context_text"].splitlines()
    assert f"[EPISODE] Assistant: {turns[1][1]}" in lines
    assert f"[EPISODE] {turns[0][1]}" in lines
    found = api.post(
        "/api/v1/memories/search", {"contact_id": "arjun", "query": "trail runners rock plate"}, format="json"
    )
    assert found.json()["results"][0]["role"] == "assistant"
