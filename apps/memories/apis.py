from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.personal_data import contact_export
from apps.contacts.selectors import contact_get
from apps.core.exceptions import ApplicationError
from apps.core.fields import AtLeastOneOf, StrictCharField
from apps.core.pagination import LimitOffset
from apps.memories import scoring
from apps.memories.ingest.services import memory_add
from apps.memories.models import ContextEvent, MemoryRevision
from apps.memories.selectors import memory_get, memory_history, memory_list
from apps.memories.serializers import MemoryOutputSerializer
from apps.memories.store.editing import MAX_KEY_CHARS, MAX_MEMORY_CHARS, memory_delete, memory_edit, memory_put
from apps.tenants.api import TenantAPIView

_TYPE_NAMES = "|".join(scoring.ACCEPTED_MEMORY_TYPES)
# what `validate_type` reads: names separated by commas, blanks around them and empty items ignored
MEMORY_TYPE_LIST = RegexValidator(
    rf"^\s*(?:(?:{_TYPE_NAMES})\s*)?(?:,\s*(?:(?:{_TYPE_NAMES})\s*)?)*\Z",
    message=f"Unknown memory type: a comma-separated list of {', '.join(scoring.ACCEPTED_MEMORY_TYPES)}.",
    code="invalid_type",
)


class RevisionOutputSerializer(serializers.ModelSerializer):
    related_memory = serializers.UUIDField(source="related_memory_id", allow_null=True)

    class Meta:
        model = MemoryRevision
        fields = ["action", "actor", "before", "after", "related_memory", "note", "created_at"]


