from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django_celery_beat.admin import PeriodicTaskAdmin
from django_celery_beat.models import PeriodicTask

from apps.core.models import LlmCall


def _needs_change_permission(action: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(action)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return action(*args, **kwargs)

    guarded.allowed_permissions = ("change",)  # type: ignore[attr-defined]
    return guarded


class GuardedPeriodicTaskAdmin(PeriodicTaskAdmin):  # type: ignore[misc]
    """django-celery-beat's actions (enable, disable, toggle, run now) declare no permission, so a staff user
    who may only view periodic tasks could run them: here each needs the change permission."""

    enable_tasks = _needs_change_permission(PeriodicTaskAdmin.enable_tasks)
    disable_tasks = _needs_change_permission(PeriodicTaskAdmin.disable_tasks)
    toggle_tasks = _needs_change_permission(PeriodicTaskAdmin.toggle_tasks)
    run_tasks = _needs_change_permission(PeriodicTaskAdmin.run_tasks)


admin.site.unregister(PeriodicTask)
admin.site.register(PeriodicTask, GuardedPeriodicTaskAdmin)


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
