import uuid

from django.db import models


class BaseModel(models.Model):
    """Every table carries when it was created and last changed."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class UUIDModel(BaseModel):
    """Public objects are addressed by an unguessable UUID."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)

    class Meta:
        abstract = True


class LlmCall(models.Model):
    """One LLM request as billed: tokens, cost and outcome, per tenant (accounting and the inspector)."""

    # a plain UUID, not a foreign key: core sits below tenants and cannot import it
    tenant_id = models.UUIDField(null=True, blank=True, db_index=True)
    purpose = models.CharField(max_length=64)
    model = models.CharField(max_length=128)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.FloatField(default=0)
    success = models.BooleanField()
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        outcome = "ok" if self.success else "failed"
        return f"{self.purpose} {self.model} {outcome} ({self.prompt_tokens}+{self.completion_tokens} tokens)"
