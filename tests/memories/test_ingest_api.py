from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from apps.contacts.models import Contact
from apps.conversations.models import Message
from apps.entities.models import Entity
from apps.memories.lifecycle.deferred import pending_events_extract
from apps.memories.models import ContextEvent, Memory, MemoryRevision

pytestmark = pytest.mark.django_db


def ingest(api, text, *, message_id=None, contact="arjun", conversation="conv-1", role="user", **extra):
    body = {"contact_id": contact, "conversation_id": conversation, "message": text, "role": role, **extra}
    if message_id:
        body["message_id"] = message_id
    return api.post("/api/v1/ingest", body, format="json")


def contents(api, contact="arjun", **params):
    response = api.get("/api/v1/memories", {"contact_id": contact, **params})
    assert response.status_code == 200, response.content
    return sorted(row["content"] for row in response.json()["results"])


def test_ingest_persists_message_event_and_memories(api, tenant):
    response = ingest(api, "I have a dog named Bruno", message_id="m1", display_name="Arjun", channel="whatsapp")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["message_id"] == "m1"
    assert body["duplicate"] is False
    by_type = {memory["memory_type"]: memory for memory in body["memories"]}
    assert by_type["fact"]["content"] == "Has a dog named Bruno"
    assert by_type["fact"]["action"] == "created"
    assert by_type["episode"]["content"] == "I have a dog named Bruno"

    contact = Contact.objects.get(tenant=tenant, external_id="arjun")
    assert (contact.display_name, contact.channel) == ("Arjun", "whatsapp")
    message = Message.objects.get(tenant=tenant, external_id="m1")
    event = ContextEvent.objects.get(pk=body["event_id"])
    assert (event.message_id, event.event_type, event.processed) == (message.pk, "message", False)
    assert event.extracted_at is not None

    fact = Memory.objects.get(tenant=tenant, memory_type="fact")
    assert fact.source_message_ids == ["m1"]
    assert fact.source_event_ids == [event.pk]
    assert fact.embedding is not None and len(fact.embedding) == 384
    assert (fact.decay_rate, fact.contact_id) == (0.003, contact.pk)
    # empty scope: novelty 1.0; salience 0.3 (named entity) → raw 0.72; blended with the fact default 0.7 → 0.71
    assert fact.importance == 0.71
    bruno = Entity.objects.get(tenant=tenant, contact=contact, entity_type="pet", slug="bruno")
    assert bruno.metadata == {"species": "dog"}
    assert list(fact.entities.values_list("slug", flat=True)) == ["bruno"]
    assert list(fact.revisions.values_list("action", "actor")) == [("created", f"api_key:{api.key_prefix}")]


def test_fact_is_visible_to_the_very_next_request(api):
    ingest(api, "I work at Infosys", message_id="m1")
    assert "Works at Infosys" in contents(api)
    found = api.get("/api/v1/memories", {"contact_id": "arjun", "q": "Infosys"}).json()["results"]
    assert "Works at Infosys" in [row["content"] for row in found]


def test_same_message_id_is_idempotent(api, tenant):
    first = ingest(api, "I live in Pune", message_id="m1").json()
    again = ingest(api, "I live in Pune", message_id="m1").json()
    assert again["event_id"] == first["event_id"]
    assert again["duplicate"] is True
    assert again["memories"] == first["memories"]
    assert Message.objects.filter(tenant=tenant).count() == 1
    assert ContextEvent.objects.filter(tenant=tenant).count() == 1
    assert Memory.objects.filter(tenant=tenant).count() == len(first["memories"])


def test_message_id_reused_for_another_conversation_is_409(api, tenant):
    ingest(api, "hello there friend", message_id="m1", conversation="a")
    response = ingest(api, "hello there friend", message_id="m1", conversation="b")
    assert response.status_code == 409
    assert Message.objects.filter(tenant=tenant).count() == 1


def test_low_content_turn_stays_in_ledger_without_memories(api, tenant):
    body = ingest(api, "lol", message_id="m1").json()
    assert body["memories"] == []
    assert Message.objects.filter(tenant=tenant, external_id="m1").exists()
    assert not Memory.objects.filter(tenant=tenant).exists()


