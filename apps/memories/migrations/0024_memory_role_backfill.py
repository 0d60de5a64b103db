"""Memories of a message the contact did not send carry who did (`metadata.role`, e.g. "assistant"): ingest
writes it from now on (a message without a speaker label whose role is not "user"); existing memories take the
role of the one message their first source id names. A memory drawn from several messages (a pattern, a
summary) or of a labelled speaker (its content says "John: …" already) is left as it is."""

from django.db import migrations

BACKFILL = """
UPDATE memories_memory m SET metadata = m.metadata || jsonb_build_object('role', msg.role)
FROM conversations_message msg
WHERE cardinality(m.source_message_ids) = 1 AND NOT (m.metadata ? 'role') AND NOT (m.metadata ? 'speaker')
  AND msg.tenant_id = m.tenant_id AND msg.external_id = m.source_message_ids[1]
  AND msg.role <> 'user' AND msg.speaker = ''
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0023_condition_index"),
        ("conversations", "0001_initial"),
    ]

    operations = [migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop)]
