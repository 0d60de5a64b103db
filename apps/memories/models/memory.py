from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Func, Q
from pgvector.django import HnswIndex

from apps.contacts.models import Contact
from apps.conversations.sessions import SESSION_ID_MAX_LENGTH
from apps.core.embeddings import EMBEDDING_DIMENSIONS
from apps.core.models import UUIDModel
from apps.core.vectors import HalfVectorField
from apps.entities.models import Entity
from apps.memories.scoring import MemoryType
from apps.tenants.models import Tenant

INDEX_TERMS_LENGTH = 120

# A memory's words together with one token naming its scope ('scope <contact id>', or 'scope tenant
# <tenant id>' for the brain): the keyword search asks `'scope …' & (word | word …)`, so GIN intersects the
# scope with the words inside one index scan instead of AND-ing the table-wide matches with a bitmap of the
# whole scope (3 ms for a 20,000-memory contact). The token is a lexeme no parser emits (it holds spaces).
# A stored column (`scoped_search_vector`), not an expression index: under row-level security a search
# condition may use an index only when it is leakproof, and `column @@ query` is (ts_match_vq marked so) where
# the expression's casts and concatenations are not (docs/reliability.md, "Tenant isolation").
SCOPED_SEARCH_SQL = (
    "(array_to_tsvector(ARRAY['scope ' || coalesce(contact_id::text, 'tenant ' || tenant_id::text)])"
    " || to_tsvector('english'::regconfig, coalesce(index_terms, '') || ' ' || coalesce(content, '')))"
)


def scope_token(*, tenant_id: object, contact_id: object | None) -> str:
    """The scope's lexeme in SCOPED_SEARCH_SQL, as a quoted tsquery operand."""
    return f"'scope {contact_id}'" if contact_id is not None else f"'scope tenant {tenant_id}'"


MEMORY_TYPE_CHOICES = [(kind.value, kind.name.title()) for kind in MemoryType]


