from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.contacts.models import (
    Contact,
    ContactState,
    CrisisReview,
    ErasureRecord,
    Insight,
    InteractionLog,
    Trigger,
)
from apps.contacts.services import contact_delete, contact_update
from apps.contacts.services.state import crisis_review_resolve


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ContactAdminForm(forms.ModelForm):
    class Meta:
        model = Contact
        fields = ("display_name", "channel", "metadata")


@admin.register(Contact)
class ContactAdmin(admin.ModelAdmin):
    """Contacts: edited and erased through the contact services (they are created by the API and ingest).
    The memory-level actions (export a contact, run consolidation) are added by apps/memories/admin.py,
    which may import this app (not the reverse)."""

    form = ContactAdminForm
    list_display = (
        "external_id",
        "display_name",
        "tenant",
        "channel",
        "stage",
        "mood",
        "churn_risk",
        "last_seen_at",
        "created_at",
    )
    list_filter = ("tenant", "channel", "state__relationship_stage", "state__mood")
    list_select_related = ("tenant", "state")
    search_fields = ("external_id", "display_name")
    fields = (
        "tenant",
        "external_id",
        "display_name",
        "channel",
        "metadata",
        "last_seen_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = ("tenant", "external_id", "last_seen_at", "created_at", "updated_at")
    date_hierarchy = "created_at"

    @admin.display(description="stage", ordering="state__relationship_stage")
    def stage(self, contact: Contact) -> str:
        state = getattr(contact, "state", None)
        return state.relationship_stage if state else "new"

    @admin.display(description="mood", ordering="state__mood")
    def mood(self, contact: Contact) -> str:
        state = getattr(contact, "state", None)
        return state.mood if state else "neutral"

    @admin.display(description="churn risk", ordering="state__churn_risk")
    def churn_risk(self, contact: Contact) -> str:
        state = getattr(contact, "state", None)
        return f"{state.churn_risk:.2f}" if state else "0.00"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # contacts come from the API and ingest (their external id is the client's)

    def save_model(self, request: HttpRequest, obj: Contact, form: forms.ModelForm, change: bool) -> None:
        contact_update(contact=obj, data={name: form.cleaned_data[name] for name in form.changed_data})

    def delete_model(self, request: HttpRequest, obj: Contact) -> None:
        contact_delete(contact=obj, actor=f"user:{request.user}")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Contact]) -> None:
        for contact in queryset:
            contact_delete(contact=contact, actor=f"user:{request.user}")

    def log_deletions(self, request: HttpRequest, queryset: QuerySet[Contact]) -> list[LogEntry]:
        """No admin LogEntry (its object_repr would keep the contact's name after the erasure): the
        ErasureRecord that contact_delete writes is the audit."""
        return []


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
    list_select_related = ("contact",)
    search_fields = ("contact__external_id", "message_id")
    date_hierarchy = "occurred_at"


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

    @admin.action(
        description="Mark reviewed (clears the contact's crisis flag when nothing else is open)", permissions=["change"]
    )
    def mark_reviewed(self, request: HttpRequest, queryset: QuerySet[CrisisReview]) -> None:
        for review in queryset.filter(status=CrisisReview.STATUS_OPEN):
            crisis_review_resolve(review=review, reviewer=str(request.user))
        self.message_user(request, "Marked reviewed.")


@admin.register(Trigger)
class TriggerAdmin(ReadOnlyAdmin):
    list_display = ("contact", "kind", "due_at", "status", "reason")
    list_filter = ("kind", "status", "tenant")
    search_fields = ("contact__external_id", "reason")


@admin.register(ErasureRecord)
class ErasureRecordAdmin(ReadOnlyAdmin):
    list_display = ("erased_at", "tenant", "contact_digest", "actor", "redis_keys")
    list_filter = ("tenant",)
    search_fields = ("contact_digest", "actor")

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # the audit outlives what it records


@admin.register(Insight)
class InsightAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "tenant", "contact", "kind", "text")
    list_filter = ("kind", "tenant")
