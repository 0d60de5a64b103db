"""The bodies of GET /context/{contact_id} and POST /brain/context, finished here so that the API views,
the inspector's context preview and the management commands hand out the same thing.

Not pure reads: handing memories out records their access (Redis, batched), and a contact's query is
scanned for crisis language first.
"""

from __future__ import annotations

import json
import uuid
from contextlib import suppress
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.contacts.intelligence.stages import STAGE_DENSITY
from apps.contacts.models import Contact
from apps.contacts.selectors import contact_state_snapshot, joined_one_to_one
from apps.contacts.services import contact_crisis_report
from apps.context.contact import context_assemble
from apps.context.fences import inline
from apps.context.selectors import contact_with_state_and_profile
from apps.conversations.models import Conversation
from apps.core.exceptions import NotFound
from apps.core.tenancy import tenant_scope
from apps.core.timing import phase
from apps.memories.models import MemoryProfile
from apps.memories.retrieval.access import access_record
from apps.memories.retrieval.search import memory_entities, memory_search
from apps.tenants.models import Tenant
from apps.tenants.selectors import api_key_resolve


def profile_block(profile: MemoryProfile | None) -> str:
    """Working memory and scaffold (multi-tier-memory.txt §3.C: injected at every turn)."""
    if profile is None or not (profile.working_memory or profile.scaffold):
        return ""
    parts = ["# Your Context"]  # what the processor derived from stored text: data, one line each (fences.py)
    if profile.working_memory:
        parts.append(inline(profile.working_memory))
    if profile.scaffold:
        parts.append("Structured Data: " + inline(json.dumps(profile.scaffold, ensure_ascii=False, sort_keys=True)))
    return "\n".join(parts)


def context_payload(
    *,
    tenant: Any,
    contact: Any,
    query: str,
    conversation: Any,
    token_budget: int | None,
    explain: bool,
    record_access: bool = True,
    as_of: datetime | None = None,
) -> dict[str, Any]:
    """The GET /context body; the inspector's context preview renders exactly this (`record_access` False:
    a preview is neither a use of the memories nor a message of the contact, so its query is not scanned).
    The query — the message the client is about to answer — is scanned for crisis language first, so the
    reply that needs SAFETY guidance gets it in this very context. `as_of` (a replayed history's last message):
    the stage as of then, and the moment the query's time expressions and the stage's recent episodes count
    from; the memories' use is still counted as of now."""
    with phase("crisis"):
        query_crisis = contact_crisis_report(contact=contact, text=query) if record_access and query else None
    with phase("state"):
        state = contact_state_snapshot(contact=contact, as_of=as_of)
        profile = joined_one_to_one(contact, "profile", MemoryProfile)
    bundle = context_assemble(
        tenant=tenant,
        contact=contact,
        query=query,
        state=state["public"],
        conversation=conversation,
        token_budget=token_budget,
        emotional_block=state["emotional_block"],
        profile_block=profile_block(profile),
        reference_time=as_of,
    )
    if record_access:  # a preview in the inspector is not a use of the memory
        access_record(memory_ids=[item.memory.pk for item in bundle.memories], at=timezone.now())
    memories: list[dict[str, Any]] = []
    for item in bundle.memories:
        row: dict[str, Any] = {
            "id": str(item.memory.pk),
            "memory_type": item.memory.memory_type,
            "content": item.memory.content,
            "importance": item.memory.importance,
            "score": item.score,
            "outdated": item.memory.outdated,
            "role": item.memory.role,
        }
        if explain:
            row["sources"] = list(item.memory.source_message_ids)
            row["explain"] = item.explain()
            row["placed_by"] = "query" if item.memory.pk in bundle.query_led else "stage"
        memories.append(row)
    body: dict[str, Any] = {
        "contact": {
            "contact_id": contact.external_id,
            "display_name": contact.display_name,
            "channel": contact.channel,
        },
        "state": state["public"],
        "memories": memories,
        "entities": [
            {"entity_type": entity.entity_type, "display_name": entity.display_name, "metadata": entity.metadata}
            for entity in bundle.entities
        ],
        "context_text": bundle.context_text,
        "memory_budget": bundle.memory_budget,
        "tokens_used": bundle.tokens_used,
    }
    body["crisis"] = query_crisis or state["crisis"] or {"detected": False}
    if explain:
        body["dropped"] = [
            {"id": str(item.memory.pk), "content": item.memory.content, "score": item.score} for item in bundle.dropped
        ]
    return body


