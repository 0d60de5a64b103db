"""A large tenant's or contact's own vector index (apps/memories/store/vector_indexes.py): built for an owner past
its threshold while the rest of the table holds at least as many, read by its large scopes' candidate statements
(the planner proves the partial index's predicate from the scope's tenant or contact), dropped when the owner is
gone; and what a sync plans."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from apps.contacts.services import contact_delete
from apps.core.tenancy import tenant_scope
from apps.memories.retrieval.search import memory_search
from apps.memories.store import vector_indexes
from apps.memories.store.vector_indexes import (
    CONTACT,
    OwnVectorIndex,
    index_name,
    own_vector_indexes,
    tenant_vector_indexes,
    vector_index_plan,
    vector_indexes_sync,
)
from apps.tenants.services import tenant_delete
from tests.factories import ContactFactory, MemoryFactory, TenantFactory
from tests.vector_rows import shared_vector_index_built_after, unit_vectors

A, B, C, D, E = (uuid.UUID(int=number) for number in (1, 2, 3, 4, 5))


def _index(tenant_id: uuid.UUID, *, valid: bool = True) -> OwnVectorIndex:
    return OwnVectorIndex(owner_id=tenant_id, name=index_name(tenant_id), valid=valid, size_bytes=0)


def test_a_tenant_past_the_threshold_beside_larger_others_gets_one_the_largest_first():
    plan = vector_index_plan(counts={A: 300, B: 500, C: 900}, existing=[], minimum=300, most=50)
    # C is most of the table (900 of 1,700: a graph of its own would be nearly the shared one); A and B are not
    assert plan.build == [(B, 500), (A, 300)]
    assert plan.drop == [] and plan.keep == []


def test_below_the_threshold_none_and_a_tenant_that_is_the_table_none():
    assert vector_index_plan(counts={A: 299, B: 5000, C: 5000}, existing=[], minimum=300, most=50).build == [
        (B, 5000),
        (C, 5000),
    ]
    assert vector_index_plan(counts={A: 10_000}, existing=[], minimum=300, most=50).build == []


def test_only_the_largest_have_one_and_a_larger_newcomer_takes_the_place_of_the_smallest():
    plan = vector_index_plan(counts={A: 300, B: 400, C: 500, E: 10_000}, existing=[_index(A)], minimum=300, most=2)
    # B and C are the two largest that qualify (E is most of the table): A's index goes
    assert plan.build == [(C, 500), (B, 400)]
    assert [index.owner_id for index in plan.drop] == [A] and plan.keep == []
    assert vector_index_plan(counts={A: 300, B: 400}, existing=[], minimum=300, most=0).build == []


def test_an_index_is_kept_down_to_half_the_threshold_and_dropped_below_or_when_its_tenant_is_gone():
    existing = [_index(A), _index(B), _index(C)]
    plan = vector_index_plan(counts={A: 150, B: 149, D: 300, E: 5000}, existing=existing, minimum=300, most=50)
    assert [index.owner_id for index in plan.keep] == [A]  # shrank, but not below half: no rebuild back and forth
    assert sorted(index.owner_id for index in plan.drop) == [B, C]  # B below half; C's tenant is gone
    assert plan.build == [(D, 300)]  # E is most of the table


def test_an_unfinished_build_is_dropped_and_built_again():
    plan = vector_index_plan(counts={A: 400, B: 900}, existing=[_index(A, valid=False)], minimum=300, most=50)
    assert [index.name for index in plan.drop] == [index_name(A)]
    assert plan.build == [(A, 400)]


def test_threshold_zero_drops_them_all_and_builds_none():
    plan = vector_index_plan(counts={A: 400, B: 900}, existing=[_index(A)], minimum=0, most=50)
    assert plan.build == [] and [index.owner_id for index in plan.drop] == [A] and plan.keep == []


def test_a_contact_is_weighed_against_the_whole_table_not_its_listed_peers():
    # the contacts listed are only those near the threshold: the rest of the table is `total`
    plan = vector_index_plan(counts={A: 12_000, B: 30_000}, existing=[], minimum=10_000, most=20, total=100_000)
    assert plan.build == [(B, 30_000), (A, 12_000)]
    plan = vector_index_plan(counts={A: 12_000, B: 30_000}, existing=[], minimum=10_000, most=20, total=50_000)
    assert plan.build == [(A, 12_000)]  # B is most of the table: the shared graph is nearly its own


def test_the_index_is_built_as_the_shared_one_over_the_tenants_rows_only():
    sql = vector_indexes.create_index_sql(A)
    assert sql == (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "memory_hnsw_tenant_{A.hex}" ON memories_memory '
        "USING hnsw (embedding halfvec_cosine_ops) WITH (m = 16, ef_construction = 64) "
        f"WHERE tenant_id = '{A}'::uuid"
    )
    with pytest.raises(ValueError):  # only a UUID is ever written into the statement
        vector_indexes.create_index_sql("x'; DROP TABLE memories_memory; --")
    assert vector_indexes.create_index_sql(B, CONTACT) == (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "memory_hnsw_contact_{B.hex}" ON memories_memory '
        "USING hnsw (embedding halfvec_cosine_ops) WITH (m = 16, ef_construction = 64) "
        f"WHERE contact_id = '{B}'::uuid"
    )


SMALL, LARGE = 1200, 2400  # each past the threshold of 1,000, the larger two thirds of the table


@pytest.fixture
def two_tenants(settings) -> Iterator[tuple[Any, Any]]:  # type: ignore[no-untyped-def]
    """A contact of 1,200 memories in one tenant, one of 2,400 in another; a tenant's own index from 1,000."""
    settings.ENGRAM = {**settings.ENGRAM, "VECTOR_TENANT_INDEX_FROM": 1000}
    contacts = []
    with shared_vector_index_built_after():
        for number, size in enumerate((SMALL, LARGE)):
            contact = ContactFactory(tenant=TenantFactory())
            MemoryFactory.bulk(
                [f"note {number}-{index} about the garden" for index in range(size)],
                vectors=unit_vectors(size, number),
                tenant=contact.tenant,
                contact=contact,
            )
            contacts.append(contact)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
    yield contacts[0], contacts[1]
    settings.ENGRAM = {**settings.ENGRAM, "VECTOR_TENANT_INDEX_FROM": 0, "VECTOR_CONTACT_INDEX_FROM": 0}
    vector_indexes_sync()  # the test database keeps no index of a tenant the flush removes


