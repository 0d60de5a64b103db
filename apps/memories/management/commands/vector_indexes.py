from argparse import ArgumentParser
from typing import Any

from apps.contacts.models import Contact
from apps.core.commands import DatabaseCommand
from apps.memories.store.vector_indexes import CONTACT, OWNERS, TENANT, Owner, owner_plan, vector_indexes_sync
from apps.tenants.models import Tenant

_OFF = {
    TENANT: "Tenants' own vector indexes are off (ENGRAM_VECTOR_TENANT_INDEX_FROM=0): a sync drops them all",
    CONTACT: "Contacts' own vector indexes are off (ENGRAM_VECTOR_CONTACT_INDEX_FROM=0): a sync drops them all",
}
_SETTINGS = {
    TENANT: ("ENGRAM_VECTOR_TENANT_INDEX_FROM", "ENGRAM_VECTOR_TENANT_INDEXES_MAX"),
    CONTACT: ("ENGRAM_VECTOR_CONTACT_INDEX_FROM", "ENGRAM_VECTOR_CONTACT_INDEXES_MAX"),
}


class Command(DatabaseCommand):
    help = (
        "The large tenants' and contacts' own vector indexes (apps/memories/store/vector_indexes.py): list them and "
        "what a sync would do; with --sync, do it now (the hourly task builds one per run)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--sync", action="store_true", help="drop the stale indexes and build every missing one")

    def handle(self, *args: Any, **options: Any) -> None:
        pending = False
        for owner in OWNERS:
            pending |= self._describe(owner)
        if not options["sync"]:
            if pending:
                self.stdout.write("Run with --sync to do it now.")
            return
        report = vector_indexes_sync(progress=self.stdout.write)
        if report.busy:
            self.stdout.write(self.style.WARNING("Another sync is running (its lock is held): nothing done."))
            return
        self.stdout.write(
            self.style.SUCCESS(f"Done: {len(report.built)} built, {len(report.dropped)} dropped, {report.kept} kept")
        )

    def _describe(self, owner: Owner) -> bool:
        """What there is of `owner`'s kind and what a sync would do; whether it would do anything."""
        counts, existing, plan = owner_plan(owner)
        names = self._names(owner, {index.owner_id for index in existing} | {owner_id for owner_id, _ in plan.build})
        minimum, most = owner.minimum(), owner.most()
        threshold, cap = _SETTINGS[owner]
        if not minimum:
            self.stdout.write(_OFF[owner])
        elif owner is TENANT:
            self.stdout.write(
                f"{sum(counts.values()):,} memories of {len(counts)} tenants; a tenant's own index from {minimum:,} "
                f"memories ({threshold}; 0: none), for the {most} largest at most ({cap})"
            )
        else:
            self.stdout.write(
                f"{len(counts)} contacts of {max(1, minimum // 2):,} memories or more; a contact's own index from "
                f"{minimum:,} memories ({threshold}; 0: none), for the {most} largest at most ({cap})"
            )
        for index in existing:
            state = "valid" if index.valid else "INVALID (an unfinished build)"
            name = names.get(index.owner_id, f"a deleted {owner.kind}")
            self.stdout.write(
                f"  {index.name}: {name}, {counts.get(index.owner_id, 0):,} memories, "
                f"{index.size_bytes / 2**20:,.0f} MB, {state}"
            )
        for owner_id, count in plan.build:
            self.stdout.write(f"  to build: {names.get(owner_id, owner_id)} ({count:,} memories)")
        for index in plan.drop:
            self.stdout.write(f"  to drop: {index.name}")
        return bool(plan.build or plan.drop)

    @staticmethod
    def _names(owner: Owner, owner_ids: set[Any]) -> dict[Any, str]:
        """Each owner's name in the listing: a tenant's slug; a contact's tenant slug and external id."""
        if owner is TENANT:
            return dict(Tenant.objects.filter(pk__in=owner_ids).values_list("pk", "slug"))
        return {
            pk: f"{slug} / {external_id}"
            for pk, slug, external_id in Contact.objects.filter(pk__in=owner_ids).values_list(
                "pk", "tenant__slug", "external_id"
            )
        }
