"""The answer to a memory search, as POST /memories/search and the MCP tool search_memory give it: the ranked
memories with their scores, sources and entities, and the access of what was returned recorded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.contacts.models import Contact
from apps.memories import scoring
from apps.memories.models import Memory
from apps.memories.retrieval.access import access_record
from apps.memories.retrieval.search import memory_entities, memory_search
from apps.tenants.models import Tenant


def search_payload(
    *,
    tenant: Tenant,
    contact: Contact | None,
    query: str,
    top_k: int,
    memory_types: Sequence[str] = (),
    include_compressed: bool = False,
    explain: bool = False,
    key_prefix: str | None = None,
    reference_time: datetime | None = None,
) -> dict[str, Any]:
    """`contact` None searches the tenant's brain. `memory_types` may hold seed type names (mapped here).
    `key_prefix` searches the keyed records under it only, and each row then carries its `key`, `metadata`,
    `created_at` and `updated_at` (one more statement; a search without it reads nothing more).
    `reference_time`: what the query's time expressions count from (the request's as_of; default now)."""
    types = sorted({scoring.SEED_TYPE_MAP.get(name, name) for name in memory_types})
    result = memory_search(
        tenant=tenant,
        contact=contact,
        query=query,
        top_k=top_k,
        memory_types=types,
        include_compressed=include_compressed,
        key_prefix=key_prefix,
        reference_time=reference_time,
    )
    access_record(memory_ids=[item.memory.pk for item in result.results], at=timezone.now())
    entities = memory_entities(memory_ids=[item.memory.pk for item in result.results])
    rows: list[dict[str, Any]] = []
    for item in result.results:
        row: dict[str, Any] = {
            "id": str(item.memory.pk),
            "memory_type": item.memory.memory_type,
            "content": item.memory.content,
            "importance": item.memory.importance,
            "score": item.score,
            "occurred_at": item.memory.occurred_at,
            "is_compressed": item.memory.is_compressed,
            "outdated": item.memory.outdated,
            "sources": list(item.memory.source_message_ids),
            "role": item.memory.role,
            "entities": sorted(entity.key for entity in entities[item.memory.pk]),
        }
        if explain:
            row["explain"] = item.explain()
        rows.append(row)
    if key_prefix is not None:
        records = Memory.objects.filter(tenant=tenant, pk__in=[row["id"] for row in rows]).values(
            "id", "key", "metadata", "created_at", "updated_at"
        )
        keyed = {
            str(record["id"]): {
                "key": record["key"],
                "metadata": record["metadata"],
                "created_at": record["created_at"],
                "updated_at": record["updated_at"],
            }
            for record in records
        }
        for row in rows:
            row.update(keyed.get(row["id"], {}))
    body: dict[str, Any] = {"query": query, "results": rows}
    if explain:
        body["query_entities"] = [entity.key for entity in result.query_entities]
        body["candidates"] = result.candidates
        body["time_windows"] = [window.explain() for window in result.time_windows]
        body["speakers"] = list(result.speakers)
        body["embedded_as"] = result.embedded_as
        body["diversified"] = result.diversified
        body["summary"] = result.summary
        body["advice"] = result.advice
        body["verb_forms"] = [list(forms) for forms in result.verbs]
        body["spelling_forms"] = [list(forms) for forms in result.spellings]
    return body
