from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    """pgvector must exist before any vector column; every app with embeddings depends on this."""

    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [VectorExtension()]
