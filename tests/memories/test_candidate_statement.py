"""The candidate statement is one prepared statement whatever the query holds (retrieval/candidates.py): its
sources are always in it, their inputs empty or switched off, and the lists that may be empty travel as array
text (rows.array_literal). Each new statement text, or each new set of parameter types, is prepared and planned
again on every connection; with a source per input, 39 texts over 400 GET /context of typical contacts. A scope
planned for its own parameters (a large or narrowed one) is planned on every search anyway: its statement leaves
out the sources the query switches off, and finds the same candidates."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.core.tenancy import tenant_scope
from apps.entities.models import Entity
from apps.memories.models import MemoryEntity
from apps.memories.retrieval import candidates
from apps.memories.retrieval.search import memory_search
from apps.memories.retrieval.types import Background
from tests.factories import GARDEN_TOPICS, ContactFactory, MemoryFactory

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "vector AS ("  # the candidate statement's vector source


def _prepared_candidate_statements() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", [f"%{MARKER}%"])
        return int(cursor.fetchone()[0])


def test_queries_of_every_shape_share_one_prepared_candidate_statement():
    contact = ContactFactory()
    now = timezone.now()
    memories = MemoryFactory.bulk(GARDEN_TOPICS[:8], tenant=contact.tenant, contact=contact, occurred_at=now)
    MemoryFactory.bulk(
        ["prefers organic fertiliser", "likes planting in the morning"],
        tenant=contact.tenant,
        contact=contact,
        memory_type="preference",
    )
    bruno = Entity.objects.create(
        tenant=contact.tenant, contact=contact, entity_type="pet", slug="bruno", display_name="Bruno"
    )
    MemoryEntity.objects.create(memory=memories[5], entity=bruno)
    seen: list[dict[str, Any]] = []

    def look(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if MARKER in sql:
            seen.append(dict(params))
        return execute(sql, params, many, context)

    shapes: list[tuple[str, Background | None]] = [
        ("the tomato plants", None),  # words of the scope
        ("qwxz", None),  # no word the scope holds
        ("what did Bruno dig up?", None),  # an entity
        ("what happened in the garden this week?", None),  # a time window
        ("can you recommend what I should plant next?", None),  # a request for advice
        ("the tomato plants", Background(("fact", "preference"), limit=3, episodes_since=now - timedelta(days=7))),
        ("the tomato plants", Background(("episode",), limit=3)),
    ]
    with tenant_scope(contact.tenant_id), connection.execute_wrapper(look):
        before = _prepared_candidate_statements()
        for query, background in shapes:
            memory_search(tenant=contact.tenant, contact=contact, query=query, background=background)
        prepared = _prepared_candidate_statements() - before
    # the shapes differ in every input a source takes, on and off
    assert {params["keyword_on"] for params in seen} == {True, False}
    assert {params["entity_ids"] == "{}" for params in seen} == {True, False}
    assert {params["window_starts"] == "{}" for params in seen} == {True, False}
    assert {params["preference_on"] for params in seen} == {True, False}
    assert {params["background_types"] == "{}" for params in seen} == {True, False}
    assert {params["background_since"] is None for params in seen} == {True, False}
    assert len(seen) == len(shapes)
    assert prepared == 1


def test_a_scope_planned_for_its_own_parameters_leaves_out_the_sources_its_query_switches_off(monkeypatch):
    contact = ContactFactory()
    now = timezone.now()
    memories = MemoryFactory.bulk(
        GARDEN_TOPICS[:8], tenant=contact.tenant, contact=contact, memory_type="fact", occurred_at=now
    )
    bruno = Entity.objects.create(
        tenant=contact.tenant, contact=contact, entity_type="pet", slug="bruno", display_name="Bruno"
    )
    MemoryEntity.objects.create(memory=memories[5], entity=bruno)
    texts: list[str] = []

    def look(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if MARKER in sql:
            texts.append(sql)
        return execute(sql, params, many, context)

    def search(query: str) -> list[tuple[Any, float]]:
        # narrowed to facts: planned for its own parameters whatever the scope's size (vector_effort.custom_plan)
        found = memory_search(tenant=contact.tenant, contact=contact, query=query, memory_types=("fact",), top_k=8)
        return [(item.memory.pk, round(item.score, 9)) for item in found.results]

    with tenant_scope(contact.tenant_id), connection.execute_wrapper(look):
        plain = search("the tomato plants")
        named = search("what did Bruno dig up in the garden this week?")
        monkeypatch.setattr(candidates, "COMPACT_CUSTOM_PLANS", False)
        assert search("the tomato plants") == plain and plain  # the same candidates, the same ranking
        assert search("what did Bruno dig up in the garden this week?") == named and named
    compact_plain, compact_named, full_plain, _ = texts
    for source in ("entity", "time", "preference", "background"):
        assert f"{source} AS (SELECT NULL::uuid AS id WHERE false)" in compact_plain
        assert f"{source} AS (SELECT NULL::uuid AS id WHERE false)" not in full_plain
    assert "vector AS (SELECT m.id" in compact_plain and "condition AS (SELECT m.id" in compact_plain
    # a query that names an entity and a week keeps those two sources
    assert "entity AS (SELECT me.memory_id" in compact_named and "time AS (SELECT w.id" in compact_named
    assert "preference AS (SELECT NULL::uuid AS id WHERE false)" in compact_named
