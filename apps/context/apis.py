"""GET /context/{contact_id} and POST /brain/context: parse, call apps.context.services, respond."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from apps.context.selectors import brain_conversation, contact_conversation, contact_with_state_and_profile
from apps.context.services import brain_context_payload, context_payload
from apps.core.fields import StrictCharField
from apps.tenants.api import TenantAPIView
from apps.tenants.models import ApiKey


class ContextGetApi(TenantAPIView):
    class QuerySerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000, required=False, allow_blank=True, default="")
        conversation_id = StrictCharField(max_length=255, required=False, default="")
        token_budget = serializers.IntegerField(min_value=0, max_value=32000, required=False, allow_null=True)
        explain = serializers.BooleanField(required=False, default=False)
        as_of = serializers.DateTimeField(
            required=False,
            allow_null=True,
            default=None,
            help_text="The moment the context is assembled as of (a replayed history's last message): the stage "
            "as of then, the query's time expressions and the stage's recent episodes counted from it. Default now.",
        )

    @extend_schema(parameters=[QuerySerializer], responses={200: dict})
    def get(self, request: Request, contact_id: str) -> Response:
        params = self.QuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        contact = contact_with_state_and_profile(tenant=self.tenant, external_id=contact_id)
        conversation = None
        if data["conversation_id"]:
            conversation = contact_conversation(
                tenant=self.tenant, contact=contact, external_id=data["conversation_id"]
            )
        return Response(
            context_payload(
                tenant=self.tenant,
                contact=contact,
                query=data["query"],
                conversation=conversation,
                token_budget=data.get("token_budget"),
                explain=data["explain"],
                as_of=data["as_of"],
            )
        )


class BrainContextApi(TenantAPIView):
    heavy_post = True
    required_scope = ApiKey.SCOPE_READ

    class InputSerializer(serializers.Serializer):
        query = StrictCharField(max_length=8000)
        conversation_id = StrictCharField(max_length=255, required=False, allow_blank=True, default="")
        service_data = serializers.DictField(required=False, default=dict)
        tools = serializers.ListField(child=serializers.DictField(), required=False, default=list)

    @extend_schema(request=InputSerializer, responses={200: dict})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        conversation = (
            brain_conversation(tenant=self.tenant, external_id=data["conversation_id"])
            if data["conversation_id"]
            else None
        )
        return Response(
            brain_context_payload(
                tenant=self.tenant,
                query=data["query"],
                conversation=conversation,
                service_data=data["service_data"],
                tools=data["tools"],
            )
        )
