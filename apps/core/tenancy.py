"""Tenant isolation enforced by PostgreSQL: row-level security keyed by the session setting `app.tenant_id`.

Every tenant-owned table has a policy (apps/core/rls.py) that shows and accepts a row only when `app.tenant_id`
names the row's tenant, or is `all` and the session's role owns the tables (the maintenance role: migrate,
manage.py's commands, maintenance tasks, the admin). Anything else, `none` included, shows nothing — and so does
`all` set by the app role, which the web and the worker log in as: data-only grants, owning nothing, so it can
neither alter nor disable the policies, which are FORCEd on the owner too (docs/architecture.md, "Roles"). A query
that forgets its tenant filter, raw SQL included, still sees one tenant only.

Who sets it:
- a connection starts at `ENGRAM_TENANT_SCOPE_DEFAULT` (settings; `none` unless set, in every process; manage.py
  sets `all` for the operator's commands — migrate, seed_demo, bench_*, run_consolidation — and `none` for the
  ones that serve tenants, runserver and mcp_stdio);
- every web request starts at `none` (`TenantScopeMiddleware`) and returns to the connection's default when it
  ends; an API key (`ApiKeyAuthentication`) or the inspector's resolved tenant binds it to that tenant; the
  admin runs staff's requests in `maintenance_scope()` (the maintenance login, at `all`);
- every Celery task declares how it binds (`tenancy=` on the task, `TASK_TENANCIES`): `tenant` tasks run bound
  to their `tenant_id` argument; `maintenance` tasks (sweeps across tenants, jobs given row ids) run across
  tenants (`maintenance_scope`); `none` tasks touch no tenant's rows (the heartbeat, the fan-out that reads the
  tenant list and queues one `tenant` task each). A task that declares nothing runs bound to none: it sees
  nothing (tests/core/test_row_level_security.py checks every registered task declares one).

The value is a session setting, not `SET LOCAL`: requests run in autocommit, so a transaction-local value
would end with the first statement. A setting changed inside a transaction that rolls back reverts to what it
was before (PostgreSQL rolls GUCs back with the transaction): a rollback never widens the scope past the
request's `none`. Pooling in transaction mode (PgBouncer) does not keep session settings: use session mode.

A change that would be a no-op is not sent. Each connection remembers the value it was last given outside a
transaction (inside one a rollback may revert it, so it is then unknown) and a new connection starts at its
default (`-c app.tenant_id=…`); binding to the connection's default when the connection is known to be there
already, or resetting it there, costs no round trip. That is the request-start `none` and the request-end
reset of every web request under `make run` (the web's default is `none`), one statement each. Only a value
equal to the default is skipped: if Django replaces the connection (its health check runs at the request's
first statement), the new one starts at the default, which is then still the value the request meant.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections

SETTING = "app.tenant_id"
ALL = "all"
NONE = "none"


def _value(tenant_id: uuid.UUID | str | None) -> str:
    if tenant_id is None:
        return NONE
    if tenant_id in (ALL, NONE):
        return str(tenant_id)
    return str(uuid.UUID(str(tenant_id)))  # anything else is refused here, not by a cast in every policy


_DEFAULT = re.compile(r"-c\s*app\.tenant_id=(\w+)")
_UNKNOWN = ""
BINDING_ATTRIBUTE = "engram_tenant_binding"  # on Django's connection: (the DB-API connection, its value)


def _connection_default() -> str:
    """The value a new connection starts at (the `-c app.tenant_id=…` of its options), or unknown."""
    match = _DEFAULT.search(str(connection.settings_dict.get("OPTIONS", {}).get("options", "")))
    return match.group(1) if match else _UNKNOWN


def _known_value() -> str:
    """What this connection's `app.tenant_id` is, as far as this module can be certain without asking."""
    remembered = getattr(connection, BINDING_ATTRIBUTE, None)
    if connection.connection is None or remembered is None or remembered[0] is not connection.connection:
        return _connection_default()  # none open yet, or opened since this module last set it: its default
    return str(remembered[1])


def _remember(value: str) -> None:
    certain = value != _UNKNOWN and not connection.in_atomic_block  # a rollback would revert it
    setattr(connection, BINDING_ATTRIBUTE, (connection.connection, value if certain else _UNKNOWN))


def _is_no_op(value: str) -> bool:
    return value != _UNKNOWN and value == _connection_default() == _known_value()


def _set(value: str) -> None:
    if _is_no_op(value):
        return
    with connection.cursor() as cursor:  # opens the connection (or replaces a broken one) first
        _remember(_UNKNOWN)  # until the statement has run
        cursor.execute("SELECT set_config(%s, %s, false)", [SETTING, value])
    _remember(value)