def _vector_index_read(contact: Any) -> list[str]:
    """The indexes the vector source of `contact`'s candidate statement reads, planned for its parameters as the
    search plans a scope of 1,000 memories or more. The planner sorts a few thousand rows' vectors exactly rather
    than walk a graph; with sorting disabled, the plan says which graph it walks."""
    statements: list[tuple[str, Any]] = []

    def capture(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with tenant_scope(contact.tenant_id):
        with connection.execute_wrapper(capture):
            memory_search(
                tenant=contact.tenant,
                contact=contact,
                query="the garden",
                query_vector=np.asarray(unit_vectors(1, 99)[0], dtype=np.float32),
            )
        sql, params = next((sql, params) for sql, params in statements if "vector AS (" in sql)
        with connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_custom_plan; SET enable_sort = off")
            try:
                cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
                plan = cursor.fetchone()[0]
            finally:
                cursor.execute("RESET plan_cache_mode; RESET enable_sort")
    source = next(node for node in _nodes(plan[0]["Plan"]) if node.get("Alias") == "vector")
    return [node["Index Name"] for node in _nodes(source) if "Index Name" in node]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


@pytest.mark.django_db(transaction=True)  # CREATE INDEX CONCURRENTLY runs outside any transaction
def test_a_sync_builds_the_index_the_tenants_large_scope_then_reads_and_drops_it_with_the_tenant(two_tenants):
    small, large = two_tenants
    assert _vector_index_read(small) == ["memory_embedding_hnsw"]  # before: the graph of every tenant's rows

    report = vector_indexes_sync()
    # the smaller tenant only: the larger is two thirds of the table, a graph of its own would be nearly the shared
    assert [(owner.kind, tenant, count) for owner, tenant, count, _ in report.built] == [
        ("tenant", small.tenant_id, SMALL)
    ]
    assert [(index.owner_id, index.valid) for index in tenant_vector_indexes()] == [(small.tenant_id, True)]
    assert _vector_index_read(small) == [index_name(small.tenant_id)]
    assert _vector_index_read(large) == ["memory_embedding_hnsw"]
    again = vector_indexes_sync()
    assert (again.built, again.dropped, again.kept) == ([], [], 1)

    tenant_delete(tenant=small.tenant)
    gone = vector_indexes_sync()
    assert [(owner.kind, tenant) for owner, tenant in gone.dropped] == [("tenant", small.tenant_id)]
    assert tenant_vector_indexes() == []


@pytest.mark.django_db(transaction=True)
def test_a_contact_past_its_threshold_gets_an_index_its_searches_read_and_it_goes_with_the_contact(
    two_tenants, settings
):
    small, large = two_tenants
    settings.ENGRAM = {**settings.ENGRAM, "VECTOR_TENANT_INDEX_FROM": 0, "VECTOR_CONTACT_INDEX_FROM": 1000}
    assert _vector_index_read(small) == ["memory_embedding_hnsw"]

    report = vector_indexes_sync()
    # the smaller contact only: the larger holds two thirds of the table
    assert [(owner.kind, owner_id, count) for owner, owner_id, count, _ in report.built] == [
        ("contact", small.pk, SMALL)
    ]
    assert [(index.owner_id, index.valid) for index in own_vector_indexes(CONTACT)] == [(small.pk, True)]
    assert _vector_index_read(small) == [index_name(small.pk, CONTACT)]
    assert _vector_index_read(large) == ["memory_embedding_hnsw"]
    assert tenant_vector_indexes() == []  # the tenants' are off

    contact_delete(contact=small, actor="test")
    gone = vector_indexes_sync()
    assert [(owner.kind, owner_id) for owner, owner_id in gone.dropped] == [("contact", small.pk)]
    assert own_vector_indexes(CONTACT) == []


@pytest.mark.django_db(transaction=True)
def test_a_sync_that_finds_another_running_does_nothing(two_tenants):
    other = connection.copy()  # another process's session holds the lock
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [vector_indexes.LOCK_ID])
        report = vector_indexes_sync()
        assert report.busy and report.built == [] and tenant_vector_indexes() == []
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [vector_indexes.LOCK_ID])
    finally:
        other.close()
    assert len(vector_indexes_sync().built) == 1  # released: the next run builds


