"""The app role's privileges: data only (docs/architecture.md, "Roles"). After every `migrate` — run as the role
that owns the tables — the app role (DATABASE_URL's user) is granted SELECT, INSERT, UPDATE, DELETE on every table
and USAGE on every sequence of the schema: no ownership, no DDL, no TRUNCATE, so it can neither alter, drop nor
disable row-level security, and its `app.tenant_id = 'all'` has no effect (apps/core/rls.py). When both are one
role (DATABASE_MAINTENANCE_URL unset with DATABASE_URL set) there is nothing to grant: `check` warns instead."""

from __future__ import annotations

from typing import Any

import environ
from django.conf import settings
from django.db import connections


def app_role() -> str:
    return str(environ.Env.db_url_config(settings.DATABASE_URL).get("USER") or "")


def app_role_grant(*, using: str = "default", **_: Any) -> None:
    """post_migrate: grant the app role data-only privileges on everything the migration role owns."""
    role = app_role()
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        if not role or cursor.fetchone()[0] == role:
            return
        quoted = connection.ops.quote_name(role)
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {quoted}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {quoted}")
