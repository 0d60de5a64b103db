"""Memory quality through the public API (issue: memory quality and the specs' remaining gaps)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import numpy as np
import pytest
from django.utils import timezone

from apps.contacts.models import ContactState
from apps.context.contact import QUERY_LED
from apps.memories import scoring
from apps.memories.ingest.services import memory_add
from apps.memories.lifecycle.deferred import near_duplicates_merge
from apps.memories.models import Memory
from apps.memories.store.writing import Candidate, MemoryVectors, memories_write
from tests.factories import GARDEN_TOPICS, ContactFactory

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


def test_one_fact_one_line_in_context(api):
    """Three paraphrases of one fact: the fact and its episodes all rank for the query, but the context
    spends tokens on one line about Bruno."""
    for index, text in enumerate(
        ["I have a dog named Bruno.", "I have a dog named Bruno.", "I've got a dog called Bruno."]
    ):
        _say(api, text, f"d{index}")
    _say(api, "I work as a nurse at the city hospital.", "w1")

    context = api.get(
        "/api/v1/context/asha", {"query": "tell me about my dog", "token_budget": 500, "explain": "true"}
    ).json()
    lines = [line for line in context["context_text"].splitlines() if line.startswith("[")]
    assert len([line for line in lines if "Bruno" in line]) == 1  # whichever ranked first says it
    assert any("nurse" in line for line in lines)  # what it says once is still there
    assert any("Bruno" in row["content"] for row in context["dropped"])  # the repeats were candidates


def test_the_offline_narrative_says_a_repeated_turn_once_and_not_what_a_fact_says():
    from apps.memories.lifecycle.profile_rules import MemoryRow, Observation, offline_working_memory

    said = [
        "I have a dog named Bruno.",
        "Work was crazy busy this week, honestly.",
        "Work was crazy busy this week, honestly.",
    ]
    narrative = offline_working_memory(
        subject="Asha",
        memories=[MemoryRow("fact", "Has a dog named Bruno", "pet", 1, 0.8)],
        observations=[Observation("message", text) for text in said],
    )
    assert narrative.count("Bruno") == 1  # the fact, not the turn
    assert narrative.count("crazy busy") == 1


@pytest.mark.parametrize(
    ("line", "earlier", "redundant"),
    [
        ("I have a dog named Bruno.", "Has a dog named Bruno", True),
        ("I've got a dog called Bruno.", "Has a dog named Bruno", True),
        ("Likes coffee", "Doesn't like coffee", False),  # a negation is never covered by its opposite
        ("Doesn't drink coffee", "Drinks coffee", False),
        ("Blog traffic is 800 visits a week", "Our blog traffic was 500 visits last week.", False),  # numbers count
        ("Lives in Pune", "Moved out of Pune", False),
        ("Yes!", "Yes!", True),  # a repeat
        ("!!", "!!", False),  # no words: nothing to judge by
    ],
)
def test_says_again(line, earlier, redundant):
    from apps.memories.retrieval.overlap import content_words, says_again

    assert says_again(content_words(line), content_words(earlier)) is redundant


def _unit(*hot: int) -> np.ndarray:
    vector = np.zeros(384, dtype=np.float32)
    vector[list(hot)] = 1.0
    return vector / np.linalg.norm(vector)


def _write(tenant, contact, candidate: Candidate, vector: np.ndarray):
    (change,) = memories_write(
        tenant=tenant,
        contact=contact,
        candidates=[candidate],
        actor="test",
        occurred_at=timezone.now(),
        vectors=MemoryVectors(own=vector.reshape(1, -1), context=[None]),
    )
    return change


def test_discard_applies_the_spec_formula_below_0_3_but_never_to_a_correction(tenant):
    """importance = novelty × 0.6 + salience × 0.4 (memory-logic.txt §1.5), judged before the type default
    is blended in: a fact, whose default is 0.7, is discarded too when it is neither novel nor salient."""
    contact = ContactFactory(tenant=tenant)
    for index in range(10):  # ten unrelated memories: their centroid points between them
        _write(tenant, contact, Candidate("fact", f"Known thing {index}", salience=0.5), _unit(index))
    typical = _unit(*range(10))  # the centroid itself: novelty 0; cosine 0.32 to each memory (no duplicate)

    dull = _write(tenant, contact, Candidate("fact", "Something quite ordinary", salience=0.5), typical)
    assert dull.action == "skipped"  # 0 × 0.6 + 0.5 × 0.4 = 0.20 < 0.3, though a fact's blend would be 0.45
    salient = _write(tenant, contact, Candidate("fact", "Something that matters", salience=0.8), _unit(*range(9)))
    assert salient.action == "created"  # novelty 0.05: 0.03 + 0.32 ≥ 0.3
    assert 0.5 < salient.memory.importance < 0.55  # stored: blended with the fact default, 0.5 × 0.7 + 0.5 × 0.35

    _write(tenant, contact, Candidate("fact", "Lives in Pune", salience=0.5, slot="location"), _unit(20))
    typical_too = _unit(*range(10), 20, 21)  # novelty 0.05 against the twelve memories; no cosine above 0.87
    correction = _write(
        tenant, contact, Candidate("fact", "Lives in Mumbai", salience=0.0, slot="location"), typical_too
    )
    assert correction.action == "created"  # 0.03 < 0.3, but it corrects: stored
    assert Memory.objects.get(content="Lives in Pune").superseded_by_id == correction.memory.pk

    explicit = _write(
        tenant, contact, Candidate("fact", "Set by an operator", importance=0.9), _unit(*range(5), 30, 31, 32)
    )
    assert explicit.action == "created"  # novelty 0.42, salience 0: judged, it would go; explicit: never judged


def test_nothing_is_typical_in_a_small_scope_nor_within_one_message(api):
    """Novelty is judged against the scope before the message, and only once it has ten memories: the
    episode of a turn is not discarded for resembling the fact drawn from that same turn."""
    _say(api, "Our blog traffic was 500 visits last week.", "m1")
    _say(api, "Actually I moved, I live in Mumbai now.", "m2")
    episodes = set(Memory.objects.filter(memory_type="episode").values_list("content", flat=True))
    assert episodes == {"Our blog traffic was 500 visits last week.", "Actually I moved, I live in Mumbai now."}


STAGE_MEMORIES = [
    ("fact", "Works as a nurse at the city hospital", 1),
    ("preference", "Loves spicy food", 1),
    ("episode", "Went hiking in the hills with her sister", 2),
    ("episode", "Visited Goa for a cousin's wedding", 90),
    ("pattern", "Usually chats late at night after her shift", 1),
]


@pytest.mark.parametrize(
    ("stage", "token_budget", "expected"),
    [
        ("new", None, set()),  # no memories injected
        ("building", None, {"Works as a nurse at the city hospital"}),  # basic facts only
        (
            "established",
            None,
            {"Works as a nurse at the city hospital", "Loves spicy food", "Went hiking in the hills with her sister"},
        ),  # + recent episodes, no old one
        ("deep", None, {content for _, content, _ in STAGE_MEMORIES}),  # everything, patterns too
        ("fading", None, {"Works as a nurse at the city hospital", "Loves spicy food"}),  # key facts
        ("dormant", None, {"Went hiking in the hills with her sister"}),  # the last topic, no search
        ("new", 2000, {content for _, content, _ in STAGE_MEMORIES}),  # a caller's budget opens every type
    ],
)
def test_each_stage_has_its_density(api, tenant, stage, token_budget, expected):
    """What a stage's context is made of when the message asks for nothing in particular (no query): the
    density alone. A query's best matches join it whatever their type or age (the test below)."""
    contact = ContactFactory(tenant=tenant, external_id="asha")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage=stage)
    for memory_type, content, days_ago in STAGE_MEMORIES:
        change = memory_add(tenant=tenant, contact=contact, memory_type=memory_type, content=content, actor="test")
        Memory.objects.filter(pk=change.memory.pk).update(occurred_at=timezone.now() - timedelta(days=days_ago))

    params = {"token_budget": token_budget} if token_budget is not None else {}
    body = api.get("/api/v1/context/asha", params).json()

    assert {memory["content"] for memory in body["memories"]} == expected


