from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.tenants.models import ApiKey, Membership, Tenant
from apps.tenants.services import api_key_create, api_key_revoke, tenant_create, tenant_delete


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "is_active", "created_at")
    list_filter = ("is_active",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ("created_at", "updated_at")
    actions = ["issue_api_key"]

    def save_model(self, request: HttpRequest, obj: Tenant, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)  # name, is_active, settings: plain fields, no service
            return
        created = tenant_create(name=obj.name, slug=obj.slug, settings=obj.settings)
        obj.pk, obj.created_at, obj.updated_at = created.pk, created.created_at, created.updated_at
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: Tenant) -> None:
        tenant_delete(tenant=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            tenant_delete(tenant=tenant)

    def has_issue_api_key_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("tenants.issue_api_key")

    @admin.action(description="Issue a read+write API key (shown once)", permissions=["issue_api_key"])
    def issue_api_key(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            issued = api_key_create(tenant=tenant, name=f"admin:{request.user}")
            self.message_user(
                request, f"{tenant.slug}: {issued.plaintext} — copy it now, it is not shown again.", messages.WARNING
            )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "prefix", "scopes", "last_used_at", "revoked_at", "created_at")
    list_filter = ("tenant", "revoked_at")
    search_fields = ("name", "prefix", "tenant__slug")
    readonly_fields = ("tenant", "prefix", "key_hash", "scopes", "last_used_at", "revoked_at", "created_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued by the tenant action or `manage.py api_key_create`, shown once

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).")


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "tenant__slug")
