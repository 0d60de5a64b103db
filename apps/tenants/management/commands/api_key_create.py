from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from apps.core.commands import DatabaseCommand
from apps.core.exceptions import ApplicationError
from apps.tenants.commands import tenant_named
from apps.tenants.services import api_key_create


class Command(DatabaseCommand):
    help = "Issue an API key for an existing tenant (printed once)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("tenant_slug")
        parser.add_argument("--name", default="cli")
        parser.add_argument("--scopes", default="read,write", help="comma-separated: read,write")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_named(options["tenant_slug"])
        try:
            issued = api_key_create(tenant=tenant, name=options["name"], scopes=options["scopes"].split(","))
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(issued.plaintext)
