from django.db import migrations

from apps.core.rls import row_level_security


class Migration(migrations.Migration):
    dependencies = [("conversations", "0002_conversation_consolidated_at"), ("core", "0003_row_level_security")]

    operations = [row_level_security(table) for table in ["conversations_conversation", "conversations_message"]]
