"""Schemathesis hooks for the fuzz run (schemathesis.toml `hooks`): only for rules the OpenAPI schema cannot state,
each narrowed to the operations it concerns. Nothing here hides a warning: a rule the schema can state belongs in
the schema (apps/core/fields.py), and this file must not grow to replace it.

- `occurred_at` of an ingested turn lies between 1970-01-01T00:00:00Z and one day ahead of now
  (apps/core/moments.py): OpenAPI 3.0 has no bounds for date-times, and the generator draws years 1 to 9999.
  A drawn moment outside the window is moved into it (the same moment of another year), so ingest is exercised
  with the dates clients send; an `occurred_at` that is not a date-time (a negative case) is left alone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


def _within_window(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    latest = datetime.now(UTC)
    if EARLIEST <= moment <= latest:
        return value
    years = latest.year - EARLIEST.year  # the same month, day and time, in a year of the window
    try:
        moved = moment.astimezone(UTC).replace(year=EARLIEST.year + moment.year % years)
    except ValueError:  # 29 February in a year without one
        moved = moment.astimezone(UTC).replace(year=EARLIEST.year + moment.year % years, day=28)
    return min(moved, latest - timedelta(days=1)).isoformat()


def _turn(item: Any) -> Any:
    if isinstance(item, dict) and "occurred_at" in item:
        return {**item, "occurred_at": _within_window(item["occurred_at"])}
    return item


@schemathesis.hook("map_body").apply_to(method="POST", path_regex=r"/ingest$")
def occurred_at_in_the_accepted_window(context: schemathesis.HookContext, body: Any) -> Any:
    return _turn(body)


@schemathesis.hook("map_body").apply_to(method="POST", path_regex=r"/ingest/batch$")
def batch_occurred_at_in_the_accepted_window(context: schemathesis.HookContext, body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        return {**body, "messages": [_turn(item) for item in body["messages"]]}
    return body
