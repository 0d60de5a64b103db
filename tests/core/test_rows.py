"""Hand-written statements on the hot path: the cursor that binds parameters on the server."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core.rows import bound_cursor

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


def test_every_execution_of_a_prepared_statement_is_planned_for_its_own_parameters() -> None:
    """After five executions PostgreSQL may reuse one generic plan, blind to the parameters (how large the scope
    is, how rare a word is): at 100k memories that made GET /context ten times slower. The connection forces a
    custom plan each time (config/settings/base.py), so the sixth execution on is planned like the first."""
    sql = "SELECT count(*) FROM memories_memory WHERE importance >= %(floor)s AND memory_type = %(kind)s"
    for floor in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):  # past the five custom plans PostgreSQL tries first
        with bound_cursor() as cursor:
            cursor.execute(sql, {"floor": floor, "kind": "fact"})
            cursor.fetchone()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE '%%importance >= $1 AND memory_type = $2%%'"
        )
        assert cursor.fetchall() == [(0, 8)]
