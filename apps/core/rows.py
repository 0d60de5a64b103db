"""Model instances from one hand-written statement, for lookups on every request.

The ORM compiles each query in Python before sending it (0.6–0.8 ms for a join of two or three tables,
measured on GET /context), several times the round trip to PostgreSQL. A hot-path selector writes its
SELECT with `columns(...)` for each model and builds the instances with `instances(...)`: the same
objects the ORM would return (`Model.from_db`, field converters applied), related rows attached.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.db.models import Model


def columns(model: type[Model], alias: str) -> str:
    """Every concrete column of `model`, qualified by `alias`, in the order `instances` reads them."""
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


def instances(row: Sequence[Any], models: Sequence[type[Model]]) -> list[Model | None]:
    """One instance per model from a row of `columns(model_1, …), columns(model_2, …)`; None for a model
    whose columns are all NULL (a LEFT JOIN that found nothing)."""
    built: list[Model | None] = []
    position = 0
    for model in models:
        fields = model._meta.concrete_fields
        values = list(row[position : position + len(fields)])
        position += len(fields)
        if all(value is None for value in values):
            built.append(None)
            continue
        for index, field in enumerate(fields):
            for converter in field.get_db_converters(connection):  # type: ignore[attr-defined]  # not in the stubs
                values[index] = converter(values[index], field.cached_col, connection)
        built.append(model.from_db(connection.alias, [field.attname for field in fields], values))
    return built


def fetch_row(sql: str, params: Sequence[Any] | dict[str, Any]) -> Sequence[Any] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


@lru_cache(maxsize=1)
def _prepared_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor  # type: ignore[attr-defined]  # psycopg 3 only

    class PreparedCursor(ServerBindingCursor):  # type: ignore[misc,valid-type]
        """Keeps the statement it ran: psycopg records it for a plain execution but not a prepared one, and
        Django's query log (DEBUG, CaptureQueriesContext) reads it from there (`last_executed_query`)."""

        def _send_query_prepared(self, name: bytes, pgq: Any, *, binary: bool | None = None) -> None:
            self._query = pgq
            super()._send_query_prepared(name, pgq, binary=binary)

    return PreparedCursor


@contextmanager
def bound_cursor() -> Iterator[CursorWrapper]:
    """A cursor whose statements travel with their parameters apart (PostgreSQL binds them), for the large
    read statements of the search path. Django's default cursor writes every parameter into the SQL text
    on the client: the candidate statement then carried the query vector's 384 numbers four times, ~36 KB
    for PostgreSQL to parse and psycopg to quote. Measured on the 1,986 LoCoMo searches, alternating in
    blocks of 20: p50 32.05 → 30.54 ms, p95 44.35 → 42.35 ms (docs/benchmarks.md). Not the connection-wide setting
    (OPTIONS["server_side_binding"]): a statement holds at most 65,535 bound parameters, which bulk inserts
    exceed.

    Its statements are also prepared (psycopg's prepare_threshold 0 while the cursor is open; Django's is None
    everywhere else): PostgreSQL parses and rewrites a statement once per connection. Each execution is still
    planned for its own parameters (`plan_cache_mode=force_custom_plan`, config/settings/base.py): the generic
    plan PostgreSQL otherwise adopts after five executions cannot see how large the scope is or how rare a
    query's words are, and at 100k memories it made GET /context ten times slower (in process, interleaved
    blocks of 20: p50 374 -> 35 ms, p95 654 -> 99 ms; prepared with custom plans vs not prepared: p50 27.7 vs
    27.2 ms, the same within noise; docs/benchmarks.md "Session 16"). The policy reads `app.tenant_id` when the
    statement runs, never when it is planned (tests/core/test_row_level_security.py). Connections live up to
    CONN_MAX_AGE, and a pooler in front must keep sessions (as row-level security's setting already requires)."""
    connection.ensure_connection()
    with connection.wrap_database_errors:
        raw = _prepared_cursor_class()(connection.connection)
    # what connection.cursor() does with the cursor it creates: the execute wrappers (query capture in
    # tests, instrumentation) and the debug wrapper apply as to any other cursor
    cursor = connection._prepare_cursor(raw)  # type: ignore[attr-defined]
    database = connection.connection
    threshold = database.prepare_threshold
    database.prepare_threshold = 0
    try:
        yield cursor
    finally:
        database.prepare_threshold = threshold
        cursor.close()