def test_negation_is_not_a_positive_preference(api):
    ingest(api, "I don't like spicy food", message_id="m1")
    prefs = contents(api, type="preference")
    assert prefs == ["Doesn't like spicy food"]
    assert not any(content.startswith("Likes") for content in contents(api))


def test_duplicate_fact_reinforces_instead_of_storing(api, tenant):
    ingest(api, "I have a dog named Bruno", message_id="m1")
    second = ingest(api, "I have a dog named Bruno", message_id="m2").json()
    fact_change = next(m for m in second["memories"] if m["memory_type"] == "fact")
    assert fact_change["action"] == "reinforced"
    facts = Memory.objects.filter(tenant=tenant, memory_type="fact")
    assert facts.count() == 1
    fact = facts.get()
    assert fact.importance == 0.76
    assert fact.access_count == 1
    assert fact.source_message_ids == ["m1", "m2"]
    assert list(fact.revisions.values_list("action", flat=True)) == ["created", "reinforced"]


def test_correction_supersedes_the_old_fact(api, tenant):
    ingest(api, "I live in Pune", message_id="m1")
    ingest(api, "I moved to Mumbai last month", message_id="m2")
    old = Memory.objects.get(tenant=tenant, content="Lives in Pune")
    new = Memory.objects.get(tenant=tenant, memory_type="fact", valid_to__isnull=True, slot=old.slot)
    assert new.content.startswith("Lives in Mumbai")
    assert old.superseded_by_id == new.pk
    assert old.valid_to is not None
    assert "Lives in Pune" not in contents(api)
    assert "Lives in Pune" in contents(api, include_superseded="true")
    history = api.get(f"/api/v1/memories/{old.pk}/history").json()["history"]
    assert [row["action"] for row in history] == ["created", "superseded"]
    assert history[1]["related_memory"] == str(new.pk)


def test_message_too_long_is_400_and_writes_nothing(api, tenant):
    response = ingest(api, "x" * 32_001, message_id="m1")
    assert response.status_code == 400
    assert "message" in response.json()["error"]["details"]
    assert not Message.objects.filter(tenant=tenant).exists()
    assert not Contact.objects.filter(tenant=tenant).exists()


def test_message_of_exactly_32000_chars_is_accepted(api):
    assert ingest(api, "word " * 6400, message_id="m1").status_code == 202


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"role": "robot"}, "role"),
        ({"message": "   "}, "message"),
        ({"contact_id": ""}, "contact_id"),
        ({"contact_id": "x" * 256}, "contact_id"),
        ({"occurred_at": "yesterday-ish"}, "occurred_at"),
        ({"metadata": [1]}, "metadata"),
    ],
    ids=["bad-role", "blank-message", "empty-contact", "long-contact", "bad-date", "metadata-list"],
)
def test_bad_ingest_input_is_400(api, tenant, patch, field):
    body = {"contact_id": "c", "conversation_id": "v", "message": "I like tea", "role": "user", **patch}
    response = api.post("/api/v1/ingest", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]
    assert not Message.objects.filter(tenant=tenant).exists()


def test_batch_ingests_in_order_and_rejects_bad_batches(api, tenant):
    messages = [
        {
            "contact_id": "c",
            "conversation_id": "v",
            "message": text,
            "role": "user",
            "message_id": f"b{i}",
            "occurred_at": f"2024-01-0{i + 1}T10:00:00Z",
            "speaker": "Caroline",
        }
        for i, text in enumerate(["I live in Pune", "I moved to Mumbai", "I love painting sunsets"])
    ]
    response = api.post("/api/v1/ingest/batch", {"messages": messages}, format="json")
    assert response.status_code == 202
    assert [row["message_id"] for row in response.json()["results"]] == ["b0", "b1", "b2"]
    current = contents(api, contact="c", type="fact,preference")
    assert "Caroline lives in Mumbai" in current
    assert "Caroline loves painting sunsets" in current
    assert "Caroline lives in Pune" not in current

    too_many = api.post("/api/v1/ingest/batch", {"messages": [messages[0]] * 501}, format="json")
    assert too_many.status_code == 400
    bad_item = api.post(
        "/api/v1/ingest/batch",
        {"messages": [{**messages[0], "message_id": "new1"}, {**messages[0], "role": "x", "message_id": "new2"}]},
        format="json",
    )
    assert bad_item.status_code == 400
    assert not Message.objects.filter(tenant=tenant, external_id__in=["new1", "new2"]).exists()
    assert api.post("/api/v1/ingest/batch", {"messages": []}, format="json").status_code == 400


