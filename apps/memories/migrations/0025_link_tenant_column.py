"""A link carries its memory's tenant, so its isolation policy is the column test of every tenant-owned table.

Until now memories_memoryentity had no tenant column and a link was visible when its memory and its entity
were: two correlated EXISTS, a primary-key probe and a heap visit into each table per link read (0017, 0021).
Reading links is on the search path — the query's named entities counted (a speaker is linked to every other
turn: ~0.6 of a 1.0 ms statement for 236 links), the entity source, the matched entities of each candidate, the
entities of the memories handed out — and its cost grew with the links, not with what they tell.

- `tenant_id` is written by the database: a trigger sets it from the link's memory on every insert and every
  update, whatever the caller passed. The trigger reads the memory as the caller (row-level security applies to
  it): a memory the caller cannot see gives no tenant, and the row is refused.
- Reading: `tenant_id` is the bound tenant (or `all` for the maintenance role), as for every table.
- Writing: the same, and the entity must be of the link's tenant — checked for every role, the maintenance one
  included (before, `all` could write a link between two tenants' rows). The memory side needs no check: the
  column is its memory's tenant by construction.
- Existing links take their memory's tenant in one statement (the maintenance role, `all`), the table locked
  meanwhile: 1.7M links took ~60 s here. The update rewrites every row, so the table and its indexes are about
  twice their size afterwards until vacuumed and reindexed (`REINDEX TABLE CONCURRENTLY memories_memoryentity`).

Writing a link costs more: 20 -> 32 µs a link as the app role (the trigger's lookup and call; migration 0026
takes back ~5 by dropping two redundant indexes), against ~2 ms less per search.
"""

import django.db.models.deletion
from django.db import migrations, models

from apps.core.rls import NOT_ALL_TENANTS, TENANT_VISIBLE

TRIGGER = """
CREATE OR REPLACE FUNCTION memories_memoryentity_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tenant_id := (SELECT m.tenant_id FROM memories_memory m WHERE m.id = NEW.memory_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_memoryentity_tenant BEFORE INSERT OR UPDATE ON memories_memoryentity
    FOR EACH ROW EXECUTE FUNCTION memories_memoryentity_tenant();
"""
DROP_TRIGGER = """
DROP TRIGGER IF EXISTS memories_memoryentity_tenant ON memories_memoryentity;
DROP FUNCTION IF EXISTS memories_memoryentity_tenant();
"""
BACKFILL = (
    "UPDATE memories_memoryentity me SET tenant_id = m.tenant_id FROM memories_memory m "
    "WHERE m.id = me.memory_id AND me.tenant_id IS NULL"
)
# the entity is of the link's tenant, whoever writes (OFFSET 0: a probe per link, never a hash; 0021)
ENTITY_OF_THE_TENANT = (
    "EXISTS (SELECT 1 FROM entities_entity e WHERE e.id = entity_id "
    "AND e.tenant_id = memories_memoryentity.tenant_id OFFSET 0)"
)
CHECK = f"{TENANT_VISIBLE} AND {ENTITY_OF_THE_TENANT}"
# 0021's policy, for the way back
PROBES = (
    f"NOT ({NOT_ALL_TENANTS} AND NOT (EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id OFFSET 0) "
    "AND EXISTS (SELECT 1 FROM entities_entity e WHERE e.id = entity_id OFFSET 0)))"
)


def _policy(using: str, check: str) -> str:
    return f"ALTER POLICY tenant_isolation ON memories_memoryentity USING ({using}) WITH CHECK ({check})"


def _tenant(*, null: bool) -> models.ForeignKey:
    return models.ForeignKey(
        db_constraint=False,
        db_index=False,
        editable=False,
        null=null,
        on_delete=django.db.models.deletion.DO_NOTHING,
        related_name="+",
        to="tenants.tenant",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0024_memory_role_backfill"),
        ("tenants", "0001_initial"),
    ]

    operations = [
        migrations.AddField(model_name="memoryentity", name="tenant", field=_tenant(null=True)),
        # the table is locked from the first statement to the commit: no link is written in between
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(TRIGGER, reverse_sql=DROP_TRIGGER),
        migrations.AlterField(model_name="memoryentity", name="tenant", field=_tenant(null=False)),
        migrations.RunSQL(_policy(TENANT_VISIBLE, CHECK), reverse_sql=_policy(PROBES, PROBES)),
    ]
