from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.tenants.models import ApiKey, Membership, Tenant
from apps.tenants.services import api_key_create, tenant_create, tenant_owner_create

DEMO_SLUG = "demo"


class Command(BaseCommand):
    help = "Create the demo tenant, an operator superuser and a tenant-owner user (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        if getattr(settings, "IS_PRODUCTION", False):
            # known passwords (admin / engram-admin) have no place on a production server
            raise CommandError(
                "seed_demo creates users with known passwords: it refuses to run under production settings."
            )
        env = settings.ENGRAM_DEMO
        user_model = get_user_model()
        with transaction.atomic():
            tenant = Tenant.objects.filter(slug=DEMO_SLUG).first() or tenant_create(name="Demo Bakery", slug=DEMO_SLUG)
            if not user_model.objects.filter(username=env["ADMIN_USER"]).exists():
                user_model.objects.create_superuser(env["ADMIN_USER"], "", env["ADMIN_PASSWORD"])
            if not user_model.objects.filter(username=env["OWNER_USER"]).exists():
                tenant_owner_create(
                    tenant=tenant,
                    username=env["OWNER_USER"],
                    password=env["OWNER_PASSWORD"],
                    role=Membership.ROLE_OWNER,
                )
            demo_key = ApiKey.objects.filter(tenant=tenant, name="demo", revoked_at__isnull=True).first()
            issued = None if demo_key else api_key_create(tenant=tenant, name="demo")

        self.stdout.write(f"  operator (admin)      {env['ADMIN_USER']} / {env['ADMIN_PASSWORD']}")
        self.stdout.write(
            f"  tenant owner          {env['OWNER_USER']} / {env['OWNER_PASSWORD']}  (tenant '{tenant.slug}')"
        )
        if issued is not None:
            self.stdout.write(self.style.WARNING(f"  demo API key          {issued.plaintext}"))
            self.stdout.write("                        (shown once: copy it now)")
        else:
            assert demo_key is not None
            self.stdout.write(
                f"  demo API key          {demo_key.prefix}… was shown on the first run; "
                f"a new one: .venv/bin/python manage.py api_key_create {tenant.slug}"
            )
