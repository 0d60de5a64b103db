"""Operator admin for the knowledge base: documents are read and deleted here (through `document_delete`),
never added or edited (uploads go through the inspector or the API, which chunk and embed)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.knowledge.models import KnowledgeChunk, KnowledgeDocument
from apps.knowledge.services import document_delete


class ReadOnlyAdmin(admin.ModelAdmin):
    """Chunks: visible, searchable, never edited by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ChunkInline(admin.TabularInline):
    model = KnowledgeChunk
    fields = ("position", "token_count", "embedding_model", "content")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "tenant", "content_type", "size_bytes", "chunk_count", "created_by", "created_at")
    list_filter = ("tenant", "content_type")
    search_fields = ("title", "content")
    readonly_fields = (
        "tenant",
        "title",
        "content_type",
        "content",
        "size_bytes",
        "chunk_count",
        "metadata",
        "created_by",
        "created_at",
    )
    inlines = [ChunkInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # uploads go through the inspector or the API, which chunk and embed

    def delete_model(self, request: HttpRequest, obj: KnowledgeDocument) -> None:
        document_delete(document=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeDocument]) -> None:
        for document in queryset:
            document_delete(document=document)


@admin.register(KnowledgeChunk)
class KnowledgeChunkAdmin(ReadOnlyAdmin):
    list_display = ("document", "position", "token_count", "embedding_model", "tenant")
    list_filter = ("tenant", "embedding_model")
    list_select_related = ("document", "tenant")
    search_fields = ("content", "document__title")
    exclude = ("embedding",)
