from django.contrib import admin

from apps.entities.models import Entity


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ("entity_type", "slug", "display_name", "tenant", "contact", "mention_count", "last_seen_at")
    list_filter = ("entity_type", "tenant")
    search_fields = ("slug", "display_name", "contact__external_id")
    readonly_fields = ("created_at", "updated_at", "mention_count", "last_seen_at")
