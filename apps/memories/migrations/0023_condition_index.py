"""Standing instructions' conditions: the partial index of the memories that have one, and the instructions
stored before, given theirs (metadata `condition`, and its embedding as the context embedding:
store.writing.with_conditions)."""

from django.db import migrations, models

# the stored form of an instruction with a condition ("… wants you to always … when they ask about …")
_CANDIDATES_SQL = (
    "SELECT id, tenant_id, contact_id, content FROM memories_memory WHERE memory_type = 'preference' AND key = '' "
    "AND valid_to IS NULL AND deleted_at IS NULL AND content ~* "
    "'want(s)? you to .* when(ever)? (they|i) (ask|request|inquire|mention|bring up|talk|want|need)'"
)


def conditions_backfill(apps, schema_editor):
    from apps.core.embeddings import cache_scope, get_embedder, vector_literal
    from apps.memories.extraction.rules import instruction_condition

    with schema_editor.connection.cursor() as cursor:
        cursor.execute(_CANDIDATES_SQL)
        rows = [(pk, tenant, contact, instruction_condition(content)) for pk, tenant, contact, content in cursor]
        rows = [row for row in rows if row[3]]
        if not rows:
            return  # a new database, or one without instructions: the embedder is not even loaded
        vectors = get_embedder().embed_batch(
            [condition for *_, condition in rows],
            scopes=[cache_scope(tenant_id=tenant, contact_id=contact) for _, tenant, contact, _ in rows],
        )
        cursor.execute(
            "UPDATE memories_memory m SET metadata = m.metadata || jsonb_build_object('instruction_condition', v.condition), "
            "context_embedding = v.embedding::halfvec "
            "FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, condition, embedding) WHERE m.id = v.id",
            [
                [row[0] for row in rows],
                [row[3] for row in rows],
                [vector_literal(vector) for vector in vectors],
            ],
        )


class Migration(migrations.Migration):
    dependencies = [
        ("contacts", "0006_admin_action_permissions"),
        ("entities", "0003_entity_aliases"),
        ("memories", "0022_source_session_id_length"),
        ("tenants", "0003_admin_action_permissions"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(
                    ("deleted_at__isnull", True), ("metadata__has_key", "instruction_condition"), ("valid_to__isnull", True)
                ),
                fields=["tenant", "contact"],
                name="memory_condition_idx",
            ),
        ),
        migrations.RunPython(conditions_backfill, migrations.RunPython.noop),
    ]
