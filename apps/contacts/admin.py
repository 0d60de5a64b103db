from django.contrib import admin

from apps.contacts.models import Contact


@admin.register(Contact)
class ContactAdmin(admin.ModelAdmin):
    list_display = ("external_id", "display_name", "tenant", "channel", "last_seen_at", "created_at")
    list_filter = ("tenant", "channel")
    search_fields = ("external_id", "display_name")
    readonly_fields = ("created_at", "updated_at", "last_seen_at")