def test_event_endpoint_shows_processing_state(api, other_api):
    event_id = ingest(api, "I have a cat named Mochi", message_id="m1").json()["event_id"]
    body = api.get(f"/api/v1/events/{event_id}").json()
    assert (body["state"], body["message_id"], body["processed"]) == ("extracted", "m1", False)
    assert other_api.get(f"/api/v1/events/{event_id}").status_code == 404


def test_interrupted_extraction_is_retried_without_losing_the_message(api, tenant):
    body = ingest(api, "I have a sister named Maya", message_id="m1").json()
    event = ContextEvent.objects.get(pk=body["event_id"])
    # simulate a request that died after the ledger commit and before extraction finished
    Memory.objects.filter(tenant=tenant).delete()
    ContextEvent.objects.filter(pk=event.pk).update(
        extracted_at=None, result={}, created_at=event.created_at.replace(year=2020)
    )
    assert pending_events_extract() == 1
    assert "Has a sister named Maya" in contents(api)
    assert ContextEvent.objects.get(pk=event.pk).extracted_at is not None
    assert pending_events_extract() == 0  # idempotent


def test_observation_becomes_memory(api, tenant):
    api.post("/api/v1/contacts", {"contact_id": "arjun"}, format="json")
    response = api.post(
        "/api/v1/observations",
        {
            "content": "Prefers short emails",
            "category": "preference",
            "contact_id": "arjun",
            "source_metadata": {"session_id": "s1"},
        },
        format="json",
    )
    assert response.status_code == 202
    event = ContextEvent.objects.get(pk=response.json()["event_id"])
    assert (event.event_type, event.source_metadata) == ("preference", {"source": "observation", "session_id": "s1"})
    assert contents(api, type="preference") == ["Prefers short emails"]

    brain = api.post("/api/v1/observations", {"content": "We sell sourdough bread", "category": "fact"}, format="json")
    assert brain.status_code == 202
    assert Memory.objects.get(tenant=tenant, contact__isnull=True).decay_rate == 0.01

    assert api.post("/api/v1/observations", {"content": "x", "category": "gossip"}, format="json").status_code == 400
    missing = api.post(
        "/api/v1/observations", {"content": "x", "category": "fact", "contact_id": "nobody"}, format="json"
    )
    assert missing.status_code == 404


def test_memory_crud_and_history(api, tenant, issued_key):
    created = api.post("/api/v1/memories", {"content": "Allergic to peanuts", "memory_type": "semantic"}, format="json")
    assert created.status_code == 201, created.content
    memory_id = created.json()["id"]
    assert created.json()["memory_type"] == "fact"  # seed type "semantic" maps to fact
    assert created.json()["contact_id"] is None

    patched = api.patch(
        f"/api/v1/memories/{memory_id}", {"content": "Severely allergic to peanuts", "is_pinned": True}, format="json"
    )
    assert patched.status_code == 200
    assert (patched.json()["content"], patched.json()["is_pinned"]) == ("Severely allergic to peanuts", True)
    memory = Memory.objects.get(pk=memory_id)
    assert memory.embedding is not None

    history = api.get(f"/api/v1/memories/{memory_id}/history").json()["history"]
    assert [row["action"] for row in history] == ["created", "edited", "pinned"]
    assert {row["actor"] for row in history} == {f"api_key:{issued_key.prefix}"}
    assert history[1]["before"]["content"] == "Allergic to peanuts"
    assert history[1]["after"]["content"] == "Severely allergic to peanuts"

    assert api.delete(f"/api/v1/memories/{memory_id}").status_code == 204
    assert api.get("/api/v1/memories").json()["results"] == []
    # deleted means not served, its history included; the record stays for operators
    assert api.get(f"/api/v1/memories/{memory_id}/history").status_code == 404
    actions = list(memory.revisions.order_by("created_at", "id").values_list("action", "actor"))
    assert actions[-1] == ("deleted", f"api_key:{issued_key.prefix}")


