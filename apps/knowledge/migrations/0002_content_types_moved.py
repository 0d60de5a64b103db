# The two models' content types follow them from apps.memories, so the permissions granted on them and the
# admin's history of their rows keep pointing at them (instead of post_migrate creating new content types and
# leaving the old ones stale). A database migrated from scratch has none yet: nothing to do there.

from django.db import migrations

MODELS = ("knowledgedocument", "knowledgechunk")


def _relabel(apps, *, source: str, target: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)


def forwards(apps, schema_editor):
    _relabel(apps, source="memories", target="knowledge")


def backwards(apps, schema_editor):
    _relabel(apps, source="knowledge", target="memories")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("knowledge", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
