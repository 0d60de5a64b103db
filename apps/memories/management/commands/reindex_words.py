from argparse import ArgumentParser
from typing import Any

from tqdm import tqdm

from apps.core.commands import DatabaseCommand
from apps.memories.models import Memory
from apps.memories.store.reembed import index_words_reindex
from apps.tenants.commands import tenant_named


class Command(DatabaseCommand):
    help = (
        "Index memories with the words their text implies — the places they name and what contains them, the kinds "
        "of what they name (apps/memories/extraction/index_words.py) — as ingest does since session 36: for "
        "memories written before."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: all tenants)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options["tenant"]) if options["tenant"] else None
        memories = Memory.objects.all() if tenant is None else Memory.objects.filter(tenant=tenant)
        total = memories.count()
        self.stdout.write(f"Indexing the places and kinds named by {total} memories")
        with tqdm(total=total, unit="memory", file=self.stdout) as bar:
            changed = index_words_reindex(tenant=tenant, progress=bar.update)
        self.stdout.write(self.style.SUCCESS(f"Done: {changed} of {total} memories indexed anew"))
