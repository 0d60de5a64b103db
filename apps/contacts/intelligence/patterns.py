"""Pattern detectors over a contact's history (contact-intelligence.txt §4.2); the consolidation jobs feed them rows.

Naive datetimes are taken to be in the timezone passed (UTC by default); aware ones are converted to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo

from apps.contacts.intelligence.mood import is_negative

HOURS_PER_DAY = 24


def sustained_negative_runs(
    moods: Sequence[tuple[datetime, str]], *, min_run: int = 3
) -> list[tuple[datetime, datetime]]:
    """(first, last) timestamp of every run of at least `min_run` consecutive negative moods (sad, anxious, angry).

    Readings are ordered by time first; any other mood (frustrated and neutral included) ends a run.
    """
    runs: list[tuple[datetime, datetime]] = []
    current: list[datetime] = []
    for moment, mood in sorted(moods, key=lambda reading: reading[0]):
        if is_negative(mood):
            current.append(moment)
            continue
        if len(current) >= min_run:
            runs.append((current[0], current[-1]))
        current = []
    if len(current) >= min_run:
        runs.append((current[0], current[-1]))
    return runs


def _local(moment: datetime, tz: tzinfo) -> datetime:
    return moment.replace(tzinfo=tz) if moment.tzinfo is None else moment.astimezone(tz)


def preferred_chat_window(
    timestamps: Sequence[datetime],
    *,
    min_days: int = 14,
    share: float = 0.7,
    window_hours: int = 2,
    tz: tzinfo = UTC,
) -> tuple[int, int] | None:
    """(start_hour, end_hour) of the `window_hours` window holding ≥ `share` of the messages, or None.

    Needs the timestamps to span at least `min_days` days. Windows may wrap midnight ((23, 1) is 11pm-1am) and the
    end hour is exclusive ((22, 0) is 10pm-12am). When several windows qualify the busiest wins, then the one whose
    first hour is busiest (all messages at 22:xx gives (22, 0), not (21, 23)), then the earliest.
    """
    if not timestamps or not 1 <= window_hours <= HOURS_PER_DAY:
        return None
    local = [_local(moment, tz) for moment in timestamps]
    if max(local) - min(local) < timedelta(days=min_days):
        return None
    per_hour = Counter(moment.hour for moment in local)

    def window_count(start: int) -> int:
        return sum(per_hour[(start + offset) % HOURS_PER_DAY] for offset in range(window_hours))

    best_start = max(range(HOURS_PER_DAY), key=lambda start: (window_count(start), per_hour[start], -start))
    if window_count(best_start) < share * len(local):
        return None
    return best_start, (best_start + window_hours) % HOURS_PER_DAY


def _hour_label(hour: int) -> str:
    if not 0 <= hour < HOURS_PER_DAY:
        raise ValueError(f"hour must be 0-23, not {hour}")
    suffix = "am" if hour < 12 else "pm"
    return f"{hour % 12 or 12}{suffix}"


def describe_chat_window(start_hour: int, end_hour: int) -> str:
    """(22, 0) → "Usually chats between 10pm-12am" (the wording of the spec's pattern memory)."""
    return f"Usually chats between {_hour_label(start_hour)}-{_hour_label(end_hour)}"


def _average_messages(sessions: Sequence[tuple[datetime, int]], *, after: datetime, until: datetime) -> float | None:
    counts = [count for started_at, count in sessions if after < started_at <= until]
    return sum(counts) / len(counts) if counts else None


def engagement_drop(sessions: Sequence[tuple[datetime, int]], *, now: datetime, days: int = 7) -> float:
    """How far average messages per session fell, 0..1: the last `days` (now - days, now] against the `days`
    before. 0 when either period has no session: no baseline is no evidence, and no recent session at all is
    inactivity, which churn_risk weighs separately. Rounded to 3 decimals."""
    return round(_unrounded_drop(sessions, now=now, days=days), 3)


def _unrounded_drop(sessions: Sequence[tuple[datetime, int]], *, now: datetime, days: int) -> float:
    period = timedelta(days=days)
    recent = _average_messages(sessions, after=now - period, until=now)
    previous = _average_messages(sessions, after=now - 2 * period, until=now - period)
    if recent is None or previous is None or previous <= 0:
        return 0.0
    return max(0.0, 1 - recent / previous)


def engagement_decline(
    sessions: Sequence[tuple[datetime, int]], *, now: datetime, days: int = 7, drop: float = 0.5
) -> bool:
    """True when average messages per session fell by at least `drop` (50%) against the previous period."""
    return _unrounded_drop(sessions, now=now, days=days) >= drop
