from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from apps.contacts.models import Contact
from apps.core.models import UUIDModel
from apps.tenants.models import Tenant

# metadata key of a `name:` entity its scope writes as a common word ({"lower": n, "capitalised": m}: its uses,
# extraction.rules.case_uses): nothing links to it, no mention counts, no entity list or query shows it
NOT_A_NAME = "not_a_name"


class Entity(UUIDModel):
    """A node of the personal (per contact) or business (per tenant, contact=None) knowledge graph,
    keyed `type:slug` — `pet:bruno`, `person:priya`, `workplace:infosys`, `topic:politics`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="entities")
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="entities")
    entity_type = models.CharField(max_length=30)
    slug = models.CharField(max_length=200)
    display_name = models.CharField(max_length=200)
    metadata = models.JSONField(default=dict, blank=True)
    # other names the entity goes by (slugs): the nickname a speaker is addressed by ("Thanks, Mel!" makes
    # `mel` an alias of the speaker labelled Melanie); a query naming an alias finds the entity. How each
    # was learned is in metadata["aliases"]. (entity_aliases_add)
    aliases = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    mention_count = models.PositiveIntegerField(default=1)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "entities"
        ordering = ["entity_type", "slug"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "contact", "entity_type", "slug"],
                name="entity_unique_key_per_scope",
                nulls_distinct=False,
            )
        ]
        indexes = [
            models.Index(fields=["tenant", "contact", "slug"]),
            GinIndex(fields=["aliases"], name="entity_aliases_gin"),
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def key(self) -> str:
        return f"{self.entity_type}:{self.slug}"
