"""Contact intelligence through ingest and GET /context: mood, crisis, stages, patterns, triggers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from apps.contacts.models import ContactState, CrisisReview, Insight, InteractionLog, Trigger
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.lifecycle.intelligence import contact_patterns_detect
from apps.memories.models import Memory
from tests.factories import UserFactory
from tests.fake_openai import fake_openai_fixture, llm_settings  # noqa: F401  (the fixture is `fake_openai`)

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 22, 10, tzinfo=UTC)


def say(api, text, message_id=None, contact="arjun", **extra):
    body = {"contact_id": contact, "conversation_id": f"c-{contact}", "message": text, "role": "user", **extra}
    if message_id:
        body["message_id"] = message_id
    response = api.post("/api/v1/ingest", body, format="json")
    assert response.status_code == 202, response.content
    return response.json()


def feed(tenant, texts_at, contact="arjun"):
    items = [
        IngestItem(
            contact_id=contact, conversation_id=f"conv-{at:%Y%m%d}", message=text, occurred_at=at, display_name="Arjun"
        )
        for text, at in texts_at
    ]
    return ingest_messages(tenant=tenant, items=items, actor="test")


def test_user_message_updates_mood_and_logs_the_transition(api, tenant):
    first = say(api, "haha that was amazing 😂")
    assert first["state"]["mood"] == "happy"
    second = say(api, "ugh, I'm so frustrated with this sprint")
    assert second["state"]["mood"] == "frustrated"
    logs = list(
        InteractionLog.objects.filter(tenant=tenant).values_list("mood", "previous_mood", "is_transition", "source")
    )
    assert logs == [("happy", "", False, "keywords"), ("frustrated", "happy", True, "keywords")]
    assistant = api.post(
        "/api/v1/ingest",
        {"contact_id": "arjun", "conversation_id": "c-arjun", "message": "So sorry to hear that!", "role": "assistant"},
        format="json",
    ).json()
    assert assistant["state"] is None  # only user messages move the contact's state
    assert InteractionLog.objects.filter(tenant=tenant).count() == 2


@pytest.mark.parametrize(
    "text",
    ["I want to die", "i can't take this anymore", "quiero morir", "I've been thinking about killing myself"],
    ids=["en-die", "en-cant-take", "es", "en-kill"],
)
def test_crisis_in_the_query_of_get_context_guides_the_reply_being_prepared(api, tenant, text):
    """Clients ask for context *before* replying and ingest after: the query is the message being answered."""
    say(api, "Hi, I'm Arjun", "hello-1")
    response = api.get("/api/v1/context/arjun", {"query": text})
    assert response.status_code == 200
    context = response.json()
    assert context["crisis"]["detected"] is True and context["crisis"]["source"] == "query"
    assert "findahelpline.com" in context["crisis"]["guidance"] or "988" in context["crisis"]["guidance"]
    assert context["context_text"].splitlines()[1] == "SAFETY:"
    review = CrisisReview.objects.get(tenant=tenant)
    assert (review.status, review.message_id, review.excerpt) == ("open", "", text)
    assert ContactState.objects.get(contact__external_id="arjun").crisis_flag is True
    # the client retries the same GET: still guided, no second review
    assert api.get("/api/v1/context/arjun", {"query": text}).json()["crisis"]["detected"] is True
    assert CrisisReview.objects.filter(tenant=tenant).count() == 1


@pytest.mark.parametrize(
    "text", ["this chocolate cake is to die for", "I'm dying to see the new Dune film"], ids=["to-die-for", "dying-to"]
)
def test_idioms_in_the_query_of_get_context_are_not_a_crisis(api, tenant, text):
    say(api, "Hi, I'm Arjun", "hello-1")
    context = api.get("/api/v1/context/arjun", {"query": text}).json()
    assert context["crisis"] == {"detected": False}
    assert "SAFETY:" not in context["context_text"]
    assert not CrisisReview.objects.filter(tenant=tenant).exists()
    assert ContactState.objects.get(contact__external_id="arjun").crisis_flag is False


@pytest.mark.parametrize(
    "text",
    ["I want to die", "i can't take this anymore", "quiero morir", "I've been thinking about killing myself"],
    ids=["en-die", "en-cant-take", "es", "en-kill"],
)
def test_crisis_is_flagged_in_ingest_context_and_admin(api, tenant, client, text):
    body = say(api, text, "crisis-1")
    assert body["crisis"]["detected"] is True
    assert "findahelpline.com" in body["crisis"]["guidance"] or "988" in body["crisis"]["guidance"]
    review = CrisisReview.objects.get(tenant=tenant)
    assert (review.status, review.message_id, review.contact.external_id) == ("open", "crisis-1", "arjun")

    context = api.get("/api/v1/context/arjun").json()
    assert context["crisis"]["detected"] is True
    assert context["context_text"].splitlines()[1] == "SAFETY:"
    assert review.guidance in context["context_text"]

    admin_user = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    listing = client.get("/admin/contacts/crisisreview/")
    assert listing.status_code == 200 and b"arjun" in listing.content
    response = client.post(
        "/admin/contacts/crisisreview/", {"action": "mark_reviewed", "_selected_action": [review.pk]}
    )
    assert response.status_code == 302
    review.refresh_from_db()
    assert (review.status, review.reviewed_by) == ("reviewed", admin_user.username)
    assert ContactState.objects.get(contact__external_id="arjun").crisis_flag is False
    assert api.get("/api/v1/context/arjun").json()["crisis"] == {"detected": False}


@pytest.mark.parametrize(
    "text",
    [
        "this movie is to die for",
        "I'm dying to see the new Bond film",
        "I could kill for a pizza",
        "I don't want to die",
    ],
    ids=["to-die-for", "dying-to", "kill-for", "negated"],
)
def test_hard_negatives_raise_no_crisis(api, tenant, text):
    body = say(api, text)
    assert body["crisis"] == {"detected": False}
    assert not CrisisReview.objects.filter(tenant=tenant).exists()
    assert ContactState.objects.get(contact__external_id="arjun").crisis_flag is False


def test_helpline_guidance_follows_tenant_locale_and_overrides(api, tenant):
    tenant.settings = {"locale": "en-IN"}
    tenant.save()
    assert "14416" in say(api, "I want to die", contact="in")["crisis"]["guidance"]
    tenant.settings = {"locale": "en-IN", "helplines": {"en-IN": "Call our partner line 1800-000-000."}}
    tenant.save()
    assert say(api, "I want to die", contact="in2")["crisis"]["guidance"] == "Call our partner line 1800-000-000."


def test_llm_mood_classification_and_its_fallbacks(api, tenant, fake_openai):
    fake_openai.enqueue_chat(json.dumps({"mood": "excited", "energy": "high", "style": "playful"}))
    with llm_settings(fake_openai):
        assert say(api, "guess what happened today")["state"]["mood"] == "excited"
        request = fake_openai.chat_requests[-1].body
        assert request["response_format"] == {"type": "json_object"}
        assert "guess what happened today" in request["messages"][1]["content"]

        fake_openai.enqueue_delay(1.0, then=json.dumps({"mood": "sad", "energy": "low", "style": "supportive"}))
        timed_out = say(api, "so anyway, ugh")
        assert timed_out["state"]["mood"] == "excited"  # 200 ms budget exceeded: previous mood kept

        fake_openai.enqueue_status(500)
        down = say(api, "I'm so worried and nervous about tomorrow")
        assert down["state"]["mood"] == "anxious"  # provider failing fast: keyword classifier
    sources = list(InteractionLog.objects.filter(tenant=tenant).values_list("source", flat=True))
    assert sources == ["llm", "previous", "keywords"]


def test_relationship_stages_follow_sessions_streak_and_inactivity(tenant):
    day = timedelta(days=1)
    feed(tenant, [("hello there, nice to meet you", T0)])
    state = ContactState.objects.get(contact__external_id="arjun")
    assert (state.relationship_stage, state.sessions_count, state.active_streak) == ("new", 1, 1)

    feed(tenant, [(f"day {i} update: went for a run by the lake", T0 + i * day) for i in range(1, 3)])
    state.refresh_from_db()
    assert (state.relationship_stage, state.sessions_count, state.active_streak) == ("building", 3, 3)

    feed(tenant, [(f"day {i} update: went for a run by the lake", T0 + i * day) for i in range(3, 15)])
    state.refresh_from_db()
    assert (state.relationship_stage, state.sessions_count) == ("established", 15)

    feed(tenant, [(f"day {i} update: went for a run by the lake", T0 + i * day) for i in range(15, 30)])
    state.refresh_from_db()
    assert (state.relationship_stage, state.sessions_count, state.active_streak) == ("deep", 30, 30)

    last = T0 + 29 * day
    contact = state.contact
    contact_patterns_detect(contact=contact, now=last + 20 * day)
    state.refresh_from_db()
    assert state.relationship_stage == "fading"
    assert state.churn_risk > 0.4
    assert Trigger.objects.filter(contact=contact, kind="re_engagement", status="pending").count() == 1
    contact_patterns_detect(contact=contact, now=last + 60 * day)
    state.refresh_from_db()
    assert state.relationship_stage == "dormant"

    # a gap breaks the streak; a second message the same evening is the same session
    feed(
        tenant,
        [
            ("back again after a long break", last + 61 * day),
            ("and one more thing", last + 61 * day + timedelta(minutes=5)),
        ],
    )
    state.refresh_from_db()
    assert (state.active_streak, state.sessions_count) == (1, 31)


def test_sustained_negative_mood_becomes_an_episode_and_a_check_in(tenant):
    feed(
        tenant,
        [
            ("I feel so sad today", T0),
            ("I'm so worried about my exams", T0 + timedelta(minutes=2)),
            ("I'm crying again", T0 + timedelta(minutes=4)),
        ],
    )
    contact = tenant.contacts.get()
    stats = contact_patterns_detect(contact=contact, now=T0 + timedelta(hours=1))
    assert stats["difficult_periods"] == 1
    memory = Memory.objects.get(tenant=tenant, metadata__pattern_key="difficult-period:2026-03-01")
    assert memory.content == "Arjun went through a difficult period around 01 March 2026"
    trigger = Trigger.objects.get(contact=contact, kind="check_in")
    assert trigger.due_at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # next morning (no chat window known yet)
    assert contact_patterns_detect(contact=contact, now=T0 + timedelta(hours=2))["difficult_periods"] == 0


def test_consistent_chat_hours_become_a_pattern_and_schedule_outreach(tenant):
    feed(tenant, [(f"evening chat number {i} about the garden", T0 + timedelta(days=i, minutes=i)) for i in range(16)])
    contact = tenant.contacts.get()
    assert contact_patterns_detect(contact=contact, now=T0 + timedelta(days=16))["chat_hour_patterns"] == 1
    pattern = Memory.objects.get(tenant=tenant, memory_type="pattern", slot="pattern:chat-hours")
    assert pattern.content == "Usually chats between 10pm-12am"
    state = ContactState.objects.get(contact=contact)
    assert (state.chat_window_start, state.chat_window_end) == (22, 0)
    from apps.contacts.services import trigger_create

    trigger = trigger_create(
        contact=contact, kind="follow_up", reason="ask about the garden", dedupe_key="g", earliest=T0
    )
    assert trigger.due_at.hour == 22


def test_engagement_decline_with_boredom_raises_churn_and_an_insight(tenant):
    week_ago = T0 - timedelta(days=10)
    busy = [
        (f"long chat {s}-{m}: planning the trip to Goa", week_ago + timedelta(days=s, minutes=m))
        for s in range(3)
        for m in range(6)
    ]
    quiet = [("meh, whatever, bored", T0 + timedelta(days=s)) for s in range(3)]
    feed(tenant, busy + quiet)
    contact = tenant.contacts.get()
    before = ContactState.objects.get(contact=contact).churn_risk
    stats = contact_patterns_detect(contact=contact, now=T0 + timedelta(days=3))
    assert stats["engagement_declines"] == 1
    assert ContactState.objects.get(contact=contact).churn_risk >= before + 0.2 - 1e-9
    insight = Insight.objects.get(tenant=tenant)
    assert insight.kind == "engagement_decline_bored"


def test_triggers_api(api, other_api, tenant):
    from apps.contacts.services import trigger_create

    say(api, "hello, I'm new here")
    contact = tenant.contacts.get()
    due = trigger_create(
        contact=contact, kind="check_in", reason="r1", dedupe_key="a", earliest=datetime(2020, 1, 1, tzinfo=UTC)
    )
    later = trigger_create(
        contact=contact, kind="follow_up", reason="r2", dedupe_key="b", earliest=datetime(2099, 1, 1, tzinfo=UTC)
    )
    assert trigger_create(contact=contact, kind="check_in", reason="again", dedupe_key="a", earliest=T0) is None
    rows = api.get("/api/v1/triggers", {"due": "true"}).json()["results"]
    assert [row["id"] for row in rows] == [str(due.pk)]
    assert len(api.get("/api/v1/triggers").json()["results"]) == 2
    assert other_api.get("/api/v1/triggers").json()["results"] == []
    assert other_api.post(f"/api/v1/triggers/{due.pk}/done").status_code == 404
    done = api.post(f"/api/v1/triggers/{due.pk}/done").json()
    assert done["status"] == "done"
    assert [row["id"] for row in api.get("/api/v1/triggers").json()["results"]] == [str(later.pk)]
    assert api.post(f"/api/v1/triggers/{later.pk}/done", {"status": "later"}, format="json").status_code == 400


def test_state_and_mood_history_endpoints(api, other_api):
    say(api, "haha amazing 😂")
    say(api, "I'm so sad today")
    state = api.get("/api/v1/contacts/arjun/state").json()
    assert state["state"]["mood"] == "sad"
    assert "Be supportive and listen first" in state["emotional_context"]
    history = api.get("/api/v1/contacts/arjun/mood-history").json()["results"]
    assert [row["mood"] for row in history] == ["sad", "happy"]
    assert [
        row["mood"] for row in api.get("/api/v1/contacts/arjun/mood-history", {"transitions": "true"}).json()["results"]
    ] == ["sad"]
    assert other_api.get("/api/v1/contacts/arjun/state").status_code == 404
    assert other_api.get("/api/v1/contacts/arjun/mood-history").status_code == 404


@pytest.mark.parametrize(
    ("stage", "mood", "energy", "budget", "hint"),
    [
        ("new", "neutral", "medium", 0, "Ask 1-2 discovery questions per reply"),
        ("building", "happy", "high", 500, "Match their energy: be enthusiastic and playful"),
        ("established", "sad", "low", 1200, "Be supportive and listen first; don't force positivity"),
        ("deep", "anxious", "low", 2000, "Be calm and reassuring; acknowledge the feeling"),
        ("fading", "frustrated", "high", 800, "Let them vent: validate first, then offer perspective"),
        ("dormant", "bored", "low", 200, "Introduce a new topic they might enjoy"),
    ],
)
def test_context_for_each_stage_and_mood(api, tenant, stage, mood, energy, budget, hint):
    say(api, "I work at Infosys and I have a dog named Bruno")
    state = ContactState.objects.get(contact__external_id="arjun")
    state.relationship_stage, state.mood, state.energy, state.usual_mood, state.usual_energy = (
        stage,
        mood,
        energy,
        "happy",
        "medium",
    )
    state.save()
    body = api.get("/api/v1/context/arjun", {"query": "work"}).json()
    assert body["memory_budget"] == budget
    assert body["state"]["mood"] == mood
    assert f"- Current mood: {mood} (energy: {energy})" in body["context_text"]
    assert hint in body["context_text"]
    if mood != "happy":
        assert "This is unusual" in body["context_text"]
    assert ("<memory>" in body["context_text"]) is (budget > 0)
