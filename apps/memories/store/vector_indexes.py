"""A large tenant's own vector index: a partial HNSW index over its memories alone.

Every memory is in one HNSW index (models/memory.py, `memory_embedding_hnsw`), and a search walks that graph
filtered to its scope (pgvector's iterative scan). The walk's cost grows with what the filter throws away, and
so with the other tenants' rows: the same 20,000-memory contact of a 100,000-memory tenant took 2.8 ms of index
time (p50, `bench_latency --floor`) in a table holding that tenant alone and 64 ms in one holding 553,000
memories, its GET /context p50 34 → 105 ms (docs/benchmarks.md, "Session 48").

So a tenant that holds `tenant_index_from()` memories or more (settings ENGRAM["VECTOR_TENANT_INDEX_FROM"], 0:
none) while the other tenants together hold at least as many gets a partial index `WHERE tenant_id = '<id>'`,
a graph of its rows only. PostgreSQL's planner proves the predicate from the scope's `tenant_id = …` when a
statement is planned for its parameters: the candidate statement of a scope of CUSTOM_PLAN_FROM memories or more
(retrieval/vector_effort.py), the only scopes whose vector source walks a graph (a smaller scope sorts its
vectors exactly). Nothing in the search path names the index.

Built off the request path — the hourly `vector_indexes_sync_task`, or `manage.py vector_indexes --sync` — with
CREATE INDEX CONCURRENTLY (writes keep flowing), one run at a time (an advisory lock held by the connection that
builds). A build interrupted leaves an invalid index: the next run drops it and builds it again. An index whose
tenant is gone, or holds fewer than half the threshold, is dropped (half: a tenant near the line is not rebuilt
back and forth). What it costs: each new memory of such a tenant is inserted into two graphs (+1.1 ms a memory at
100k), and each partial index is one more the planner weighs for every statement on the table — a candidate
statement planned for its parameters took 2.2 ms to plan with none, 3.1 with 50, 6.2 with 200 (a plain ORM read
0.12 / 0.20 / 0.53 ms) — so only the `tenant_indexes_most()` largest tenants (ENGRAM_VECTOR_TENANT_INDEXES_MAX,
50) have one. Many more large tenants than that want the table partitioned by tenant (docs/architecture.md,
"Beyond one machine").
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from pgvector.django import HnswIndex

from apps.core.rows import settings_in_force
from apps.memories.models import Memory

INDEX_PREFIX = "memory_hnsw_tenant_"  # + the tenant's id as 32 hex digits: 51 characters, within the 63 allowed
SHARED_INDEX = "memory_embedding_hnsw"  # every memory's (models/memory.py): the tenant's index is built like it
BUILD_MEMORY = "512MB"  # maintenance_work_mem of a build: a 100k-memory tenant's graph (~115 MB) built in memory
LOCK_ID = 0x656E6772_766978  # pg_try_advisory_lock's key: one sync at a time, across every process


def tenant_index_from() -> int:
    """Memories from which a tenant gets a vector index of its own (0: no tenant does)."""
    return int(settings.ENGRAM["VECTOR_TENANT_INDEX_FROM"])


def tenant_indexes_most() -> int:
    """How many tenants at most have an index of their own (the largest): each partial index is one more the
    planner weighs for every statement on the memories table (~0.02 ms of a custom plan's planning each)."""
    return int(settings.ENGRAM["VECTOR_TENANT_INDEXES_MAX"])


def index_name(tenant_id: Any) -> str:
    return INDEX_PREFIX + uuid.UUID(str(tenant_id)).hex


@dataclass(frozen=True)
class TenantVectorIndex:
    tenant_id: uuid.UUID
    name: str
    valid: bool  # false: a CONCURRENTLY build that did not finish (the planner ignores it; writes still pay it)
    size_bytes: int


@dataclass(frozen=True)
class Plan:
    build: list[tuple[uuid.UUID, int]]  # (tenant, its memories), the largest first
    drop: list[TenantVectorIndex]
    keep: list[TenantVectorIndex]


@dataclass
class SyncReport:
    built: list[tuple[uuid.UUID, int, float]] = field(default_factory=list)  # (tenant, memories, seconds)
    dropped: list[uuid.UUID] = field(default_factory=list)
    kept: int = 0
    waiting: int = 0  # builds left for the next run (`limit`)
    busy: bool = False  # another run held the lock: this one did nothing


def vector_index_plan(
    *, counts: dict[uuid.UUID, int], existing: list[TenantVectorIndex], minimum: int, most: int
) -> Plan:
    """What a sync does, given each tenant's memories (`counts`, every row the table holds) and the indexes there
    are. A tenant qualifies with `minimum` memories or more while the other tenants hold at least as many (one
    that is most of the table gains nothing from a graph of its own); a tenant whose index is built and valid
    stays qualified down to half of `minimum`, whatever the others hold (no rebuilding back and forth near a line).
    Of those, the `most` largest have an index: kept, or built (the largest first); every other index is dropped,
    an unfinished build's too."""
    total = sum(counts.values())
    valid = {index.tenant_id for index in existing if index.valid}

    def qualifies(tenant_id: uuid.UUID, count: int) -> bool:
        if minimum <= 0:
            return False
        if tenant_id in valid:
            return count >= max(1, minimum // 2)
        return count >= minimum and total - count >= count

    chosen = sorted(
        ((tenant_id, count) for tenant_id, count in counts.items() if qualifies(tenant_id, count)),
        key=lambda item: (-item[1], str(item[0])),
    )[: max(0, most)]
    wanted = {tenant_id for tenant_id, _ in chosen}
    keep = [index for index in existing if index.valid and index.tenant_id in wanted]
    drop = [index for index in existing if not (index.valid and index.tenant_id in wanted)]
    build = [(tenant_id, count) for tenant_id, count in chosen if tenant_id not in valid]
    return Plan(build=build, drop=drop, keep=keep)


def tenant_vector_indexes() -> list[TenantVectorIndex]:
    """The tenants' own vector indexes on the memories table, valid or not."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indisvalid, pg_relation_size(c.oid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'memories_memory'::regclass AND starts_with(c.relname, %s) ORDER BY c.relname",
            [INDEX_PREFIX],
        )
        rows = cursor.fetchall()
    indexes = []
    for name, valid, size in rows:
        try:
            tenant_id = uuid.UUID(hex=name.removeprefix(INDEX_PREFIX))
        except ValueError:
            continue  # not one of ours (a name that only shares the prefix)
        indexes.append(TenantVectorIndex(tenant_id=tenant_id, name=name, valid=bool(valid), size_bytes=int(size)))
    return indexes


def memory_counts() -> dict[uuid.UUID, int]:
    """Each tenant's rows in the memories table — every one, current or not: all are in the graph. Read across
    tenants: the caller runs as maintenance (the task's tenancy, a command's login)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tenant_id, count(*) FROM memories_memory GROUP BY tenant_id")
        return {row[0]: int(row[1]) for row in cursor.fetchall()}


def _shared_index() -> HnswIndex:
    return next(
        index
        for index in Memory._meta.indexes
        if isinstance(index, HnswIndex) and index.name == SHARED_INDEX  # type: ignore[attr-defined]
    )


def create_index_sql(tenant_id: Any) -> str:
    """The tenant's index, built as the shared one is (its operator class, m and ef_construction), over its rows."""
    shared = _shared_index()
    options, column, opclass = ", ".join(shared.get_with_params()), shared.fields[0], shared.opclasses[0]
    tenant = uuid.UUID(str(tenant_id))  # a literal in DDL: only a parsed UUID is written into it
    return (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{index_name(tenant)}" ON memories_memory '
        f"USING hnsw ({column} {opclass}) WITH ({options}) WHERE tenant_id = '{tenant}'::uuid"
    )


def tenant_vector_indexes_sync(
    *, limit: int | None = None, progress: Callable[[str], None] | None = None
) -> SyncReport:
    """Bring the tenants' own vector indexes in line with `vector_index_plan`: drop, then build the largest
    missing ones first (at most `limit`; None: all). Runs outside any transaction (CONCURRENTLY); a run that
    finds another holding the lock does nothing."""
    if connection.in_atomic_block:
        raise RuntimeError("vector indexes are built CONCURRENTLY: outside any transaction")
    say = progress or (lambda _line: None)
    report = SyncReport()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_ID])
        if not cursor.fetchone()[0]:
            report.busy = True
            return report
        try:
            plan = vector_index_plan(
                counts=memory_counts(),
                existing=tenant_vector_indexes(),
                minimum=tenant_index_from(),
                most=tenant_indexes_most(),
            )
            report.kept = len(plan.keep)
            for index in plan.drop:
                say(f"dropping {index.name} ({'valid' if index.valid else 'invalid: an unfinished build'})")
                cursor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{index.name}"')
                report.dropped.append(index.tenant_id)
            chosen = plan.build if limit is None else plan.build[:limit]
            report.waiting = len(plan.build) - len(chosen)
            for tenant_id, count in chosen:
                say(f"building {index_name(tenant_id)} over {count:,} memories…")
                started = time.monotonic()
                with settings_in_force(cursor, {"maintenance_work_mem": BUILD_MEMORY}):
                    cursor.execute(create_index_sql(tenant_id))
                seconds = time.monotonic() - started
                say(f"  built in {seconds:.1f} s")
                report.built.append((tenant_id, count, seconds))
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_ID])
    return report