# an old episode among a contact's many memories: what her question is about
OLD_CHORES = ["leaking kitchen tap", "squeaky door", "broken fence", "flat bicycle tyre", "cracked window", "printer"]
ASKED_ABOUT = "Visited Goa for a cousin's wedding and danced at the sangeet"
BACKGROUND = [
    ("fact", "Works as a nurse at the city hospital", 1),
    ("fact", "Lives in Pune with her parents", 1),
    ("preference", "Loves spicy food", 1),
    ("preference", "Prefers texting over calls", 1),
    *[("episode", f"Talked about the {topic} at work this week", 3) for topic in GARDEN_TOPICS[:8]],
    ("episode", "Went hiking in the hills with her sister", 2),
    ("episode", ASKED_ABOUT, 90),
    *[("episode", f"Fixed the {thing} over the weekend", 120) for thing in OLD_CHORES],
]


@pytest.mark.parametrize("stage", ["building", "established", "deep", "fading", "dormant"])
def test_the_query_s_best_matches_are_in_the_context_whatever_the_stage(api, tenant, stage):
    """The density decides what fills a stage's context, not whether the memory the message asks about is in
    it: asked about a wedding of three months ago, every stage with a budget hands that episode to the model
    (before: only "deep" did — "established" holds episodes of the last 30 days, "building" facts,
    "fading" facts and preferences, "dormant" the last topic). The rest is the stage's as before: an old
    episode the query does not reach stays out, and "building" still carries its facts."""
    contact = ContactFactory(tenant=tenant, external_id="asha")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage=stage)
    for memory_type, content, days_ago in BACKGROUND:
        change = memory_add(tenant=tenant, contact=contact, memory_type=memory_type, content=content, actor="test")
        Memory.objects.filter(pk=change.memory.pk).update(occurred_at=timezone.now() - timedelta(days=days_ago))

    body = api.get(
        "/api/v1/context/asha", {"query": "how was the wedding in Goa? did you dance?", "explain": "true"}
    ).json()

    assert ASKED_ABOUT in [memory["content"] for memory in body["memories"]]
    placed = {memory["content"]: memory["placed_by"] for memory in body["memories"]}
    assert placed[ASKED_ABOUT] == "query"
    order = [memory["placed_by"] for memory in body["memories"]]
    assert order == sorted(order, key=lambda by: by != "query")  # the query's matches lead the block
    assert order.count("query") <= QUERY_LED
    if stage != "deep":  # old episodes are in only as the query's matches, never as the stage's
        chores = [placed[text] for thing in OLD_CHORES if (text := f"Fixed the {thing} over the weekend") in placed]
        assert set(chores) <= {"query"}
    if stage == "building":
        assert {"Works as a nurse at the city hospital", "Lives in Pune with her parents"} <= set(placed)


