import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from apps.core.commands import DatabaseCommand
from apps.tenants.models import ApiKey, Membership, Tenant
from apps.tenants.services import api_key_create, tenant_create, tenant_owner_create

DEMO_SLUG = "demo"


class Command(DatabaseCommand):
    help = (
        "Create the demo tenant, an operator superuser and a tenant-owner user (idempotent). Each user created "
        "gets a random password, printed once (ENGRAM_ADMIN_PASSWORD / ENGRAM_OWNER_PASSWORD set one instead)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if getattr(settings, "IS_PRODUCTION", False):
            # demo users with passwords printed to a terminal have no place on a production server
            raise CommandError("seed_demo creates demo users: it refuses to run under production settings.")
        env = settings.ENGRAM_DEMO
        user_model = get_user_model()
        created: dict[str, str] = {}
        with transaction.atomic():
            tenant = Tenant.objects.filter(slug=DEMO_SLUG).first() or tenant_create(name="Demo Bakery", slug=DEMO_SLUG)
            if not user_model.objects.filter(username=env["ADMIN_USER"]).exists():
                created["admin"] = env["ADMIN_PASSWORD"] or secrets.token_urlsafe(12)
                user_model.objects.create_superuser(env["ADMIN_USER"], "", created["admin"])
            if not user_model.objects.filter(username=env["OWNER_USER"]).exists():
                created["owner"] = env["OWNER_PASSWORD"] or secrets.token_urlsafe(12)
                tenant_owner_create(
                    tenant=tenant, username=env["OWNER_USER"], password=created["owner"], role=Membership.ROLE_OWNER
                )
            demo_key = ApiKey.objects.filter(tenant=tenant, name="demo", revoked_at__isnull=True).first()
            issued = None if demo_key else api_key_create(tenant=tenant, name="demo")

        self._user("operator (admin)", env["ADMIN_USER"], created.get("admin"))
        self._user("tenant owner", env["OWNER_USER"], created.get("owner"), f"  (tenant '{tenant.slug}')")
        if issued is not None:
            self.stdout.write(self.style.WARNING(f"  demo API key          {issued.plaintext}"))
            self.stdout.write("                        (shown once: copy it now)")
        else:
            assert demo_key is not None
            self.stdout.write(
                f"  demo API key          {demo_key.prefix}… was shown on the first run; "
                f"a new one: .venv/bin/python manage.py api_key_create {tenant.slug}"
            )

    def _user(self, label: str, username: str, password: str | None, suffix: str = "") -> None:
        if password is not None:
            self.stdout.write(self.style.WARNING(f"  {label:<22}{username} / {password}{suffix}  (shown once)"))
        else:
            self.stdout.write(
                f"  {label:<22}{username}{suffix}: its password was shown on the first run; "
                f"a new one: .venv/bin/python manage.py changepassword {username}"
            )
