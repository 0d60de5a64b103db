"""The ingest endpoints: POST /ingest, POST /ingest/batch, POST /observations, and GET /events/{id} (what
became of an ingested message or observation)."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.selectors import contact_get
from apps.conversations.models import Message
from apps.core.fields import IdField, StrictCharField
from apps.core.moments import occurred_at_problem
from apps.core.timing import phase
from apps.memories.ingest.services import IngestItem, ingest_messages, ingest_payload, observation_record
from apps.memories.models import ContextEvent
from apps.memories.selectors import event_get
from apps.tenants.api import TenantAPIView

MAX_MESSAGE_CHARS = settings.ENGRAM["MAX_MESSAGE_CHARS"]
MAX_BATCH = settings.ENGRAM["MAX_BATCH_MESSAGES"]


class IngestMessageSerializer(serializers.Serializer):
    # omitted or null: the tenant's own conversation with its AI (owner, assistant, tool turns): the brain
    contact_id = IdField(required=False, allow_null=True, default=None)
    conversation_id = IdField()
    message = StrictCharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=False)  # not blank: NOT_BLANK
    role = serializers.ChoiceField(choices=Message.ROLES)
    message_id = StrictCharField(max_length=255, required=False, allow_null=True)
    speaker = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    occurred_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="From 1970-01-01T00:00:00Z to one day ahead of now, else 400 (a range of date-times OpenAPI 3.0 "
        "cannot state).",
    )
    channel = StrictCharField(max_length=50, required=False, allow_blank=True, default="")
    display_name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    metadata = serializers.DictField(required=False, default=dict)

    def validate_occurred_at(self, value: datetime | None) -> datetime | None:
        if value is not None and (problem := occurred_at_problem(value)):
            raise serializers.ValidationError(problem)
        return value

    def to_item(self) -> IngestItem:
        return IngestItem(**self.validated_data)


class IngestApi(TenantAPIView):
    @extend_schema(request=IngestMessageSerializer, responses={202: dict})
    def post(self, request: Request) -> Response:
        with phase("parse"):
            serializer = IngestMessageSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
        (outcome,) = ingest_messages(tenant=self.tenant, items=[serializer.to_item()], actor=self.actor)
        return Response(ingest_payload(outcome), status=status.HTTP_202_ACCEPTED)


class IngestBatchApi(TenantAPIView):
    heavy_post = True

    class InputSerializer(serializers.Serializer):
        messages = serializers.ListField(
            child=IngestMessageSerializer(), allow_empty=False, min_length=1, max_length=MAX_BATCH
        )

    @extend_schema(request=InputSerializer, responses={202: dict})
    def post(self, request: Request) -> Response:
        with phase("parse"):
            serializer = self.InputSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            items = [IngestItem(**data) for data in serializer.validated_data["messages"]]
        outcomes = ingest_messages(tenant=self.tenant, items=items, actor=self.actor)
        return Response({"results": [ingest_payload(o) for o in outcomes]}, status=status.HTTP_202_ACCEPTED)


class EventDetailApi(TenantAPIView):
    class OutputSerializer(serializers.ModelSerializer):
        event_id = serializers.UUIDField(source="id")
        contact_id = StrictCharField(source="contact.external_id", allow_null=True, default=None)
        message_id = StrictCharField(source="message.external_id", allow_null=True, default=None)
        state = serializers.SerializerMethodField()

        class Meta:
            model = ContextEvent
            fields = [
                "event_id",
                "event_type",
                "contact_id",
                "message_id",
                "content",
                "source_metadata",
                "state",
                "processed",
                "processed_at",
                "extracted_at",
                "attempts",
                "last_error",
                "result",
                "created_at",
            ]

        def get_state(self, event: ContextEvent) -> str:
            if event.processed:
                return "processed"
            if event.extracted_at is not None:
                return "extracted"
            return "failed" if event.last_error else "pending"

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, event_id: str) -> Response:
        return Response(self.OutputSerializer(event_get(tenant=self.tenant, event_id=event_id)).data)


class ObservationApi(TenantAPIView):
    class InputSerializer(serializers.Serializer):
        content = StrictCharField(max_length=MAX_MESSAGE_CHARS)
        category = serializers.ChoiceField(choices=ContextEvent.OBSERVATION_CATEGORIES)
        contact_id = StrictCharField(max_length=255, required=False, allow_null=True)
        source_metadata = serializers.DictField(required=False, default=dict)

    @extend_schema(request=InputSerializer, responses={202: dict})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        contact = contact_get(tenant=self.tenant, external_id=data["contact_id"]) if data.get("contact_id") else None
        event, memories = observation_record(
            tenant=self.tenant,
            content=data["content"],
            category=data["category"],
            contact=contact,
            source_metadata=data["source_metadata"],
            actor=self.actor,
        )
        return Response({"event_id": str(event.pk), "memories": memories}, status=status.HTTP_202_ACCEPTED)
