from __future__ import annotations

import json
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.selectors import contact_get, contact_state_snapshot, joined_one_to_one
from apps.contacts.services import contact_crisis_report
from apps.conversations.models import Conversation
from apps.core.fields import StrictCharField
from apps.memories import scoring
from apps.memories.context import context_assemble
from apps.memories.models import MemoryProfile
from apps.memories.retrieval.access import access_record
from apps.memories.retrieval.search import ScoredMemory, memory_entities, memory_search
from apps.memories.selectors import contact_with_state_and_profile
from apps.tenants.api import TenantAPIView
from apps.tenants.models import ApiKey


def _sources(item: ScoredMemory) -> list[str]:
    return list(item.memory.source_message_ids)


class MemorySearchApi(TenantAPIView):
    required_scope = ApiKey.SCOPE_READ  # a read sent as POST (the query may be long)

    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000)
        contact_id = StrictCharField(max_length=255, required=False, allow_null=True)
        top_k = serializers.IntegerField(min_value=1, max_value=50, required=False, default=10)
        memory_types = serializers.ListField(
            child=serializers.ChoiceField(choices=scoring.ACCEPTED_MEMORY_TYPES),
            required=False,
            default=list,
        )
        include_compressed = serializers.BooleanField(required=False, default=False)
        explain = serializers.BooleanField(required=False, default=False)

    @extend_schema(request=InputSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        contact = contact_get(tenant=self.tenant, external_id=data["contact_id"]) if data.get("contact_id") else None
        memory_types = sorted({scoring.SEED_TYPE_MAP.get(name, name) for name in data["memory_types"]})
        result = memory_search(
            tenant=self.tenant,
            contact=contact,
            query=data["query"],
            top_k=data["top_k"],
            memory_types=memory_types,
            include_compressed=data["include_compressed"],
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
                "sources": _sources(item),
                "entities": sorted(entity.key for entity in entities[item.memory.pk]),
            }
            if data["explain"]:
                row["explain"] = item.explain()
            rows.append(row)
        body: dict[str, Any] = {"query": data["query"], "results": rows}
        if data["explain"]:
            body["query_entities"] = [entity.key for entity in result.query_entities]
            body["candidates"] = result.candidates
        return Response(body)


class ContextGetApi(TenantAPIView):
    class QuerySerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000, required=False, allow_blank=True, default="")
        conversation_id = StrictCharField(max_length=255, required=False, default="")
        token_budget = serializers.IntegerField(min_value=0, max_value=32000, required=False, allow_null=True)
        explain = serializers.BooleanField(required=False, default=False)

    @extend_schema(parameters=[QuerySerializer], responses={200: dict})
    def get(self, request: Request, contact_id: str) -> Response:
        params = self.QuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        contact = contact_with_state_and_profile(tenant=self.tenant, external_id=contact_id)
        conversation = None
        if data["conversation_id"]:
            conversation = Conversation.objects.filter(
                tenant=self.tenant, contact=contact, external_id=data["conversation_id"]
            ).first()
        return Response(
            context_payload(
                tenant=self.tenant,
                contact=contact,
                query=data["query"],
                conversation=conversation,
                token_budget=data.get("token_budget"),
                explain=data["explain"],
            )
        )


def profile_block(profile: MemoryProfile | None) -> str:
    """Working memory and scaffold (multi-tier-memory.txt §3.C: injected at every turn)."""
    if profile is None or not (profile.working_memory or profile.scaffold):
        return ""
    parts = ["# Your Context"]
    if profile.working_memory:
        parts.append(profile.working_memory)
    if profile.scaffold:
        parts.append("Structured Data: " + json.dumps(profile.scaffold, ensure_ascii=False, sort_keys=True))
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
) -> dict[str, Any]:
    """The GET /context body; the inspector's context preview renders exactly this (`record_access` False:
    a preview is neither a use of the memories nor a message of the contact, so its query is not scanned).
    The query — the message the client is about to answer — is scanned for crisis language first, so the
    reply that needs SAFETY guidance gets it in this very context."""
    query_crisis = contact_crisis_report(contact=contact, text=query) if record_access and query else None
    state = contact_state_snapshot(contact=contact)
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
        }
        if explain:
            row["sources"] = list(item.memory.source_message_ids)
            row["explain"] = item.explain()
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


class BrainContextApi(TenantAPIView):
    required_scope = ApiKey.SCOPE_READ

    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=8000)
        conversation_id = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
        service_data = serializers.DictField(required=False, default=dict)
        tools = serializers.ListField(child=serializers.DictField(), required=False, default=list)

    @extend_schema(request=InputSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        from apps.conversations.selectors import conversation_get
        from apps.memories.brain import brain_context_assemble

        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        conversation = (
            conversation_get(tenant=self.tenant, external_id=data["conversation_id"])
            if data["conversation_id"]
            else None
        )
        payload = brain_context_assemble(
            tenant=self.tenant,
            query=data["query"],
            conversation=conversation,
            service_data=data["service_data"],
            tools=data["tools"],
        )
        memories = payload.sections["memories"].items
        access_record(memory_ids=[item.memory.pk for item in memories], at=timezone.now())
        return Response(
            {
                "sections": {
                    name: section.text for name, section in payload.sections.items() if name != "safety_buffer"
                },
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
        )
