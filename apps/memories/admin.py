from __future__ import annotations

from django.contrib import admin

from apps.memories.models import ContextEvent, KnowledgeChunk, KnowledgeDocument, Memory, MemoryRevision


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


class RevisionInline(ReadOnlyInline):
    model = MemoryRevision
    fk_name = "memory"
    fields = ("created_at", "action", "actor", "note", "before", "after")
    readonly_fields = fields


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = (
        "short_content",
        "memory_type",
        "tenant",
        "contact",
        "importance",
        "access_count",
        "is_pinned",
        "valid_to",
        "deleted_at",
        "created_at",
    )
    list_filter = ("memory_type", "is_pinned", "is_compressed", "tenant")
    search_fields = ("content", "contact__external_id")
    readonly_fields = (
        "tenant",
        "contact",
        "memory_type",
        "content_hash",
        "embedding_model",
        "base_importance",
        "access_count",
        "accessed_at",
        "occurred_at",
        "valid_from",
        "valid_to",
        "superseded_by",
        "compressed_into",
        "source_message_ids",
        "source_event_ids",
        "created_by",
        "deleted_at",
        "deletion_reason",
        "created_at",
    )
    exclude = ("embedding", "search_vector")
    inlines = [RevisionInline]

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return memory.content[:90]


@admin.register(MemoryRevision)
class MemoryRevisionAdmin(admin.ModelAdmin):
    list_display = ("memory", "action", "actor", "created_at")
    list_filter = ("action",)
    search_fields = ("actor", "memory__content")

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(ContextEvent)
class ContextEventAdmin(admin.ModelAdmin):
    list_display = ("event_type", "tenant", "contact", "processed", "extracted_at", "attempts", "created_at")
    list_filter = ("event_type", "processed", "tenant")
    search_fields = ("content",)

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False


class ChunkInline(ReadOnlyInline):
    model = KnowledgeChunk
    fields = ("position", "token_count", "content")
    readonly_fields = fields


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "tenant", "size_bytes", "chunk_count", "created_at")
    list_filter = ("tenant",)
    search_fields = ("title",)
    readonly_fields = ("tenant", "size_bytes", "chunk_count", "created_by", "created_at")
    inlines = [ChunkInline]