@pytest.mark.parametrize(
    "payload",
    [{"content": ""}, {"importance": 1.5}, {}, {"is_pinned": "maybe"}],
    ids=["empty-content", "importance-over-1", "nothing", "bad-bool"],
)
def test_bad_memory_edit_is_400(api, payload):
    memory_id = api.post(
        "/api/v1/memories", {"content": "Likes jazz", "memory_type": "preference"}, format="json"
    ).json()["id"]
    assert api.patch(f"/api/v1/memories/{memory_id}", payload, format="json").status_code == 400
    assert Memory.objects.get(pk=memory_id).content == "Likes jazz"


def test_memories_are_isolated_between_contacts_and_tenants(api, other_api, tenant):
    ingest(api, "I have a dog named Bruno", contact="a", message_id="a1")
    ingest(api, "I have a cat named Mochi", contact="b", conversation="conv-b", message_id="b1")
    assert not any("Mochi" in content for content in contents(api, contact="a"))
    assert not any("Bruno" in content for content in contents(api, contact="b"))
    memory_id = Memory.objects.filter(tenant=tenant).first().pk
    assert other_api.get(f"/api/v1/memories/{memory_id}").status_code == 404
    assert other_api.patch(f"/api/v1/memories/{memory_id}", {"content": "hacked"}, format="json").status_code == 404
    assert other_api.delete(f"/api/v1/memories/{memory_id}").status_code == 404
    assert other_api.get(f"/api/v1/memories/{memory_id}/history").status_code == 404
    assert other_api.get("/api/v1/memories").json()["results"] == []
    assert other_api.get("/api/v1/memories", {"contact_id": "a"}).status_code == 404
    assert Memory.objects.filter(tenant=tenant, deleted_at__isnull=False).count() == 0
    assert MemoryRevision.objects.filter(actor__startswith="api_key:", action="edited").count() == 0


def test_same_entity_mentioned_again_links_to_the_existing_one(api, tenant):
    ingest(api, "My dog Bruno is three years old", message_id="m1")
    ingest(api, "Bruno ate my shoes again today", message_id="m2")
    assert Entity.objects.filter(tenant=tenant, slug="bruno").count() == 1
    bruno = Entity.objects.get(tenant=tenant, slug="bruno")
    assert bruno.mention_count >= 2
    assert Memory.objects.filter(entities=bruno, content__contains="shoes").exists()


def test_memory_list_filters(api):
    ingest(api, "I have a dog named Bruno. I love biryani", message_id="m1")
    assert contents(api, type="preference") == ["Loves biryani"]
    assert contents(api, entity="pet:bruno") == sorted(
        ["Has a dog named Bruno", "I have a dog named Bruno. I love biryani"]
    )
    assert api.get("/api/v1/memories", {"type": "nonsense"}).status_code == 400
    assert api.get("/api/v1/memories/not-a-uuid").status_code == 404
    both = api.get("/api/v1/memories", {"contact_id": "arjun", "scope": "tenant"})  # a contact's, or the tenant's?
    assert both.status_code == 400 and "scope" in both.json()["error"]["details"]


def test_working_memory_expires_with_the_session_window(api, tenant):
    from datetime import timedelta

    response = api.post(
        "/api/v1/memories",
        {"content": "Is looking at the pricing page right now", "memory_type": "working"},
        format="json",
    )
    assert response.status_code == 201, response.content
    memory = Memory.objects.get(pk=response.json()["id"])
    assert memory.memory_type == "episode"
    assert memory.expires_at is not None
    assert timedelta(hours=23, minutes=59) < memory.expires_at - memory.created_at <= timedelta(hours=24, minutes=1)
    semantic = api.post("/api/v1/memories", {"content": "Runs a bakery", "memory_type": "semantic"}, format="json")
    assert Memory.objects.get(pk=semantic.json()["id"]).expires_at is None


