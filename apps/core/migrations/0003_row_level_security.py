from django.db import migrations

from apps.core.rls import TENANT_VISIBLE_FUNCTION, row_level_security


class Migration(migrations.Migration):
    dependencies = [("core", "0002_llmcall")]

    operations = [
        migrations.RunSQL(TENANT_VISIBLE_FUNCTION, reverse_sql="DROP FUNCTION IF EXISTS tenant_visible(uuid)"),
        # a call made outside any tenant (none today) may be logged from anywhere, and read under `all` only
        row_level_security("core_llmcall", check="tenant_id IS NULL OR tenant_visible(tenant_id)"),
    ]
