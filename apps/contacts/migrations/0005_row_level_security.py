from django.db import migrations

from apps.core.rls import TENANT_VISIBLE_V1, row_level_security

TABLES = [
    "contacts_contact",
    "contacts_contactstate",
    "contacts_interactionlog",
    "contacts_crisisreview",
    "contacts_trigger",
    "contacts_insight",
    "contacts_erasurerecord",
]


class Migration(migrations.Migration):
    dependencies = [("contacts", "0004_erasure_record"), ("core", "0003_row_level_security")]

    operations = [row_level_security(table, using=TENANT_VISIBLE_V1) for table in TABLES]
