from django.db import migrations

from apps.core.rls import NOT_ALL_TENANTS_V1, TENANT_VISIBLE_V1, row_level_security

TABLES = [
    "memories_memory",
    "memories_memoryrevision",
    "memories_contextevent",
    "memories_knowledgedocument",
    "memories_knowledgechunk",
    "memories_memoryprofile",
    "memories_profileaudit",
    "memories_consolidationrun",
]

# the memory <-> entity link has no tenant column: a link is visible when its memory is (the subquery is
# itself held to memories_memory's policy)
MEMORY_LINK_VISIBLE = f"NOT ({NOT_ALL_TENANTS_V1} AND NOT EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id))"


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0012_event_llm_pending"),
        ("entities", "0002_row_level_security"),
        ("core", "0003_row_level_security"),
    ]

    operations = [
        *(row_level_security(table, using=TENANT_VISIBLE_V1) for table in TABLES),
        row_level_security("memories_memoryentity", using=MEMORY_LINK_VISIBLE),
    ]
