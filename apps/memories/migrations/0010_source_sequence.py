"""Memory.source_sequence: the ledger id of the first source message, so that turns sharing one timestamp
keep their order of arrival (LoCoMo gives each session one date and time). The neighbour index is rebuilt
on (tenant, session, occurred_at, source_sequence) CONCURRENTLY, so writes keep flowing on a large table;
existing memories take the id of the message their first source id names."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models import Q

BACKFILL = """
UPDATE memories_memory m SET source_sequence = msg.id
FROM conversations_message msg
WHERE m.source_sequence IS NULL AND cardinality(m.source_message_ids) > 0
  AND msg.tenant_id = m.tenant_id AND msg.external_id = m.source_message_ids[1]
"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0009_memory_tenant_index_dropped"),
        ("conversations", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="source_sequence",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        RemoveIndexConcurrently(model_name="memory", name="memory_session_turn_idx"),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=Q(("memory_type", "episode"), models.Q(("source_session_id", ""), _negated=True)),
                fields=["tenant", "source_session_id", "occurred_at", "source_sequence"],
                name="memory_session_turn_idx",
            ),
        ),
    ]