def test_an_episode_is_indexed_with_its_date_and_linked_to_its_speaker(api, tenant):
    text = "We finally repainted the kitchen a pale green colour"
    response = ingest(
        api,
        text,
        message_id="d1",
        contact="c",
        conversation="v",
        occurred_at="2023-05-08T13:56:00Z",
        speaker="Caroline",
    )
    assert response.status_code == 202
    episode = Memory.objects.get(tenant=tenant, memory_type="episode")
    assert episode.index_terms == "8 May 2023"
    assert episode.content == "Caroline: We finally repainted the kitchen a pale green colour"
    # the date is found by full-text search, and is part of what was embedded
    assert Memory.objects.filter(pk=episode.pk, search_vector="may 2023").exists()
    from apps.core.embeddings import get_embedder

    dated = get_embedder().embed_batch([f"(8 May 2023) {episode.content}"])[0]
    assert np.dot(np.asarray(episode.embedding), dated) == pytest.approx(1.0, abs=1e-4)
    assert [entity.key for entity in episode.entities.all()] == ["person:caroline"]


def test_an_episode_is_also_indexed_with_the_days_it_names(api, tenant):
    text = "By the way, yesterday I went bowling and got 2 strikes. I love bowling!"
    response = ingest(api, text, message_id="d1", contact="c", conversation="v", occurred_at="2022-03-17T09:00:00Z")
    assert response.status_code == 202
    episode = Memory.objects.get(tenant=tenant, memory_type="episode")
    assert episode.index_terms == "17 March 2022 16 March 2022"
    # "what did he do on March 16?" matches the day the bowling happened, not only the day it was told
    assert Memory.objects.filter(pk=episode.pk, search_vector="16 march 2022").exists()


def test_a_memory_is_indexed_with_the_places_it_names_and_what_contains_them(api, tenant):
    """ "a beach in Tampa" answers "Which state did Nate visit?": the episode's full-text entry holds `city
    Florida state USA America` after its date (extraction/places.py); its embedding is of the date and text
    only; "turtles" adds the kind `pet animal` (extraction/kinds.py). An edited text is indexed with its own
    places; `reindex_words` indexes memories written before."""
    text = "I took my turtles to the beach in Tampa yesterday!"
    response = ingest(api, text, message_id="t1", contact="c", conversation="v", occurred_at="2023-05-08T13:56:00Z")
    assert response.status_code == 202
    episode = Memory.objects.get(tenant=tenant, memory_type="episode")
    assert episode.index_terms == "8 May 2023 7 May 2023 | city Florida state USA America pet animal"
    assert Memory.objects.filter(pk=episode.pk, search_vector="florida state").exists()
    from apps.core.embeddings import get_embedder

    dated = get_embedder().embed_batch([f"(8 May 2023 7 May 2023) {episode.content}"])[0]
    assert np.dot(np.asarray(episode.embedding), dated) == pytest.approx(1.0, abs=1e-4)

    patched = api.patch(f"/api/v1/memories/{episode.pk}", {"content": "We drove to Boston instead."}, format="json")
    assert patched.status_code == 200, patched.content
    episode.refresh_from_db()
    assert episode.index_terms == "8 May 2023 7 May 2023 | city Massachusetts state USA America"

    # a memory written before places were indexed gets them from the command
    Memory.objects.filter(pk=episode.pk).update(index_terms="8 May 2023 7 May 2023")
    out = StringIO()
    call_command("reindex_words", "--tenant", tenant.slug, stdout=out)
    assert "Done: 1 of 1 memories indexed anew" in out.getvalue()
    episode.refresh_from_db()
    assert episode.index_terms == "8 May 2023 7 May 2023 | city Massachusetts state USA America"


