"""Every lifecycle job leaves a ConsolidationRun row (deferred, periodic, processor, flush, purge): what it
did, when, and why it failed (admin: Consolidation runs)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.contacts.models import Contact
from apps.memories.models import ConsolidationRun
from apps.tenants.models import Tenant


@contextmanager
def run_logged(
    *, kind: str, tenant: Tenant | None = None, contact: Contact | None = None, now: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """A ConsolidationRun row around a job: stats filled in by the job, errors recorded, then re-raised."""
    run = ConsolidationRun.objects.create(kind=kind, tenant=tenant, contact=contact, started_at=now or timezone.now())
    stats: dict[str, Any] = {}
    try:
        yield stats
    except Exception as exc:
        ConsolidationRun.objects.filter(pk=run.pk).update(
            status="failed", error=repr(exc)[:4000], stats=stats, finished_at=timezone.now()
        )
        raise
    ConsolidationRun.objects.filter(pk=run.pk).update(status="done", stats=stats, finished_at=timezone.now())
