from __future__ import annotations

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core.boundary import uploaded_text
from apps.core.exceptions import ApplicationError, NotFound
from apps.core.fields import StrictCharField
from apps.core.pagination import LimitOffset
from apps.core.parsers import StorableFormParser, StorableJSONParser, StorableMultiPartParser
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.search import knowledge_search
from apps.knowledge.services import ALLOWED_CONTENT_TYPES, document_create, document_delete
from apps.tenants.api import TenantAPIView
from apps.tenants.models import Tenant


class DocumentOutputSerializer(serializers.ModelSerializer):
    status_url = serializers.SerializerMethodField(help_text="Poll it until `status` is `ready` or `failed`.")

    class Meta:
        model = KnowledgeDocument
        fields = [
            "id",
            "title",
            "content_type",
            "size_bytes",
            "chunk_count",
            "status",
            "status_message",
            "processed_at",
            "status_url",
            "created_by",
            "created_at",
        ]

    def get_status_url(self, document: KnowledgeDocument) -> str:
        return document_status_path(document)


def document_status_path(document: KnowledgeDocument) -> str:
    return reverse("knowledge-document-detail", kwargs={"document_id": document.pk})


def _document_get(tenant: Tenant, document_id: str) -> KnowledgeDocument:
    document = KnowledgeDocument.objects.filter(tenant=tenant, pk=document_id).first()
    if document is None:
        raise NotFound("Document not found.")
    return document


class DocumentListCreateApi(TenantAPIView):
    heavy_post = True
    parser_classes = [StorableJSONParser, StorableMultiPartParser, StorableFormParser]

    class InputSerializer(serializers.Serializer):
        title = StrictCharField(max_length=300)
        content = StrictCharField(required=False, trim_whitespace=False)
        file = serializers.FileField(required=False)
        content_type = serializers.ChoiceField(choices=ALLOWED_CONTENT_TYPES, required=False, default="text/markdown")

        def validate(self, attrs: dict) -> dict:
            if bool(attrs.get("content")) == bool(attrs.get("file")):
                raise serializers.ValidationError("Send exactly one of content (text) or file (upload).")
            return attrs

    @extend_schema(responses=DocumentOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        paginator = LimitOffset()
        page = paginator.paginate_queryset(KnowledgeDocument.objects.filter(tenant=self.tenant), request, view=self)
        return paginator.get_paginated_response(DocumentOutputSerializer(page, many=True).data)

    # What the schema states (InputSerializer checks it): a JSON body holds the text, a multipart body the file.
    class TextInputSerializer(serializers.Serializer):
        title = StrictCharField(min_length=1, max_length=300)
        content = StrictCharField(min_length=1, trim_whitespace=False)
        content_type = serializers.ChoiceField(choices=ALLOWED_CONTENT_TYPES, required=False, default="text/markdown")

    class UploadInputSerializer(serializers.Serializer):
        title = StrictCharField(min_length=1, max_length=300)
        file = extend_schema_field(OpenApiTypes.BINARY)(serializers.FileField)(
            help_text="Text or markdown, at most 2 MB: UTF-8, or the charset its part declares, or one a byte-order "
            "mark or detection finds (415 otherwise); NUL is refused (400)."
        )
        content_type = serializers.ChoiceField(choices=ALLOWED_CONTENT_TYPES, required=False, default="text/markdown")

    @extend_schema(
        request={"application/json": TextInputSerializer, "multipart/form-data": UploadInputSerializer},
        responses={202: DocumentOutputSerializer},
        description="Accepted: the document is stored `processing` and chunked and embedded by the worker; poll "
        "`status_url` (also the `Location` header) until `status` is `ready` (searchable) or `failed` "
        "(`status_message` says why). Search ignores documents that are not ready.",
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        content = data.get("content")
        if content is None:
            upload = data["file"]
            limit = int(settings.ENGRAM["MAX_DOCUMENT_BYTES"])
            if upload.size > limit:  # before reading it into memory
                raise ApplicationError(
                    f"Document is {upload.size} bytes; the limit is {limit} bytes (2 MB).",
                    code="too_large",
                    status_code=413,
                )
            content = uploaded_text(upload.read(), field="file", declared_charset=upload.charset)
        document = document_create(
            tenant=self.tenant,
            title=data["title"],
            content=content,
            content_type=data["content_type"],
            actor=self.actor,
        )
        return Response(
            DocumentOutputSerializer(document).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": document_status_path(document)},
        )


class DocumentDetailApi(TenantAPIView):
    @extend_schema(responses=DocumentOutputSerializer)
    def get(self, request: Request, document_id: str) -> Response:
        return Response(DocumentOutputSerializer(_document_get(self.tenant, document_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, document_id: str) -> Response:
        document_delete(document=_document_get(self.tenant, document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class KnowledgeSearchApi(TenantAPIView):
    class QuerySerializer(serializers.Serializer):
        query = StrictCharField(max_length=4000)
        top_k = serializers.IntegerField(min_value=1, max_value=50, required=False, default=5)

    @extend_schema(parameters=[QuerySerializer], responses={200: dict})
    def get(self, request: Request) -> Response:
        params = self.QuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        hits = knowledge_search(
            tenant=self.tenant, query=params.validated_data["query"], top_k=params.validated_data["top_k"]
        )
        return Response(
            {
                "query": params.validated_data["query"],
                "results": [
                    {
                        "document_id": hit.document_id,
                        "document_title": hit.document_title,
                        "position": hit.position,
                        "content": hit.content,
                        "score": hit.score,
                        "token_count": hit.token_count,
                        "explain": {"cosine": hit.cosine, "keyword": hit.keyword, "found_by": list(hit.found_by)},
                    }
                    for hit in hits
                ],
            }
        )
