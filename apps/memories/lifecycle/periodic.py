"""The 6-hourly periodic consolidation, the complete list: per scope (each contact with memories, then the
tenant brain) decay and pruning (periodic_steps.py), episode→pattern and session compression
(compression.py); for a contact, its intelligence patterns — difficult periods, chat hours, engagement
(intelligence.py); for the brain, the trends across contacts (insights.py); then the purge of what is past
retention.

Production fans it out on Celery — a task per tenant that queues a task per scope and one purge
(apps/memories/tasks.py) — so a large tenant is many short tasks, not one that hits the time limit at the
same contact every six hours. `tenant_consolidate` runs the same steps in process (`run_consolidation`,
the simulated year). Each scope runs behind a PostgreSQL advisory lock: a second run of the same scope at
the same time (a second beat, an operator's action during the schedule) skips it rather than writing its
patterns and session summaries twice.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from django.db import connection
from django.utils import timezone

from apps.contacts.models import Contact
from apps.memories.lifecycle.insights import tenant_insights_detect
from apps.memories.lifecycle.intelligence import contact_patterns_detect
from apps.memories.lifecycle.periodic_steps import memories_purge, periodic_scope_consolidate
from apps.memories.lifecycle.runs import run_logged
from apps.memories.models import ConsolidationRun, Memory
from apps.memories.retrieval.lexicon import scope_lexicon_rewritten
from apps.tenants.models import Tenant


def tenant_scopes(*, tenant: Tenant) -> list[Contact | None]:
    """Every contact of the tenant that has memories (oldest first), then the brain (None)."""
    contact_ids = (
        Memory.objects.filter(tenant=tenant, contact__isnull=False, deleted_at__isnull=True)
        .values_list("contact_id", flat=True)
        .distinct()
    )
    return [*Contact.objects.filter(pk__in=contact_ids).order_by("created_at"), None]


def _lock_key(tenant: Tenant, contact: Contact | None) -> int:
    scope = f"periodic:{tenant.pk}:{contact.pk if contact is not None else 'brain'}"
    return int.from_bytes(hashlib.blake2b(scope.encode(), digest_size=8).digest(), "big", signed=True)


@contextmanager
def scope_lock(*, tenant: Tenant, contact: Contact | None) -> Iterator[bool]:
    """A session-level advisory lock on the scope for the block; yields whether it was acquired (never
    waits: a scope another run holds is that run's)."""
    key = _lock_key(tenant, contact)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        row = cursor.fetchone()
    acquired = bool(row and row[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def scope_consolidate(*, tenant: Tenant, contact: Contact | None, now: datetime | None = None) -> dict[str, int]:
    """The periodic jobs of one scope, logged as one ConsolidationRun. `{"skipped_running": 1}` when another
    run holds the scope."""
    now = now or timezone.now()
    with scope_lock(tenant=tenant, contact=contact) as acquired:
        if not acquired:
            return {"skipped_running": 1}
        with run_logged(kind=ConsolidationRun.KIND_PERIODIC, tenant=tenant, contact=contact, now=now) as stats:
            totals: Counter[str] = Counter(periodic_scope_consolidate(tenant=tenant, contact=contact, now=now))
            if contact is not None:
                totals.update(contact_patterns_detect(contact=contact, now=now))
            else:  # the brain's run: trends across the tenant's contacts become brain memories
                totals.update(tenant_insights_detect(tenant=tenant, now=now))
            stats.update(totals)
        scope_lexicon_rewritten(tenant_id=tenant.pk, contact_id=contact.pk if contact is not None else None)
    return dict(totals)


def tenant_purge(*, tenant: Tenant, now: datetime | None = None) -> int:
    """Hard-delete what was deleted or pruned longer ago than the retention setting; logged as a run."""
    now = now or timezone.now()
    with run_logged(kind=ConsolidationRun.KIND_PURGE, tenant=tenant, now=now) as stats:
        stats["purged"] = memories_purge(tenant=tenant, now=now)
    return int(stats["purged"])


def tenant_consolidate(
    *,
    tenant: Tenant,
    now: datetime | None = None,
    contact: Contact | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """In process: each scope of the tenant (or only `contact`), then — for the whole tenant — the purge."""
    now = now or timezone.now()
    scopes: list[Contact | None] = [contact] if contact is not None else tenant_scopes(tenant=tenant)
    totals: Counter[str] = Counter()
    for index, scope in enumerate(scopes, start=1):
        totals.update(scope_consolidate(tenant=tenant, contact=scope, now=now))
        if progress is not None:
            progress(index, len(scopes))
    if contact is None:
        totals["purged"] = tenant_purge(tenant=tenant, now=now)
    totals["scopes"] = len(scopes)
    return dict(totals)
