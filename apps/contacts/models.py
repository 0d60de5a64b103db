from __future__ import annotations

from django.db import models

from apps.core.models import UUIDModel
from apps.tenants.models import Tenant


class Contact(UUIDModel):
    """An end-user a tenant's AI talks to, addressed in the API by the client's own id."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="contacts")
    external_id = models.CharField(max_length=255, help_text="The client's contact_id, unique per tenant.")
    display_name = models.CharField(max_length=200, blank=True, default="")
    channel = models.CharField(max_length=50, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="contact_unique_external_id_per_tenant")
        ]
        indexes = [models.Index(fields=["tenant", "last_seen_at"])]

    def __str__(self) -> str:
        return self.display_name or self.external_id
