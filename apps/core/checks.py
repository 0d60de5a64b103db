"""System checks. Against the database (`manage.py check --database default`, and by `migrate`): is row-level
security really in force for the role the app connects as (apps/core/tenancy.py)? On every command: does the
embedder's configuration name a graph it has?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import connections

from apps.core.grants import app_role


def row_level_security_problems(connection: Any) -> list[CheckMessage]:
    problems: list[CheckMessage] = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user")
        role, bypasses = cursor.fetchone()
        cursor.execute("SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure")
        leakproof = cursor.fetchone()[0]
        cursor.execute("SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass('django_migrations')")
        owner = cursor.fetchone()
    if owner is not None and owner[0] == app_role():
        problems.append(
            Warning(
                f"The app role {owner[0]!r} (DATABASE_URL) owns the tables: it can alter or disable row-level "
                "security, and its app.tenant_id = 'all' takes effect.",
                hint="Migrate as a second role that owns the tables (DATABASE_MAINTENANCE_URL) and serve as one with "
                "data-only grants (docs/architecture.md, 'Roles').",
                id="engram.W012",
            )
        )
    if bypasses:
        problems.append(
            Warning(
                f"The database role {role!r} bypasses row-level security (superuser or BYPASSRLS).",
                hint="Connect as a role without SUPERUSER and BYPASSRLS (docs/reliability.md, 'Tenant isolation'); "
                "tenant isolation now rests on the application's filters alone.",
                id="engram.W010",
            )
        )
    elif not leakproof:
        problems.append(
            Warning(
                "ts_match_vq is not LEAKPROOF: under row-level security keyword search cannot use its GIN index.",
                hint="As a superuser, once per database: ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF; "
                "(docs/reliability.md, 'Tenant isolation').",
                id="engram.W011",
            )
        )
    return problems


@register(Tags.database)
def row_level_security_check(
    app_configs: Sequence[AppConfig] | None, databases: Sequence[str] | None = None, **_: Any
) -> list[CheckMessage]:
    problems: list[CheckMessage] = []
    for alias in databases or []:
        problems.extend(row_level_security_problems(connections[alias]))
    return problems


@register()
def embedding_graph_check(app_configs: Sequence[AppConfig] | None, **_: Any) -> list[CheckMessage]:
    """ENGRAM_EMBEDDING_GRAPH names a graph the local embedder has: a typo stops every command at start, not each
    request at its first embedding."""
    from django.conf import settings

    from apps.core.embeddings import EMBEDDING_GRAPHS

    graph = settings.ENGRAM.get("EMBEDDING_GRAPH", "package")
    if settings.ENGRAM.get("EMBEDDER", "local") != "local" or graph in EMBEDDING_GRAPHS:
        return []
    return [
        Error(
            f"ENGRAM_EMBEDDING_GRAPH = {graph!r} is not a graph of the local embedder.",
            hint=f"One of {', '.join(EMBEDDING_GRAPHS)} (docs/architecture.md, 'The embedder').",
            id="engram.E020",
        )
    ]


@register()
def broker_visibility_check(app_configs: Sequence[AppConfig] | None, **_: Any) -> list[CheckMessage]:
    """The broker hands a message a worker took and never acknowledged to another worker after its visibility
    timeout (acks_late); a task that may run longer than that (CELERY_TASK_TIME_LIMIT) runs twice at once."""
    from django.conf import settings

    timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout")
    if timeout is None or timeout > settings.CELERY_TASK_TIME_LIMIT:
        return []
    return [
        Warning(
            f"ENGRAM_BROKER_VISIBILITY_TIMEOUT = {timeout} s is not above the task time limit "
            f"({settings.CELERY_TASK_TIME_LIMIT} s): a task still running is handed out again and runs twice.",
            hint="Leave it unset (an hour) or set it above the time limit "
            "(docs/architecture.md, 'Sizing web and worker processes').",
            id="engram.W030",
        )
    ]