TRIPS = [
    "Travelled to Lisbon and rode the old trams",
    "Flew to Kyoto for the cherry blossoms",
    "Trekked the Inca trail out of Cusco",
    "Saw the northern lights on a trip to Reykjavik",
    "Haggled for rugs in the souks of Marrakesh on holiday",
    "Ate pho on a street corner during her Hanoi trip",
    "Took the ferry over to Tallinn for a weekend away",
    "Climbed Table Mountain while travelling in Cape Town",
]


def test_a_question_answered_by_eight_memories_gets_them_all_at_the_building_stage(api, tenant):
    """Half of a context's lines answer the message (QUERY_LED, 10 of at most 20): asked where she has travelled,
    a "building" contact (whose density is facts only) is handed all eight old trips, and its facts behind them.
    Before, five matches led and the other three trips were left out: the stage holds facts only."""
    contact = ContactFactory(tenant=tenant, external_id="asha")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="building")
    background = [("fact", "Works as a nurse at the city hospital"), ("fact", "Lives in Pune with her parents")]
    trips = [("episode", trip) for trip in TRIPS]
    chores = [("episode", f"Fixed the {thing} over the weekend") for thing in OLD_CHORES]
    for memory_type, content in [*background, *trips, *chores]:
        change = memory_add(tenant=tenant, contact=contact, memory_type=memory_type, content=content, actor="test")
        Memory.objects.filter(pk=change.memory.pk).update(occurred_at=timezone.now() - timedelta(days=200))

    body = api.get("/api/v1/context/asha", {"query": "where has she travelled?", "explain": "true"}).json()

    placed = {memory["content"]: memory["placed_by"] for memory in body["memories"]}
    assert {placed.get(content) for _, content in trips} == {"query"}
    assert {content for _, content in background} <= set(placed)
    assert sum(content in placed for _, content in chores) <= QUERY_LED - len(trips)  # only as leftover matches


