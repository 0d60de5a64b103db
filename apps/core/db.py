"""Database helpers shared by the services."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connection

T = TypeVar("T")

DEADLOCK_DETECTED = "40P01"


def retried_on_deadlock(transaction_body: Callable[[], T], *, attempts: int = 6, backoff: float = 0.25) -> T:
    """Run `transaction_body` (which opens its own transaction) again when PostgreSQL aborts it as a deadlock
    victim — a deletion that cascades over rows a worker is writing meets that worker's locks in another
    order, and one of the two must give way. Waits backoff × 2^(attempt − 1) between attempts (0.25 s up to
    4 s: a worker's scope transaction is over by then). Inside an outer transaction nothing is retried: the
    outer one is aborted with it."""
    for attempt in range(1, attempts + 1):
        try:
            return transaction_body()
        except OperationalError as exc:
            deadlock = getattr(exc.__cause__, "sqlstate", None) == DEADLOCK_DETECTED
            if not deadlock or attempt == attempts or connection.in_atomic_block:
                raise
            time.sleep(backoff * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
