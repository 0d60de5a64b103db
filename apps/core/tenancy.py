"""Tenant isolation enforced by PostgreSQL: row-level security keyed by the session setting `app.tenant_id`.

Every tenant-owned table has a policy (apps/core/migrations/0004_row_level_security.py) that shows and
accepts a row only when `app.tenant_id` names the row's tenant, or is `all` (operators, periodic jobs,
management commands). Anything else, `none` included, shows nothing. The application role is neither a
superuser nor BYPASSRLS, and the tables FORCE row-level security (so it applies to their owner too): a query
that forgets its tenant filter, raw SQL included, still sees one tenant only.

Who sets it:
- a connection starts at `ENGRAM_TENANT_SCOPE_DEFAULT` (settings; `all` unless set — the worker and
  commands; `make run` starts the web processes at `none`);
- every web request starts at `none` (`TenantScopeMiddleware`) and returns to the connection's default when it
  ends; an API key (`ApiKeyAuthentication`) or the inspector's resolved tenant binds it to that tenant; the
  admin binds staff to `all`;
- a Celery task given a `tenant_id` runs bound to it (`bind_task_tenant`), and the tasks that find their
  tenant from a row bind it once they have it (`tenant_scope`).

The value is a session setting, not `SET LOCAL`: requests run in autocommit, so a transaction-local value
would end with the first statement. A setting changed inside a transaction that rolls back reverts to what it
was before (PostgreSQL rolls GUCs back with the transaction): a rollback never widens the scope past the
request's `none`. Pooling in transaction mode (PgBouncer) does not keep session settings: use session mode.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.db import DatabaseError, connection

SETTING = "app.tenant_id"
ALL = "all"
NONE = "none"


def _value(tenant_id: uuid.UUID | str | None) -> str:
    if tenant_id is None:
        return NONE
    if tenant_id in (ALL, NONE):
        return str(tenant_id)
    return str(uuid.UUID(str(tenant_id)))  # anything else is refused here, not by a cast in every policy


def tenant_bind(tenant_id: uuid.UUID | str | None) -> None:
    """Bind this connection to one tenant (a UUID), to every tenant (`all`) or to none (`none` / None)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, false)", [SETTING, _value(tenant_id)])


def tenant_reset() -> None:
    """Back to the connection's default (its start-up `-c app.tenant_id=…`)."""
    if connection.connection is None:  # closed meanwhile: the next connection starts at the default anyway
        return
    with connection.cursor() as cursor:
        cursor.execute(f"RESET {SETTING}")


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
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config(%s, %s, false)", [SETTING, previous or NONE])


class TenantScopeMiddleware:
    """Every request starts bound to no tenant; authentication narrows it to one (or the admin to all)."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        try:
            tenant_bind(NONE)
            if request.path.startswith("/admin/") and request.user.is_active and request.user.is_staff:
                tenant_bind(ALL)  # operators; what each may change is the admin's own permission system
        except DatabaseError:
            # the database is down: the request meets the same error where it reads, and answers 503 there;
            # a connection opened afresh starts at the web's default (`none` under `make run`)
            pass
        try:
            return self.get_response(request)
        finally:
            with suppress(DatabaseError):  # a broken connection is closed and replaced, binding and all
                tenant_reset()


def bind_task_tenant(sender: Any = None, kwargs: dict[str, Any] | None = None, **_: Any) -> None:
    """`task_prerun`: a task given `tenant_id` runs bound to that tenant."""
    tenant_id = (kwargs or {}).get("tenant_id")
    if tenant_id:
        tenant_bind(tenant_id)


def unbind_task_tenant(sender: Any = None, kwargs: dict[str, Any] | None = None, **_: Any) -> None:
    """`task_postrun`: back to the worker's default (`all`)."""
    if (kwargs or {}).get("tenant_id"):
        tenant_reset()
