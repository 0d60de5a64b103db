"""The scope's current memories by event time, for retrieval's time source: a question naming a time ("last
weekend", "in May 2023") searches the memories said in that window. Without it the window was found by reading
every memory of the scope (a contact with 20,000 memories: ~100 ms of a search's 120). Built CONCURRENTLY, so
writes keep flowing on a large table."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0019_all_tenants_for_the_owner_only"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=Q(("deleted_at__isnull", True), ("valid_to__isnull", True)),
                fields=["tenant", "contact", "occurred_at"],
                name="memory_scope_time_idx",
            ),
        ),
    ]
