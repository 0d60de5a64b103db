"""The read path's warm-up, which each web worker runs on its database connection before its first request
(config/gunicorn.py → config.wsgi.warm_database → apps.context.services.read_path_warm_up)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.contacts.models import ContactState
from apps.context.services import read_path_warm_up
from tests.factories import GARDEN_TOPICS, ContactFactory, MemoryFactory

ROOT = Path(__file__).resolve().parents[2]
# query.scope_stats's statement for a scope without a lexicon: one count per word of the query
WORD_COUNTS = "SELECT count(*), coalesce(avg(length(s.search_vector)), 0)"


def prepared_statements() -> dict[str, str]:
    """This connection's prepared statements: {name: text}."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement FROM pg_prepared_statements")
        return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)  # the test closes the connection: a new backend, as a worker starts with
@pytest.mark.parametrize("stage", ["deep", "established", "building"])
def test_a_get_context_after_the_warm_up_prepares_no_statement_of_its_own(api, tenant, stage):
    """What a worker's first GET /context would plan on a new connection is planned by the warm-up already:
    the request prepares no statement of its own but a small scope's word counts, whose text has one count per
    word of the query (without the warm-up it prepares its query terms, candidates and entities statements)."""
    contact = ContactFactory(tenant=tenant, external_id="arjun")
    ContactState.objects.create(contact=contact, tenant=tenant, relationship_stage=stage, sessions_count=40)
    MemoryFactory.bulk(tenant=tenant, contact=contact, contents=GARDEN_TOPICS)
    connection.close()
    read_path_warm_up()
    warmed = prepared_statements()
    assert any("memories_memory" in statement for statement in warmed.values())

    body = api.get("/api/v1/context/arjun", {"query": "how are the tomato plants doing"}).json()

    assert body["memories"], body  # the request searched the contact's memories: a real context, not an empty one
    prepared_by_the_request = [text for name, text in prepared_statements().items() if name not in warmed]
    assert all(text.startswith(WORD_COUNTS) for text in prepared_by_the_request), [
        text[:80] for text in prepared_by_the_request
    ]


@pytest.mark.django_db
def test_the_warm_up_writes_nothing(tenant):
    contact = ContactFactory(tenant=tenant, external_id="arjun")
    MemoryFactory.bulk(tenant=tenant, contact=contact, contents=GARDEN_TOPICS[:5])
    with CaptureQueriesContext(connection) as queries:
        read_path_warm_up()
    statements = [query["sql"].lstrip().split(None, 1)[0].upper() for query in queries.captured_queries]
    assert "SELECT" in statements
    assert not {"INSERT", "UPDATE", "DELETE"} & set(statements), statements


def test_a_worker_whose_database_is_down_still_starts() -> None:
    """warm_database (gunicorn's post_worker_init) says the warm-up failed instead of raising, which would stop the
    worker from booting and gunicorn with it; the worker's first request connects as it always did."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": "postgres://engram@127.0.0.1:9/engram",  # the discard port: nothing answers
        "DATABASE_MAINTENANCE_URL": "postgres://engram@127.0.0.1:9/engram",
    }
    probe = "import config.wsgi; print(config.wsgi.warm_database())"
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert completed.stdout.split()[-1] == "False", completed.stdout + completed.stderr
    assert "The read path's warm-up failed" in completed.stderr and "OperationalError" in completed.stderr
