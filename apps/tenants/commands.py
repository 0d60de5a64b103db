"""What the management commands of every app share about tenants."""

from __future__ import annotations

from django.core.management.base import CommandError

from apps.tenants.models import Tenant


def tenant_named(slug: str) -> Tenant:
    """The tenant a command's --tenant names; a CommandError saying so when there is none."""
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"No tenant with slug '{slug}'.")
    return tenant
