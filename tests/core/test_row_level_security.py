"""Tenant isolation enforced by PostgreSQL (row-level security, apps/core/tenancy.py): a query that forgets its
tenant filter — ORM or raw SQL — still sees one tenant only, and cannot write into another."""

from __future__ import annotations

import os
from typing import Any

import environ
import psycopg
import pytest
from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.http import JsonResponse
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import path
from rest_framework.decorators import api_view

from apps.core.checks import row_level_security_problems
from apps.core.rows import bound_cursor
from apps.core.tenancy import (
    ALL,
    MAINTENANCE,
    NO_TENANT,
    NONE,
    TASK_TENANCIES,
    TENANT,
    task_binding,
    tenant_bind,
    tenant_bound,
    tenant_scope,
)
from apps.entities.models import Entity
from apps.inspector.permissions import inspector_view
from apps.memories.models import Memory, MemoryEntity
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db

# The two tables that authentication reads before it knows the tenant; they hold keys' hashes and memberships.
NOT_TENANT_SCOPED = {"tenants_apikey", "tenants_membership"}


def _count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")  # no tenant filter, on purpose
        return int(cursor.fetchone()[0])


@pytest.fixture
def two_tenants(api, other_api, tenant, other_tenant):
    for client, words in ((api, "I have a dog named Bruno"), (other_api, "I work at Acme in Berlin")):
        response = client.post(
            "/api/v1/ingest",
            {"contact_id": "c1", "conversation_id": "v1", "message": words, "role": "user"},
            format="json",
        )
        assert response.status_code == 202, response.content
    assert Memory.objects.filter(tenant=tenant).exists() and Memory.objects.filter(tenant=other_tenant).exists()
    return tenant, other_tenant


def test_every_tenant_owned_table_forces_row_level_security_with_the_policy():
    tenant_tables = {
        model._meta.db_table
        for model in apps.get_models()
        if "tenant_id" in {field.column for field in model._meta.concrete_fields}
    } - NOT_TENANT_SCOPED
    assert len(tenant_tables) >= 19
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_policies p ON p.tablename = c.relname "
            "WHERE c.relrowsecurity AND c.relforcerowsecurity AND p.policyname = 'tenant_isolation' "
            "AND p.cmd = 'ALL'"
        )
        protected = {row[0] for row in cursor.fetchall()}
    assert tenant_tables - protected == set()


def test_the_application_role_is_held_to_row_level_security():
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, False)
    assert row_level_security_problems(connection) == []


def test_a_statement_prepared_under_one_tenant_sees_only_the_next_tenant_it_runs_for(two_tenants):
    """The search path's statements are prepared and their plans reused on the connection (apps/core/rows.py):
    the policy must read the bound tenant when the statement runs, not when it was planned."""
    mine, theirs = two_tenants
    sql = "SELECT DISTINCT tenant_id FROM memories_memory WHERE importance >= %s"  # no tenant filter, on purpose
    seen = []
    for tenant in (mine, theirs, mine, theirs, mine, theirs, mine, theirs):  # past PostgreSQL's 5 custom plans
        with tenant_scope(tenant.pk), bound_cursor() as cursor:
            cursor.execute(sql, [0.0])
            seen.append({row[0] for row in cursor.fetchall()})
    assert seen == [{mine.pk}, {theirs.pk}] * 4
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%FROM memories_memory%%'")
        assert cursor.fetchone()[0] >= 1  # it was prepared, so the reuse above is what the test proves


def test_an_app_role_that_owns_the_tables_is_reported_by_the_system_check(settings):
    assert row_level_security_problems(connection) == []
    owner = connection.settings_dict["USER"]  # the test process logs in as the tables' owner
    settings.DATABASE_URL = f"postgres://{owner}@localhost/engram"  # as if the app role were it: one role for both
    assert [problem.id for problem in row_level_security_problems(connection)] == ["engram.W012"]


