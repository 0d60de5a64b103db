"""A standing instruction with a condition ("Always … when I ask about recipes") is stored with it, and a
question that meets the condition gets the instruction first, though it shares no words with it
(retrieval/signals/condition.py)."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.db import connection

from apps.memories.models import Memory
from apps.memories.retrieval.signals import condition
from apps.memories.store.editing import memory_edit
from tests.memories.test_retrieval_failure_classes import ASSISTANT_CHAT, DAY, _ingest, _search

pytestmark = pytest.mark.django_db

INSTRUCTION = "Always tell me the total cooking time when I ask about recipes."
WITH_INSTRUCTION = [
    *ASSISTANT_CHAT,
    (DAY + timedelta(days=6), [("", INSTRUCTION), ("", "Of course, I will add it every time.")]),
]


def _instruction(tenant) -> Memory:
    return Memory.objects.get(tenant=tenant, memory_type="preference", content__contains="total cooking time")


def _row(body: dict, contact_id: str) -> tuple[int, dict] | None:
    for position, row in enumerate(body["results"]):
        if row["memory_type"] == "preference" and f"{contact_id}:S4:1" in row["sources"]:
            return position, row
    return None


def test_an_instruction_is_stored_with_its_condition_embedded(api, tenant):
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    memory = _instruction(tenant)
    assert memory.metadata["instruction_condition"] == "recipes"
    assert memory.context_embedding is not None
    # its context embedding is the condition's, not its own text's (nor a mix with the turn before)
    assert list(memory.context_embedding) != list(memory.embedding)


def test_a_question_that_meets_the_condition_gets_the_instruction_first(api, tenant):
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    body = _search(api, "chef", "Can you suggest a recipe for dinner?")
    found = _row(body, "chef")
    assert found is not None
    position, row = found
    assert position <= 1  # tied with the best result, ordered after it by relevance or before
    explain = row["explain"]
    assert explain["condition"]["text"] == "recipes"
    assert explain["condition"]["met"] is True
    assert explain["condition"]["cosine"] >= 0.5
    assert "condition" in explain["found_by"]
    # not by its own words: closer in meaning to the question than the instruction's text is
    assert explain["condition"]["cosine"] > explain["cosine"]
    assert row["score"] == max(result["score"] for result in body["results"])


def test_without_the_condition_the_instruction_is_not_among_the_first(api, tenant, monkeypatch):
    """Before: the instruction is about cooking times, the question about recipes for dinner; by its own text
    it ranks below the turns and replies about food."""
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    monkeypatch.setattr(condition, "CONDITION_MET", 2.0)  # never met
    found = _row(_search(api, "chef", "Can you suggest a recipe for dinner?"), "chef")
    assert found is None or found[0] > 2


def test_the_context_hands_the_instruction_to_the_model_when_it_applies(api, tenant):
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    query = {"query": "Can you suggest a recipe for dinner?", "token_budget": 1000}
    body = api.get("/api/v1/context/chef", query).json()
    lines = [line for line in body["context_text"].splitlines() if line.startswith("[")]
    # among the first two: the question is also a request for advice, and the preference that fits it ("Wants to
    # cook more at home") is raised beside it (signals/advice.py); both are in the context's first lines
    first = [line for line in lines[:2] if line.startswith("[PREFERENCE]")]
    assert any("total cooking time when they ask about recipes" in line for line in first)


def test_a_question_that_does_not_meet_it_ranks_as_before(api, tenant):
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    body = _search(api, "chef", "Who is coming over on Saturday?")
    found = _row(body, "chef")
    if found is not None:
        _, row = found
        assert row["explain"]["condition"]["met"] is False
        assert row["score"] < body["results"][0]["score"]
    assert all(not (row["explain"]["condition"] or {}).get("met") for row in body["results"])


def test_an_edit_that_drops_the_condition_drops_it_from_the_memory(api, tenant):
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    memory = memory_edit(memory=_instruction(tenant), actor="owner", content="Wants the total cooking time.")
    memory.refresh_from_db()
    assert "instruction_condition" not in memory.metadata
    memory = memory_edit(
        memory=memory, actor="owner", content="Wants you to always give the cooking time when they ask about baking."
    )
    memory.refresh_from_db()
    assert memory.metadata["instruction_condition"] == "baking"


def test_instructions_stored_before_get_their_condition_on_migration(api, tenant):
    _ingest(api, "chef", WITH_INSTRUCTION, roles=("user", "assistant"))
    memory = _instruction(tenant)
    condition_vector = list(memory.context_embedding)
    Memory.objects.filter(pk=memory.pk).update(metadata={"polarity": 1}, context_embedding=memory.embedding)
    migration = importlib.import_module("apps.memories.migrations.0023_condition_index")

    class Editor:  # what the RunPython function uses of a schema editor
        pass

    editor = Editor()
    editor.connection = connection
    migration.conditions_backfill(None, editor)
    memory.refresh_from_db()
    assert memory.metadata == {"polarity": 1, "instruction_condition": "recipes"}
    assert list(memory.context_embedding) == condition_vector
