"""Fill a tenant with synthetic memories at scale (issue 29 item 4); apps/memories/benchmarks/synthetic.py."""

from __future__ import annotations

from argparse import ArgumentParser, RawDescriptionHelpFormatter
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from apps.core.commands import DatabaseCommand
from apps.memories.benchmarks import synthetic
from apps.tenants.models import Tenant
from apps.tenants.services import api_key_create, tenant_create


class Command(DatabaseCommand):
    help = (
        "Fill an empty tenant with N synthetic memories over C contacts, loaded with COPY. Texts: facts, "
        "preferences, episodes and patterns from ~40 templates (names, pets, places, activities, dates). VECTORS "
        "ARE NOT COMPUTED BY THE EMBEDDER PER ROW: a pool of --pool distinct texts is embedded once (cached under "
        "var/bench/), each row is a paraphrase of a pool text whose vector is the pool text's plus Gaussian noise "
        "(cosine ~0.93). Shape: 20%% of the memories belong to the contact 'heavy', 20%% to the tenant's brain, "
        "60%% to contacts c0, c1, ... of lognormal sizes. Rows carry entity links, an episode's date and context "
        "words, a 'created' revision and a contact state, and are searchable by GET /context and search. A load of "
        "50k rows or more (and at least the table's size) drops the table-wide HNSW and GIN indexes of memories "
        "and builds them again after (maintenance_work_mem 1.5 GB): do not run it on a database that serves "
        "traffic (--keep-indexes inserts into them instead, much slower)."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.formatter_class = RawDescriptionHelpFormatter
        return parser

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--memories", type=int, required=True)
        parser.add_argument("--contacts", type=int, default=100, help="contacts, the heavy one included")
        parser.add_argument(
            "--tenant", default="synthetic", help="slug of the tenant to fill (created when missing; must be empty)"
        )
        parser.add_argument("--pool", type=int, default=4000, help="distinct texts embedded once and varied")
        parser.add_argument("--seed", type=int, default=29)
        indexes = parser.add_mutually_exclusive_group()
        indexes.add_argument(
            "--rebuild-indexes", action="store_true", help="drop and rebuild the HNSW/GIN indexes whatever the size"
        )
        indexes.add_argument("--keep-indexes", action="store_true", help="never drop them (slow for large loads)")
        parser.add_argument("--api-key", action="store_true", help="print a new API key of the tenant at the end")

    def handle(self, *args: Any, **options: Any) -> None:
        if getattr(settings, "IS_PRODUCTION", False):
            raise CommandError("seed_synthetic drops table-wide indexes: it refuses to run under production settings.")
        if options["memories"] < 1 or options["contacts"] < 1:
            raise CommandError("--memories and --contacts must be at least 1")
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first() or tenant_create(name=f"Synthetic {slug}", slug=slug)
        rebuild = True if options["rebuild_indexes"] else False if options["keep_indexes"] else None
        try:
            report = synthetic.seed_tenant(
                tenant=tenant,
                memories=options["memories"],
                contacts=options["contacts"],
                pool=options["pool"],
                seed=options["seed"],
                log=self.stdout.write,
                rebuild_indexes=rebuild,
            )
        except ValueError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"tenant '{tenant.slug}': " + synthetic.describe(report))
        if options["api_key"]:
            self.stdout.write(f"API key: {api_key_create(tenant=tenant, name='synthetic').plaintext}")