def test_reembed_keeps_the_episode_date_in_the_embedding(api, tenant):
    from apps.core.embeddings import get_embedder
    from apps.memories.store.reembed import reembed

    text = "We finally repainted the kitchen a pale green colour"
    response = ingest(api, text, message_id="d1", contact="c", conversation="v", occurred_at="2023-05-08T13:56:00Z")
    assert response.status_code == 202
    episode = Memory.objects.get(tenant=tenant, memory_type="episode")
    Memory.objects.filter(pk=episode.pk).update(embedding=[0.0] * 384, embedding_model="old")
    reembed(tenant=tenant)
    episode.refresh_from_db()
    dated = get_embedder().embed_batch([f"(8 May 2023) {episode.content}"])[0]
    assert np.dot(np.asarray(episode.embedding), dated) == pytest.approx(1.0, abs=1e-4)


def _turn(message_id, speaker, text, *, second=0):
    return {
        "contact_id": "c",
        "conversation_id": "v",
        "message": text,
        "role": "user",
        "message_id": message_id,
        "speaker": speaker,
        "occurred_at": f"2023-05-08T13:56:{second:02d}Z",
    }


def _turns(api, turns):
    for index, turn in enumerate(turns):
        assert api.post("/api/v1/ingest", _turn(*turn, second=index), format="json").status_code == 202


def test_an_episode_is_indexed_with_the_turns_around_it_stored_or_not(api, tenant):
    turns = [
        ("q1", "Melanie", "Which pottery class did you join?"),
        ("a1", "Caroline", "The Tuesday evening one at the community studio, I made a bowl with a blue glaze"),
        ("r1", "Melanie", "lol"),  # low content: no memory, but its words are the answer's context
    ]
    _turns(api, turns)
    assert not Memory.objects.filter(tenant=tenant, source_message_ids__contains=["r1"]).exists()
    answer = Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids__contains=["a1"])
    context = Memory.objects.filter(pk=answer.pk).values_list("context_vector", flat=True).get()
    assert {"potteri", "class", "glaze", "lol", "melani"} <= {part.split(":")[0].strip("'") for part in context.split()}
    # a turn in another conversation is never part of it
    body = {
        "contact_id": "c",
        "conversation_id": "other",
        "message": "zebra crossing",
        "role": "user",
        "message_id": "z",
    }
    api.post("/api/v1/ingest", body, format="json")
    context = Memory.objects.filter(pk=answer.pk).values_list("context_vector", flat=True).get()
    assert "zebra" not in context


def test_a_chat_exports_placeholder_is_passed_over_by_the_context_words(api, tenant):
    """A chat export writes "<Media omitted>" after a turn that shared a photo: it is no turn, so the turns
    on either side of it are still each other's context (docs/benchmarks.md, Session 34)."""
    turns = [
        ("q1", "Melanie", "Which pottery class did you join?"),
        ("p1", "Melanie", "<Media omitted>"),
        ("a1", "Caroline", "The Tuesday evening one at the community studio"),
        ("p2", "Caroline", "\u200eimage omitted"),
        ("p3", "Caroline", "<Media omitted>"),
        ("r1", "Melanie", "What a gorgeous glaze on that bowl"),
    ]
    _turns(api, turns)
    assert not Memory.objects.filter(tenant=tenant, source_message_ids__overlap=["p1", "p2", "p3"]).exists()
    rows = Memory.objects.filter(tenant=tenant, memory_type="episode").values_list(
        "source_message_ids", "context_vector"
    )
    words = {ids[0]: {part.split(":")[0].strip("'") for part in context.split()} for ids, context in rows}
    assert {"potteri", "class", "tuesday", "glaze", "bowl"} <= words["a1"]
    assert {"tuesday", "studio"} <= words["q1"] and {"tuesday", "studio"} <= words["r1"]
    assert not {"media", "omit"} & (words["q1"] | words["a1"] | words["r1"])


def _unit(vector):
    return np.asarray(vector, dtype=np.float32)


CONTEXT_TURNS = [
    ("f1", "Melanie", "My family has been amazing, they helped me through a rough winter"),
    ("f2", "Melanie", "They're a real support. I appreciate them a lot."),
]


def _episode(tenant, message_id):
    return Memory.objects.get(tenant=tenant, memory_type="episode", source_message_ids__contains=[message_id])