@pytest.mark.django_db(transaction=True)
def test_the_command_lists_what_a_sync_would_do_and_does_it(two_tenants):
    small, _ = two_tenants
    out = io.StringIO()
    call_command("vector_indexes", stdout=out)
    assert f"to build: {small.tenant.slug} (1,200 memories)" in out.getvalue()
    assert "Run with --sync to do it now." in out.getvalue()
    assert tenant_vector_indexes() == []
    out = io.StringIO()
    call_command("vector_indexes", "--sync", stdout=out)
    assert f"building {index_name(small.tenant_id)} over 1,200 memories…" in out.getvalue()
    assert "Done: 1 built, 0 dropped, 0 kept" in out.getvalue()
    listed = io.StringIO()
    call_command("vector_indexes", stdout=listed)
    assert f"{index_name(small.tenant_id)}: {small.tenant.slug}, 1,200 memories" in listed.getvalue()
    assert "valid" in listed.getvalue() and "to build" not in listed.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_command_lists_a_contacts_index_by_its_tenant_and_external_id(two_tenants, settings):
    small, _ = two_tenants
    settings.ENGRAM = {**settings.ENGRAM, "VECTOR_TENANT_INDEX_FROM": 0, "VECTOR_CONTACT_INDEX_FROM": 1000}
    out = io.StringIO()
    call_command("vector_indexes", stdout=out)
    assert "Tenants' own vector indexes are off" in out.getvalue()
    assert "2 contacts of 500 memories or more" in out.getvalue()
    assert f"to build: {small.tenant.slug} / {small.external_id} (1,200 memories)" in out.getvalue()
    call_command("vector_indexes", "--sync", stdout=io.StringIO())
    listed = io.StringIO()
    call_command("vector_indexes", stdout=listed)
    assert f"{index_name(small.pk, CONTACT)}: {small.tenant.slug} / {small.external_id}, 1,200 memories" in (
        listed.getvalue()
    )
