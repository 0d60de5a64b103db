from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.selectors import contact_get
from apps.core.fields import StrictCharField
from apps.memories import scoring
from apps.memories.retrieval.access import access_record
from apps.memories.retrieval.search import ScoredMemory, memory_entities, memory_search
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
