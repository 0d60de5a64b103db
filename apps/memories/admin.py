"""Operator admin for memories, their history and the lifecycle's run logs. Writes go through services:
an edit is `memory_edit`, a delete is a soft `memory_delete`, and every action records the operator as
`user:<username>` in the memory's history."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from apps.contacts.admin import ContactAdmin
from apps.contacts.models import Contact
from apps.contacts.personal_data import contact_export
from apps.core.exceptions import ApplicationError
from apps.memories.dispatch import pending_extraction_queue, scope_consolidation_queue, tenant_consolidation_queue
from apps.memories.lifecycle.deferred import exhausted_events_reset
from apps.memories.models import (
    ConsolidationRun,
    ContextEvent,
    Memory,
    MemoryEntity,
    MemoryProfile,
    MemoryRevision,
    ProfileAudit,
)
from apps.memories.store.editing import memory_delete, memory_edit
from apps.memories.store.operations import (
    memories_merge_selected,
    memories_reembed,
    memory_importance_recompute,
    memory_supersede_manual,
)
from apps.memories.store.reembed import reembed
from apps.tenants.admin import TenantAdmin
from apps.tenants.models import Tenant


def operator(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


class ReadOnlyAdmin(admin.ModelAdmin):
    """Logs and history: visible, searchable, never edited by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RevisionInline(ReadOnlyInline):
    model = MemoryRevision
    fk_name = "memory"
    fields = ("created_at", "action", "actor", "note", "related_memory", "before", "after")
    readonly_fields = fields
    show_change_link = False


class MemoryEntityInline(ReadOnlyInline):
    model = MemoryEntity
    fk_name = "memory"
    fields = ("entity",)
    readonly_fields = fields
    verbose_name = "linked entity"
    verbose_name_plural = "linked entities"
    show_change_link = False


class MemoryStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("current", "current"), ("superseded", "superseded"), ("deleted", "deleted or pruned")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        if self.value() == "current":
            return queryset.filter(valid_to__isnull=True, deleted_at__isnull=True)
        if self.value() == "superseded":
            return queryset.filter(valid_to__isnull=False, deleted_at__isnull=True)
        if self.value() == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


class ScopeFilter(admin.SimpleListFilter):
    title = "scope"
    parameter_name = "scope"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("contact", "a contact's memory"), ("tenant", "tenant brain")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        if self.value() == "contact":
            return queryset.filter(contact__isnull=False)
        if self.value() == "tenant":
            return queryset.filter(contact__isnull=True)
        return queryset


class MemoryAdminForm(forms.ModelForm):
    class Meta:
        model = Memory
        fields = ("content", "importance", "is_pinned")


