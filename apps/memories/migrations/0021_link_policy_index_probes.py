"""The link policy's two existence checks are index probes per link, never a hash of a whole table.

memories_memoryentity has no tenant column: a link is visible when its memory and its entity are (0017, 0019).
PostgreSQL plans a correlated EXISTS in a filter two ways and picks one by cost: a probe per row, or a hash of
every row the subquery can return, built once. For the entity side that is every entity of the table that the
entities' own policy lets through — the whole tenant's, read by a sequential scan of every tenant's — and the
planner took it whenever a statement expected a few hundred links: retrieval's entity source (the memories
linked to a name the query holds) hashed 47,797 entities to check 278 links, 24 of a 40 ms candidate statement
for a 20,000-memory contact at 100k memories, and the requests naming such a name were the slowest tenth of
GET /context (docs/benchmarks.md, "Session 19"). Its cost grew with the database, not with the links asked.

`OFFSET 0` keeps each check a subquery PostgreSQL does not flatten or hash (it is its documented optimisation
fence: "we could ignore an OFFSET 0 clause, but that traditionally is used as an optimization fence, so we
don't", src/backend/optimizer/plan/subselect.c), so each link costs two primary-key probes. The same rows are
visible and writable as before (tests/core/test_row_level_security.py); the plan is held by
tests/core/test_row_level_security_plans.py."""

from django.db import migrations

from apps.core.rls import NOT_ALL_TENANTS

BEFORE = (
    f"NOT ({NOT_ALL_TENANTS} AND NOT (EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id) "
    "AND EXISTS (SELECT 1 FROM entities_entity e WHERE e.id = entity_id)))"
)
PROBES = (
    f"NOT ({NOT_ALL_TENANTS} AND NOT (EXISTS (SELECT 1 FROM memories_memory m WHERE m.id = memory_id OFFSET 0) "
    "AND EXISTS (SELECT 1 FROM entities_entity e WHERE e.id = entity_id OFFSET 0)))"
)


def _policy(expression: str) -> str:
    return f"ALTER POLICY tenant_isolation ON memories_memoryentity USING ({expression}) WITH CHECK ({expression})"


class Migration(migrations.Migration):
    dependencies = [("memories", "0020_memory_scope_time_idx")]

    operations = [migrations.RunSQL(_policy(PROBES), reverse_sql=_policy(BEFORE))]