def test_a_superuser_connection_is_reported_by_the_system_check():
    superuser = connection.settings_dict.copy()
    conninfo = f"host={superuser['HOST']} dbname={superuser['NAME']} user=postgres"
    with psycopg.connect(conninfo) as raw:

        class Wrapper:  # what the check reads of a Django connection
            def cursor(self):
                return raw.cursor()

        problems = row_level_security_problems(Wrapper())
    assert [problem.id for problem in problems] == ["engram.W010"]


def test_a_query_without_a_tenant_filter_sees_the_bound_tenant_only(two_tenants):
    mine, _ = two_tenants
    every = {table: _count(table) for table in ("memories_memory", "conversations_message", "contacts_contact")}
    with tenant_scope(mine.pk):
        assert set(Memory.objects.values_list("tenant_id", flat=True)) == {mine.pk}
        assert set(Entity.objects.values_list("tenant_id", flat=True)) <= {mine.pk}
        links = MemoryEntity.objects.values_list("memory__tenant_id", flat=True)
        assert set(links) <= {mine.pk}
        for table, total in every.items():
            assert 0 < _count(table) < total, table
    with tenant_scope(NONE):
        assert Memory.objects.count() == 0
        assert _count("memories_memoryentity") == 0
    with tenant_scope(ALL):
        assert _count("memories_memory") == every["memories_memory"]
    assert tenant_bound() == ALL  # the test connection's default: tests create their data directly


def test_rows_of_another_tenant_can_be_neither_changed_nor_written(two_tenants):
    mine, theirs = two_tenants
    theirs_memory = Memory.objects.select_related("contact").filter(tenant=theirs).first()
    with tenant_scope(mine.pk):
        assert Memory.objects.filter(pk=theirs_memory.pk).update(content="overwritten") == 0
        assert Memory.objects.filter(pk=theirs_memory.pk).delete()[0] == 0
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            Memory.objects.create(tenant=theirs, contact=theirs_memory.contact, memory_type="fact", content="planted")
    theirs_memory.refresh_from_db()
    assert theirs_memory.content != "overwritten"


def test_a_link_from_one_tenants_memory_to_another_tenants_entity_is_written_by_no_role(two_tenants):
    """A link carries its memory's tenant (set by the database, whatever the caller passes: migration
    memories/0025) and its policy refuses an entity of another tenant — for the maintenance role too, which
    could write such a link before."""
    mine, theirs = two_tenants
    memory = Memory.objects.filter(tenant=mine).first()
    entity = Entity.objects.create(
        tenant=theirs, contact=None, entity_type="place", slug="berlin-x", display_name="Berlin"
    )
    for scope in (mine.pk, theirs.pk, ALL):
        with tenant_scope(scope), pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            MemoryEntity.objects.create(memory=memory, entity=entity)
    assert not MemoryEntity.objects.filter(entity=entity).exists()


def test_a_link_takes_its_memory_s_tenant_whatever_the_caller_passes(two_tenants):
    mine, theirs = two_tenants
    memory = Memory.objects.filter(tenant=mine).first()
    entity = Entity.objects.create(
        tenant=mine, contact=None, entity_type="place", slug="lisbon-x", display_name="Lisbon"
    )
    with tenant_scope(mine.pk):
        link = MemoryEntity.objects.create(memory=memory, entity=entity, tenant_id=theirs.pk)
        assert MemoryEntity.objects.filter(pk=link.pk).values_list("tenant_id", flat=True).get() == mine.pk
    with tenant_scope(theirs.pk):
        assert not MemoryEntity.objects.filter(pk=link.pk).exists()
        # a memory the caller cannot see gives no tenant: refused
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            MemoryEntity.objects.create(
                memory=memory,
                entity=Entity.objects.create(
                    tenant=theirs, contact=None, entity_type="place", slug="porto-x", display_name="Porto"
                ),
            )


def test_a_rolled_back_binding_falls_back_to_what_was_bound_before_never_wider(two_tenants):
    mine, _ = two_tenants
    with tenant_scope(NONE):
        with pytest.raises(RuntimeError), transaction.atomic():
            tenant_bind(mine.pk)
            assert Memory.objects.exists()
            raise RuntimeError
        assert tenant_bound() == NONE
        assert not Memory.objects.exists()