CHATS = ["film", "match", "concert", "storm", "exam", "party", "launch", "trip", "wedding", "race", "sale", "show"]


def test_small_talk_at_the_building_stage_is_still_answered_with_the_contact_s_facts(api, tenant):
    """The query's matches take at most half the budget before the stage's background has its turn: "hey, how's
    it going?" to a "building" contact with a dozen long chatty episodes gets her facts, then the episodes that
    waited in what is left. Without the share, eight episodes of 62 tokens took the 500 tokens alone."""
    contact = ContactFactory(tenant=tenant, external_id="asha")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="building")
    facts = ["Works as a nurse at the city hospital", "Lives in Pune with her parents", "Has a cat named Miso"]
    chats = [  # 62 tokens a line, and unlike one another (no line says another again)
        f"Hey, how's it going? We chatted about the {topic}: " + " ".join(f"{topic}{n}" for n in range(22))
        for topic in CHATS
    ]
    for memory_type, content in [*(("fact", fact) for fact in facts), *(("episode", chat) for chat in chats)]:
        memory_add(tenant=tenant, contact=contact, memory_type=memory_type, content=content, actor="test")

    body = api.get("/api/v1/context/asha", {"query": "hey, how's it going?", "explain": "true"}).json()

    placed = {memory["content"]: memory["placed_by"] for memory in body["memories"]}
    assert set(facts) <= set(placed)
    assert sum(content in placed for content in chats) >= 3 and body["tokens_used"] > body["memory_budget"] // 2


GARDEN_PLANTS = ["roses", "tomatoes", "basil", "tulips", "lavender", "sunflowers", "strawberries", "mint", "orchids"]
GARDEN_CARE = ["watered the", "repotted the", "pruned the", "fed compost to the", "sprayed neem oil on the"]
RECENT = ["Went hiking in the hills with her sister", "Started a pottery class on Tuesday evenings"]


