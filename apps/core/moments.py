"""When a message can have happened: an `occurred_at` before 1970 or more than a day ahead of now is refused
(400), not stored. Year 1 broke extraction's date arithmetic and lost the message's memories; year 9999 pinned
a contact first in every "last seen" ordering for ever. A day ahead leaves room for clocks that run fast and
for time zones a client got wrong."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
AHEAD_ALLOWED = timedelta(days=1)


def occurred_at_problem(value: datetime, *, now: datetime | None = None) -> str | None:
    """Why `value` cannot be when a message occurred, or None. A value without a time zone is read as UTC."""
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    latest = (now or datetime.now(UTC)) + AHEAD_ALLOWED
    if moment < EARLIEST:
        return "occurred_at must be 1970-01-01T00:00:00Z or later."
    if moment > latest:
        return f"occurred_at must be at most one day ahead of now (at most {latest.isoformat(timespec='seconds')})."
    return None
