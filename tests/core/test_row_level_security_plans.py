"""What row-level security must not cost: the policies are written so that the planner keeps the plans of the
same queries without them (apps/core/rls.py): where the vector candidates of a contact's search are read from
the HNSW index without the policies, they are with them — a policy estimated as selective made the planner
sort the scope's vectors exactly instead (14 ms vs 3 ms at 2,000 memories, docs/benchmarks.md). Planted: the
`all OR tenant = bound` form halves the scans' estimates and fails this.

And what the one generic plan a small scope's candidate statement runs on must not do (retrieval/vector_effort.py):
read the HNSW index, whatever the planner estimates of a contact's size."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, transaction

from apps.core.tenancy import tenant_scope
from apps.entities.models import Entity
from apps.memories.models import MemoryEntity
from apps.memories.retrieval import candidates, search, vector_effort
from apps.memories.retrieval.search import memory_search
from tests.factories import ContactFactory, MemoryFactory, TenantFactory
from tests.vector_rows import shared_vector_index_built_after, unit_vectors

# Each test runs in a transaction rolled back after it, over scopes committed once for the module (a superuser's
# connection reads them too): what a test writes (timestamps, statistics, a small contact) goes with it.
pytestmark = pytest.mark.django_db

PER_SCOPE = 2000


@pytest.fixture(scope="module")
def searched_contact(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """Three scopes of 2,000 memories (two contacts of one tenant, one of another), each memory linked to one of
    twenty entities of its scope, analysed; committed, and flushed after the module's tests as a transactional
    test's teardown does."""
    with django_db_blocker.unblock():
        tenant, other = TenantFactory(), TenantFactory()
        scopes = [ContactFactory(tenant=tenant), ContactFactory(tenant=tenant), ContactFactory(tenant=other)]
        with shared_vector_index_built_after():
            for number, contact in enumerate(scopes):
                memories = MemoryFactory.bulk(
                    [f"note {number}-{index} about the garden" for index in range(PER_SCOPE)],
                    vectors=unit_vectors(PER_SCOPE, number),
                    tenant=contact.tenant,
                    contact=contact,
                )
                entities = Entity.objects.bulk_create(
                    Entity(
                        tenant=contact.tenant, contact=contact, entity_type="topic", slug=f"t{i}", display_name=f"T{i}"
                    )
                    for i in range(20)
                )
                MemoryEntity.objects.bulk_create(
                    MemoryEntity(memory=memory, entity=entities[index % 20]) for index, memory in enumerate(memories)
                )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memories_memory, memories_memoryentity, entities_entity, contacts_contact")
        try:
            yield scopes[0]
        finally:
            call_command("flush", interactive=False, verbosity=0)


