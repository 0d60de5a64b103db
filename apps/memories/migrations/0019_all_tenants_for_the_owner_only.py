"""`app.tenant_id = 'all'` takes effect only for the role that owns the tables (issue 32): every policy's
not-all test becomes `app_all_tenants()`, which also asks whether the session's role is a member of the owner of
django_migrations (the role that ran the migrations). The app role can still set `all`; it then sees nothing."""

from django.db import migrations

from apps.core.rls import APP_ALL_TENANTS_FUNCTION, NOT_ALL_TENANTS, NOT_ALL_TENANTS_V1

TABLES = [
    "contacts_contact",
    "contacts_contactstate",
    "contacts_interactionlog",
    "contacts_crisisreview",
    "contacts_trigger",
    "contacts_insight",
    "contacts_erasurerecord",
    "conversations_conversation",
    "conversations_message",
    "entities_entity",
    "memories_memory",
    "memories_memoryrevision",
    "memories_contextevent",
    "memories_knowledgedocument",
    "memories_knowledgechunk",
    "memories_memoryprofile",
    "memories_profileaudit",
    "memories_consolidationrun",
]


def _policies(not_all: str) -> list[str]:
    visible = f"NOT ({not_all} AND tenant_id <> (SELECT app_tenant_id()))"
    link = (
        f"NOT ({not_all} AND NOT (EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id) "
        "AND EXISTS (SELECT 1 FROM entities_entity e WHERE e.id = entity_id)))"
    )
    return [
        *(f"ALTER POLICY tenant_isolation ON {table} USING ({visible}) WITH CHECK ({visible})" for table in TABLES),
        f"ALTER POLICY tenant_isolation ON core_llmcall USING ({visible}) WITH CHECK (tenant_id IS NULL OR ({visible}))",
        f"ALTER POLICY tenant_isolation ON memories_memoryentity USING ({link}) WITH CHECK ({link})",
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0018_halfvec_embeddings"),
        ("contacts", "0006_admin_action_permissions"),
        ("conversations", "0003_row_level_security"),
        ("entities", "0003_entity_aliases"),
        ("core", "0003_row_level_security"),
    ]

    operations = [
        migrations.RunSQL(APP_ALL_TENANTS_FUNCTION, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(_policies(NOT_ALL_TENANTS), reverse_sql=_policies(NOT_ALL_TENANTS_V1)),
    ]
