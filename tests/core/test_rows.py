"""Hand-written statements on the hot path: the cursor that binds parameters on the server."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core.rows import CUSTOM_PLAN, array_literal, bound_cursor

pytestmark = pytest.mark.django_db


def test_bound_cursor_sends_parameters_apart_from_the_sql_and_execute_wrappers_still_see_it() -> None:
    vector = "[" + ",".join(["0.5"] * 384) + "]"
    with CaptureQueriesContext(connection) as captured, bound_cursor() as cursor:
        cursor.execute("SELECT %(v)s::vector <=> %(v)s::vector, %(n)s::int + 1", {"v": vector, "n": 41})
        assert cursor.fetchone() == (0.0, 42)
        # psycopg's ClientCursor (Django's default) writes the values into the text; this one does not
        assert isinstance(cursor.cursor, psycopg.Cursor)
        assert not isinstance(cursor.cursor, psycopg.ClientCursor)
    assert len(captured.captured_queries) == 1
    assert "<=>" in captured.captured_queries[0]["sql"]


def test_bound_cursor_prepares_its_statements_and_the_query_log_still_reads_them() -> None:
    sql = "SELECT %(n)s::int * 2 AS doubled_for_the_prepared_statement_test"
    with CaptureQueriesContext(connection) as captured:
        for n in (1, 2, 3):
            with bound_cursor() as cursor:
                cursor.execute(sql, {"n": n})
                assert cursor.fetchone() == (n * 2,)
    logged = [query["sql"] or "" for query in captured.captured_queries]
    assert len(logged) == 3 and all("doubled_for_the_prepared_statement_test" in text for text in logged), logged
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%doubled_for_the_prepared%'")
        assert cursor.fetchone()[0] == 1  # prepared once, run three times
    assert connection.connection.prepare_threshold is None  # Django's default again outside the cursor


def test_a_prepared_statement_runs_on_one_generic_plan_unless_it_asks_for_its_own() -> None:
    """A prepared statement is planned once per connection and runs on that generic plan (no planning per
    request); one whose best plan depends on its parameters (how large the scope is, how rare a word is: at 100k
    memories a generic plan made GET /context ten times slower) asks for CUSTOM_PLAN, and each of its
    executions is planned for its own parameters."""
    generic = "SELECT count(*) FROM memories_memory WHERE importance >= %(floor)s AND memory_type = %(kind)s"
    custom = "SELECT count(*) FROM memories_memory WHERE memory_type = %(kind)s AND importance >= %(floor)s"
    for floor in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):  # past the five custom plans PostgreSQL's `auto` tries
        with bound_cursor() as cursor:
            cursor.execute(generic, {"floor": floor, "kind": "fact"})
            cursor.fetchone()
        with bound_cursor(CUSTOM_PLAN) as cursor:
            cursor.execute(custom, {"floor": floor, "kind": "fact"})
            cursor.fetchone()
    with connection.cursor() as cursor:
        plans = "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s"
        cursor.execute(plans, ["%importance >= $1 AND memory_type = $2%"])
        assert cursor.fetchall() == [(8, 0)]
        cursor.execute(plans, ["%memory_type = $1 AND importance >= $2%"])
        assert cursor.fetchall() == [(0, 8)]
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"  # the connection's again after the custom cursor


def test_an_array_literal_reads_back_as_the_values_and_keeps_one_prepared_statement():
    """A list as array text reads back as the list (quotes and backslashes kept, empty as empty), and a statement
    given an empty list or a full one this way is one prepared statement; given the lists themselves it was two
    (psycopg keys a prepared statement by its parameters' types, an empty list's unknown)."""
    values = [uuid.uuid4(), uuid.uuid4()]
    texts = ["plain", 'say "hi"', "back\\slash", "it's", "comma, brace}"]
    with bound_cursor() as cursor:
        cursor.execute(
            "SELECT %(ids)s::uuid[], %(texts)s::text[], %(none)s::uuid[]",
            {"ids": array_literal(values), "texts": array_literal(texts), "none": array_literal([])},
        )
        assert cursor.fetchone() == (values, texts, [])
    lists = "SELECT cardinality(%(ids)s::uuid[]) /* lists */"
    literals = "SELECT cardinality(%(ids)s::uuid[]) /* literals */"
    for ids in ([], values):
        with bound_cursor() as cursor:
            cursor.execute(lists, {"ids": ids})
            cursor.execute(literals, {"ids": array_literal(ids)})
    with connection.cursor() as cursor:
        prepared = "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s"
        cursor.execute(prepared, ["%/* lists */%"])
        assert cursor.fetchone()[0] == 2
        cursor.execute(prepared, ["%/* literals */%"])
        assert cursor.fetchone()[0] == 1