def _context_expected(memory, previous):
    """A memory's context embedding: its own and the previous episode's, weighted by their words (context_mix)."""
    from apps.core.embeddings import memory_text

    own_text = memory_text(content=memory.content, index_terms=memory.index_terms)
    previous_text = memory_text(content=previous.content, index_terms=previous.index_terms)
    mixed = len(own_text.split()) * _unit(memory.embedding) + len(previous_text.split()) * _unit(previous.embedding)
    return mixed / np.linalg.norm(mixed)


def _context_embed(tenant):
    """What context_embed_task does for memories without a context embedding (what an older version queued)."""
    from apps.memories.store.writing import memories_context_embed

    return memories_context_embed(memory_ids=list(Memory.objects.filter(tenant=tenant).values_list("pk", flat=True)))


def test_a_turn_is_stored_with_its_context_embedding_searchable_on_the_next_request(api, tenant):
    _turns(api, CONTEXT_TURNS)
    first, second = _episode(tenant, "f1"), _episode(tenant, "f2")
    assert first.context_embedding is None  # the conversation's first turn has no context
    assert np.dot(_unit(second.context_embedding), _context_expected(second, first)) == pytest.approx(1.0, abs=5e-4)
    # the own embedding stays the turn alone (what dedup and the vector index compare)
    assert np.dot(_unit(second.embedding), _unit(second.context_embedding)) < 0.99
    assert _context_embed(tenant) == 0  # nothing left for a worker


def test_a_memory_without_a_context_embedding_gets_one_from_the_worker_task(api, tenant):
    _turns(api, CONTEXT_TURNS)
    first, second = _episode(tenant, "f1"), _episode(tenant, "f2")
    Memory.objects.filter(pk=second.pk).update(context_embedding=None)  # as an older version stored it
    assert _context_embed(tenant) == 1
    second.refresh_from_db()
    assert np.dot(_unit(second.context_embedding), _context_expected(second, first)) == pytest.approx(1.0, abs=5e-4)


def test_turns_sharing_one_timestamp_take_the_episode_before_in_arrival_order_as_context(api, tenant):
    at = "2023-05-08T13:56:00Z"
    turns = [*CONTEXT_TURNS, ("f3", "Caroline", "That is lovely to hear, Melanie")]
    messages = [{**_turn(*turn), "occurred_at": at} for turn in turns]
    assert api.post("/api/v1/ingest/batch", {"messages": messages}, format="json").status_code == 202
    first, second, third = (_episode(tenant, f"f{index}") for index in (1, 2, 3))
    assert np.dot(_unit(second.context_embedding), _context_expected(second, first)) == pytest.approx(1.0, abs=5e-4)
    assert np.dot(_unit(third.context_embedding), _context_expected(third, second)) == pytest.approx(1.0, abs=5e-4)
    # sent one by one with the same timestamp, the fourth turn's context is the third's episode
    fourth_turn = {**_turn("f4", "Melanie", "Thanks, my kids painted a mural"), "occurred_at": at}
    assert api.post("/api/v1/ingest", fourth_turn, format="json").status_code == 202
    fourth = _episode(tenant, "f4")
    assert np.dot(_unit(fourth.context_embedding), _context_expected(fourth, third)) == pytest.approx(1.0, abs=5e-4)


def test_a_batch_turn_gets_the_turn_before_it_in_the_same_batch_as_context(api, tenant):
    messages = [_turn(*turn, second=index) for index, turn in enumerate(CONTEXT_TURNS)]
    assert api.post("/api/v1/ingest/batch", {"messages": messages}, format="json").status_code == 202
    first, second = _episode(tenant, "f1"), _episode(tenant, "f2")
    assert first.context_embedding is None
    assert np.dot(_unit(second.context_embedding), _context_expected(second, first)) == pytest.approx(1.0, abs=5e-4)


