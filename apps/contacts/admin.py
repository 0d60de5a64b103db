from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.contacts.models import Contact, ContactState, CrisisReview, Insight, InteractionLog, Trigger
from apps.contacts.services.state import crisis_review_resolve


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Contact)
class ContactAdmin(admin.ModelAdmin):
    list_display = ("external_id", "display_name", "tenant", "channel", "last_seen_at", "created_at")
    list_filter = ("tenant", "channel")
    search_fields = ("external_id", "display_name")
    readonly_fields = ("created_at", "updated_at", "last_seen_at")


@admin.register(ContactState)
class ContactStateAdmin(ReadOnlyAdmin):
    list_display = (
        "contact",
        "tenant",
        "mood",
        "energy",
        "relationship_stage",
        "active_streak",
        "sessions_count",
        "churn_risk",
        "crisis_flag",
        "last_seen_at",
    )
    list_filter = ("relationship_stage", "mood", "crisis_flag", "tenant")
    search_fields = ("contact__external_id", "contact__display_name")


@admin.register(InteractionLog)
class InteractionLogAdmin(ReadOnlyAdmin):
    list_display = ("contact", "occurred_at", "mood", "energy", "source", "previous_mood", "is_transition")
    list_filter = ("mood", "source", "is_transition", "tenant")
    search_fields = ("contact__external_id", "message_id")


@admin.register(CrisisReview)
class CrisisReviewAdmin(admin.ModelAdmin):
    """Contacts flagged for human review because crisis language was detected."""

    list_display = ("created_at", "contact", "tenant", "severity", "language", "status", "reviewed_by")
    list_filter = ("status", "severity", "language", "tenant")
    search_fields = ("contact__external_id", "excerpt")
    readonly_fields = (
        "tenant",
        "contact",
        "message_id",
        "excerpt",
        "matched",
        "severity",
        "language",
        "guidance",
        "status",
        "reviewed_by",
        "reviewed_at",
        "created_at",
    )
    actions = ["mark_reviewed"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Mark reviewed (clears the contact's crisis flag when nothing else is open)")
    def mark_reviewed(self, request: HttpRequest, queryset: QuerySet[CrisisReview]) -> None:
        for review in queryset.filter(status=CrisisReview.STATUS_OPEN):
            crisis_review_resolve(review=review, reviewer=str(request.user))
        self.message_user(request, "Marked reviewed.")


@admin.register(Trigger)
class TriggerAdmin(ReadOnlyAdmin):
    list_display = ("contact", "kind", "due_at", "status", "reason")
    list_filter = ("kind", "status", "tenant")
    search_fields = ("contact__external_id", "reason")


@admin.register(Insight)
class InsightAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "tenant", "contact", "kind", "text")
    list_filter = ("kind", "tenant")
