from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from apps.conversations.models import Conversation, Message
from apps.conversations.selectors import conversation_get, message_list
from apps.conversations.window import window_as_dicts, window_get
from apps.core.fields import StrictCharField
from apps.tenants.api import TenantAPIView


class MessageOutputSerializer(serializers.ModelSerializer):
    message_id = StrictCharField(source="external_id")

    class Meta:
        model = Message
        fields = ["message_id", "role", "speaker", "content", "occurred_at", "metadata"]


class ConversationOutputSerializer(serializers.ModelSerializer):
    conversation_id = StrictCharField(source="external_id")
    contact_id = StrictCharField(source="contact.external_id", allow_null=True, default=None)

    class Meta:
        model = Conversation
        fields = [
            "conversation_id",
            "contact_id",
            "channel",
            "status",
            "started_at",
            "last_message_at",
            "closed_at",
            "message_count",
        ]


class MessageCursor(CursorPagination):
    page_size = 50
    ordering = ("occurred_at", "id")


class ConversationDetailApi(TenantAPIView):
    @extend_schema(responses=ConversationOutputSerializer)
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_get(tenant=self.tenant, external_id=conversation_id)
        data = dict(ConversationOutputSerializer(conversation).data)
        data["window"] = window_as_dicts(window_get(conversation=conversation))
        return Response(data)


class ConversationMessagesApi(TenantAPIView):
    @extend_schema(responses=MessageOutputSerializer(many=True))
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_get(tenant=self.tenant, external_id=conversation_id)
        paginator = MessageCursor()
        page = paginator.paginate_queryset(
            message_list(tenant=self.tenant, conversation=conversation), request, view=self
        )
        return paginator.get_paginated_response(MessageOutputSerializer(page, many=True).data)