def test_reembed_and_edit_recompute_the_context_embedding(api, tenant):
    from apps.memories.store.reembed import reembed

    _turns(api, CONTEXT_TURNS)
    first, second = _episode(tenant, "f1"), _episode(tenant, "f2")
    Memory.objects.filter(pk=second.pk).update(embedding_model="old", context_embedding=None)
    reembed(tenant=tenant)
    second.refresh_from_db()
    assert np.dot(_unit(second.context_embedding), _context_expected(second, first)) == pytest.approx(1.0, abs=5e-4)

    edited = "They are a real support to me, my whole family."
    response = api.patch(f"/api/v1/memories/{second.pk}", {"content": edited}, format="json")
    assert response.status_code == 200, response.content
    second.refresh_from_db()
    assert second.content == edited
    assert np.dot(_unit(second.context_embedding), _context_expected(second, first)) == pytest.approx(1.0, abs=5e-4)
    assert _context_embed(tenant) == 0  # a late worker run leaves the edited memory's context alone


@pytest.mark.parametrize("enabled", [True, False], ids=["server-timing-on", "off-by-default"])
def test_batch_ingest_tells_where_its_time_went_only_when_asked(api, settings, enabled):
    settings.ENGRAM = {**settings.ENGRAM, "SERVER_TIMING": enabled}
    body = {
        "messages": [
            {"contact_id": "arjun", "conversation_id": "c1", "role": "user", "message": "My dog Bruno is a beagle"},
            {"contact_id": "arjun", "conversation_id": "c1", "role": "user", "message": "I work at Infosys"},
        ]
    }
    response = api.post("/api/v1/ingest/batch", body, format="json")
    assert response.status_code == 202, response.content
    if not enabled:
        assert "Server-Timing" not in response
        return
    from apps.core.timing import parse_server_timing

    timing = parse_server_timing(response["Server-Timing"])
    # (the consolidation is queued on commit, which a test's transaction never reaches: no `enqueue` here)
    for name in ("parse", "ledger", "state", "extraction", "embedding", "write", "sql", "redis", "total"):
        assert timing.get(name, 0) > 0, (name, timing)
    assert sum(value for name, value in timing.items() if name != "total") == pytest.approx(timing["total"], abs=0.1)


WORDS_TURNS = [
    ("w1", "Melanie", "Which pottery class did you join last spring?"),
    ("w2", "Caroline", "The Tuesday evening one at the community studio"),
    ("w3", "Melanie", "lol"),  # no memory, but words of its neighbours' context
    ("w4", "Caroline", "I made a bowl with a blue glaze for my grandmother"),
    ("w5", "Melanie", "She must have loved the colour of that glaze"),
    ("w6", "Caroline", "She put it on the kitchen shelf next to her radio"),
    ("w7", "Melanie", "Did you sign up for the summer pottery course too?"),
]


def _context_words_by_turn(tenant, prefix):
    rows = Memory.objects.filter(tenant=tenant, memory_type="episode", source_message_ids__0__startswith=prefix)
    return {row.source_message_ids[0][len(prefix) :]: row.context_vector for row in rows}


def test_batched_episodes_get_the_context_words_turns_sent_one_by_one_get(api, tenant):
    """Ingest inserts a batch's new episodes with their context words and updates only the turn before the
    batch: the words equal those of the same turns sent one by one (where each turn updates the one before)."""
    for index, (message_id, speaker, text) in enumerate(WORDS_TURNS):
        body = {**_turn(f"a-{message_id}", speaker, text, second=index), "conversation_id": "one-by-one"}
        assert api.post("/api/v1/ingest", body, format="json").status_code == 202
    batches = (WORDS_TURNS[:3], WORDS_TURNS[3:4], WORDS_TURNS[4:])  # the second batch is one turn
    second = 0
    for batch in batches:
        messages = []
        for message_id, speaker, text in batch:
            messages.append(
                {
                    **_turn(f"b-{message_id}", speaker, text, second=second),
                    "conversation_id": "batched",
                    "contact_id": "c2",
                }
            )
            second += 1
        assert api.post("/api/v1/ingest/batch", {"messages": messages}, format="json").status_code == 202

    one_by_one, batched = _context_words_by_turn(tenant, "a-"), _context_words_by_turn(tenant, "b-")
    assert set(one_by_one) == {"w1", "w2", "w4", "w5", "w6", "w7"}
    assert batched == one_by_one
    assert "lol" in batched["w2"] and "lol" in batched["w4"]  # reaching into the next batch and the one before
