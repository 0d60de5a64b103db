from argparse import ArgumentParser
from typing import Any

from apps.core.commands import DatabaseCommand
from apps.memories.store.vector_indexes import (
    memory_counts,
    tenant_index_from,
    tenant_indexes_most,
    tenant_vector_indexes,
    tenant_vector_indexes_sync,
    vector_index_plan,
)
from apps.tenants.models import Tenant


class Command(DatabaseCommand):
    help = (
        "The large tenants' own vector indexes (apps/memories/store/vector_indexes.py): list them and what a sync "
        "would do; with --sync, do it now (the hourly task builds one per run)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--sync", action="store_true", help="drop the stale indexes and build every missing one")

    def handle(self, *args: Any, **options: Any) -> None:
        minimum = tenant_index_from()
        counts, existing = memory_counts(), tenant_vector_indexes()
        names = dict(Tenant.objects.values_list("pk", "slug"))
        self.stdout.write(
            f"{sum(counts.values()):,} memories of {len(counts)} tenants; a tenant's own index from {minimum:,} "
            f"memories (ENGRAM_VECTOR_TENANT_INDEX_FROM; 0: none), for the {tenant_indexes_most()} largest at most "
            "(ENGRAM_VECTOR_TENANT_INDEXES_MAX)"
            if minimum
            else "Tenants' own vector indexes are off (ENGRAM_VECTOR_TENANT_INDEX_FROM=0): a sync drops them all"
        )
        for index in existing:
            state = "valid" if index.valid else "INVALID (an unfinished build)"
            slug = names.get(index.tenant_id, "a deleted tenant")
            self.stdout.write(
                f"  {index.name}: {slug}, {counts.get(index.tenant_id, 0):,} memories, "
                f"{index.size_bytes / 2**20:,.0f} MB, {state}"
            )
        plan = vector_index_plan(counts=counts, existing=existing, minimum=minimum, most=tenant_indexes_most())
        for tenant_id, count in plan.build:
            self.stdout.write(f"  to build: {names.get(tenant_id, tenant_id)} ({count:,} memories)")
        for index in plan.drop:
            self.stdout.write(f"  to drop: {index.name}")
        if not options["sync"]:
            if plan.build or plan.drop:
                self.stdout.write("Run with --sync to do it now.")
            return
        report = tenant_vector_indexes_sync(progress=self.stdout.write)
        if report.busy:
            self.stdout.write(self.style.WARNING("Another sync is running (its lock is held): nothing done."))
            return
        self.stdout.write(
            self.style.SUCCESS(f"Done: {len(report.built)} built, {len(report.dropped)} dropped, {report.kept} kept")
        )
