"""The 6-hourly periodic consolidation, per tenant: every contact with memories, then the tenant brain."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

from apps.contacts.models import Contact
from apps.memories.models import ConsolidationRun, Memory
from apps.memories.services.consolidation import run_logged
from apps.memories.services.lifecycle import memories_purge, periodic_scope_consolidate
from apps.tenants.models import Tenant


def tenant_consolidate(
    *,
    tenant: Tenant,
    now: datetime | None = None,
    contact: Contact | None = None,
    progress: Callable[[int, int], None] | None = None,
    after_scope: Callable[[Tenant, Contact | None, datetime], dict[str, int]] | None = None,
) -> dict[str, int]:
    """Run decay, compression, session compression and pruning for each scope of the tenant (or one contact),
    then purge what is past retention. `after_scope` runs extra per-contact jobs (contact intelligence)."""
    now = now or timezone.now()
    totals: Counter[str] = Counter()
    with run_logged(kind=ConsolidationRun.KIND_PERIODIC, tenant=tenant, contact=contact, now=now) as stats:
        if contact is not None:
            scopes: list[Contact | None] = [contact]
        else:
            contact_ids = (
                Memory.objects.filter(tenant=tenant, contact__isnull=False, deleted_at__isnull=True)
                .values_list("contact_id", flat=True)
                .distinct()
            )
            scopes = [*Contact.objects.filter(pk__in=contact_ids).order_by("created_at"), None]
        for index, scope in enumerate(scopes, start=1):
            totals.update(periodic_scope_consolidate(tenant=tenant, contact=scope, now=now))
            if after_scope is not None and scope is not None:
                totals.update(after_scope(tenant, scope, now))
            if progress is not None:
                progress(index, len(scopes))
        if contact is None:
            totals["purged"] = memories_purge(tenant=tenant, now=now)
        totals["scopes"] = len(scopes)
        stats.update(totals)
    return dict(totals)
