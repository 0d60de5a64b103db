from django.db import migrations

from apps.core.rls import TENANT_VISIBLE_V1, row_level_security


class Migration(migrations.Migration):
    dependencies = [("conversations", "0002_conversation_consolidated_at"), ("core", "0003_row_level_security")]

    operations = [row_level_security(table, using=TENANT_VISIBLE_V1) for table in ["conversations_conversation", "conversations_message"]]