class Memory(UUIDModel):
    """One thing Engram knows. Scope: a contact's memory, or the tenant's "brain" when contact is None.

    Never hard-deleted by the lifecycle: superseded facts keep `valid_to` + `superseded_by`, compressed
    episodes keep `is_compressed`, deleted and pruned memories keep `deleted_at` + `deletion_reason`.
    Every change writes a MemoryRevision.
    """

    DELETION_DELETED = "deleted"
    DELETION_PRUNED = "pruned"

    # No index of its own: every index below leads with tenant_id and serves `tenant_id = X`. The lone one
    # only cost writes, and misled the planner for tenants its statistics do not know yet (estimated at one
    # row): the neighbour probes scanned the whole tenant through it (docs/retrieval.md §1).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memories", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, null=True, blank=True, related_name="memories")
    memory_type = models.CharField(max_length=12, choices=MEMORY_TYPE_CHOICES)
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    embedding = HalfVectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    # the embedding of the turn before and this memory's text together (a contextual embedding): "They're
    # a real support" says nothing alone, but after "my family helped me through" it is about family.
    # Scored for candidates only (no index); null for a memory that came from no conversation turn.
    context_embedding = HalfVectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    index_terms = models.CharField(
        max_length=INDEX_TERMS_LENGTH,
        blank=True,
        default="",
        help_text="Words indexed and embedded with the content (an episode's date: '8 May 2023').",
    )
    search_vector = models.GeneratedField(
        expression=SearchVector("index_terms", "content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    # the scope's token and the words above, what keyword candidates are searched in (SCOPED_SEARCH_SQL; a
    # generated column may not read another, hence the words' expression again)
    scoped_search_vector = models.GeneratedField(
        expression=Func(template=SCOPED_SEARCH_SQL, output_field=SearchVectorField()),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    # an episode's words together with its neighbouring turns in the same session (previous, itself,
    # next): questions often match the turn before or after the one that holds the answer
    context_vector = SearchVectorField(null=True, blank=True)

    # importance decays from `base_importance`, anchored at the last access/reinforcement/edit
    # (see apps/memories/scoring.py: decayed_importance); `importance` is the materialised current value
    importance = models.FloatField()
    base_importance = models.FloatField()
    decay_rate = models.FloatField()
    access_count = models.PositiveIntegerField(default=0)
    accessed_at = models.DateTimeField()

    occurred_at = models.DateTimeField(help_text="When what it remembers happened (the source message's time).")
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes"
    )
    slot = models.CharField(max_length=120, blank=True, default="", help_text="Subject+slot key for corrections.")
    key = models.CharField(
        max_length=255,
        blank=True,
        default="",
        help_text="The client's key for a memory it stores as a record (POST /memories with a key: an upsert, never "
        "deduplicated or merged); one current memory per key and scope. Empty for everything else.",
    )
    outdated_by = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="outdates",
        help_text="An episode that stated a value since corrected: the correction. Still current (it happened), "
        "ranked below the correction and marked in context.",
    )

    is_compressed = models.BooleanField(default=False)
    compressed_into = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="compressed_from"
    )
    source_session_id = models.CharField(max_length=SESSION_ID_MAX_LENGTH, blank=True, default="")
    is_pinned = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    deletion_reason = models.CharField(max_length=10, blank=True, default="")

    source_message_ids = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    # the ledger position (conversations_message.id) of the first source message: turns that share one
    # timestamp keep their order of arrival wherever turns are ordered (neighbour probes, session summaries)
    source_sequence = models.BigIntegerField(null=True, blank=True)
    source_event_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_by = models.CharField(max_length=120, default="system")

    entities: models.ManyToManyField[Entity, MemoryEntity] = models.ManyToManyField(
        Entity, through="MemoryEntity", related_name="memories"
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["halfvec_cosine_ops"],
            ),
            # fastupdate off: no pending list for every search to scan (a few ms per query once it has grown)
            GinIndex(fields=["scoped_search_vector"], name="memory_scoped_search_gin", fastupdate=False),
            GinIndex(fields=["context_vector"], name="memory_context_gin", fastupdate=False),
            models.Index(fields=["tenant", "contact", "memory_type", "created_at"], name="memory_scope_type_idx"),
            models.Index(fields=["tenant", "contact", "content_hash"], name="memory_scope_hash_idx"),
            models.Index(fields=["tenant", "contact", "slot"], name="memory_scope_slot_idx", condition=~Q(slot="")),
            models.Index(fields=["tenant", "contact", "key"], name="memory_scope_key_idx", condition=~Q(key="")),
            # the turn before / after a candidate episode in its conversation (retrieval's neighbour source),
            # in ledger order: time, then arrival where times tie
            models.Index(
                fields=["tenant", "source_session_id", "occurred_at", "source_sequence"],
                name="memory_session_turn_idx",
                condition=Q(memory_type="episode") & ~Q(source_session_id=""),
            ),
            models.Index(
                fields=["tenant", "contact", "importance"],
                name="memory_current_idx",
                condition=Q(valid_to__isnull=True, deleted_at__isnull=True),
            ),
            # the scope's standing instructions with a condition (retrieval's condition source reads them all:
            # a few per contact, found without touching the rest of the scope)
            models.Index(
                fields=["tenant", "contact"],
                name="memory_condition_idx",
                condition=Q(metadata__has_key="instruction_condition", valid_to__isnull=True, deleted_at__isnull=True),
            ),
            # the scope's current memories by event time: retrieval's time source ("what did I do last weekend?")
            # reads the few in the question's window, not the whole scope (a 20,000-memory contact: 100 ms -> ~1)
            models.Index(
                fields=["tenant", "contact", "occurred_at"],
                name="memory_scope_time_idx",
                condition=Q(valid_to__isnull=True, deleted_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.memory_type}] {self.content[:80]}"

    @property
    def is_current(self) -> bool:
        return self.valid_to is None and self.deleted_at is None


class MemoryEntity(models.Model):
    # no index of their own: (memory, entity) and (entity, memory) below lead with each (migration 0026)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, db_index=False)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, db_index=False)
    # The memory's tenant, for the isolation policy alone: written by the database (a trigger sets it from the
    # memory on every insert and update, whatever the caller passed), so no writer sets it. A link is visible
    # by this column, like every tenant-owned row, instead of by two probes per link into the memory and the
    # entity (migrations 0021, 0025). No foreign key constraint: a tenant's links go with its memories, and a
    # constraint would make deleting a tenant scan this table.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, editable=False, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "entity"], name="memory_entity_unique")]
        indexes = [models.Index(fields=["entity", "memory"])]

    def __str__(self) -> str:
        return f"{self.memory_id} → {self.entity_id}"


class MemoryRevision(models.Model):
    """The history of a memory: who changed what, when, from what to what."""

    class Action(models.TextChoices):
        CREATED = "created"
        REINFORCED = "reinforced"
        MERGED = "merged"
        SUPERSEDED = "superseded"
        DECAYED = "decayed"
        PRUNED = "pruned"
        EDITED = "edited"
        PINNED = "pinned"
        UNPINNED = "unpinned"
        DELETED = "deleted"
        COMPRESSED = "compressed"
        REEMBEDDED = "reembedded"
        IMPORTANCE_RECOMPUTED = "importance_recomputed"
        OUTDATED = "outdated"

    id = models.BigAutoField(primary_key=True)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="revisions")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=24, choices=Action.choices)
    actor = models.CharField(max_length=120, help_text="system, api_key:<prefix>, user:<username>")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    related_memory = models.ForeignKey(Memory, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["memory", "created_at"])]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor}"
