from __future__ import annotations

from django.db import models
from django.db.models import Q

from apps.contacts.models import Contact
from apps.conversations.models import Conversation, Message
from apps.core.models import UUIDModel
from apps.tenants.models import Tenant


class ContextEvent(UUIDModel):
    """The event bus row: every observation (message or agent observation) lands here first.

    `extracted_at` marks the inline extraction done (retried by a task if the request died before it);
    `processed` marks the memory processor (narrative + scaffold) done; `llm_pending` that it was done by
    the rules because the configured LLM failed: the processor retries it with the LLM when it answers again.
    """

    TYPE_MESSAGE = "message"
    OBSERVATION_CATEGORIES = ("fact", "preference", "project_details", "correction", "scaffold_update", "learned_fact")
    TYPE_CHOICES = [(TYPE_MESSAGE, TYPE_MESSAGE), *((category, category) for category in OBSERVATION_CATEGORIES)]

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="context_events")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="events")
    conversation = models.ForeignKey(Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    message = models.OneToOneField(
        Message, on_delete=models.CASCADE, null=True, blank=True, related_name="context_event"
    )
    event_type = models.CharField(max_length=20, choices=TYPE_CHOICES)
    content = models.TextField()
    source_metadata = models.JSONField(default=dict, blank=True)
    processed = models.BooleanField(default=False)
    processed_at = models.DateTimeField(null=True, blank=True)
    llm_pending = models.BooleanField(default=False)
    extracted_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    result = models.JSONField(default=dict, blank=True, help_text="What inline extraction created or reinforced.")

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["tenant", "created_at"], name="event_pending_idx", condition=Q(processed=False)),
            models.Index(fields=["created_at"], name="event_unextracted_idx", condition=Q(extracted_at__isnull=True)),
            models.Index(fields=["tenant", "created_at"], name="event_llm_pending_idx", condition=Q(llm_pending=True)),
        ]

    def __str__(self) -> str:
        return f"{self.event_type}: {self.content[:60]}"
