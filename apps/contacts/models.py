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
        permissions = [("export_contact", "Can export everything held about a contact in the admin")]
        indexes = [models.Index(fields=["tenant", "last_seen_at"])]

    def __str__(self) -> str:
        return self.display_name or self.external_id


class ContactState(models.Model):
    """Hot state of a contact, updated on every ingested user message (contact-intelligence.txt §4–5)."""

    contact = models.OneToOneField(Contact, on_delete=models.CASCADE, primary_key=True, related_name="state")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    mood = models.CharField(max_length=12, default="neutral")
    mood_confidence = models.FloatField(default=0.5)
    energy = models.CharField(max_length=6, default="medium")
    style = models.CharField(max_length=12, default="casual")
    usual_mood = models.CharField(max_length=12, blank=True, default="")
    usual_energy = models.CharField(max_length=6, blank=True, default="")
    relationship_stage = models.CharField(max_length=12, default="new", db_index=True)
    active_streak = models.PositiveIntegerField(default=0)
    sessions_count = models.PositiveIntegerField(default=0)
    last_session_date = models.DateField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    churn_risk = models.FloatField(default=0.0)
    crisis_flag = models.BooleanField(default=False, db_index=True)
    crisis_at = models.DateTimeField(null=True, blank=True)
    # the contact's preferred chat window (UTC hours), learned by the timing pattern; used to schedule outreach
    chat_window_start = models.PositiveSmallIntegerField(null=True, blank=True)
    chat_window_end = models.PositiveSmallIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.contact}: {self.mood}/{self.relationship_stage}"


class InteractionLog(models.Model):
    """One row per classified user message: the mood history, and every transition (previous → new)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="interactions")
    message_id = models.CharField(max_length=255, blank=True, default="")
    occurred_at = models.DateTimeField(db_index=True)
    mood = models.CharField(max_length=12)
    energy = models.CharField(max_length=6)
    style = models.CharField(max_length=12)
    confidence = models.FloatField()
    source = models.CharField(max_length=10, help_text="llm, keywords, previous or default")
    previous_mood = models.CharField(max_length=12, blank=True, default="")
    is_transition = models.BooleanField(default=False)
    session_number = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["occurred_at", "id"]
        indexes = [
            models.Index(fields=["contact", "occurred_at"]),
            # was this message applied already (a retried ingest)? contact_state_update_many asks per batch
            models.Index(fields=["contact", "message_id"], name="interaction_message_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.contact_id} {self.mood}/{self.energy} at {self.occurred_at:%Y-%m-%d %H:%M}"


class CrisisReview(models.Model):
    """Crisis language detected in a message: the contact is flagged for human review by an operator."""

    STATUS_OPEN = "open"
    STATUS_REVIEWED = "reviewed"

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="crisis_reviews")
    message_id = models.CharField(max_length=255, blank=True, default="")
    excerpt = models.TextField()
    matched = models.JSONField(default=list)
    severity = models.CharField(max_length=10)
    language = models.CharField(max_length=8, blank=True, default="")
    guidance = models.TextField()
    status = models.CharField(max_length=10, default=STATUS_OPEN, db_index=True)
    reviewed_by = models.CharField(max_length=150, blank=True, default="")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"crisis review ({self.severity}, {self.status})"


class Trigger(UUIDModel):
    """Something the client should do proactively: check in, re-engage, follow up."""

    KIND_CHECK_IN = "check_in"
    KIND_RE_ENGAGEMENT = "re_engagement"
    KIND_FOLLOW_UP = "follow_up"
    KINDS = (KIND_CHECK_IN, KIND_RE_ENGAGEMENT, KIND_FOLLOW_UP)
    STATUS_PENDING = "pending"
    STATUS_DONE = "done"
    STATUS_CANCELLED = "cancelled"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="triggers")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="triggers")
    kind = models.CharField(max_length=20, choices=[(kind, kind) for kind in KINDS])
    due_at = models.DateTimeField(db_index=True)
    status = models.CharField(max_length=10, default=STATUS_PENDING, db_index=True)
    reason = models.CharField(max_length=300)
    dedupe_key = models.CharField(max_length=200, help_text="One pending trigger per contact and reason.")
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["due_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "contact", "dedupe_key"], name="trigger_unique_dedupe_key")
        ]

    def __str__(self) -> str:
        return f"{self.kind} due {self.due_at:%Y-%m-%d %H:%M} ({self.status})"


class Insight(models.Model):
    """A finding for the tenant owner (engagement decline with boredom, ...)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="insights")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="insights")
    kind = models.CharField(max_length=40)
    text = models.TextField()
    dedupe_key = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["tenant", "dedupe_key"], name="insight_unique_dedupe_key")]

    def __str__(self) -> str:
        return self.text[:80]


class ErasureRecord(models.Model):
    """That a contact was erased, by whom and when, and how many rows went — without personal data: the
    contact is named only by a keyed digest of its id (`contact_digest`), which proves an erasure to someone
    who knows the id without storing it. It outlives the contact by design (GDPR art. 17 accountability)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="erasures")
    contact_digest = models.CharField(max_length=64, db_index=True)
    actor = models.CharField(max_length=150)
    erased_at = models.DateTimeField(auto_now_add=True)
    rows = models.JSONField(default=dict, help_text="Rows deleted per model, e.g. {'memories.Memory': 12}.")
    redis_keys = models.IntegerField(null=True, blank=True, help_text="Redis keys erased (null: Redis unreachable).")

    class Meta:
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"erasure {self.contact_digest[:12]} by {self.actor}"
