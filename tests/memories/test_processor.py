"""The memory processor: offline rules by default, the LLM through a real OpenAI-protocol server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from django.db import DataError

from apps.core.models import LlmCall
from apps.memories.lifecycle import profile_rules
from apps.memories.lifecycle.processor import events_process, llm_pending_retry
from apps.memories.models import ContextEvent, Memory, MemoryProfile, ProfileAudit
from tests.fake_openai import fake_openai_fixture, llm_settings  # noqa: F401  (the fixture is `fake_openai`)

pytestmark = pytest.mark.django_db


def say(api, text, message_id, contact="arjun", **extra):
    body = {
        "contact_id": contact,
        "conversation_id": f"c-{contact}",
        "message": text,
        "role": "user",
        "message_id": message_id,
    }
    response = api.post("/api/v1/ingest", {**body, **extra}, format="json")
    assert response.status_code == 202, response.content


def test_offline_processor_builds_narrative_and_scaffold(api, tenant):
    say(api, "My dog Bruno is a golden retriever", "m1", display_name="Arjun")
    say(api, "I work at Infosys", "m2")
    say(api, "I don't like spicy food", "m3")
    api.post(
        "/api/v1/observations",
        {"content": "Role: Backend engineer", "category": "scaffold_update", "contact_id": "arjun"},
        format="json",
    )

    stats = events_process()
    assert stats == {"scopes": 1, "events": 4}
    profile = MemoryProfile.objects.get(tenant=tenant, contact__external_id="arjun")
    assert "Works at Infosys" in profile.working_memory or "works at Infosys" in profile.working_memory
    assert profile.scaffold["Pets"] == {"Bruno": "dog"}
    assert profile.scaffold["Work"] == "Works at Infosys"
    assert profile.scaffold["Dislikes"] == ["Doesn't like spicy food"]
    assert profile.scaffold["Role"] == "Backend engineer"
    assert not ContextEvent.objects.filter(tenant=tenant, processed=False).exists()
    audit = ProfileAudit.objects.get(profile=profile)
    assert audit.source == "offline"
    assert len(audit.event_ids) == 4
    # running again changes nothing more
    assert events_process() == {"scopes": 0, "events": 0}
    assert ProfileAudit.objects.count() == 1

    body = api.get("/api/v1/contacts/arjun/profile").json()
    assert body["scaffold"]["Pets"] == {"Bruno": "dog"}
    assert body["pending_events"] == 0


def test_profile_is_in_the_context_text(api, tenant):
    say(api, "I work at Infosys", "m1")
    events_process()
    text = api.get("/api/v1/context/arjun").json()["context_text"]
    assert "# Your Context" in text
    assert '"Work": "Works at Infosys"' in text


def test_llm_processor_applies_scaffold_narrative_and_facts(api, tenant, fake_openai):
    say(api, "We are moving the blog to Ghost next month", "m1")
    fake_openai.enqueue_chat(
        json.dumps(
            {
                "updated_scaffold": {"Projects": json.dumps({"blog": "moving to Ghost"}), "Role": "Founder"},
                "updated_working_memory": "Arjun is migrating his blog to Ghost.",
                "facts_to_embed": ["Is migrating the blog to Ghost", "Founded a bakery"],
            }
        ),
        prompt_tokens=120,
        completion_tokens=60,
    )
    with llm_settings(fake_openai):
        assert events_process() == {"scopes": 1, "events": 1}
    profile = MemoryProfile.objects.get(tenant=tenant, contact__external_id="arjun")
    assert profile.scaffold == {
        "Projects": {"blog": "moving to Ghost"},
        "Role": "Founder",
    }  # stringified JSON unwrapped
    assert profile.working_memory == "Arjun is migrating his blog to Ghost."
    facts = Memory.objects.filter(tenant=tenant, created_by="system:processor")
    assert sorted(facts.values_list("content", flat=True)) == ["Founded a bakery", "Is migrating the blog to Ghost"]
    audit = ProfileAudit.objects.get()
    assert audit.source == "llm"
    assert audit.scaffold_after["Role"] == "Founder"
    prompt = fake_openai.chat_requests[-1].body["messages"][1]["content"]
    assert "We are moving the blog to Ghost next month" in prompt
    call = LlmCall.objects.get(purpose="memory_processor")
    assert (call.success, call.prompt_tokens, call.completion_tokens, str(call.tenant_id)) == (
        True,
        120,
        60,
        str(tenant.pk),
    )


@pytest.mark.parametrize("failure", ["malformed", "status-500", "not-an-object"])
def test_unusable_llm_answer_falls_back_to_the_rules(api, tenant, fake_openai, failure):
    say(api, "I work at Infosys", "m1")
    for _ in range(3):  # the first try and both retries
        if failure == "malformed":
            fake_openai.enqueue_malformed()
        elif failure == "status-500":
            fake_openai.enqueue_status(500)
        else:
            fake_openai.enqueue_chat(json.dumps({"updated_scaffold": "nope"}))
    with llm_settings(fake_openai):
        assert events_process()["events"] == 1
    audit = ProfileAudit.objects.get()
    assert audit.source == "offline"
    assert MemoryProfile.objects.get().scaffold["Work"] == "Works at Infosys"


def test_a_failure_while_applying_leaves_events_for_retry(api, tenant, fake_openai):
    say(api, "I work at Infosys", "m1")
    # PostgreSQL refuses a NUL byte in text: the write fails half-way and must roll back
    fake_openai.enqueue_chat(
        json.dumps({"updated_scaffold": {}, "updated_working_memory": "x", "facts_to_embed": ["bad \u0000 fact"]})
    )
    with llm_settings(fake_openai), pytest.raises(DataError):
        events_process()
    assert ContextEvent.objects.filter(tenant=tenant, processed=False).count() == 1
    assert not ProfileAudit.objects.exists()
    assert MemoryProfile.objects.get().version == 0
    fake_openai.enqueue_chat(
        json.dumps({"updated_scaffold": {"Work": "Infosys"}, "updated_working_memory": "ok", "facts_to_embed": []})
    )
    with llm_settings(fake_openai):
        assert events_process()["events"] == 1
    assert MemoryProfile.objects.get().scaffold == {"Work": "Infosys"}


def test_the_llm_scaffold_is_merged_into_the_existing_one(api, tenant, fake_openai):
    """The model answers with the keys it changed; what it left out (from the rules, an earlier answer, an
    operator's scaffold_update) stays."""
    say(api, "My dog Bruno is a golden retriever", "m1")
    events_process()  # no LLM: the rules' scaffold
    assert MemoryProfile.objects.get().scaffold["Pets"] == {"Bruno": "dog"}
    say(api, "We are moving the blog to Ghost next month", "m2")
    fake_openai.enqueue_chat(
        json.dumps({"updated_scaffold": {"Projects": {"blog": "Ghost"}}, "updated_working_memory": "ok"})
    )
    with llm_settings(fake_openai):
        assert events_process()["events"] == 1
    scaffold = MemoryProfile.objects.get().scaffold
    assert scaffold["Projects"] == {"blog": "Ghost"} and scaffold["Pets"] == {"Bruno": "dog"}


def test_events_the_rules_processed_during_an_llm_outage_are_sent_to_the_llm_when_it_is_back(api, tenant, fake_openai):
    say(api, "I work at Infosys", "m1")
    for _ in range(3):  # the first try and both retries: the model is down
        fake_openai.enqueue_status(503)
    with llm_settings(fake_openai):
        assert events_process()["events"] == 1
        assert ProfileAudit.objects.get().source == "offline"
        assert list(ContextEvent.objects.values_list("processed", "llm_pending")) == [(True, True)]

        for _ in range(3):  # still down: the retry pass stops at the first failure, nothing changes
            fake_openai.enqueue_status(503)
        assert llm_pending_retry() == 0
        assert ContextEvent.objects.get().llm_pending is True

        fake_openai.enqueue_chat(
            json.dumps({"updated_scaffold": {"Role": "Engineer"}, "updated_working_memory": "Works at Infosys."})
        )
        assert llm_pending_retry() == 1  # back: the model gets the event the rules handled
        assert llm_pending_retry() == 0  # once
    prompt = fake_openai.chat_requests[-1].body["messages"][1]["content"]
    assert "I work at Infosys" in prompt
    profile = MemoryProfile.objects.get()
    assert profile.working_memory == "Works at Infosys."
    assert profile.scaffold["Role"] == "Engineer" and profile.scaffold["Work"] == "Works at Infosys"  # merged
    assert ContextEvent.objects.get().llm_pending is False
    assert list(ProfileAudit.objects.order_by("created_at").values_list("source", flat=True)) == [
        "offline",
        "llm_retry",
    ]


def test_without_an_llm_nothing_waits_for_one(api, tenant):
    say(api, "I work at Infosys", "m1")
    events_process()
    assert ContextEvent.objects.get().llm_pending is False
    assert llm_pending_retry() == 0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"a": '{"b": "[1, 2]"}'}, {"a": {"b": [1, 2]}}),
        ({"a": "[not json"}, {"a": "[not json"}),
        (['{"x": 1}', "plain"], [{"x": 1}, "plain"]),
        ("{}", {}),
    ],
    ids=["nested", "broken", "list", "empty"],
)
def test_recursive_json_normalisation(raw, expected):
    assert profile_rules.normalise_json_values(raw) == expected


def test_working_memory_is_capped_at_500_words():
    output = profile_rules.parse_processor_output(
        {"updated_scaffold": {}, "updated_working_memory": "word " * 700, "facts_to_embed": "not a list"}
    )
    assert output is not None
    assert len(output.working_memory.split()) == 501  # 500 words and the ellipsis
    assert output.facts_to_embed == []