class MemoryListCreateApi(TenantAPIView):
    class FilterSerializer(serializers.Serializer):
        contact_id = StrictCharField(max_length=255, required=False)
        scope = serializers.ChoiceField(choices=["all", "tenant", "contact"], required=False, default="all")
        type = StrictCharField(
            required=False,
            allow_blank=True,
            default="",
            validators=[MEMORY_TYPE_LIST],
            help_text="Comma-separated memory types (seed types accepted).",
        )
        entity = StrictCharField(max_length=250, required=False, default="")
        q = StrictCharField(max_length=500, required=False, default="")
        include_superseded = serializers.BooleanField(required=False, default=False)
        include_compressed = serializers.BooleanField(required=False, default=False)
        key = StrictCharField(max_length=MAX_KEY_CHARS, required=False, default="")
        key_prefix = StrictCharField(
            max_length=MAX_KEY_CHARS,
            required=False,
            allow_blank=True,
            help_text="Only keyed records (POST with a key).",
        )

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs.get("contact_id") and attrs["scope"] == "tenant":
                raise serializers.ValidationError(
                    {"scope": ["scope=tenant lists the tenant's own memories: leave out contact_id, or use scope=all."]}
                )
            return attrs

        def validate_type(self, value: str) -> list[str]:
            types = [scoring.SEED_TYPE_MAP.get(item.strip(), item.strip()) for item in value.split(",") if item.strip()]
            unknown = sorted(set(types) - set(scoring.MEMORY_TYPES))
            if unknown:
                raise serializers.ValidationError(f"Unknown memory types: {', '.join(unknown)}.")
            return types

    class InputSerializer(serializers.Serializer):
        content = StrictCharField(max_length=MAX_MEMORY_CHARS)
        memory_type = serializers.ChoiceField(choices=scoring.ACCEPTED_MEMORY_TYPES)
        contact_id = StrictCharField(max_length=255, required=False, allow_null=True)
        importance = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True)
        is_pinned = serializers.BooleanField(
            required=False, help_text="Default false; a keyed re-send without it keeps the record's pin."
        )
        key = StrictCharField(
            max_length=MAX_KEY_CHARS,
            required=False,
            help_text="Store a record under this key: an upsert in its scope, stored as given (no extraction, never "
            "deduplicated or merged); 201 created, 200 updated.",
        )
        metadata = serializers.DictField(required=False, help_text="Kept with the memory (with a key: replaced).")

    @extend_schema(parameters=[FilterSerializer], responses=MemoryOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        contact = contact_get(tenant=self.tenant, external_id=data["contact_id"]) if data.get("contact_id") else None
        memories = memory_list(
            tenant=self.tenant,
            contact=contact,
            tenant_scope_only=data["scope"] == "tenant",
            memory_types=data["type"],
            entity=data["entity"],
            query=data["q"],
            include_superseded=data["include_superseded"],
            include_compressed=data["include_compressed"],
            key=data["key"],
            key_prefix=data.get("key_prefix"),
        )
        if data["scope"] == "contact" and contact is None:
            memories = memories.filter(contact__isnull=False)
        paginator = LimitOffset()
        page = paginator.paginate_queryset(memories, request, view=self)
        return paginator.get_paginated_response(MemoryOutputSerializer(page, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: MemoryOutputSerializer})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        contact = contact_get(tenant=self.tenant, external_id=data["contact_id"]) if data.get("contact_id") else None
        if data.get("key"):
            put = memory_put(
                tenant=self.tenant,
                contact=contact,
                key=data["key"],
                content=data["content"],
                memory_type=data["memory_type"],
                metadata=data.get("metadata"),
                importance=data.get("importance"),
                is_pinned=data.get("is_pinned"),
                actor=self.actor,
            )
            body = dict(MemoryOutputSerializer(memory_get(tenant=self.tenant, memory_id=put.memory.pk)).data)
            body["action"] = put.action
            return Response(body, status=status.HTTP_201_CREATED if put.action == "created" else status.HTTP_200_OK)
        change = memory_add(
            tenant=self.tenant,
            contact=contact,
            memory_type=data["memory_type"],
            content=data["content"],
            importance=data.get("importance"),
            is_pinned=data.get("is_pinned", False),
            metadata=data.get("metadata"),
            actor=self.actor,
        )
        if change.action == "skipped":
            raise ApplicationError(change.reason or "Not stored.")
        memory = memory_get(tenant=self.tenant, memory_id=change.memory.pk)
        body = dict(MemoryOutputSerializer(memory).data)
        body["action"] = change.action
        code = status.HTTP_201_CREATED if change.action == "created" else status.HTTP_200_OK
        return Response(body, status=code)


class MemoryDetailApi(TenantAPIView):
    class UpdateSerializer(AtLeastOneOf):
        at_least_one_of = ("content", "importance", "is_pinned")

        content = StrictCharField(max_length=MAX_MEMORY_CHARS, required=False)
        importance = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
        is_pinned = serializers.BooleanField(required=False)

    @extend_schema(responses=MemoryOutputSerializer)
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(MemoryOutputSerializer(memory_get(tenant=self.tenant, memory_id=memory_id)).data)

    @extend_schema(request=UpdateSerializer, responses=MemoryOutputSerializer)
    def patch(self, request: Request, memory_id: str) -> Response:
        memory = memory_get(tenant=self.tenant, memory_id=memory_id)
        serializer = self.UpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        memory_edit(memory=memory, actor=self.actor, **serializer.validated_data)
        return Response(MemoryOutputSerializer(memory_get(tenant=self.tenant, memory_id=memory_id)).data)

    class DeleteSerializer(serializers.Serializer):
        hard = serializers.BooleanField(
            required=False,
            default=False,
            help_text="Delete the row and its history too (also a memory deleted before). Without it the text, "
            "vectors and the history's text are scrubbed at once and the history keeps who deleted it and when.",
        )

    @extend_schema(parameters=[DeleteSerializer], responses={204: None})
    def delete(self, request: Request, memory_id: str) -> Response:
        options = self.DeleteSerializer(data=request.query_params)
        options.is_valid(raise_exception=True)
        hard = options.validated_data["hard"]
        memory = memory_get(tenant=self.tenant, memory_id=memory_id, include_deleted=hard)
        memory_delete(memory=memory, actor=self.actor, hard=hard)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryHistoryApi(TenantAPIView):
    @extend_schema(responses=RevisionOutputSerializer(many=True))
    def get(self, request: Request, memory_id: str) -> Response:
        memory = memory_get(tenant=self.tenant, memory_id=memory_id)
        revisions = memory_history(tenant=self.tenant, memory=memory)
        return Response({"memory_id": str(memory.pk), "history": RevisionOutputSerializer(revisions, many=True).data})


class MemoryTypesApi(TenantAPIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response(
            {
                "memory_types": list(scoring.MEMORY_TYPES),
                "seed_type_map": scoring.SEED_TYPE_MAP,
                "contact_defaults": {
                    memory_type: {"importance": importance, "decay_per_day": decay}
                    for memory_type, (importance, decay) in scoring.CONTACT_TYPE_DEFAULTS.items()
                },
                "tenant_decay_per_day": scoring.TENANT_DECAY_RATE,
            }
        )


class ContactExportApi(TenantAPIView):
    """Everything held about one contact (GDPR art. 15): every model of the registry of the contact's data
    that erasure deletes too (apps/contacts/personal_data.py)."""

    @extend_schema(responses={200: dict})
    def get(self, request: Request, contact_id: str) -> Response:
        contact = contact_get(tenant=self.tenant, external_id=contact_id)
        return Response(contact_export(tenant=self.tenant, contact=contact))


class ContactProfileApi(TenantAPIView):
    """Working memory (narrative) and information scaffold of a contact, from the memory processor."""

    @extend_schema(responses={200: dict})
    def get(self, request: Request, contact_id: str) -> Response:
        from apps.memories.models import MemoryProfile

        contact = contact_get(tenant=self.tenant, external_id=contact_id)
        profile = MemoryProfile.objects.filter(tenant=self.tenant, contact=contact).first()
        pending = ContextEvent.objects.filter(tenant=self.tenant, contact=contact, processed=False).count()
        return Response(
            {
                "contact_id": contact.external_id,
                "working_memory": profile.working_memory if profile else "",
                "scaffold": profile.scaffold if profile else {},
                "version": profile.version if profile else 0,
                "updated_at": profile.updated_at if profile else None,
                "pending_events": pending,
            }
        )


class ConversationCloseApi(TenantAPIView):
    """Close a conversation: its session window is flushed now instead of after 5 idle minutes."""

    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request, conversation_id: str) -> Response:
        from apps.conversations.selectors import conversation_get
        from apps.memories.lifecycle.session_flush import conversation_flush

        conversation = conversation_get(tenant=self.tenant, external_id=conversation_id)
        stats = conversation_flush(conversation=conversation, close=True)
        return Response({"conversation_id": conversation.external_id, "status": "closed", "flush": stats})