def test_an_established_contact_s_recent_episodes_are_in_the_context_however_many_old_ones_match(api, tenant):
    """ "Established" holds the episodes of the last 30 days (stages.STAGE_DENSITY), read as such: the recent
    ones fill the context behind the query's best matches even when 45 older episodes are closer to the
    message. Before, the stage's search ranked every episode 40 deep and then dropped the old ones, so a
    message about the garden left the last month out (and most of the budget unspent)."""
    contact = ContactFactory(tenant=tenant, external_id="asha")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage="established")
    old = [f"In the garden she {care} {plant}" for care in GARDEN_CARE for plant in GARDEN_PLANTS]
    for content, days_ago in [*((text, 100) for text in old), *((text, 3) for text in RECENT)]:
        change = memory_add(tenant=tenant, contact=contact, memory_type="episode", content=content, actor="test")
        Memory.objects.filter(pk=change.memory.pk).update(occurred_at=timezone.now() - timedelta(days=days_ago))
    assert Memory.objects.filter(contact=contact, memory_type="episode").count() > 40  # more than one search's depth

    body = api.get("/api/v1/context/asha", {"query": "how is your garden doing?", "explain": "true"}).json()

    placed = {memory["content"]: memory["placed_by"] for memory in body["memories"]}
    assert {placed[text] for text in RECENT} == {"stage"}
    assert sum(by == "query" for by in placed.values()) == QUERY_LED  # the query's best matches lead, old or not


def test_a_long_message_is_remembered_to_its_end(api):
    """Past the rules' 2,000-character window: the message is chunked (50-300 tokens), every chunk extracted
    and stored with the message as its source."""
    places = [
        "the river",
        "the old fort",
        "the market",
        "the botanical garden",
        "the harbour",
        "the museum",
        "the hills",
        "the lake",
        "the library",
    ]
    meals = ["dal and rice", "a mushroom risotto", "fish curry", "pancakes", "a lentil soup"]
    topics = ["chess", "politics", "football", "books", "music", "taxes", "gardening"]
    filler = "\n\n".join(
        f"Day {day}: we walked to {places[day % 9]}, argued about {topics[day % 7]}"
        f" and cooked {meals[day % 5]} for dinner."
        for day in range(1, 46)
    )
    text = f"{filler}\n\nAnyway, news: I work as a pilot at Lufthansa now, and my sister Priya lives in Berlin."
    assert len(text) > 4000
    result = _say(api, text, "long-1")

    memories = Memory.objects.filter(contact__external_id="asha")
    assert memories.filter(memory_type="episode").count() > 1  # one per chunk, none cut off
    assert all(memory.source_message_ids == ["long-1"] for memory in memories)
    assert any("Lufthansa" in memory.content for memory in memories.filter(memory_type="fact"))
    assert any("Lufthansa" in row["content"] for row in result["memories"])
    episodes = memories.filter(memory_type="episode").order_by("metadata__chunk")
    assert "".join(episode.content for episode in episodes).count("Day ") == 45  # every part kept
    found = api.post(
        "/api/v1/memories/search", {"query": "Where does Priya live?", "contact_id": "asha"}, format="json"
    ).json()["results"]
    assert "Berlin" in found[0]["content"]


def _at_cosine(cosine: float) -> np.ndarray:
    """A unit vector at exactly `cosine` to _unit(0)."""
    vector = np.zeros(384, dtype=np.float32)
    vector[0], vector[1] = cosine, np.sqrt(1 - cosine**2)
    return vector


@pytest.mark.parametrize(("cosine", "action"), [(0.905, "reinforced"), (0.895, "created")])
def test_inline_dedup_at_the_0_90_boundary(tenant, cosine, action):
    contact = ContactFactory(tenant=tenant)
    _write(tenant, contact, Candidate("fact", "Has a dog named Bruno", salience=0.5), _unit(0))
    change = _write(tenant, contact, Candidate("fact", "Owns a dog called Bruno", salience=0.5), _at_cosine(cosine))
    assert change.action == action


def test_paraphrases_of_a_fact_reinforce_one_memory(api):
    for index, text in enumerate(["I have a dog named Bruno.", "I've got a dog called Bruno."]):
        _say(api, text, f"p{index}")
    facts = Memory.objects.filter(memory_type="fact", content__contains="Bruno", valid_to__isnull=True)
    assert facts.count() == 1
    assert facts.get().source_message_ids == ["p0", "p1"]


