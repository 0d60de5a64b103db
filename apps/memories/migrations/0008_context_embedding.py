"""A memory's contextual embedding: the turn before and its own text embedded together (a retrieval feature,
no index). Existing memories keep null until `manage.py reembed --everything` computes it from the ledger."""

import pgvector.django
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0007_scoped_search_index")]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="context_embedding",
            field=pgvector.django.VectorField(blank=True, dimensions=384, null=True),
        ),
    ]
