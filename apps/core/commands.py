"""The base of the management commands that read or write the database.

A command run against a database that is not migrated (a fresh checkout's `var/`, a new `DATABASE_URL`) failed
on its first statement with a traceback ("relation … does not exist"). These commands refuse with a message that
says what to run instead: `manage.py migrate` (`make run` and `make bench` run it first).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def unapplied_migrations(database: str = DEFAULT_DB_ALIAS) -> list[str]:
    """The migrations the database has not applied yet, as "app.name", in the order migrate would apply them."""
    executor = MigrationExecutor(connections[database])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


class DatabaseCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> str | None:
        pending = unapplied_migrations()
        if pending:
            shown = ", ".join(pending[:3]) + (f" and {len(pending) - 3} more" if len(pending) > 3 else "")
            count = f"{len(pending)} migration{'s' if len(pending) > 1 else ''}"
            raise CommandError(
                f"the database is not migrated ({count} to apply: {shown}): "
                "run `python manage.py migrate` first (`make run` and `make bench` do)"
            )
        return super().execute(*args, **options)
