"""Migration operations for row-level security (apps/core/tenancy.py explains the scheme).

`tenant_visible(uuid)` (created by core's migration 0003) is the one rule every policy applies: a row is
visible, and may be written, when the session's `app.tenant_id` is its tenant or `all`. It is a plain SQL
function, which PostgreSQL inlines into each query's plan.
"""

from __future__ import annotations

from django.db import migrations

TENANT_VISIBLE_FUNCTION = """
CREATE OR REPLACE FUNCTION tenant_visible(row_tenant uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE current_setting('app.tenant_id', true)
        WHEN 'all' THEN true
        WHEN 'none' THEN false
        WHEN '' THEN false
        ELSE row_tenant = current_setting('app.tenant_id', true)::uuid
    END
$$;
"""

POLICY = "tenant_isolation"


def row_level_security(
    table: str, *, using: str = "tenant_visible(tenant_id)", check: str | None = None
) -> migrations.RunSQL:
    """Enable and FORCE row-level security on `table` (FORCE: its owner is held to it too) with one policy
    for every command. `using` decides which rows are seen, `check` (default: the same) which may be
    written."""
    return migrations.RunSQL(
        sql=[
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY {POLICY} ON {table} USING ({using}) WITH CHECK ({check or using})",
        ],
        reverse_sql=[
            f"DROP POLICY IF EXISTS {POLICY} ON {table}",
            f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
        ],
    )
