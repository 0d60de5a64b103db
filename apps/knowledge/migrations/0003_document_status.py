# Documents are processed by the worker (issue 32 item 5): a status the client polls. Documents uploaded before
# were chunked and embedded in their request: they are ready.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0002_content_types_moved"),
    ]

    operations = [
        migrations.AddField(
            model_name="knowledgedocument",
            name="status",
            field=models.CharField(
                choices=[("processing", "Processing"), ("ready", "Ready"), ("failed", "Failed")],
                default="ready",
                max_length=12,
            ),
        ),
        migrations.AlterField(
            model_name="knowledgedocument",
            name="status",
            field=models.CharField(
                choices=[("processing", "Processing"), ("ready", "Ready"), ("failed", "Failed")],
                default="processing",
                max_length=12,
            ),
        ),
        migrations.AddField(
            model_name="knowledgedocument",
            name="status_message",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        migrations.AddField(
            model_name="knowledgedocument",
            name="processed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
