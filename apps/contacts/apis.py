from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.contacts.models import Contact
from apps.contacts.selectors import contact_get, contact_list
from apps.contacts.services import MAX_EXTERNAL_ID_LENGTH, contact_create, contact_delete, contact_update
from apps.core.pagination import LimitOffset
from apps.tenants.api import TenantAPIView


class ContactOutputSerializer(serializers.ModelSerializer):
    contact_id = serializers.CharField(source="external_id")

    class Meta:
        model = Contact
        fields = ["contact_id", "display_name", "channel", "metadata", "last_seen_at", "created_at", "updated_at"]


class ContactListCreateApi(TenantAPIView):
    class InputSerializer(serializers.Serializer):
        contact_id = serializers.CharField(max_length=MAX_EXTERNAL_ID_LENGTH)
        display_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        channel = serializers.CharField(max_length=50, required=False, allow_blank=True, default="")
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
        display_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
        channel = serializers.CharField(max_length=50, required=False, allow_blank=True)
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
        contact_delete(contact=contact_get(tenant=self.tenant, external_id=contact_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
