"""The memory processor (multi-tier-memory.txt §3.B, §5.1): unprocessed ContextEvents → updated working
memory narrative, information scaffold and facts_to_embed, applied atomically per scope, with an audit row.

With an LLM configured the synthesis is the model's (JSON output); without one, or when the model fails
or answers unusable JSON, the rules build the same three outputs. A failure while applying rolls back
and leaves the events unprocessed for the next run; a second run finds nothing left to do.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.contacts.models import Contact
from apps.core.llm import LLMUnavailable, llm_complete_json, llm_is_configured
from apps.entities.selectors import entity_list
from apps.memories import scoring
from apps.memories.lifecycle import profile_rules
from apps.memories.models import ConsolidationRun, ContextEvent, Memory, MemoryProfile, ProfileAudit
from apps.memories.store.writing import Candidate, memories_write
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

PROCESSOR_ACTOR = "system:processor"


def _observations(events: list[ContextEvent]) -> list[profile_rules.Observation]:
    return [
        profile_rules.Observation(
            event_type=event.event_type,
            content=event.content[:2000],
            role=(event.source_metadata or {}).get("role", "user"),
        )
        for event in events
    ]


def _memory_rows(tenant: Tenant, contact: Contact | None) -> list[profile_rules.MemoryRow]:
    rows = (
        Memory.objects.filter(tenant=tenant, contact=contact, valid_to__isnull=True, deleted_at__isnull=True)
        .exclude(memory_type=scoring.EPISODE)
        .order_by("-importance", "-created_at")
        .values_list("memory_type", "content", "slot", "metadata", "importance")[:80]
    )
    return [
        profile_rules.MemoryRow(
            memory_type=t, content=c, slot=s, polarity=int((m or {}).get("polarity", 0)), importance=i
        )
        for t, c, s, m, i in rows
    ]


def _entity_rows(tenant: Tenant, contact: Contact | None) -> list[profile_rules.EntityRow]:
    return [
        profile_rules.EntityRow(entity_type=e.entity_type, display_name=e.display_name, metadata=e.metadata)
        for e in entity_list(tenant=tenant, contact=contact)[:50]
    ]


def _llm_output(
    *, tenant: Tenant, profile: MemoryProfile, observations: list[profile_rules.Observation]
) -> profile_rules.ProcessorOutput | None:
    """The model's synthesis, or None when it failed or answered unusable JSON (logged)."""
    try:
        result = llm_complete_json(
            system=profile_rules.PROCESSOR_SYSTEM,
            user=profile_rules.processor_prompt(
                working_memory=profile.working_memory, scaffold=profile.scaffold, observations=observations
            ),
            purpose="memory_processor",
            tenant_id=str(tenant.pk),
            max_tokens=1500,
        )
    except LLMUnavailable:
        logger.warning("Memory processor: LLM unavailable; using the rules")
        return None
    parsed = profile_rules.parse_processor_output(result.data)
    if parsed is None:
        logger.warning("Memory processor: unusable LLM JSON; using the rules")
    return parsed


def _offline_output(
    *, tenant: Tenant, contact: Contact | None, profile: MemoryProfile, observations: list[profile_rules.Observation]
) -> profile_rules.ProcessorOutput:
    memories = _memory_rows(tenant, contact)
    subject = (contact.display_name or contact.external_id) if contact is not None else tenant.name
    return profile_rules.ProcessorOutput(
        scaffold=profile_rules.offline_scaffold(
            previous=profile.scaffold,
            memories=memories,
            entities=_entity_rows(tenant, contact),
            observations=observations,
        ),
        working_memory=profile_rules.offline_working_memory(
            subject=subject, memories=memories, observations=observations
        )
        or profile.working_memory,
        # inline extraction already embedded what the rules can find; the autonomous path's learned facts
        # are standalone statements worth embedding as they are
        facts_to_embed=[o.content for o in observations if o.event_type == "learned_fact"],
    )


def _apply(
    *,
    tenant: Tenant,
    contact: Contact | None,
    profile: MemoryProfile,
    events: list[ContextEvent],
    output: profile_rules.ProcessorOutput,
    source: str,
    retry: bool,
    now: datetime,
) -> ProfileAudit | None:
    """Apply an output to the scope's profile atomically, claiming its events first (SKIP LOCKED: another
    worker applying them wins). The model's scaffold is merged into the profile's (keys it left out stay);
    the rules' scaffold is built from the previous one already. `retry`: the events were processed by the
    rules after an LLM failure, and this is the model's answer for them."""
    with transaction.atomic():
        profile = MemoryProfile.objects.select_for_update().get(pk=profile.pk)
        claim = {"llm_pending": True} if retry else {"processed": False}
        pending = list(
            ContextEvent.objects.select_for_update(skip_locked=True)
            .filter(pk__in=[event.pk for event in events], **claim)
            .values_list("pk", flat=True)
        )
        if not pending:
            return None  # another worker took them
        before_memory, before_scaffold = profile.working_memory, profile.scaffold
        scaffold = profile_rules.normalise_json_values(output.scaffold)
        profile.working_memory = output.working_memory
        profile.scaffold = profile_rules.deep_merge(before_scaffold, scaffold) if source == "llm" else scaffold
        profile.version += 1
        profile.save()
        embedded: list[str] = []
        if output.facts_to_embed:
            changes = memories_write(
                tenant=tenant,
                contact=contact,
                candidates=[
                    Candidate(memory_type=scoring.FACT, content=fact, metadata={"source": "processor"})
                    for fact in output.facts_to_embed
                ],
                occurred_at=now,
                actor=PROCESSOR_ACTOR,
                source_event_ids=pending,
                now=now,
            )
            embedded = [f"{change.action}: {change.memory.content}" for change in changes]
        ContextEvent.objects.filter(pk__in=pending).update(
            processed=True, processed_at=now, llm_pending=source == "offline" and llm_is_configured()
        )
        return ProfileAudit.objects.create(
            profile=profile,
            tenant=tenant,
            source=f"{source}_retry" if retry else source,
            event_ids=[str(pk) for pk in pending],
            working_memory_before=before_memory,
            working_memory_after=profile.working_memory,
            scaffold_before=before_scaffold,
            scaffold_after=profile.scaffold,
            facts_embedded=embedded,
        )


