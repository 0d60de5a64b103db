"""Embeddings stored as halfvec(384): 2 bytes a dimension instead of 4 (issue 29 item 5; docs/benchmarks.md
has the bytes per memory and the retrieval figures before and after). One ALTER TABLE rewrites the table once
for both columns; the HNSW index is rebuilt with the halfvec operator class. On a large table this holds an
exclusive lock for the rewrite: run it in a quiet hour (about a minute per million rows here)."""

import pgvector.django.halfvec
import pgvector.django.indexes
from django.db import migrations

FORWARD = """
DROP INDEX IF EXISTS memory_embedding_hnsw;
ALTER TABLE memories_memory
  ALTER COLUMN embedding TYPE halfvec(384) USING embedding::halfvec(384),
  ALTER COLUMN context_embedding TYPE halfvec(384) USING context_embedding::halfvec(384);
CREATE INDEX memory_embedding_hnsw ON memories_memory
  USING hnsw (embedding halfvec_cosine_ops) WITH (m = 16, ef_construction = 64);
"""

BACKWARD = """
DROP INDEX IF EXISTS memory_embedding_hnsw;
ALTER TABLE memories_memory
  ALTER COLUMN embedding TYPE vector(384) USING embedding::vector(384),
  ALTER COLUMN context_embedding TYPE vector(384) USING context_embedding::vector(384);
CREATE INDEX memory_embedding_hnsw ON memories_memory
  USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("contacts", "0006_admin_action_permissions"),
        ("entities", "0003_entity_aliases"),
        ("memories", "0017_link_policy_both_sides"),
        ("tenants", "0003_admin_action_permissions"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, reverse_sql=BACKWARD)],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw"),
                migrations.AlterField(
                    model_name="memory",
                    name="context_embedding",
                    field=pgvector.django.halfvec.HalfVectorField(blank=True, dimensions=384, null=True),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="embedding",
                    field=pgvector.django.halfvec.HalfVectorField(blank=True, dimensions=384, null=True),
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=pgvector.django.indexes.HnswIndex(
                        ef_construction=64,
                        fields=["embedding"],
                        m=16,
                        name="memory_embedding_hnsw",
                        opclasses=["halfvec_cosine_ops"],
                    ),
                ),
            ],
        )
    ]
