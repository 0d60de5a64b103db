"""Drop memories_memory's single-column tenant_id index (Memory.tenant: db_index=False).

Every other index of the table leads with tenant_id, so `tenant_id = X` keeps an index; the lone one only
cost writes, and misled the planner for tenants its statistics do not know yet (estimated at one row): the
candidate statement's neighbour probes scanned the whole tenant through it (docs/retrieval.md §1).

Only the index goes: Django's own AlterField would also drop and re-add the foreign key, which re-validates
every row under a lock. CONCURRENTLY keeps writes flowing on a large table (hence atomic = False).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0008_context_embedding"),
        ("tenants", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="memory",
                    name="tenant",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memories",
                        to="tenants.tenant",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql="DROP INDEX CONCURRENTLY IF EXISTS memories_memory_tenant_id_7ad2896a",
                    reverse_sql=(
                        "CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_memory_tenant_id_7ad2896a "
                        "ON memories_memory (tenant_id)"
                    ),
                ),
            ],
        ),
    ]
