from django.contrib import admin
from django.http import HttpRequest

from apps.conversations.models import Conversation, Message


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("external_id", "tenant", "contact", "status", "message_count", "last_message_at")
    list_filter = ("status", "tenant")
    list_select_related = ("tenant", "contact")
    search_fields = ("external_id", "contact__external_id")
    date_hierarchy = "last_message_at"
    readonly_fields = [field.name for field in Conversation._meta.fields]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """The ledger is append-only: operators can read it, never edit it."""

    list_display = ("external_id", "tenant", "conversation", "role", "speaker", "occurred_at")
    list_filter = ("role", "tenant")
    list_select_related = ("tenant", "conversation")
    search_fields = ("external_id", "content", "conversation__external_id")
    date_hierarchy = "occurred_at"
    readonly_fields = [field.name for field in Message._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