def test_a_bad_binding_is_refused_before_it_reaches_the_database():
    with pytest.raises(ValueError):
        tenant_bind("'; RESET app.tenant_id; --")


@api_view(["GET"])
def _unfiltered_count(request):
    """A view that forgets its tenant filter."""
    return JsonResponse({"memories": _count("memories_memory"), "bound": tenant_bound()})


def _unauthenticated_count(request):
    return JsonResponse({"memories": _count("memories_memory"), "bound": tenant_bound()})


urlpatterns = [
    path("forgetful", _unfiltered_count),
    path("anonymous", _unauthenticated_count),
    path("inspector-forgetful", inspector_view()(_unauthenticated_count)),
]


@override_settings(ROOT_URLCONF=__name__)
def test_an_api_request_sees_its_keys_tenant_only_even_where_a_view_forgets_the_filter(api, two_tenants):
    mine, _ = two_tenants
    body = api.get("/forgetful").json()
    assert body == {"memories": Memory.objects.filter(tenant=mine).count(), "bound": str(mine.pk)}
    assert tenant_bound() == ALL  # the request's binding ended with it


@override_settings(ROOT_URLCONF=__name__)
def test_a_request_bound_to_no_tenant_sees_no_tenant_rows(client, two_tenants):
    assert client.get("/anonymous").json() == {"memories": 0, "bound": NONE}


@override_settings(ROOT_URLCONF=__name__)
def test_the_inspector_binds_its_owners_tenant(client, two_tenants):
    mine, _ = two_tenants
    membership = MembershipFactory(tenant=mine)
    client.force_login(membership.user)
    body = client.get("/inspector-forgetful").json()
    assert body == {"memories": Memory.objects.filter(tenant=mine).count(), "bound": str(mine.pk)}


