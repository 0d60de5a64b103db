from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.models import Contact, ContactState, InteractionLog, Trigger
from apps.contacts.selectors import contact_get, contact_list, contact_state_snapshot
from apps.contacts.services import (
    MAX_EXTERNAL_ID_LENGTH,
    contact_create,
    contact_delete,
    contact_update,
    trigger_complete,
)
from apps.core.exceptions import NotFound
from apps.core.fields import IdField, StrictCharField
from apps.core.pagination import LimitOffset
from apps.tenants.api import TenantAPIView


class ContactOutputSerializer(serializers.ModelSerializer):
    contact_id = StrictCharField(source="external_id")

    class Meta:
        model = Contact
        fields = ["contact_id", "display_name", "channel", "metadata", "last_seen_at", "created_at", "updated_at"]


class ContactListCreateApi(TenantAPIView):
    class InputSerializer(serializers.Serializer):
        contact_id = IdField(max_length=MAX_EXTERNAL_ID_LENGTH)
        display_name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
        channel = StrictCharField(max_length=50, required=False, allow_blank=True, default="")
        metadata = serializers.DictField(required=False, default=dict)

    @extend_schema(responses=ContactOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        paginator = LimitOffset()
        page = paginator.paginate_queryset(
            contact_list(tenant=self.tenant, search=request.query_params.get("search", "")), request, view=self
        )
        return paginator.get_paginated_response(ContactOutputSerializer(page, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: ContactOutputSerializer})
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        contact = contact_create(
            tenant=self.tenant,
            external_id=data["contact_id"],
            display_name=data["display_name"],
            channel=data["channel"],
            metadata=data["metadata"],
        )
        return Response(ContactOutputSerializer(contact).data, status=status.HTTP_201_CREATED)


class ContactDetailApi(TenantAPIView):
    class UpdateSerializer(serializers.Serializer):
        display_name = StrictCharField(max_length=200, required=False, allow_blank=True)
        channel = StrictCharField(max_length=50, required=False, allow_blank=True)
        metadata = serializers.DictField(required=False)

    @extend_schema(responses=ContactOutputSerializer)
    def get(self, request: Request, contact_id: str) -> Response:
        return Response(ContactOutputSerializer(contact_get(tenant=self.tenant, external_id=contact_id)).data)

    @extend_schema(request=UpdateSerializer, responses=ContactOutputSerializer)
    def patch(self, request: Request, contact_id: str) -> Response:
        contact = contact_get(tenant=self.tenant, external_id=contact_id)
        serializer = self.UpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        contact = contact_update(contact=contact, data=serializer.validated_data)
        return Response(ContactOutputSerializer(contact).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, contact_id: str) -> Response:
        contact_delete(contact=contact_get(tenant=self.tenant, external_id=contact_id), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ContactStateApi(TenantAPIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request, contact_id: str) -> Response:
        contact = contact_get(tenant=self.tenant, external_id=contact_id)
        snapshot = contact_state_snapshot(contact=contact)
        state = ContactState.objects.filter(contact=contact).first()
        return Response(
            {
                "contact_id": contact.external_id,
                "state": snapshot["public"],
                "usual_mood": state.usual_mood if state else "",
                "usual_energy": state.usual_energy if state else "",
                "chat_window": (
                    {"start_hour": state.chat_window_start, "end_hour": state.chat_window_end}
                    if state and state.chat_window_start is not None
                    else None
                ),
                "crisis": snapshot["crisis"] or {"detected": False},
                "emotional_context": snapshot["emotional_block"],
            }
        )


class MoodHistoryOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = InteractionLog
        fields = [
            "occurred_at",
            "message_id",
            "mood",
            "energy",
            "style",
            "confidence",
            "source",
            "previous_mood",
            "is_transition",
        ]


class MoodHistoryCursor(CursorPagination):
    page_size = 100
    ordering = ("-occurred_at", "-id")


class ContactMoodHistoryApi(TenantAPIView):
    @extend_schema(responses=MoodHistoryOutputSerializer(many=True))
    def get(self, request: Request, contact_id: str) -> Response:
        contact = contact_get(tenant=self.tenant, external_id=contact_id)
        paginator = MoodHistoryCursor()
        rows = InteractionLog.objects.filter(tenant=self.tenant, contact=contact)
        if request.query_params.get("transitions") in ("1", "true"):
            rows = rows.filter(is_transition=True)
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(MoodHistoryOutputSerializer(page, many=True).data)


class TriggerOutputSerializer(serializers.ModelSerializer):
    contact_id = StrictCharField(source="contact.external_id")

    class Meta:
        model = Trigger
        fields = ["id", "contact_id", "kind", "due_at", "status", "reason", "done_at", "created_at"]


class TriggerListApi(TenantAPIView):
    class FilterSerializer(serializers.Serializer):
        due = serializers.BooleanField(required=False, default=False)
        status = serializers.ChoiceField(
            choices=["pending", "done", "cancelled", "all"], required=False, default="pending"
        )
        contact_id = StrictCharField(max_length=255, required=False)

    @extend_schema(parameters=[FilterSerializer], responses=TriggerOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        data = filters.validated_data
        triggers = Trigger.objects.filter(tenant=self.tenant).select_related("contact")
        if data["status"] != "all":
            triggers = triggers.filter(status=data["status"])
        if data["due"]:
            triggers = triggers.filter(due_at__lte=timezone.now())
        if data.get("contact_id"):
            triggers = triggers.filter(contact=contact_get(tenant=self.tenant, external_id=data["contact_id"]))
        paginator = LimitOffset()
        page = paginator.paginate_queryset(triggers.order_by("due_at"), request, view=self)
        return paginator.get_paginated_response(TriggerOutputSerializer(page, many=True).data)


class TriggerCompleteApi(TenantAPIView):
    class InputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=["done", "cancelled"], required=False, default="done")

    @extend_schema(request=InputSerializer, responses=TriggerOutputSerializer)
    def post(self, request: Request, trigger_id: str) -> Response:
        trigger = Trigger.objects.filter(tenant=self.tenant, pk=trigger_id).select_related("contact").first()
        if trigger is None:
            raise NotFound("Trigger not found.")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        trigger = trigger_complete(trigger=trigger, status=serializer.validated_data["status"])
        return Response(TriggerOutputSerializer(trigger).data)
