from django.db import migrations

from apps.core.rls import TENANT_VISIBLE_V1, row_level_security


class Migration(migrations.Migration):
    dependencies = [("entities", "0001_initial"), ("core", "0003_row_level_security")]

    operations = [row_level_security("entities_entity", using=TENANT_VISIBLE_V1)]
