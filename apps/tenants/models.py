from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from apps.core.models import BaseModel, UUIDModel


class Tenant(UUIDModel):
    """A business using Engram. Every piece of memory belongs to exactly one tenant."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    # per-tenant overrides: retrieval weights, stage budgets, crisis helplines, ...
    settings = models.JSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("inspect_all_tenants", "Can inspect every tenant's memory in the inspector"),
            ("edit_all_tenants", "Can change every tenant's memory in the inspector"),
            ("issue_api_key", "Can issue a tenant's API keys in the admin"),
        ]

    def __str__(self) -> str:
        return self.name


class ApiKey(BaseModel):
    SCOPE_READ = "read"
    SCOPE_WRITE = "write"
    SCOPES = (SCOPE_READ, SCOPE_WRITE)

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True, help_text="Visible part of the key, used for lookup.")
    key_hash = models.CharField(max_length=64, help_text="SHA-256 of the whole key; the key itself is never stored.")
    scopes = ArrayField(models.CharField(max_length=10), default=list)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class Membership(BaseModel):
    """Links a tenant owner (a Django user) to the one tenant they may inspect."""

    ROLE_OWNER = "owner"
    ROLE_VIEWER = "viewer"
    ROLE_CHOICES = [(ROLE_OWNER, "Owner"), (ROLE_VIEWER, "Viewer")]

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=ROLE_CHOICES, default=ROLE_OWNER)

    def __str__(self) -> str:
        return f"{self.user} → {self.tenant} ({self.role})"