def brain_context_payload(
    *,
    tenant: Tenant,
    query: str,
    conversation: Conversation | None,
    service_data: dict[str, Any],
    tools: list[dict[str, Any]],
) -> dict[str, Any]:
    """The POST /brain/context body; the memories handed out are recorded as accessed."""
    from apps.context.brain import brain_context_assemble

    payload = brain_context_assemble(
        tenant=tenant,
        query=query,
        conversation=conversation,
        service_data=service_data,
        tools=tools,
    )
    memories = payload.sections["memories"].items
    access_record(memory_ids=[item.memory.pk for item in memories], at=timezone.now())
    return {
        "sections": {name: section.text for name, section in payload.sections.items() if name != "safety_buffer"},
        "memories": [
            {
                "id": str(item.memory.pk),
                "memory_type": item.memory.memory_type,
                "content": item.memory.content,
                "importance": item.memory.importance,
                "score": item.score,
            }
            for item in memories
        ],
        "knowledge": [
            {
                "document_id": hit.document_id,
                "document_title": hit.document_title,
                "position": hit.position,
                "score": hit.score,
            }
            for hit in payload.sections["knowledge"].items
        ],
        "prompt_text": payload.prompt_text,
        "budget": payload.budget_report(),
        "total_tokens": payload.total_tokens,
        "overflow_actions": payload.overflow_actions,
    }


# A tenant, a contact and a memory that never exist (version-5 ids: rows are given version-4 ones), which the read
# path is run against when a web worker starts (`read_path_warm_up`)
WARM_UP_TENANT_ID = uuid.uuid5(uuid.NAMESPACE_URL, "engram:read-path-warm-up")
WARM_UP_CONTACT_ID = uuid.uuid5(uuid.NAMESPACE_URL, "engram:read-path-warm-up:contact")
WARM_UP_MEMORY_ID = uuid.uuid5(uuid.NAMESPACE_URL, "engram:read-path-warm-up:memory")
WARM_UP_QUERY = "what did we talk about last time"


def read_path_warm_up() -> None:
    """Run the statements of an API key's lookup, GET /context (one search per stage's shape of context, the
    entities of its memories) and a brain search once on this process's database connection, bound to a tenant
    that does not exist: row-level security shows them nothing, and nothing is written but the warm-up query's
    embedding in the cache (one entry, in that tenant's scope). A new PostgreSQL backend reads the catalog of
    every table, index and policy a statement touches, and each prepared statement is planned at its first run
    on the connection: left to the first request of a web worker (or of each connection, which CONN_MAX_AGE
    renews), that request paid ~10-15 ms more (docs/benchmarks.md, "Session 62"). gunicorn runs it in each
    worker before its first request (config/gunicorn.py)."""
    tenant = Tenant(id=WARM_UP_TENANT_ID, slug="read-path-warm-up", settings={})
    contact = Contact(id=WARM_UP_CONTACT_ID, tenant=tenant, external_id="read-path-warm-up")
    api_key_resolve(plaintext="eng_warmup_not-a-key")
    with tenant_scope(tenant.pk):
        with suppress(NotFound):
            contact_with_state_and_profile(tenant=tenant, external_id=contact.external_id)
        for stage, density in STAGE_DENSITY.items():
            if density.memory_types or density.last_topic_only:
                context_assemble(
                    tenant=tenant, contact=contact, query=WARM_UP_QUERY, state={"relationship_stage": stage}
                )
        memory_entities(memory_ids=[WARM_UP_MEMORY_ID])  # the context's entities: none are found to read them for
        memory_search(tenant=tenant, contact=None, query=WARM_UP_QUERY)
