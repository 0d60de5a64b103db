"""A large tenant's, or a large contact's, own vector index: a partial HNSW index over its memories alone.

Every memory is in one HNSW index (models/memory.py, `memory_embedding_hnsw`), and a search walks that graph
filtered to its scope (pgvector's iterative scan). The walk's cost grows with what the filter throws away, and
so with the other tenants' rows: the same 20,000-memory contact of a 100,000-memory tenant took 2.8 ms of index
time (p50, `bench_latency --floor`) in a table holding that tenant alone and 64 ms in one holding 553,000
memories, its GET /context p50 34 → 105 ms (docs/benchmarks.md, "Session 48").

So a tenant that holds `TENANT.minimum()` memories or more (settings ENGRAM["VECTOR_TENANT_INDEX_FROM"], 0:
none) while the other tenants together hold at least as many gets a partial index `WHERE tenant_id = '<id>'`,
a graph of its rows only. And a contact that holds `CONTACT.minimum()` or more (ENGRAM["VECTOR_CONTACT_INDEX_FROM"],
10,000: where its search widens, retrieval/vector_effort.py) while the rest of the table holds at least as many
gets one `WHERE contact_id = '<id>'`: a heavy user's searches walk a graph of that user's rows, not a filter
that keeps one row in five of its tenant's graph, or fewer of the shared one (at 100k, the 20,000-memory contact's
vector source p95 6.3 → 3.9 ms, its GET /context p95 over HTTP 55.2 / 56.9 → 46.2 / 48.0 ms, alternated on one
tenant: docs/benchmarks.md, "Session 57").
PostgreSQL's planner proves the predicate from the scope's `tenant_id = …` / `contact_id = …` when a statement is
planned for its parameters: the candidate statement of a scope of CUSTOM_PLAN_FROM memories or more
(retrieval/vector_effort.py), the only scopes whose vector source walks a graph (a smaller scope sorts its
vectors exactly). Nothing in the search path names the index.

Built off the request path — the hourly `vector_indexes_sync_task`, or `manage.py vector_indexes --sync` — with
CREATE INDEX CONCURRENTLY (writes keep flowing), one run at a time (an advisory lock held by the connection that
builds). A build interrupted leaves an invalid index: the next run drops it and builds it again. An index whose
owner is gone, or holds fewer than half the threshold, is dropped (half: an owner near the line is not rebuilt
back and forth). What it costs: each new memory of such an owner is inserted into one more graph (+1.1 ms a
memory at 100k), and each partial index is one more the planner weighs for every statement on the table — a
candidate statement planned for its parameters took 2.2 ms to plan with none, 3.1 with 50, 6.2 with 200 (a plain
ORM read 0.12 / 0.20 / 0.53 ms) — so only the largest have one: `TENANT.most()` tenants
(ENGRAM_VECTOR_TENANT_INDEXES_MAX, 50) and `CONTACT.most()` contacts (ENGRAM_VECTOR_CONTACT_INDEXES_MAX, 20).
Many more large tenants than that want the table partitioned by tenant (docs/architecture.md, "Beyond one
machine").
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

SHARED_INDEX = "memory_embedding_hnsw"  # every memory's (models/memory.py): an owner's index is built like it
BUILD_MEMORY = "512MB"  # maintenance_work_mem of a build: a 100k-memory tenant's graph (~115 MB) built in memory
LOCK_ID = 0x656E6772_766978  # pg_try_advisory_lock's key: one sync at a time, across every process


@dataclass(frozen=True)
class Owner:
    """Whose rows an own index holds: a tenant's or a contact's."""

    kind: str  # "tenant" / "contact"
    prefix: str  # index name: + the owner's id as 32 hex digits (51 / 52 characters, within the 63 allowed)
    column: str  # the partial index's predicate: `<column> = '<id>'`
    setting: str  # ENGRAM[...]: memories from which an owner gets one (0: none)
    most_setting: str  # ENGRAM[...]: how many owners at most have one (the largest)

    def minimum(self) -> int:
        return int(settings.ENGRAM[self.setting])

    def most(self) -> int:
        """Each partial index is one more the planner weighs for every statement on the memories table (~0.02 ms
        of a custom plan's planning each)."""
        return int(settings.ENGRAM[self.most_setting])


TENANT = Owner("tenant", "memory_hnsw_tenant_", "tenant_id", "VECTOR_TENANT_INDEX_FROM", "VECTOR_TENANT_INDEXES_MAX")
CONTACT = Owner(
    "contact", "memory_hnsw_contact_", "contact_id", "VECTOR_CONTACT_INDEX_FROM", "VECTOR_CONTACT_INDEXES_MAX"
)
OWNERS = (TENANT, CONTACT)


def index_name(owner_id: Any, owner: Owner = TENANT) -> str:
    return owner.prefix + uuid.UUID(str(owner_id)).hex


@dataclass(frozen=True)
class OwnVectorIndex:
    owner_id: uuid.UUID  # the tenant's id, or the contact's (`owner`)
    name: str
    valid: bool  # false: a CONCURRENTLY build that did not finish (the planner ignores it; writes still pay it)
    size_bytes: int
    owner: Owner = TENANT


@dataclass(frozen=True)
class Plan:
    build: list[tuple[uuid.UUID, int]]  # (owner, its memories), the largest first
    drop: list[OwnVectorIndex]
    keep: list[OwnVectorIndex]


@dataclass
class SyncReport:
    built: list[tuple[Owner, uuid.UUID, int, float]] = field(default_factory=list)  # (kind, owner, memories, s)
    dropped: list[tuple[Owner, uuid.UUID]] = field(default_factory=list)
    kept: int = 0
    waiting: int = 0  # builds left for the next run (`limit`)
    busy: bool = False  # another run held the lock: this one did nothing


def vector_index_plan(
    *,
    counts: dict[uuid.UUID, int],
    existing: list[OwnVectorIndex],
    minimum: int,
    most: int,
    total: int | None = None,
) -> Plan:
    """What a sync does for one kind of owner, given each owner's memories (`counts`: every row the table holds
    of each, or at least of every owner that may qualify) and the indexes there are. `total`: the table's rows
    (None: the sum of `counts`, every tenant's). An owner qualifies with `minimum` memories or more while the
    rest of the table holds at least as many (one that is most of the table gains nothing from a graph of its
    own); an owner whose index is built and valid stays qualified down to half of `minimum`, whatever the others
    hold (no rebuilding back and forth near a line). Of those, the `most` largest have an index: kept, or built
    (the largest first); every other index is dropped, an unfinished build's too."""
    total = sum(counts.values()) if total is None else total
    valid = {index.owner_id for index in existing if index.valid}

    def qualifies(owner_id: uuid.UUID, count: int) -> bool:
        if minimum <= 0:
            return False
        if owner_id in valid:
            return count >= max(1, minimum // 2)
        return count >= minimum and total - count >= count

    chosen = sorted(
        ((owner_id, count) for owner_id, count in counts.items() if qualifies(owner_id, count)),
        key=lambda item: (-item[1], str(item[0])),
    )[: max(0, most)]
    wanted = {owner_id for owner_id, _ in chosen}
    keep = [index for index in existing if index.valid and index.owner_id in wanted]
    drop = [index for index in existing if not (index.valid and index.owner_id in wanted)]
    build = [(owner_id, count) for owner_id, count in chosen if owner_id not in valid]
    return Plan(build=build, drop=drop, keep=keep)


def own_vector_indexes(owner: Owner = TENANT) -> list[OwnVectorIndex]:
    """The owners' own vector indexes on the memories table (tenants' or contacts'), valid or not."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indisvalid, pg_relation_size(c.oid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'memories_memory'::regclass AND starts_with(c.relname, %s) ORDER BY c.relname",
            [owner.prefix],
        )
        rows = cursor.fetchall()
    indexes = []
    for name, valid, size in rows:
        try:
            owner_id = uuid.UUID(hex=name.removeprefix(owner.prefix))
        except ValueError:
            continue  # not one of ours (a name that only shares the prefix)
        indexes.append(
            OwnVectorIndex(owner_id=owner_id, name=name, valid=bool(valid), size_bytes=int(size), owner=owner)
        )
    return indexes


def tenant_vector_indexes() -> list[OwnVectorIndex]:
    """The tenants' own vector indexes, valid or not."""
    return own_vector_indexes(TENANT)


def memory_counts(owner: Owner = TENANT) -> dict[uuid.UUID, int]:
    """Each owner's rows in the memories table — every one, current or not: all are in the graph. Every tenant;
    of the contacts, those that hold half the contact threshold or more (an index is kept down to half; a
    million small contacts are not listed). Read across tenants: the caller runs as maintenance (the task's
    tenancy, a command's login)."""
    with connection.cursor() as cursor:
        if owner is TENANT:
            cursor.execute("SELECT tenant_id, count(*) FROM memories_memory GROUP BY tenant_id")
        else:
            cursor.execute(
                "SELECT contact_id, count(*) FROM memories_memory WHERE contact_id IS NOT NULL "
                "GROUP BY contact_id HAVING count(*) >= %s",
                [max(1, owner.minimum() // 2)],
            )
        return {row[0]: int(row[1]) for row in cursor.fetchall()}


def table_rows() -> int:
    """The memories table's rows (the graph every memory is in)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        return int(cursor.fetchone()[0])


def owner_plan(owner: Owner, *, total: int | None = None) -> tuple[dict[uuid.UUID, int], list[OwnVectorIndex], Plan]:
    """What a sync would do for `owner`'s kind now: the counts, the indexes there are, the plan. A contact is
    weighed against the whole table (`total`, read when not given), a tenant against the other tenants; a kind
    switched off (threshold 0) reads no counts, and its indexes are all dropped."""
    existing = own_vector_indexes(owner)
    counts: dict[uuid.UUID, int] = {}
    if owner.minimum() > 0:
        counts = memory_counts(owner)
        if owner is CONTACT and total is None:
            total = table_rows()
    plan = vector_index_plan(counts=counts, existing=existing, minimum=owner.minimum(), most=owner.most(), total=total)
    return counts, existing, plan


def _shared_index() -> HnswIndex:
    return next(
        index
        for index in Memory._meta.indexes
        if isinstance(index, HnswIndex) and index.name == SHARED_INDEX  # type: ignore[attr-defined]
    )


def create_index_sql(owner_id: Any, owner: Owner = TENANT) -> str:
    """The owner's index, built as the shared one is (its operator class, m and ef_construction), over its rows."""
    shared = _shared_index()
    options, column, opclass = ", ".join(shared.get_with_params()), shared.fields[0], shared.opclasses[0]
    parsed = uuid.UUID(str(owner_id))  # a literal in DDL: only a parsed UUID is written into it
    return (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{index_name(parsed, owner)}" ON memories_memory '
        f"USING hnsw ({column} {opclass}) WITH ({options}) WHERE {owner.column} = '{parsed}'::uuid"
    )


def vector_indexes_sync(*, limit: int | None = None, progress: Callable[[str], None] | None = None) -> SyncReport:
    """Bring the tenants' and the contacts' own vector indexes in line with `vector_index_plan`: drop, then build
    the missing ones, the tenants' first, each kind's largest first (at most `limit` in all; None: all). Runs
    outside any transaction (CONCURRENTLY); a run that finds another holding the lock does nothing."""
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
            builds: list[tuple[Owner, uuid.UUID, int]] = []
            for owner in OWNERS:
                _, _, plan = owner_plan(owner)
                report.kept += len(plan.keep)
                for index in plan.drop:
                    say(f"dropping {index.name} ({'valid' if index.valid else 'invalid: an unfinished build'})")
                    cursor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{index.name}"')
                    report.dropped.append((owner, index.owner_id))
                builds += [(owner, owner_id, count) for owner_id, count in plan.build]
            chosen = builds if limit is None else builds[:limit]
            report.waiting = len(builds) - len(chosen)
            for owner, owner_id, count in chosen:
                say(f"building {index_name(owner_id, owner)} over {count:,} memories…")
                started = time.monotonic()
                with settings_in_force(cursor, {"maintenance_work_mem": BUILD_MEMORY}):
                    cursor.execute(create_index_sql(owner_id, owner))
                seconds = time.monotonic() - started
                say(f"  built in {seconds:.1f} s")
                report.built.append((owner, owner_id, count, seconds))
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_ID])
    return report
