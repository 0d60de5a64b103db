"""retried_on_deadlock: a transaction that PostgreSQL picks as a deadlock victim runs again."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, transaction

from apps.core.db import retried_on_deadlock
from apps.tenants.models import Tenant
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _lock(tenant_id) -> None:
    Tenant.objects.select_for_update().filter(pk=tenant_id).first()


def test_the_deadlock_victim_is_run_again_and_succeeds():
    first, second = TenantFactory(), TenantFactory()
    both_hold_one = threading.Barrier(2)
    attempts: list[int] = []
    results: dict[str, object] = {}

    def victim_side() -> str:  # locks first, then second
        attempts.append(1)
        with transaction.atomic():
            _lock(first.pk)
            if len(attempts) == 1:
                both_hold_one.wait(10)
            _lock(second.pk)
        return "done"

    def other_side() -> None:  # locks second, then first: one of the two is the deadlock victim
        try:
            with transaction.atomic():
                _lock(second.pk)
                both_hold_one.wait(10)
                _lock(first.pk)
            results["other"] = "done"
        except OperationalError as exc:
            results["other"] = exc.__cause__.sqlstate if exc.__cause__ else "error"
        finally:
            connection.close()

    def run_victim_side() -> None:
        try:
            results["retried"] = retried_on_deadlock(victim_side)
        finally:
            connection.close()

    threads = [threading.Thread(target=run_victim_side), threading.Thread(target=other_side)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert results["retried"] == "done"  # whichever PostgreSQL aborted, the retried side finished
    if results["other"] == "done":
        assert len(attempts) == 2  # it was the victim and ran again
    else:
        assert results["other"] == "40P01" and len(attempts) == 1


def test_inside_an_outer_transaction_nothing_is_retried():
    calls: list[int] = []

    def body() -> None:
        calls.append(1)
        raise OperationalError("deadlock detected") from type("Cause", (Exception,), {"sqlstate": "40P01"})()

    with pytest.raises(OperationalError), transaction.atomic():
        retried_on_deadlock(body)
    assert calls == [1]
