"""Model instances from one hand-written statement, for lookups on every request; and new instances written in
one statement whose parameters travel apart from its text, for the write path's widest rows.

The ORM compiles each query in Python before sending it (0.6–0.8 ms for a join of two or three tables,
measured on GET /context), several times the round trip to PostgreSQL. A hot-path selector writes its
SELECT with `columns(...)` for each model and builds the instances with `instances(...)`: the same
objects the ORM would return (`Model.from_db`, field converters applied), related rows attached.

`instances_insert(objs)` is `bulk_create` for new rows whose primary key is set, without the compiler and
without writing every value into the SQL: a memory's two 384-float vectors were printed as ~8 KB of text,
quoted by psycopg and parsed back by PostgreSQL (issue 29 item 2, docs/benchmarks.md "Session 19").

The instances belong to the `default` alias, as the ORM's do: every statement here goes through
`django.db.connection`, which is `connections["default"]`. Inside `maintenance_scope` in a process logged in
as the app role that entry is the `maintenance` login's connection, whose own `alias` is "maintenance"; an
instance marked with it could not be related to one the ORM loaded ("the current database router prevents
this relation"), and every extraction the worker retried failed on its first entity link (Session 34).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.utils import CursorWrapper
from django.db.models import AutoField, Model
from django.db.models.expressions import RawSQL
from pgvector.django import HalfVectorField
from psycopg.adapt import Dumper
from psycopg.pq import Format

from apps.core.vectors import Halfvec, halfvec_binary


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
        built.append(model.from_db(DEFAULT_DB_ALIAS, [field.attname for field in fields], values))
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


# what a statement whose best plan depends on its parameters runs with (`bound_cursor(CUSTOM_PLAN)`)
CUSTOM_PLAN = {"plan_cache_mode": "force_custom_plan"}


@contextmanager
def bound_cursor(settings: Mapping[str, str] | None = None) -> Iterator[CursorWrapper]:
    """A cursor whose statements travel with their parameters apart (PostgreSQL binds them), for the large
    read statements of the search path. Django's default cursor writes every parameter into the SQL text
    on the client: the candidate statement then carried the query vector's 384 numbers four times, ~36 KB
    for PostgreSQL to parse and psycopg to quote. Measured on the 1,986 LoCoMo searches, alternating in
    blocks of 20: p50 32.05 → 30.54 ms, p95 44.35 → 42.35 ms (docs/benchmarks.md). Not the connection-wide setting
    (OPTIONS["server_side_binding"]): a statement holds at most 65,535 bound parameters, which bulk inserts
    exceed.

    Its statements are also prepared (psycopg's prepare_threshold 0 while the cursor is open; Django's is None
    everywhere else): PostgreSQL parses, rewrites and plans a statement once per connection, and every later
    execution runs on that one generic plan (`plan_cache_mode=force_generic_plan`, config/settings/base.py).
    Write a statement here only if one plan suits every value of its parameters; one whose best plan depends
    on them sets `force_custom_plan` around itself, as the candidate statement of a scope of a thousand
    memories or more does (retrieval/vector_effort.py): a generic plan cannot see how large the scope is, and
    at 100k memories it made GET /context ten times slower for the 20,000-memory contact (in process,
    interleaved blocks of 20: p50 374 -> 35 ms, p95 654 -> 99 ms; docs/benchmarks.md "Session 16"). For a
    typical contact's GET /context the generic plans saved ~3 ms of planning a request (in process, p50 17.3-17.9
    -> 14.6-14.8 ms; "Session 44"). The policy reads `app.tenant_id` when the statement runs, never when it is
    planned (tests/core/test_row_level_security.py). Connections live up to CONN_MAX_AGE, and a pooler in front
    must keep sessions (as row-level security's setting already requires).

    `settings`: the cursor's statements run with them (`settings_in_force`), e.g. CUSTOM_PLAN."""
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
        with settings_in_force(cursor, settings or {}):
            yield cursor
    finally:
        database.prepare_threshold = threshold
        cursor.close()


def array_literal(values: Sequence[Any]) -> str:
    """`values` as the text of a PostgreSQL array (`'{"a","b"}'`, each element its `str`), for a bound_cursor
    parameter cast in the SQL (`%(name)s::uuid[]`). psycopg keys a prepared statement by its text *and* its
    parameters' Python types, and a list is typed by its first element: an empty list, or None for a
    timestamp, is another key, prepared and planned again. As text, a statement whose lists are sometimes
    empty stays one prepared statement (tests/core/test_rows.py)."""
    quoted = ('"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values)
    return "{" + ",".join(quoted) + "}"


@contextmanager
def settings_in_force(cursor: Any, wanted: Mapping[str, str]) -> Iterator[None]:
    """Run the statements of the block with the settings `wanted` (none: as they are), set in one statement
    and restored in one.

    In autocommit they are the session's and are restored after, even when a statement failed. Inside a
    transaction they are set LOCAL and put back after the block; if a statement failed, the transaction (or
    its savepoint) is aborted and rolling it back restores them."""
    if not wanted:
        yield
        return
    local = connection.in_atomic_block
    names = list(wanted)
    cursor.execute(
        "SELECT " + ", ".join("current_setting(%s), set_config(%s, %s, %s)" for _ in names),
        [value for name in names for value in (name, name, wanted[name], local)],
    )
    row = cursor.fetchone()
    previous = [row[2 * index] for index in range(len(names))]
    restore = "SELECT " + ", ".join("set_config(%s, %s, %s)" for _ in names)
    arguments = [value for name, value in zip(names, previous, strict=True) for value in (name, value, local)]
    if not local:
        try:
            yield
        finally:
            cursor.execute(restore, arguments)
        return
    yield
    cursor.execute(restore, arguments)


_PLACEHOLDER = re.compile(r"%[s%]")  # Django's placeholder, and its escaped percent sign
MAX_PARAMETERS = 65_535  # bound parameters one statement may carry (PostgreSQL's protocol: an int16 count)


@lru_cache(maxsize=1)
def _raw_cursor_class() -> type:
    from django.db.backends.postgresql.base import CursorMixin  # type: ignore[attr-defined]  # psycopg 3 only
    from psycopg import RawCursor

    class DjangoRawCursor(CursorMixin, RawCursor):  # type: ignore[misc,valid-type]
        """PostgreSQL's own placeholders ($1, $2, …): psycopg sends the text as it is, without splitting it
        at every %s in Python (the cost of a statement with thousands of parameters)."""

    return DjangoRawCursor


def _halfvec_dumper(oid: int) -> type[Dumper]:
    class HalfvecDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    HalfvecDumper.oid = oid
    return HalfvecDumper


_halfvec_oids: dict[str, int] = {}  # per database (its extension's type); a test database is another name


@contextmanager
def _binding_cursor() -> Iterator[CursorWrapper]:
    """A cursor on Django's connection whose statements carry their parameters apart, written with
    PostgreSQL's placeholders ($1, $2, …; not prepared: each INSERT has its own number of rows), `Halfvec`
    values sent in binary."""
    connection.ensure_connection()
    database = connection.settings_dict["NAME"]
    with connection.wrap_database_errors:
        raw = _raw_cursor_class()(connection.connection)
        if database not in _halfvec_oids:
            raw.execute("SELECT 'halfvec'::regtype::oid")
            row = raw.fetchone()
            assert row is not None
            _halfvec_oids[database] = int(row[0])
    raw.adapters.register_dumper(Halfvec, _halfvec_dumper(_halfvec_oids[database]))
    cursor = connection._prepare_cursor(raw)  # type: ignore[attr-defined]  # the execute wrappers, as connection.cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def instances_insert(objs: Sequence[Model]) -> None:
    """`Model.objects.bulk_create(objs)` for new instances of one model, in as few statements as the parameter
    limit allows: the same rows (each field's `pre_save` and database value, as bulk_create takes them; a value
    that is an expression compiled as bulk_create compiles it), sent apart from the statement's text, `halfvec`
    columns in binary. Either every instance has its primary key, or none has and the key is an auto field:
    then, as bulk_create does, PostgreSQL's keys are set on the instances (RETURNING, in the rows' order).
    Unlike bulk_create it reads nothing else back: generated columns are left unloaded on the instances (read
    on first access, as for any deferred field)."""
    if not objs:
        return
    model = type(objs[0])
    meta = model._meta
    database = connections[connection.alias]  # the connection itself: each field asks it for its operations
    keyed = [obj.pk is not None for obj in objs]
    if not all(keyed) and (any(keyed) or not isinstance(meta.pk, AutoField)):
        raise ValueError("instances_insert writes instances that all have their primary key, or none and an auto key")
    returning = not all(keyed)
    fields = [field for field in meta.concrete_fields if not field.generated and not (returning and field is meta.pk)]
    compiler = None
    rows: list[tuple[list[str | None], list[Any]]] = []
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")  # type: ignore[attr-defined]
        placeholders: list[str | None] = []  # None: one parameter; else an expression's SQL, with its %s
        params: list[Any] = []
        for field in fields:
            value = field.pre_save(obj, add=True)
            if isinstance(value, RawSQL):  # what its as_sql gives, without the compiler
                placeholders.append(f"({value.sql})")
                params.extend(value.params)
                continue
            if hasattr(value, "resolve_expression"):
                if compiler is None:
                    from django.db.models.sql import InsertQuery

                    compiler = InsertQuery(model).get_compiler(connection=database)
                sql, expression_params = compiler.compile(
                    value.resolve_expression(compiler.query, allow_joins=False, for_save=True)
                )
                placeholders.append(sql)
                params.extend(expression_params)
                continue
            if isinstance(field, HalfVectorField) and value is not None and len(value):
                value = halfvec_binary(value)
            else:
                value = field.get_db_prep_save(value, database)
            placeholders.append(None)
            params.append(value)
        rows.append((placeholders, params))
    table = connection.ops.quote_name(meta.db_table)
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    suffix = f" RETURNING {connection.ops.quote_name(meta.pk.column)}" if returning else ""
    keys: list[Any] = []
    with _binding_cursor() as cursor:
        for chunk in _within_parameter_limit(rows):
            values = _values_numbered([placeholders for placeholders, _ in chunk])
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {values}{suffix}",
                [param for _, params in chunk for param in params],
            )
            if returning:
                keys.extend(row[0] for row in cursor.fetchall())
    for index, obj in enumerate(objs):
        if returning:
            obj.pk = keys[index]
        obj._state.adding = False
        obj._state.db = DEFAULT_DB_ALIAS  # where the ORM sends them (the module's docstring)


def _values_numbered(rows: list[list[str | None]]) -> str:
    """The VALUES rows with PostgreSQL's placeholders, numbered in order: $n for each parameter, and in an
    expression's SQL each of Django's %s the next $n (an escaped %% a percent sign)."""
    number = 0

    def next_number(match: re.Match[str]) -> str:
        nonlocal number
        if match.group(0) == "%%":
            return "%"
        number += 1
        return f"${number}"

    cells: list[str] = []
    for row in rows:
        values: list[str] = []
        for part in row:
            if part is None:
                number += 1
                values.append(f"${number}")
            else:
                values.append(_PLACEHOLDER.sub(next_number, part))
        cells.append(f"({', '.join(values)})")
    return ", ".join(cells)


def _within_parameter_limit(
    rows: list[tuple[list[str | None], list[Any]]],
) -> Iterator[list[tuple[list[str | None], list[Any]]]]:
    chunk: list[tuple[list[str | None], list[Any]]] = []
    count = 0
    for row in rows:
        if chunk and count + len(row[1]) > MAX_PARAMETERS:
            yield chunk
            chunk, count = [], 0
        chunk.append(row)
        count += len(row[1])
    if chunk:
        yield chunk
