"""Migration operations for row-level security (apps/core/tenancy.py explains the scheme).

Every policy applies one rule: a row is visible, and may be written, when the session's `app.tenant_id` is
its tenant, or is `all` and the session's role owns the tables (the maintenance role; never the app role).
Two things shape how it is written:
- the setting is read in scalar subqueries, which PostgreSQL evaluates once per statement (InitPlans):
  written as a per-row expression it cost ~1 µs a row (a 20,000-row scope aggregate: 25 ms instead of 5 ms);
- the planner multiplies the policy's estimated selectivity into every query's row estimates. Written as
  `all OR tenant_id = bound`, a boolean parameter counts 0.5, the estimate of a contact's 2,000 memories fell
  to 750, and the vector candidates were sorted exactly (14 ms) instead of read from HNSW (3 ms). Written
  as NOT (not-all AND another tenant) with the not-all test an integer equality (default estimate 0.005),
  the policy is estimated as nearly always true — which it is for the rows a query's own tenant filter
  keeps — and plans are those of the same query without it. NULLs (setting unset, or `none`: no bound id)
  make the whole NULL: not visible.
"""

from __future__ import annotations

from django.db import migrations

# the bound tenant's id, or NULL when the setting is `all`, `none`, empty or unset (so nothing equals it)
APP_TENANT_ID_FUNCTION = """
CREATE OR REPLACE FUNCTION app_tenant_id() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN current_setting('app.tenant_id', true) NOT IN ('all', 'none', '')
        THEN current_setting('app.tenant_id', true)::uuid END
$$;
"""

# the form of the migrations before issue 32: `all` took effect for any role that set it
NOT_ALL_TENANTS_V1 = "(SELECT (current_setting('app.tenant_id', true) = 'all')::int) = 0"
TENANT_VISIBLE_V1 = f"NOT ({NOT_ALL_TENANTS_V1} AND tenant_id <> (SELECT app_tenant_id()))"

# `all` takes effect only for a member of the role that owns the tables (the one that ran the migrations: the
# maintenance role, docs/architecture.md "Roles"). The app role may set it; it then sees what `none` sees. Still
# one integer equality in an InitPlan, so estimated and evaluated as before
# (tests/core/test_row_level_security_plans.py).
APP_ALL_TENANTS_FUNCTION = """
CREATE OR REPLACE FUNCTION app_all_tenants() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT current_setting('app.tenant_id', true) = 'all'
        AND pg_has_role(
            current_user, (SELECT relowner FROM pg_class WHERE oid = 'django_migrations'::regclass), 'MEMBER'
        )
$$;
"""
NOT_ALL_TENANTS = "(SELECT app_all_tenants()::int) = 0"
TENANT_VISIBLE = f"NOT ({NOT_ALL_TENANTS} AND tenant_id <> (SELECT app_tenant_id()))"

POLICY = "tenant_isolation"


def row_level_security(table: str, *, using: str = TENANT_VISIBLE, check: str | None = None) -> migrations.RunSQL:
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
