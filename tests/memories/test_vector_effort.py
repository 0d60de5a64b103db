"""A large scope's candidates are searched wider in the vector index (retrieval/vector_effort.py), and only
they: the setting is back to the connection's after the search, in autocommit and inside a transaction. The
same for the plan: a small scope's candidate statement runs on the generic plan, a larger one's is planned for
its own parameters."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from apps.core.rows import settings_in_force
from apps.core.tenancy import tenant_scope
from apps.memories.retrieval import vector_effort
from apps.memories.retrieval.search import memory_search
from tests.factories import GARDEN_TOPICS, ContactFactory, MemoryFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", [name])
        return str(cursor.fetchone()[0])


def _ef_search() -> str:
    return _setting("hnsw.ef_search")


def _search_seeing_ef(contact, query: str = "the tomato plants") -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The ef_search in force when the search's candidate statement ran, and the one after the search."""
    return _search_seeing(contact, "hnsw.ef_search", query)


STATISTICS = "coalesce(avg(length(s.search_vector))"  # the scope statistics' statement (no lexicon)


def _search_seeing(contact, name: str, query: str = "the tomato plants", marker: str = "vector AS (", **search):  # type: ignore[no-untyped-def]
    """The setting `name` in force when the search's statement holding `marker` (the candidate statement)
    ran, and after the search."""
    seen: list[str] = []

    def look(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if marker in sql:
            seen.append(_setting(name))
        return execute(sql, params, many, context)

    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    with tenant_scope(contact.tenant_id), connection.execute_wrapper(look):
        memory_search(tenant=contact.tenant, contact=contact, query=query, query_vector=vector, **search)
    assert len(seen) == 1
    return seen[0], _setting(name)


@pytest.fixture
def contact():
    contact = ContactFactory()
    MemoryFactory.bulk(GARDEN_TOPICS[:8], tenant=contact.tenant, contact=contact)
    return contact


def _large_from(settings, size: int, ef_search: int = 400) -> None:  # type: ignore[no-untyped-def]
    settings.ENGRAM = {**settings.ENGRAM, "VECTOR_LARGE_SCOPE": size, "VECTOR_LARGE_SCOPE_EF_SEARCH": ef_search}


def test_a_scope_below_the_large_size_is_searched_at_the_connections_ef_search(contact, settings):
    _large_from(settings, 9)
    assert _search_seeing_ef(contact) == ("100", "100")


def test_a_large_scope_is_searched_wider_and_the_setting_restored(contact, settings):
    _large_from(settings, 8)
    assert _search_seeing_ef(contact) == ("400", "100")


def test_the_wider_search_can_be_turned_off(contact, settings):
    _large_from(settings, 8, ef_search=0)
    assert _search_seeing_ef(contact) == ("100", "100")


def test_inside_a_transaction_the_wider_search_ends_with_the_search(contact, settings):
    _large_from(settings, 8)
    with transaction.atomic():
        during, after = _search_seeing_ef(contact)
        assert (during, after) == ("400", "100")
    assert _ef_search() == "100"


def test_a_failed_statement_does_not_leave_the_connection_searching_wider():
    with connection.cursor() as cursor, pytest.raises(ZeroDivisionError), vector_effort.searching_at(cursor, 400):
        assert _ef_search() == "400"
        raise ZeroDivisionError
    assert _ef_search() == "100"
    failing = pytest.raises(Exception, match="division by zero")
    with failing, transaction.atomic(), connection.cursor() as cursor, vector_effort.searching_at(cursor, 400):
        cursor.execute("SELECT 1 / 0")
    assert _ef_search() == "100"


def test_a_small_scope_s_candidates_run_on_the_generic_plan(contact, monkeypatch):
    monkeypatch.setattr(vector_effort, "CUSTOM_PLAN_FROM", 9)
    assert _search_seeing(contact, "plan_cache_mode") == ("force_generic_plan", "force_generic_plan")
    # narrowed to some types, however few: how many the contact holds is what the plan must weigh
    narrowed = _search_seeing(contact, "plan_cache_mode", memory_types=["episode"])
    assert narrowed == ("force_custom_plan", "force_generic_plan")
    # and so are its statistics, the whole scope counted (a scope this small has no lexicon)
    assert _search_seeing(contact, "plan_cache_mode", marker=STATISTICS) == ("force_generic_plan",) * 2
    narrowed = _search_seeing(contact, "plan_cache_mode", marker=STATISTICS, memory_types=["episode"])
    assert narrowed == ("force_custom_plan", "force_generic_plan")


def test_a_scope_of_the_custom_plan_size_is_planned_for_itself_and_the_setting_restored(contact, monkeypatch, settings):
    monkeypatch.setattr(vector_effort, "CUSTOM_PLAN_FROM", 8)
    assert _search_seeing(contact, "plan_cache_mode") == ("force_custom_plan", "force_generic_plan")
    with transaction.atomic():
        assert _search_seeing(contact, "plan_cache_mode") == ("force_custom_plan", "force_generic_plan")
    _large_from(settings, 8)  # both settings at once, both restored
    assert _search_seeing(contact, "plan_cache_mode") == ("force_custom_plan", "force_generic_plan")
    assert _ef_search() == "100"


def test_a_failed_statement_leaves_neither_setting_behind():
    wanted = {"hnsw.ef_search": "400", "plan_cache_mode": "force_custom_plan"}
    raising = pytest.raises(ZeroDivisionError)
    with connection.cursor() as cursor, raising, settings_in_force(cursor, wanted):
        assert (_ef_search(), _setting("plan_cache_mode")) == ("400", "force_custom_plan")
        raise ZeroDivisionError
    assert (_ef_search(), _setting("plan_cache_mode")) == ("100", "force_generic_plan")
    failing = pytest.raises(Exception, match="division by zero")
    with failing, transaction.atomic(), connection.cursor() as cursor, settings_in_force(cursor, wanted):
        cursor.execute("SELECT 1 / 0")
    assert (_ef_search(), _setting("plan_cache_mode")) == ("100", "force_generic_plan")
