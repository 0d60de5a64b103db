from django.db import migrations

from apps.core.rls import NOT_ALL_TENANTS_V1 as NOT_ALL_TENANTS

# A memory <-> entity link has no tenant column. It was visible (and writable) when its memory was; now its
# entity must be too, so a link from one tenant's memory to another tenant's entity is neither written nor seen
# under a tenant's binding (each subquery is itself held to its table's policy).
BOTH_SIDES_VISIBLE = (
    f"NOT ({NOT_ALL_TENANTS} AND NOT (EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id) "
    "AND EXISTS (SELECT 1 FROM entities_entity e WHERE e.id = entity_id)))"
)
MEMORY_SIDE_VISIBLE = f"NOT ({NOT_ALL_TENANTS} AND NOT EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id))"


def _policy(expression: str) -> str:
    return f"ALTER POLICY tenant_isolation ON memories_memoryentity USING ({expression}) WITH CHECK ({expression})"


class Migration(migrations.Migration):
    dependencies = [("memories", "0016_memory_key")]

    operations = [migrations.RunSQL(_policy(BOTH_SIDES_VISIBLE), reverse_sql=_policy(MEMORY_SIDE_VISIBLE))]
