from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import HnswIndex

from apps.core.embeddings import EMBEDDING_DIMENSIONS
from apps.core.models import UUIDModel
from apps.core.vectors import HalfVectorField
from apps.tenants.models import Tenant


class KnowledgeDocument(UUIDModel):
    """A tenant's knowledge-base document (text or markdown), chunked for RAG. Stored `processing` when it is
    uploaded; the worker chunks and embeds it (`ready`, its chunks written in the same transaction) or gives up
    (`failed`, with `status_message`). Search reads the chunks of ready documents only."""

    class Status(models.TextChoices):
        PROCESSING = "processing"
        READY = "ready"
        FAILED = "failed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="knowledge_documents")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PROCESSING)
    status_message = models.CharField(max_length=500, blank=True, default="")
    processed_at = models.DateTimeField(null=True, blank=True)
    title = models.CharField(max_length=300)
    content_type = models.CharField(max_length=40, default="text/markdown")
    content = models.TextField()
    size_bytes = models.PositiveIntegerField()
    chunk_count = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    created_by = models.CharField(max_length=120, default="system")

    class Meta:
        db_table = "memories_knowledgedocument"  # the table predates the app (state-only move, no data copied)
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class KnowledgeChunk(models.Model):
    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    content = models.TextField()
    token_count = models.PositiveIntegerField()
    embedding = HalfVectorField(dimensions=EMBEDDING_DIMENSIONS, null=True)
    embedding_model = models.CharField(max_length=100, blank=True, default="")
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        db_table = "memories_knowledgechunk"
        ordering = ["document", "position"]
        indexes = [
            HnswIndex(
                name="knowledge_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["halfvec_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="knowledge_search_gin"),
            models.Index(fields=["tenant", "document"]),
        ]

    def __str__(self) -> str:
        return f"{self.document_id} #{self.position}"