@pytest.mark.parametrize(("cosine", "merged"), [(0.925, 1), (0.915, 0)])
def test_deferred_merge_at_the_0_92_boundary(tenant, cosine, merged):
    """Episodes are only deduplicated inline above 0.97 (two similar days are two events); the deferred merge
    joins those above 0.92, and no others."""
    contact = ContactFactory(tenant=tenant)
    first = _write(tenant, contact, Candidate("episode", "Walked Bruno by the lake", salience=0.5), _unit(0))
    second = _write(tenant, contact, Candidate("episode", "Walked Bruno at the lake", salience=0.5), _at_cosine(cosine))
    assert (first.action, second.action) == ("created", "created")
    assert near_duplicates_merge(tenant=tenant, contact=contact) == merged
    assert Memory.objects.filter(contact=contact, valid_to__isnull=True).count() == 2 - merged


def test_a_flipped_preference_supersedes_the_old_one(api):
    _say(api, "I love spicy food.", "f1")
    _say(api, "I don't like spicy food anymore.", "f2")
    preferences = Memory.objects.filter(memory_type="preference", content__icontains="spicy")
    current = preferences.get(valid_to__isnull=True)
    assert current.content.startswith("Doesn't like")
    assert preferences.get(superseded_by=current).content.startswith("Likes") or preferences.get(
        superseded_by=current
    ).content.startswith("Loves")


@pytest.mark.parametrize(
    ("memory_type", "importance", "decay_rate"),
    [("fact", 0.7, 0.003), ("preference", 0.8, 0.005), ("episode", 0.5, 0.008), ("pattern", 0.8, 0.004)],
)
def test_default_importance_and_decay_rate_per_type(tenant, memory_type, importance, decay_rate):
    """contact-intelligence.txt §3.2's defaults; the brain (tenant scope) decays at 0.01 a day whatever the type."""
    contact = ContactFactory(tenant=tenant)
    for scope, expected_rate in ((contact, decay_rate), (None, 0.01)):
        change = _write(
            tenant, scope, Candidate(memory_type, f"A {memory_type} worth keeping", importance=importance), _unit(5)
        )
        assert change.memory.decay_rate == expected_rate
    assert scoring.type_defaults(memory_type, is_tenant_scope=False) == (importance, decay_rate)


def test_the_schedules_periodic_every_6_hours_deferred_after_300_seconds(tenant, settings):
    from celery.schedules import crontab

    from apps.conversations.models import Conversation
    from apps.core.redis import get_redis
    from apps.memories.dispatch import consolidation_schedule

    assert settings.CELERY_BEAT_SCHEDULE["periodic-consolidation"] == {
        "task": "apps.memories.tasks.periodic_consolidation_task",
        "schedule": crontab(minute=0, hour="*/6"),
    }
    assert settings.ENGRAM["CONSOLIDATION_DELAY_SECONDS"] == 300
    contact = ContactFactory(tenant=tenant)
    now = timezone.now()
    conversation = Conversation.objects.create(
        tenant=tenant, contact=contact, external_id="c-300", started_at=now, last_message_at=now
    )
    get_redis().delete("celery")
    assert consolidation_schedule(conversation=conversation) is True
    (message,) = [json.loads(raw) for raw in get_redis().lrange("celery", 0, -1)]  # the broker's queue
    assert message["headers"]["task"] == "apps.memories.tasks.consolidate_conversation_task"
    eta = datetime.fromisoformat(message["headers"]["eta"])
    assert abs((eta - now).total_seconds() - 300) < 10


def test_an_episode_is_never_discarded(tenant):
    """The record that a turn was said: the discard rule judges facts and preferences only."""
    contact = ContactFactory(tenant=tenant)
    for index in range(10):
        _write(tenant, contact, Candidate("episode", f"Said thing {index}", salience=0.5), _unit(index))
    dull = _write(tenant, contact, Candidate("episode", "Okay, sounds ordinary", salience=0.0), _unit(*range(10)))
    assert dull.action == "created"  # raw 0.0
