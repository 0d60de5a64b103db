from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.selectors import contact_get
from apps.core.fields import StrictCharField
from apps.memories import scoring
from apps.memories.retrieval.results import search_payload
from apps.tenants.api import TenantAPIView
from apps.tenants.models import ApiKey


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
        key_prefix = StrictCharField(
            max_length=255,
            required=False,
            allow_blank=True,
            help_text="Only keyed records (POST /memories with a key) whose key starts with this; each result then "
            "carries its key, metadata, created_at and updated_at.",
        )
        as_of = serializers.DateTimeField(
            required=False,
            allow_null=True,
            default=None,
            help_text="the moment the query's time expressions count from ('last week'); default now",
        )

    @extend_schema(request=InputSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        contact = contact_get(tenant=self.tenant, external_id=data["contact_id"]) if data.get("contact_id") else None
        body = search_payload(
            tenant=self.tenant,
            contact=contact,
            query=data["query"],
            top_k=data["top_k"],
            memory_types=data["memory_types"],
            include_compressed=data["include_compressed"],
            explain=data["explain"],
            key_prefix=data.get("key_prefix"),
            reference_time=data["as_of"],
        )
        return Response(body)