# set by the lifecycle services only: shown to operators, never edited in admin
LIFECYCLE_FIELDS = (
    "base_importance",
    "decay_rate",
    "access_count",
    "accessed_at",
    "occurred_at",
    "valid_from",
    "valid_to",
    "superseded_by",
    "is_compressed",
    "compressed_into",
    "expires_at",
    "deleted_at",
    "deletion_reason",
    "embedding_model",
    "content_hash",
    "created_at",
    "updated_at",
)


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = MemoryAdminForm
    list_display = (
        "short_content",
        "memory_type",
        "tenant",
        "contact",
        "importance",
        "access_count",
        "is_pinned",
        "is_current",
        "created_at",
    )
    list_filter = (MemoryStatusFilter, ScopeFilter, "memory_type", "is_pinned", "is_compressed", "tenant")
    list_select_related = ("tenant", "contact")
    search_fields = ("content", "contact__external_id", "contact__display_name", "slot")
    date_hierarchy = "created_at"
    fieldsets = (
        (None, {"fields": ("content", "importance", "is_pinned")}),
        (
            "Scope and provenance",
            {
                "fields": (
                    "tenant",
                    "contact",
                    "memory_type",
                    "slot",
                    "source_message_ids",
                    "source_event_ids",
                    "created_by",
                    "metadata",
                )
            },
        ),
        (
            "Lifecycle",
            {"fields": LIFECYCLE_FIELDS},
        ),
    )
    readonly_fields = (
        "tenant",
        "contact",
        "memory_type",
        "slot",
        "source_message_ids",
        "source_event_ids",
        "created_by",
        "metadata",
        *LIFECYCLE_FIELDS,
    )
    inlines = [MemoryEntityInline, RevisionInline]
    actions = [
        "reembed_selected",
        "recompute_importance",
        "merge_selected",
        "supersede_older_by_newer",
        "pin_selected",
        "soft_delete_selected",
    ]

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return memory.content[:90]

    @admin.display(description="current", boolean=True)
    def is_current(self, memory: Memory) -> bool:
        return memory.is_current

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are added through ingest, the API or the inspector, which deduplicate and embed

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a hard delete would bypass history: "soft delete" instead
        return actions

    def save_model(self, request: HttpRequest, obj: Memory, form: forms.ModelForm, change: bool) -> None:
        changed = {name: form.cleaned_data[name] for name in form.changed_data if name in MemoryAdminForm.Meta.fields}
        if changed:
            memory_edit(memory=obj, actor=operator(request), **changed)

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        memory_delete(memory=obj, actor=operator(request), note="deleted in admin")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            memory_delete(memory=memory, actor=operator(request), note="deleted in admin")

    @admin.action(description="Re-embed selected memories with the configured model", permissions=["change"])
    def reembed_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        done = memories_reembed(memories=list(queryset), actor=operator(request))
        self.message_user(request, f"Re-embedded {done} memor{'y' if done == 1 else 'ies'}.")

    @admin.action(description="Recompute importance (novelty × salience, then decay)", permissions=["change"])
    def recompute_importance(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        lines = []
        for memory in queryset.filter(deleted_at__isnull=True):
            try:
                updated = memory_importance_recompute(memory=memory, actor=operator(request))
            except ApplicationError as error:
                self.message_user(request, f"{memory.content[:40]}: {error.message}", messages.ERROR)
                continue
            lines.append(f"{memory.importance:.3f} → {updated.importance:.3f}")
        if lines:
            self.message_user(request, f"Recomputed {len(lines)}: " + ", ".join(lines[:10]))

    @admin.action(description="Merge selected memories into one", permissions=["change"])
    def merge_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        try:
            survivor = memories_merge_selected(memories=list(queryset), actor=operator(request))
        except ApplicationError as error:
            self.message_user(request, error.message, messages.ERROR)
            return
        self.message_user(request, f"Merged {queryset.count()} memories into “{survivor.content[:80]}”.")

    @admin.action(
        description="Supersede: the older of two selected memories is replaced by the newer", permissions=["change"]
    )
    def supersede_older_by_newer(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        selected = list(queryset.order_by("created_at"))
        if len(selected) != 2:
            self.message_user(
                request, "Select exactly two memories: the older is superseded by the newer.", messages.ERROR
            )
            return
        old, new = selected
        try:
            memory_supersede_manual(old=old, new=new, actor=operator(request))
        except ApplicationError as error:
            self.message_user(request, error.message, messages.ERROR)
            return
        self.message_user(request, f"“{old.content[:60]}” is now superseded by “{new.content[:60]}”.")

    @admin.action(description="Pin selected memories (they never decay)", permissions=["change"])
    def pin_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        pinned = 0
        for memory in queryset.filter(deleted_at__isnull=True, is_pinned=False):
            memory_edit(memory=memory, actor=operator(request), is_pinned=True)
            pinned += 1
        self.message_user(request, f"Pinned {pinned} memor{'y' if pinned == 1 else 'ies'}.")

    @admin.action(description="Soft-delete selected memories (out of context, kept in history)", permissions=["delete"])
    def soft_delete_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        count = 0
        for memory in queryset.filter(deleted_at__isnull=True):
            memory_delete(memory=memory, actor=operator(request), note="deleted in admin")
            count += 1
        self.message_user(request, f"Deleted {count} memor{'y' if count == 1 else 'ies'}.")


@admin.register(MemoryRevision)
class MemoryRevisionAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "memory", "action", "actor", "note")
    list_filter = ("action", "tenant")
    list_select_related = ("memory",)
    search_fields = ("actor", "note", "memory__content")
    date_hierarchy = "created_at"
    raw_id_fields = ("memory", "related_memory")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # history is the audit trail


@admin.register(MemoryEntity)
class MemoryEntityAdmin(ReadOnlyAdmin):
    list_display = ("memory", "entity")
    list_select_related = ("memory", "entity")
    search_fields = ("memory__content", "entity__slug", "entity__display_name")
    raw_id_fields = ("memory", "entity")


@admin.register(ContextEvent)
class ContextEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "event_type", "tenant", "contact", "processed", "extracted_at", "attempts")
    list_filter = ("event_type", "processed", "tenant")
    list_select_related = ("tenant", "contact")
    search_fields = ("content", "contact__external_id", "last_error")
    date_hierarchy = "created_at"
    raw_id_fields = ("contact", "conversation", "message")
    actions = ["retry_extraction"]

    def has_retry_extraction_permission(self, request: HttpRequest) -> bool:
        # the rows are never edited by hand; extracting one again is a change to what it produced
        return request.user.has_perm("memories.change_contextevent")

    @admin.action(
        description="Extract the selected messages again (those whose extraction spent its attempts)",
        permissions=["retry_extraction"],
    )
    def retry_extraction(self, request: HttpRequest, queryset: QuerySet[ContextEvent]) -> None:
        # their attempts start over and the worker's sweep extracts them, never the admin's request
        reset = exhausted_events_reset(event_ids=list(queryset.values_list("pk", flat=True)))
        if reset:
            pending_extraction_queue()
        self.message_user(
            request,
            f"{reset} event(s) whose extraction spent its attempts queued for extraction (the others are extracted "
            "or still being tried).",
        )


