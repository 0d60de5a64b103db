"""An episode's date is indexed (and embedded) with its words: `index_terms`, part of search_vector.

Existing message episodes get their date back-filled before search_vector is re-created from both
columns (a generated column's expression cannot be altered in place on every PostgreSQL we support)."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

BACKFILL = (
    "UPDATE memories_memory SET index_terms = to_char(occurred_at AT TIME ZONE 'UTC', 'FMDD FMMonth YYYY') "
    "WHERE memory_type = 'episode' AND cardinality(source_message_ids) > 0"
)


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_gin_without_pending_list")]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="index_terms",
            field=models.CharField(
                blank=True,
                default="",
                help_text="Words indexed and embedded with the content (an episode's date: '8 May 2023').",
                max_length=120,
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="memory", name="memory_search_gin"),
        migrations.RemoveField(model_name="memory", name="search_vector"),
        migrations.AddField(
            model_name="memory",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.SearchVector("index_terms", "content", config="english"),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fastupdate=False, fields=["search_vector"], name="memory_search_gin"
            ),
        ),
    ]