def scope_events_process(
    *, tenant: Tenant, contact: Contact | None, event_ids: list[Any], now: datetime | None = None
) -> ProfileAudit | None:
    """With an LLM configured the synthesis is the model's; without one, or when it fails, the rules' (and
    the events are marked `llm_pending` for `llm_pending_retry` when an LLM is configured)."""
    now = now or timezone.now()
    events = list(ContextEvent.objects.filter(pk__in=event_ids, processed=False).order_by("created_at"))
    if not events:
        return None
    profile, _ = MemoryProfile.objects.get_or_create(tenant=tenant, contact=contact)
    observations = _observations(events)
    output = _llm_output(tenant=tenant, profile=profile, observations=observations) if llm_is_configured() else None
    source = "llm" if output is not None else "offline"
    if output is None:
        output = _offline_output(tenant=tenant, contact=contact, profile=profile, observations=observations)
    return _apply(
        tenant=tenant,
        contact=contact,
        profile=profile,
        events=events,
        output=output,
        source=source,
        retry=False,
        now=now,
    )


def llm_pending_retry(*, scopes: int = 20, now: datetime | None = None) -> int:
    """Events the rules processed while the LLM was failing, sent to the model again, scope by scope (at most
    `scopes` per pass, oldest first). The first failure ends the pass: the model is still down, and each try
    costs a timeout. Returns how many events the model has now processed."""
    if not llm_is_configured():
        return 0
    now = now or timezone.now()
    groups: dict[tuple[Any, Any], list[Any]] = defaultdict(list)
    rows = ContextEvent.objects.filter(llm_pending=True).order_by("created_at")
    for pk, tenant_id, contact_id in rows.values_list("pk", "tenant_id", "contact_id")[:2000]:
        if (tenant_id, contact_id) in groups or len(groups) < scopes:
            groups[(tenant_id, contact_id)].append(pk)
    done = 0
    tenants = Tenant.objects.in_bulk({tenant_id for tenant_id, _ in groups})
    contacts = Contact.objects.in_bulk({contact_id for _, contact_id in groups if contact_id})
    for (tenant_id, contact_id), event_ids in groups.items():
        tenant, contact = tenants[tenant_id], contacts.get(contact_id) if contact_id else None
        events = list(ContextEvent.objects.filter(pk__in=event_ids, llm_pending=True).order_by("created_at"))
        profile, _ = MemoryProfile.objects.get_or_create(tenant=tenant, contact=contact)
        output = _llm_output(tenant=tenant, profile=profile, observations=_observations(events))
        if output is None:
            break
        audit = _apply(
            tenant=tenant,
            contact=contact,
            profile=profile,
            events=events,
            output=output,
            source="llm",
            retry=True,
            now=now,
        )
        done += len(audit.event_ids) if audit is not None else 0
    return done


def events_process(*, limit: int = 2000, now: datetime | None = None) -> dict[str, int]:
    """One processor pass over unprocessed, already-extracted events, grouped per (tenant, contact)."""
    from apps.memories.lifecycle.runs import run_logged

    rows = list(
        ContextEvent.objects.filter(processed=False, extracted_at__isnull=False)
        .order_by("created_at")
        .values_list("pk", "tenant_id", "contact_id")[:limit]
    )
    groups: dict[tuple[Any, Any], list[Any]] = defaultdict(list)
    for pk, tenant_id, contact_id in rows:
        groups[(tenant_id, contact_id)].append(pk)
    stats = {"scopes": 0, "events": 0}
    if not groups:
        return stats
    with run_logged(kind=ConsolidationRun.KIND_PROCESSOR, now=now) as run_stats:
        tenants = Tenant.objects.in_bulk({tenant_id for tenant_id, _ in groups})
        contacts = Contact.objects.in_bulk({contact_id for _, contact_id in groups if contact_id})
        for (tenant_id, contact_id), event_ids in groups.items():
            audit = scope_events_process(
                tenant=tenants[tenant_id],
                contact=contacts.get(contact_id) if contact_id else None,
                event_ids=event_ids,
                now=now,
            )
            if audit is not None:
                stats["scopes"] += 1
                stats["events"] += len(audit.event_ids)
        run_stats.update(stats)
    return stats