@admin.register(MemoryProfile)
class MemoryProfileAdmin(ReadOnlyAdmin):
    """Working memory and scaffold: written only by the memory processor (see ProfileAudit)."""

    list_display = ("__str__", "tenant", "contact", "version", "updated_at")
    list_filter = ("tenant",)
    list_select_related = ("tenant", "contact")
    search_fields = ("contact__external_id", "working_memory")


@admin.register(ProfileAudit)
class ProfileAuditAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "profile", "tenant", "source", "event_count")
    list_filter = ("source", "tenant")
    list_select_related = ("profile", "tenant")
    search_fields = ("working_memory_after",)
    date_hierarchy = "created_at"

    @admin.display(description="events")
    def event_count(self, audit: ProfileAudit) -> int:
        return len(audit.event_ids or [])


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(ReadOnlyAdmin):
    list_display = ("started_at", "kind", "status", "tenant", "contact", "duration", "stats")
    list_filter = ("kind", "status", "tenant")
    list_select_related = ("tenant", "contact")
    search_fields = ("error",)
    date_hierarchy = "started_at"

    @admin.display(description="duration")
    def duration(self, run: ConsolidationRun) -> str:
        if run.finished_at is None:
            return "running"
        return f"{(run.finished_at - run.started_at).total_seconds():.1f} s"


# --- memory-level actions on the lower apps' admins -------------------------------------------------
# contacts and tenants sit below memories and cannot import it, so their admins are extended here.


class ContactMemoryAdmin(ContactAdmin):
    actions = ["export_json", "run_consolidation"]

    def has_export_contact_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("contacts.export_contact")

    @admin.action(
        description="Export selected contacts as JSON (state, memories with history, entities, messages)",
        permissions=["export_contact"],
    )
    def export_json(self, request: HttpRequest, queryset: QuerySet[Contact]) -> HttpResponse:
        contacts = list(queryset.select_related("tenant"))
        exports = [contact_export(tenant=contact.tenant, contact=contact) for contact in contacts]
        body: dict[str, Any] = exports[0] if len(exports) == 1 else {"contacts": exports}
        name = f"contact-{contacts[0].pk}" if len(contacts) == 1 else f"contacts-{timezone.now():%Y%m%d-%H%M%S}"
        response = HttpResponse(
            json.dumps(body, indent=2, ensure_ascii=False, default=str), content_type="application/json"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.json"'
        return response

    @admin.action(
        description="Run consolidation now for selected contacts (decay, compression, pruning)", permissions=["change"]
    )
    def run_consolidation(self, request: HttpRequest, queryset: QuerySet[Contact]) -> None:
        # queued for the worker, never run in the admin's request: no time limit hit, no second run at once
        # (a scope another run holds is skipped), the result in Consolidation runs
        contacts = list(queryset.select_related("tenant"))
        for contact in contacts:
            scope_consolidation_queue(tenant_id=contact.tenant_id, contact_id=contact.pk)
        self.message_user(request, f"Consolidation queued for {len(contacts)} contact(s): see Consolidation runs.")


class TenantMemoryAdmin(TenantAdmin):
    actions = [*TenantAdmin.actions, "run_consolidation", "reembed_tenant"]

    @admin.action(description="Run consolidation now (every contact, then the tenant brain)", permissions=["change"])
    def run_consolidation(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        tenants = list(queryset)
        for tenant in tenants:
            tenant_consolidation_queue(tenant_id=tenant.pk)
        self.message_user(request, f"Consolidation queued for {len(tenants)} tenant(s): see Consolidation runs.")

    @admin.action(
        description="Re-embed all memories and knowledge chunks with the configured model", permissions=["change"]
    )
    def reembed_tenant(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            done = reembed(tenant=tenant, everything=True, actor=operator(request))
            self.message_user(
                request, f"{tenant.slug}: re-embedded {done['memories']} memories, {done['chunks']} chunks."
            )


admin.site.unregister(Contact)
admin.site.register(Contact, ContactMemoryAdmin)
admin.site.unregister(Tenant)
admin.site.register(Tenant, TenantMemoryAdmin)
