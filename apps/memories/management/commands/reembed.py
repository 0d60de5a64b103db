from argparse import ArgumentParser
from typing import Any

from tqdm import tqdm

from apps.core.commands import DatabaseCommand
from apps.core.embeddings import get_embedder
from apps.memories.store.reembed import reembed, reembed_queryset
from apps.tenants.commands import tenant_named


class Command(DatabaseCommand):
    help = "Re-embed memories and knowledge chunks with the configured embedder (after changing ENGRAM_EMBEDDER)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--tenant", help="tenant slug (default: all tenants)")
        parser.add_argument("--all", action="store_true", help="re-embed everything, not only other models' vectors")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options["tenant"]) if options["tenant"] else None
        memories, chunks = reembed_queryset(tenant=tenant, everything=options["all"])
        total = memories.count() + chunks.count()
        self.stdout.write(f"Re-embedding {total} rows with {get_embedder().name}")
        with tqdm(total=total, unit="row", file=self.stdout) as bar:
            done = reembed(tenant=tenant, everything=options["all"], actor="system:reembed", progress=bar.update)
        self.stdout.write(self.style.SUCCESS(f"Done: {done['memories']} memories, {done['chunks']} chunks"))
