from django.contrib import admin

from apps.core.models import LlmCall


@admin.register(LlmCall)
class LlmCallAdmin(admin.ModelAdmin):
    """Read-only: the rows are accounting, written only by apps.core.llm."""

    list_display = (
        "created_at",
        "tenant_id",
        "purpose",
        "model",
        "success",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "latency_ms",
    )
    list_filter = ("success", "purpose", "model", "created_at")
    search_fields = ("tenant_id", "error")
    date_hierarchy = "created_at"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
