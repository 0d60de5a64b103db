# The knowledge base's models (KnowledgeDocument, KnowledgeChunk) moved to apps.knowledge: removed from this app's
# migration state only. Their tables (memories_knowledgedocument, memories_knowledgechunk) stay, with their rows,
# indexes and row-level security; apps/knowledge/migrations/0001_initial.py takes them over.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0014_scoped_search_column"),
        ("knowledge", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="KnowledgeChunk",
                ),
                migrations.DeleteModel(
                    name="KnowledgeDocument",
                ),
            ],
            database_operations=[],
        ),
    ]
