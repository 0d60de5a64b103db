from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from apps.core.commands import DatabaseCommand
from apps.core.exceptions import ApplicationError
from apps.tenants.services import api_key_create, tenant_create


class Command(DatabaseCommand):
    help = "Create a tenant and print its first API key (shown once)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--slug")
        parser.add_argument("--scopes", default="read,write", help="comma-separated: read,write")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            tenant = tenant_create(name=options["name"], slug=options["slug"])
            issued = api_key_create(tenant=tenant, name="initial", scopes=options["scopes"].split(","))
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"tenant  {tenant.slug} ({tenant.id})")
        self.stdout.write(f"api key {issued.plaintext}  (shown once; store it now)")
