"""GIN indexes of memories without a pending list: searches stop paying for scanning it.

ALTER INDEX keeps the existing index (no rebuild); what is still pending is merged into it right away."""

import django.contrib.postgres.indexes
from django.db import migrations

INDEXES = {"memory_search_gin": "search_vector", "memory_context_gin": "context_vector"}


class Migration(migrations.Migration):
    dependencies = [("memories", "0004_session_turn_index")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    [f"ALTER INDEX {name} SET (fastupdate = off)", f"SELECT gin_clean_pending_list('{name}'::regclass)"],
                    f"ALTER INDEX {name} SET (fastupdate = on)",
                )
                for name in INDEXES
            ],
            state_operations=[
                operation
                for name, field in INDEXES.items()
                for operation in (
                    migrations.RemoveIndex(model_name="memory", name=name),
                    migrations.AddIndex(
                        model_name="memory",
                        index=django.contrib.postgres.indexes.GinIndex(fastupdate=False, fields=[field], name=name),
                    ),
                )
            ],
        )
    ]