def test_the_admin_binds_staff_to_every_tenant(admin_client, two_tenants):
    page = admin_client.get("/admin/memories/memory/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Bruno" in text and "Acme" in text


@pytest.fixture
def web_connection_default():
    """This thread's connection as the web processes of `make run` open theirs: starting at `none`
    (ENGRAM_TENANT_SCOPE_DEFAULT=none). Data made before; the connection reopened after, at the tests' `all`."""
    options = connection.settings_dict["OPTIONS"]
    before = options["options"]
    assert "-c app.tenant_id=all" in before
    connection.close()
    options["options"] = before.replace("-c app.tenant_id=all", "-c app.tenant_id=none")
    yield
    connection.close()
    options["options"] = before


def _binding_kinds(queries: list[dict[str, Any]]) -> list[str]:
    """The statements of a request that touch the binding: set (set_config), reset (RESET), read (current_setting,
    the test views' own)."""
    kinds = {"set_config": "set", "RESET": "reset", "current_setting": "read"}
    return [
        next(kind for word, kind in kinds.items() if word in query["sql"])
        for query in queries
        if "app.tenant_id" in query["sql"]
    ]


@override_settings(ROOT_URLCONF=__name__)
@pytest.mark.django_db(transaction=True)
def test_a_request_binds_no_tenant_without_a_round_trip_when_the_connection_is_unbound(
    api, client, two_tenants, web_connection_default
):
    """Under `make run` a web connection starts at `none` and every request ends back there, so the request-start
    bind to `none` and, for a request that bound nothing, the end's reset are no-ops: not sent. A request that
    binds its key's tenant sends that bind and the reset it needs, and still sees its tenant only; a connection
    left bound to a tenant is still unbound at the next request's start."""
    mine, _ = two_tenants
    mine_memories = Memory.objects.filter(tenant=mine).count()  # under `none`: the policy hides every row
    assert mine_memories == 0
    for round_number in range(3):  # the first on a fresh connection, then on the same one
        with CaptureQueriesContext(connection) as queries:
            body = api.get("/forgetful").json()
        assert body["bound"] == str(mine.pk) and body["memories"] > 0
        assert _binding_kinds(queries.captured_queries) == ["set", "read", "reset"], round_number
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/anonymous").json()
        assert body == {"memories": 0, "bound": NONE}
        assert _binding_kinds(queries.captured_queries) == ["read"], round_number
    assert tenant_bound() == NONE

    tenant_bind(mine.pk)  # a binding the request did not make (a reset that failed): not skipped
    with CaptureQueriesContext(connection) as queries:
        body = client.get("/anonymous").json()
    assert body == {"memories": 0, "bound": NONE}
    assert _binding_kinds(queries.captured_queries) == ["set", "read"]  # back at `none`: no reset needed
    tenant_bind(mine.pk)
    with pytest.raises(RuntimeError), transaction.atomic():  # a value set inside a transaction is not certain:
        tenant_bind(NONE)
        raise RuntimeError
    assert tenant_bound() == str(mine.pk)  # the rollback put the tenant back
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/anonymous").json() == {"memories": 0, "bound": NONE}
    assert _binding_kinds(queries.captured_queries) == ["set", "read"]


def test_every_registered_task_declares_how_it_binds_a_tenant():
    """A task runs bound to its `tenant_id`, across tenants as maintenance, or touches no tenant's rows: each says
    which (apps/core/tenancy.py). One that declares nothing runs bound to none and sees nothing: this fails first."""
    import inspect

    from config.celery_app import app as celery_app

    celery_app.loader.import_default_modules()
    ours = {name: task for name, task in celery_app.tasks.items() if name.startswith("apps.")}
    assert len(ours) >= 14
    undeclared = [name for name, task in ours.items() if getattr(task, "tenancy", None) not in TASK_TENANCIES]
    assert undeclared == []
    without_argument = [
        name
        for name, task in ours.items()
        if task.tenancy == TENANT and "tenant_id" not in inspect.signature(task.run).parameters
    ]
    assert without_argument == []


@pytest.mark.parametrize(
    ("tenancy", "expected"), [(TENANT, "mine"), (MAINTENANCE, ALL), (NO_TENANT, NONE), (None, NONE)]
)
def test_a_task_runs_bound_as_it_declares(two_tenants, tenancy, expected):
    """How every task runs for each declaration (a task declaring nothing: bound to none)."""
    mine, _ = two_tenants

    class Task:
        pass

    task = Task()
    if tenancy is not None:
        task.tenancy = tenancy  # type: ignore[attr-defined]
    with tenant_scope(NONE):
        with task_binding(task, {"tenant_id": str(mine.pk)}):
            assert tenant_bound() == (str(mine.pk) if expected == "mine" else expected)
        assert tenant_bound() == NONE


@pytest.mark.parametrize("module", ["config.settings.local", "config.settings.test", "config.settings.production"])
def test_every_settings_module_starts_connections_bound_to_no_tenant(module):
    """Loaded in a fresh process without ENGRAM_TENANT_SCOPE_DEFAULT: the connection's start-up binding is none."""
    import os
    import subprocess
    import sys

    environment = {key: value for key, value in os.environ.items() if key != "ENGRAM_TENANT_SCOPE_DEFAULT"}
    environment |= {
        "DJANGO_SETTINGS_MODULE": module,
        "DJANGO_SECRET_KEY": "x" * 50,
        "DJANGO_ALLOWED_HOSTS": "engram.example.com",
        "DATABASE_URL": os.environ.get("DATABASE_URL") or "postgres://engram@db.internal:5432/engram",
        "REDIS_URL": os.environ.get("REDIS_URL") or "redis://127.0.0.1:1/0",
    }
    script = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS']['options'])"
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "-c app.tenant_id=none" in result.stdout, result.stdout + result.stderr


# --- the app role behind the wall: data only, `all` without effect, no DDL (docs/architecture.md, "Roles") ---


def _as_app_role() -> psycopg.Connection[Any]:
    """A connection as the web and the worker log in: the app role (the test process is the tables' owner)."""
    params = connection.settings_dict
    user = environ.Env.db_url_config(settings.DATABASE_URL)["USER"]
    assert user != params["USER"], "the test process must not be the app role"
    return psycopg.connect(
        host=params["HOST"],
        port=params.get("PORT") or None,
        dbname=params["NAME"],
        user=user,
        password=environ.Env.db_url_config(settings.DATABASE_URL).get("PASSWORD") or None,
        autocommit=True,
    )


@pytest.mark.django_db(transaction=True)  # another connection reads the rows
def test_the_app_role_cannot_widen_its_binding_to_every_tenant(two_tenants):
    mine, _ = two_tenants
    assert _count("memories_memory") > Memory.objects.filter(tenant=mine).count() > 0  # the owner at `all`
    with _as_app_role() as app:
        assert app.execute("SELECT count(*) FROM memories_memory").fetchone()[0] == 0  # unbound
        app.execute("SET app.tenant_id = 'all'")  # it may set it...
        assert app.execute("SELECT count(*) FROM memories_memory").fetchone()[0] == 0  # ...to no effect
        assert app.execute("SELECT count(*) FROM contacts_contact").fetchone()[0] == 0
        app.execute("SELECT set_config('app.tenant_id', %s, false)", [str(mine.pk)])
        assert app.execute("SELECT count(DISTINCT tenant_id) FROM memories_memory").fetchone()[0] == 1


def test_the_app_role_owns_nothing_and_holds_data_privileges_only():
    with _as_app_role() as app:
        owned = app.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)"
        ).fetchall()
        assert owned == []
        tables = [row[0] for row in app.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        assert len(tables) > 20
        for table in tables:
            granted = {
                privilege
                for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
                if app.execute("SELECT has_table_privilege(%s, %s)", [table, privilege]).fetchone()[0]
            }
            assert granted == {"SELECT", "INSERT", "UPDATE", "DELETE"}, table
        role = app.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert role == (False, False, False, False)
        assert not app.execute("SELECT has_schema_privilege('public', 'CREATE')").fetchone()[0]


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE memories_memory DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE memories_memory NO FORCE ROW LEVEL SECURITY",
        "ALTER POLICY tenant_isolation ON memories_memory USING (true)",
        "DROP POLICY tenant_isolation ON memories_memory",
        "CREATE POLICY open ON memories_memory USING (true)",
        "DROP TABLE memories_memory",
        "TRUNCATE memories_memory",
        "ALTER TABLE memories_memory OWNER TO CURRENT_USER",
        "CREATE TABLE planted (id int)",
        "CREATE OR REPLACE FUNCTION app_all_tenants() RETURNS boolean LANGUAGE sql AS 'SELECT true'",
        "SET ROLE engram_owner",
    ],
)
@pytest.mark.django_db(transaction=True)
def test_the_app_role_can_neither_alter_drop_nor_disable_row_level_security(statement):
    with _as_app_role() as app, pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute(statement)


@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="an external server's authentication is its own")
@pytest.mark.django_db(transaction=True)
def test_the_embedded_socket_trusts_no_one_and_refuses_a_role_it_does_not_map():
    """pgserver's initdb trusted every local user as any role; the socket now takes this OS user only, as the roles
    config/embedded.py maps it to (peer authentication)."""
    params = connection.settings_dict
    superuser = f"host={params['HOST']} dbname={params['NAME']} user=postgres"
    with psycopg.connect(superuser, autocommit=True) as admin:
        methods = {row[0] for row in admin.execute("SELECT auth_method FROM pg_hba_file_rules")}
        assert methods == {"peer"}
        admin.execute("DROP ROLE IF EXISTS intruder")
        admin.execute("CREATE ROLE intruder LOGIN PASSWORD 'known' SUPERUSER")
        try:
            with pytest.raises(psycopg.OperationalError, match="authentication failed"):
                psycopg.connect(f"host={params['HOST']} dbname={params['NAME']} user=intruder password=known")
        finally:
            admin.execute("DROP ROLE intruder")
