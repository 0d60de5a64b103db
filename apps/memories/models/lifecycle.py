from __future__ import annotations

from django.db import models

from apps.contacts.models import Contact
from apps.core.models import BaseModel
from apps.tenants.models import Tenant


class MemoryProfile(BaseModel):
    """Working memory (an LLM- or rule-synthesised narrative, ≤ 500 words) and the schema-free information
    scaffold of one scope: a contact, or the tenant itself when contact is None (multi-tier-memory.txt §1.1)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memory_profiles")
    contact = models.OneToOneField(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="profile")
    working_memory = models.TextField(blank=True, default="")
    scaffold = models.JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "contact"], name="profile_unique_scope", nulls_distinct=False)
        ]

    def __str__(self) -> str:
        return f"profile of {self.contact or self.tenant}"


class ProfileAudit(models.Model):
    """What one memory-processor run injected or changed (the AgentContextLog of the spec)."""

    id = models.BigAutoField(primary_key=True)
    profile = models.ForeignKey(MemoryProfile, on_delete=models.CASCADE, related_name="audits")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(
        max_length=10, help_text="llm, offline, or llm_retry (the model on events the rules processed in its outage)"
    )
    event_ids = models.JSONField(default=list)
    working_memory_before = models.TextField(blank=True, default="")
    working_memory_after = models.TextField(blank=True, default="")
    scaffold_before = models.JSONField(default=dict)
    scaffold_after = models.JSONField(default=dict)
    facts_embedded = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.source} update of {self.profile_id} at {self.created_at:%Y-%m-%d %H:%M}"


class ConsolidationRun(models.Model):
    """A run log row per lifecycle job: what it merged, decayed, compressed, pruned."""

    KIND_DEFERRED = "deferred"
    KIND_PERIODIC = "periodic"
    KIND_SESSION_FLUSH = "session_flush"
    KIND_PROCESSOR = "processor"
    KIND_PURGE = "purge"

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    contact = models.ForeignKey(Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    kind = models.CharField(max_length=20)
    status = models.CharField(max_length=10, default="running")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["kind", "started_at"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} {self.stats}"
