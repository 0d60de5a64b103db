from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.entities.models import Entity


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    """The knowledge graph's nodes: written only by extraction (apps.entities.services), read here.
    The memories linked to an entity are listed in the memory admin (filter by entity there)."""

    list_display = ("key", "display_name", "entity_type", "tenant", "contact", "mention_count", "last_seen_at")
    list_filter = ("entity_type", "tenant")
    list_select_related = ("tenant", "contact")
    search_fields = ("slug", "display_name", "contact__external_id")
    readonly_fields = ("created_at", "updated_at", "mention_count", "last_seen_at")
    date_hierarchy = "last_seen_at"

    @admin.display(description="key", ordering="slug")
    def key(self, entity: Entity) -> str:
        return entity.key

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