def tenant_bind(tenant_id: uuid.UUID | str | None) -> None:
    """Bind this connection to one tenant (a UUID), to every tenant (`all`) or to none (`none` / None).
    No round trip when the connection is known to be at that value already and it is its default."""
    _set(_value(tenant_id))


def tenant_reset() -> None:
    """Back to the connection's default (its start-up `-c app.tenant_id=…`); no round trip when it is known to
    be there."""
    if connection.connection is None:  # closed meanwhile: the next connection starts at the default anyway
        return
    default = _connection_default()
    if _is_no_op(default):
        return
    with connection.cursor() as cursor:
        _remember(_UNKNOWN)
        cursor.execute(f"RESET {SETTING}")
    _remember(default)


def tenant_bound() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s, true)", [SETTING])
        row = cursor.fetchone()
    return str(row[0]) if row and row[0] is not None else ""


@contextmanager
def tenant_scope(tenant_id: uuid.UUID | str | None) -> Iterator[None]:
    """Run a block bound to `tenant_id`; the previous binding is restored afterwards."""
    previous = tenant_bound()
    tenant_bind(tenant_id)
    try:
        yield
    finally:
        _set(previous or NONE)


class TenantScopeMiddleware:
    """Every request starts bound to no tenant; authentication narrows it to one (or the admin to all)."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        try:
            tenant_bind(NONE)
            operator = request.path.startswith("/admin/") and request.user.is_active and request.user.is_staff
        except DatabaseError:
            # the database is down: the request meets the same error where it reads, and answers 503 there;
            # a connection opened afresh starts at the web's default (`none`)
            operator = False
        try:
            if operator:  # every tenant, as maintenance; what each may change is the admin's own permission system
                with maintenance_scope():
                    return self.get_response(request)
            return self.get_response(request)
        finally:
            with suppress(DatabaseError):  # a broken connection is closed and replaced, binding and all
                tenant_reset()


MAINTENANCE_ALIAS = "maintenance"  # settings.DATABASES: the login of the role that owns the tables


def _is_maintenance_login(alias: str) -> bool:
    if MAINTENANCE_ALIAS not in settings.DATABASES:
        return True  # one login: nothing to switch to
    # the same role is the same login (the test process's `default` is the owner's, on the test database)
    return bool(settings.DATABASES[alias].get("USER") == settings.DATABASES[MAINTENANCE_ALIAS].get("USER"))


@contextmanager
def maintenance_scope() -> Iterator[None]:
    """Run a block across tenants, as maintenance (sweeps, jobs given row ids, the admin for staff). `all` takes
    effect only for the role that owns the tables (apps/core/rls.py): a process logged in as the app role (web,
    worker) has this thread's default connection switched to the `maintenance` login for the block — the ORM and
    raw SQL alike (`django.db.connection` reads `connections["default"]`) — and back afterwards. The previous
    binding is restored afterwards."""
    if _is_maintenance_login(DEFAULT_DB_ALIAS) or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        with tenant_scope(ALL):  # already the owner's login (manage.py's commands, the tests' process)
            yield
        return
    app = connections[DEFAULT_DB_ALIAS]
    connections[DEFAULT_DB_ALIAS] = connections[MAINTENANCE_ALIAS]
    try:
        with tenant_scope(ALL):
            yield
    finally:
        connections[DEFAULT_DB_ALIAS] = app


# How a Celery task binds (the `tenancy` attribute its decorator sets: `@shared_task(..., tenancy=TENANT)`)
TENANT = "tenant"  # bound to its `tenant_id` argument
MAINTENANCE = "maintenance"  # across tenants (maintenance_scope)
NO_TENANT = "none"  # touches no tenant's rows
TASK_TENANCIES = (TENANT, MAINTENANCE, NO_TENANT)


def task_tenancy(task: Any) -> str:
    """What a task declared (`none` when it declared nothing: it then sees nothing)."""
    declared = getattr(task, "tenancy", NO_TENANT)
    return declared if declared in TASK_TENANCIES else NO_TENANT


@contextmanager
def task_binding(task: Any, kwargs: dict[str, Any]) -> Iterator[None]:
    """How a task runs (apps/core/task_base.py `TenantBoundTask`): a `tenant` task bound to its `tenant_id`, a
    `maintenance` task across tenants, any other at the worker's default (`none`); the binding before is restored
    afterwards."""
    tenancy = task_tenancy(task)
    if tenancy == TENANT:
        with tenant_scope(kwargs.get("tenant_id") or NONE):
            yield
    elif tenancy == MAINTENANCE:
        with maintenance_scope():
            yield
    else:
        yield