def test_the_vector_candidates_plan_as_without_the_policies(searched_contact):
    contact = searched_contact
    sql, params, plan = _candidates_plan(contact, query="the garden t3", seed=99)
    settings = connection.settings_dict
    with psycopg.connect(f"host={settings['HOST']} dbname={settings['NAME']} user=postgres") as superuser:
        unpoliced = superuser.execute(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchone()[0]
    # the vector candidates plan as without the policies (a superuser's plan), node for node — HNSW where it was
    policed, free = _vector_source(plan), _vector_source(unpoliced)
    assert _shape(policed) == _shape(free), json.dumps(plan, indent=1)
    # the policy is estimated as (nearly) always true: the scope's scan expects the rows it expects without it
    # (the `all OR bound` form halved the estimate, and the planner then sorted the scope's vectors exactly)
    for with_policy, without in zip(_scans(policed), _scans(free), strict=True):
        assert with_policy["Plan Rows"] >= 0.9 * without["Plan Rows"], (with_policy, without)


def _candidates_plan(
    contact: Any, *, query: str, seed: int, analyze: bool = False, **search: Any
) -> tuple[str, Any, list[dict[str, Any]]]:
    """The candidate statement a search of `contact` for `query` runs (bound to its tenant), and its plan
    (`analyze`: as run, with the rows each node returned)."""
    query_vector = np.asarray(unit_vectors(1, seed)[0], dtype=np.float32)
    with tenant_scope(contact.tenant_id):
        statements: list[tuple[str, Any]] = []

        def capture(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            statements.append((sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(capture):
            memory_search(tenant=contact.tenant, contact=contact, query=query, query_vector=query_vector, **search)
        sql, params = next((sql, params) for sql, params in statements if "vector AS (" in sql)
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN ({'ANALYZE, ' if analyze else ''}FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0]
    return sql, params, plan


def _vector_source(plan: list[dict[str, Any]]) -> dict[str, Any]:
    return next(node for node in _nodes(plan[0]["Plan"]) if node.get("Alias") == "vector")


def _shape(node: dict[str, Any]) -> list[tuple[str, str]]:
    """The plan's nodes, without the InitPlans and SubPlans the policies add."""
    return [(item["Node Type"], item.get("Index Name") or item.get("Relation Name", "")) for item in _nodes(node)]


def _scans(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in _nodes(node) if item.get("Relation Name") == "memories_memory"]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        if not child.get("Subplan Name", "CTE").startswith(("InitPlan", "SubPlan")):  # a CTE's plan is kept
            yield from _nodes(child)


def test_the_link_policy_is_a_column_test_never_a_lookup_per_link(searched_contact):
    """A link (memories_memoryentity) carries its memory's tenant and is visible by it, like every tenant-owned
    row (migration memories/0025). Before, its policy looked its memory and its entity up: two correlated EXISTS,
    run as two probes per link (0021) or, worse, as a hash of every entity of every tenant built to check a few
    hundred links (0019; 24 of a 40 ms candidate statement at 100k). Checked on the statements that read links:
    the entity source and the candidates' matched entities (the query names t3, linked to 100 of the contact's
    memories), and the entities of the memories handed out. Planted: 0021's policy puts a SubPlan in every
    link's filter and fails."""
    contact = searched_contact
    _, _, plan = _candidates_plan(contact, query="the garden t3", seed=97)
    entity_source = next(node for node in _every_node(plan[0]["Plan"]) if node.get("Alias") == "entity")
    assert any(node.get("Relation Name") == "memories_memoryentity" for node in _every_node(entity_source))
    links = [node for node in _every_node(plan[0]["Plan"]) if node.get("Relation Name") == "memories_memoryentity"]
    assert len(links) >= 2  # the entity source and each candidate's matched entities
    with tenant_scope(contact.tenant_id):
        ids = list(contact.memories.values_list("id", flat=True)[:40])
        statements: list[tuple[str, Any]] = []

        def capture(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            statements.append((sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(capture):
            search.memory_entities(memory_ids=ids)
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {statements[-1][0]}", statements[-1][1])
            links += [
                node
                for node in _every_node(cursor.fetchone()[0][0]["Plan"])
                if node.get("Relation Name") == "memories_memoryentity"
            ]
    for node in links:
        assert "tenant_id = " in node.get("Filter", ""), json.dumps(node, indent=1)  # the policy, on the row
        assert "SubPlan" not in node.get("Filter", ""), json.dumps(node, indent=1)


def _every_node(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The plan's nodes, InitPlans and SubPlans included."""
    yield node
    for child in node.get("Plans", []):
        yield from _every_node(child)


def test_a_question_naming_a_time_reads_the_window_from_the_scope_time_index(searched_contact):
    """Retrieval's time source ("what did I do on 8 May 2023?") finds the memories said in the window through
    memory_scope_time_idx, not by reading every memory of the scope (a contact of 20,000 memories: ~100 ms)."""
    _, _, plan = _candidates_plan(
        searched_contact,
        query="what did I do in the garden on 8 May 2023?",
        seed=98,
        memory_types=("fact", "preference", "episode", "pattern"),  # as GET /context asks
    )
    source = next(node for node in _nodes(plan[0]["Plan"]) if node.get("Alias") == "time")
    assert "memory_scope_time_idx" in {index for _, index in _shape(source)}, json.dumps(source, indent=1)


def test_a_crowded_window_is_read_up_to_its_budget_latest_first(searched_contact, monkeypatch):
    """A window holding more memories than TIME_ROW_BUDGET ("this week" of a contact with 200,000 memories held
    ~2,000) is read from the time index backwards and only up to the budget, and the time source keeps the
    closest in meaning of those. Here 800 memories in the window against a budget of 20 (the shipped 400 against
    ~2,000 at 1M plans the same way; with 800 rows and 400 a bitmap scan of the window is cheaper and taken).
    Planted: the window read whole (no LIMIT) fails."""
    monkeypatch.setattr(candidates, "TIME_ROW_BUDGET", 20)
    contact = searched_contact
    day = datetime(2023, 5, 8, tzinfo=UTC)
    with connection.cursor() as cursor:  # 800 of the scope's 2,000 memories said on 8 May 2023 (a minute apart),
        cursor.execute(  # the others one a day in the years before
            "UPDATE memories_memory SET occurred_at = CASE WHEN row_number <= 800 "
            "THEN %s + make_interval(secs => 60 * row_number::int) "
            "ELSE %s - make_interval(days => row_number::int) END "
            "FROM (SELECT id, row_number() OVER (ORDER BY id) FROM memories_memory WHERE contact_id = %s) r "
            "WHERE memories_memory.id = r.id",
            [day, day, contact.pk],
        )
        cursor.execute("ANALYZE memories_memory")
    _, _, plan = _candidates_plan(
        contact,
        query="what did I do in the garden on 8 May 2023?",
        seed=98,
        analyze=True,
        memory_types=("fact", "preference", "episode", "pattern"),
    )
    source = next(node for node in _nodes(plan[0]["Plan"]) if node.get("Alias") == "time")
    window_scans = [node for node in _scans(source) if node.get("Index Name") == "memory_scope_time_idx"]
    assert [node["Node Type"] for node in window_scans] == ["Index Scan"], json.dumps(source, indent=1)
    assert window_scans[0]["Scan Direction"] == "Backward"  # the latest first
    assert window_scans[0]["Actual Rows"] == 20, json.dumps(source, indent=1)
    assert source["Actual Rows"] == 20


def test_a_small_scope_s_generic_plan_never_reads_the_vector_index(searched_contact, monkeypatch):
    small = ContactFactory(tenant=searched_contact.tenant)
    MemoryFactory.bulk(
        [f"note {index} about the orchard" for index in range(8)],
        vectors=unit_vectors(8, 7),
        tenant=small.tenant,
        contact=small,
    )
    assert not vector_effort.custom_plan(8)
    exact_sql, params, _ = _candidates_plan(small, query="the orchard notes", seed=5)
    indexed = candidates.vector_source_sql
    monkeypatch.setattr(candidates, "vector_source_sql", lambda scope_sql, exact=False: indexed(scope_sql))
    indexed_sql, _, _ = _candidates_plan(small, query="the orchard notes", seed=5)
    # a table of one tenant and one large contact, as the statistics tell it, and comparing vectors costed
    # dear: the generic plan, which knows no contact, estimates each as large as the table and prefers the index
    connection.check_constraints()  # the small scope's deferred key checks, run before ALTER TABLE
    with connection.cursor() as cursor:
        for column in ("tenant_id", "contact_id"):
            cursor.execute(f"ALTER TABLE memories_memory ALTER COLUMN {column} SET (n_distinct = 1)")
        cursor.execute("ANALYZE memories_memory")
    try:
        with tenant_scope(small.tenant_id), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL cpu_operator_cost = 1")
            generic_exact, generic_indexed = _generic_plan(exact_sql, params), _generic_plan(indexed_sql, params)
    finally:
        with connection.cursor() as cursor:
            for column in ("tenant_id", "contact_id"):
                cursor.execute(f"ALTER TABLE memories_memory ALTER COLUMN {column} RESET (n_distinct)")
            cursor.execute("ANALYZE memories_memory")
    # the index form's generic plan walks the HNSW graph (for a scope of eight); the exact form's never does
    assert "memory_embedding_hnsw" in _indexes(generic_indexed), json.dumps(_vector_source(generic_indexed), indent=1)
    assert "memory_embedding_hnsw" not in _indexes(generic_exact), json.dumps(generic_exact, indent=1)


_PARAMETER = re.compile(r"%\((\w+)\)s")


def _generic_plan(sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan PostgreSQL makes of `sql` for any values of its parameters (EXPLAIN (GENERIC_PLAN)), each
    named parameter a $n of its Python value's type."""
    numbers: dict[str, int] = {}

    def placeholder(match: re.Match[str]) -> str:
        name = match.group(1)
        number = numbers.setdefault(name, len(numbers) + 1)
        return f"${number}::{_sql_type(params[name])}"

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (GENERIC_PLAN, FORMAT JSON) {_PARAMETER.sub(placeholder, sql)}".replace("%%", "%"))
        return cursor.fetchone()[0]  # type: ignore[no-any-return]


def _sql_type(value: Any) -> str:
    if value is None:
        return "text"
    if isinstance(value, list):
        return (_sql_type(value[0]) if value else "text") + "[]"
    if isinstance(value, bool):
        return "boolean"
    types = {uuid.UUID: "uuid", datetime: "timestamptz", float: "float8", int: "int8", str: "text"}
    return next(name for kind, name in types.items() if isinstance(value, kind))


def _indexes(plan: list[dict[str, Any]]) -> set[str]:
    return {node["Index Name"] for node in _nodes(plan[0]["Plan"]) if "Index Name" in node}
