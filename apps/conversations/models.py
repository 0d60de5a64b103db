from __future__ import annotations

import uuid

from django.db import models

from apps.contacts.models import Contact
from apps.core.models import BaseModel, UUIDModel
from apps.tenants.models import Tenant


class Conversation(UUIDModel):
    STATUS_OPEN = "open"
    STATUS_CLOSED = "closed"
    STATUS_CHOICES = [(STATUS_OPEN, "Open"), (STATUS_CLOSED, "Closed")]

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="conversations")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="conversations")
    external_id = models.CharField(max_length=255, help_text="The client's conversation_id, unique per tenant.")
    channel = models.CharField(max_length=50, blank=True, default="")
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_OPEN)
    started_at = models.DateTimeField()
    last_message_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    flushed_at = models.DateTimeField(null=True, blank=True)
    consolidated_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its deferred consolidation last started; earlier than last_message_at: work is due.",
    )
    message_count = models.PositiveIntegerField(default=0)
    session_number = models.PositiveIntegerField(
        default=0,
        help_text="Its current session: a turn after a silence longer than ENGRAM_SESSION_GAP_SECONDS opens the "
        "next (apps/conversations/sessions.py).",
    )

    class Meta:
        ordering = ["-last_message_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="conversation_unique_external_id_per_tenant")
        ]
        indexes = [
            models.Index(fields=["tenant", "contact", "last_message_at"]),
            models.Index(fields=["status", "last_message_at"]),
            models.Index(fields=["last_message_at"], name="conversation_last_message_at"),
        ]

    def __str__(self) -> str:
        return self.external_id


class Message(BaseModel):
    """The episodic ledger: append-only, one row per turn, never edited."""

    ROLE_USER = "user"
    ROLE_ASSISTANT = "assistant"
    ROLE_SYSTEM = "system"
    ROLE_TOOL = "tool"
    ROLES = (ROLE_USER, ROLE_ASSISTANT, ROLE_SYSTEM, ROLE_TOOL)
    ROLE_CHOICES = [(role, role) for role in ROLES]

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="messages")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="messages")
    external_id = models.CharField(
        max_length=255, default="", help_text="The client's message_id: idempotency key and provenance."
    )
    role = models.CharField(max_length=10, choices=ROLE_CHOICES)
    speaker = models.CharField(max_length=200, blank=True, default="")
    content = models.TextField()
    occurred_at = models.DateTimeField(db_index=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["occurred_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "external_id"], name="message_unique_external_id_per_tenant")
        ]
        indexes = [models.Index(fields=["conversation", "occurred_at", "id"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"

    @staticmethod
    def new_external_id() -> str:
        return f"msg_{uuid.uuid4().hex}"
