from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.entities.models import NOT_A_NAME, Entity


class NotANameFilter(admin.SimpleListFilter):
    """`name:` entities the periodic run found to be words (metadata.not_a_name: how often the scope writes
    them in lower case and capitalised inside a sentence). They link nothing and no list shows them."""

    title = "a name?"
    parameter_name = "not_a_name"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "not a name (written in lower case)"), ("no", "a name or typed entity")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Entity]) -> QuerySet[Entity]:
        if self.value() == "yes":
            return queryset.filter(metadata__has_key=NOT_A_NAME)
        if self.value() == "no":
            return queryset.exclude(metadata__has_key=NOT_A_NAME)
        return queryset


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    """The knowledge graph's nodes: written only by extraction (apps.entities.services), read here.
    The memories linked to an entity are listed in the memory admin (filter by entity there)."""

    list_display = ("key", "display_name", "entity_type", "tenant", "contact", "mention_count", "last_seen_at")
    list_filter = ("entity_type", NotANameFilter, "tenant")
    list_select_related = ("tenant", "contact")
    search_fields = ("slug", "display_name", "contact__external_id")
    readonly_fields = ("created_at", "updated_at", "mention_count", "last_seen_at")  # metadata shows why
    date_hierarchy = "last_seen_at"

    @admin.display(description="key", ordering="slug")
    def key(self, entity: Entity) -> str:
        return entity.key

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
