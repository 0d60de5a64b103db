"""Pattern detectors over mood, timing and session histories (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from apps.contacts.intelligence.patterns import (
    describe_chat_window,
    engagement_decline,
    engagement_drop,
    preferred_chat_window,
    sustained_negative_runs,
)

START = datetime(2026, 3, 1, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return START + timedelta(minutes=minutes)


def history(*moods: str) -> list[tuple[datetime, str]]:
    return [(at(index), mood) for index, mood in enumerate(moods)]


@pytest.mark.parametrize(
    ("moods", "runs"),
    [
        ((), []),
        (("sad", "sad"), []),
        (("sad", "anxious", "angry"), [(at(0), at(2))]),
        (("happy", "sad", "sad", "sad", "sad", "neutral"), [(at(1), at(4))]),
        (("sad", "sad", "happy", "sad", "sad"), []),
        (("sad", "sad", "sad", "neutral", "angry", "anxious", "sad"), [(at(0), at(2)), (at(4), at(6))]),
        (("sad", "frustrated", "sad", "sad"), []),  # frustrated is not in the negative set: it ends the run
    ],
    ids=["empty", "too-short", "mixed-negatives", "inner-run", "broken", "two-runs", "frustrated-breaks"],
)
def test_sustained_negative_runs(moods, runs):
    assert sustained_negative_runs(history(*moods)) == runs


def test_sustained_negative_runs_sorts_by_time_and_honours_min_run():
    readings = [(at(2), "sad"), (at(0), "sad"), (at(1), "happy"), (at(3), "sad")]

    assert sustained_negative_runs(readings) == []
    assert sustained_negative_runs(readings, min_run=2) == [(at(2), at(3))]


def nightly(hour: int, minute: int = 15, days: int = 15, start: datetime = START) -> list[datetime]:
    return [start.replace(hour=hour, minute=minute) + timedelta(days=day) for day in range(days)]


def test_window_10pm_to_midnight():
    timestamps = nightly(22) + nightly(23, minute=40)[:5] + nightly(9)[:6]  # 20 of 26 in 22-24 = 76.9%

    assert preferred_chat_window(timestamps) == (22, 0)
    assert describe_chat_window(22, 0) == "Usually chats between 10pm-12am"


def test_window_wraps_midnight():
    timestamps = nightly(23) + nightly(0, minute=30)

    assert preferred_chat_window(timestamps) == (23, 1)
    assert describe_chat_window(23, 1) == "Usually chats between 11pm-1am"


def test_window_prefers_the_busy_first_hour_on_ties():
    assert preferred_chat_window(nightly(14)) == (14, 16)


def test_window_needs_14_days():
    timestamps = nightly(22, days=14)  # day 0 .. day 13: spans 13 days

    assert preferred_chat_window(timestamps) is None
    assert preferred_chat_window(nightly(22, days=15)) == (22, 0)


def test_window_needs_70_percent():
    timestamps = nightly(22)[:10] + nightly(9, days=16)[11:]  # 10 of 15 = 66.7%, over 15 days

    assert preferred_chat_window(timestamps) is None
    assert preferred_chat_window(timestamps, share=0.66) == (22, 0)


def test_window_is_computed_in_the_given_timezone():
    ist = timezone(timedelta(hours=5, minutes=30))
    timestamps = nightly(16, minute=45)  # 16:45 UTC = 22:15 IST

    assert preferred_chat_window(timestamps) == (16, 18)
    assert preferred_chat_window(timestamps, tz=ist) == (22, 0)


def test_window_with_naive_timestamps_and_empty_input():
    naive = [moment.replace(tzinfo=None) for moment in nightly(8)]

    assert preferred_chat_window(naive) == (8, 10)
    assert preferred_chat_window([]) is None


@pytest.mark.parametrize(
    ("start", "end", "text"),
    [(0, 2, "12am-2am"), (11, 13, "11am-1pm"), (12, 14, "12pm-2pm"), (21, 23, "9pm-11pm")],
)
def test_describe_chat_window(start, end, text):
    assert describe_chat_window(start, end) == f"Usually chats between {text}"


def test_describe_chat_window_rejects_bad_hours():
    with pytest.raises(ValueError, match="hour must be 0-23"):
        describe_chat_window(22, 24)


NOW = datetime(2026, 4, 15, 12, 0, tzinfo=UTC)


def sessions(days_ago_and_counts: list[tuple[float, int]]) -> list[tuple[datetime, int]]:
    return [(NOW - timedelta(days=days), count) for days, count in days_ago_and_counts]


@pytest.mark.parametrize(
    ("rows", "drop", "is_decline"),
    [
        ([(10, 10), (9, 10), (3, 5), (1, 5)], 0.5, True),
        ([(10, 10), (8, 12), (2, 4)], 0.636, True),
        ([(10, 10), (2, 6)], 0.4, False),
        ([(10, 10), (2, 12)], 0.0, False),  # more engaged
        ([(2, 1), (1, 1)], 0.0, False),  # no previous period
        ([(10, 10), (9, 8)], 0.0, False),  # no recent session: inactivity, not an engagement drop
        ([(14.5, 10), (10, 10), (2, 5)], 0.5, True),  # older than two periods is ignored
        ([(7, 10), (6.99, 5)], 0.5, True),  # exactly 7 days ago belongs to the previous period
        ([], 0.0, False),
    ],
    ids=[
        "half",
        "steeper",
        "forty-percent",
        "increase",
        "no-baseline",
        "no-recent",
        "old-ignored",
        "boundary",
        "empty",
    ],
)
def test_engagement_decline(rows, drop, is_decline):
    assert engagement_drop(sessions(rows), now=NOW) == drop
    assert engagement_decline(sessions(rows), now=NOW) is is_decline


def test_engagement_decline_thresholds_are_configurable():
    rows = sessions([(5, 10), (1, 7)])  # 3-day periods: 10 → 7

    assert engagement_decline(rows, now=NOW, days=3, drop=0.3) is True
    assert engagement_decline(rows, now=NOW, days=3) is False
