from django.db import migrations

from apps.core.rls import APP_TENANT_ID_FUNCTION, TENANT_VISIBLE_V1, row_level_security


class Migration(migrations.Migration):
    dependencies = [("core", "0002_llmcall")]

    operations = [
        migrations.RunSQL(APP_TENANT_ID_FUNCTION, reverse_sql="DROP FUNCTION IF EXISTS app_tenant_id()"),
        # a call made outside any tenant (none today) may be logged from anywhere, and read under `all` only
        row_level_security(
            "core_llmcall", using=TENANT_VISIBLE_V1, check=f"tenant_id IS NULL OR ({TENANT_VISIBLE_V1})"
        ),
    ]
