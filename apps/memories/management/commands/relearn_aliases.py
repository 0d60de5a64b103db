"""Learn every contact's speaker aliases again from its ledger, by today's rule (`speaker_aliases_relearn`).

Run it once after upgrading past the rule of session 27 (aliases only from names that do not open their
sentence, at least twice, never one shared by both speakers): aliases learned before it ("yup", "hopefully"
taken for a speaker's name) stay until then. Only contacts whose entities learned some are read."""

from argparse import ArgumentParser
from typing import Any

from tqdm import tqdm

from apps.contacts.models import Contact
from apps.core.commands import DatabaseCommand
from apps.memories.ingest.services import speaker_aliases_relearn
from apps.tenants.commands import tenant_named
from apps.tenants.models import Tenant


class Command(DatabaseCommand):
    help = "Learn the speakers' aliases again from the ledger, by today's rule (one tenant, or all)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(pk=tenant_named(options["tenant"]).pk)
        for tenant in tenants:
            contacts = list(
                Contact.objects.filter(
                    tenant=tenant, entities__entity_type="person", entities__metadata__has_key="aliases"
                )
                .distinct()
                .order_by("pk")
            )
            if not contacts:
                continue
            learned = 0
            for contact in tqdm(contacts, unit="contact", desc=tenant.slug, file=self.stdout):
                learned += speaker_aliases_relearn(tenant=tenant, contact=contact)
            self.stdout.write(f"{tenant.slug}: {len(contacts)} contacts, {learned} aliases learned")
        self.stdout.write(self.style.SUCCESS("done"))
