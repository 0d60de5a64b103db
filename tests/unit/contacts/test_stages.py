"""Relationship stages, streaks, churn risk and memory budgets (pure)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from apps.contacts.intelligence.stages import (
    STAGE_MEMORY_BUDGETS,
    STAGES,
    churn_risk,
    next_streak,
    relationship_stage,
)

NOW = datetime(2026, 4, 10, 12, 0, tzinfo=UTC)


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


@pytest.mark.parametrize(
    ("sessions", "streak", "last_seen", "stage"),
    [
        (0, 0, None, "new"),
        (2, 2, days_ago(0), "new"),
        (2, 0, days_ago(100), "new"),  # a new contact never fades
        (3, 1, days_ago(1), "building"),
        (14, 10, days_ago(1), "building"),
        (15, 1, days_ago(1), "established"),
        (29, 20, days_ago(0), "established"),
        (30, 13, days_ago(0), "established"),  # 30+ sessions without the 14-day streak
        (30, 14, days_ago(0), "deep"),
        (22, 20, None, "established"),  # never seen: judged by sessions alone
        (3, 1, days_ago(13.99), "building"),
        (3, 1, days_ago(14), "fading"),
        (40, 30, days_ago(20), "fading"),
        (40, 30, days_ago(44.99), "fading"),
        (40, 30, days_ago(45), "dormant"),
        (5, 1, days_ago(400), "dormant"),
    ],
    ids=[
        "zero",
        "two-sessions",
        "new-inactive",
        "building-min",
        "building-max",
        "established-min",
        "established-streak",
        "thirty-no-streak",
        "deep",
        "never-seen",
        "just-before-fading",
        "fading-min",
        "deep-fades",
        "just-before-dormant",
        "dormant-min",
        "dormant-long",
    ],
)
def test_relationship_stage(sessions, streak, last_seen, stage):
    assert relationship_stage(sessions_count=sessions, active_streak=streak, last_seen_at=last_seen, now=NOW) == stage


def test_relationship_stage_thresholds_are_configurable():
    kwargs = {"sessions_count": 20, "active_streak": 0, "now": NOW, "fading_after_days": 7, "dormant_after_days": 10}

    assert relationship_stage(last_seen_at=days_ago(6), **kwargs) == "established"
    assert relationship_stage(last_seen_at=days_ago(7), **kwargs) == "fading"
    assert relationship_stage(last_seen_at=days_ago(10), **kwargs) == "dormant"


def test_last_seen_in_the_future_counts_as_active():
    assert relationship_stage(sessions_count=5, active_streak=1, last_seen_at=NOW + timedelta(hours=1), now=NOW) == (
        "building"
    )


@pytest.mark.parametrize(
    ("previous", "last", "session", "streak"),
    [
        (0, None, date(2026, 4, 10), 1),
        (7, None, date(2026, 4, 10), 1),
        (3, date(2026, 4, 10), date(2026, 4, 10), 3),
        (0, date(2026, 4, 10), date(2026, 4, 10), 1),
        (3, date(2026, 4, 9), date(2026, 4, 10), 4),
        (0, date(2026, 4, 9), date(2026, 4, 10), 2),
        (3, date(2026, 2, 28), date(2026, 3, 1), 4),  # across a month end
        (3, date(2026, 4, 8), date(2026, 4, 10), 1),
        (30, date(2026, 1, 1), date(2026, 4, 10), 1),
        (5, date(2026, 4, 10), date(2026, 4, 9), 5),  # late, out-of-order session
    ],
    ids=[
        "first",
        "first-ignores-previous",
        "same-day",
        "same-day-min-one",
        "next-day",
        "next-day-from-zero",
        "month-end",
        "one-day-gap",
        "long-gap",
        "out-of-order",
    ],
)
def test_next_streak(previous, last, session, streak):
    assert next_streak(previous_streak=previous, last_session_date=last, session_date=session) == streak


@pytest.mark.parametrize(
    ("days_inactive", "drop", "current", "risk"),
    [
        (0, 0, 0, 0.0),
        (1.9, 0, 0, 0.0),
        (2, 0, 0, 0.0),
        (9, 0, 0, 0.2),
        (16, 0, 0, 0.4),
        (30, 0, 0, 0.8),
        (90, 0, 0, 0.8),
        (5, 0, 0, 0.086),  # 0.8 * 3/28 = 0.0857...
        (0, 0.25, 0, 0.1),
        (0, 0.5, 0, 0.2),
        (0, 0.9, 0, 0.2),
        (30, 0.5, 0, 1.0),
        (23, 0.5, 0, 0.8),
        (0, 0, 0.8, 0.4),  # came back: halves instead of snapping to zero
        (0, 0, 0.4, 0.2),
        (16, 0, 0.6, 0.4),  # the computed level wins when it is higher than half the current
        (16, 0, 0.9, 0.45),
        (-3, -1, -1, 0.0),  # nonsense inputs are clamped
        (0, 2, 5, 0.5),
    ],
    ids=[
        "active",
        "grace",
        "grace-edge",
        "nine-days",
        "sixteen-days",
        "thirty-days",
        "capped",
        "rounded",
        "quarter-drop",
        "half-drop",
        "drop-capped",
        "sum-capped",
        "inactive-plus-drop",
        "recovery",
        "recovery-2",
        "target-wins",
        "half-current-wins",
        "negative-inputs",
        "oversized-inputs",
    ],
)
def test_churn_risk(days_inactive, drop, current, risk):
    assert churn_risk(days_inactive=days_inactive, engagement_drop=drop, current=current) == risk


def test_stage_memory_budgets():
    assert STAGES == ("new", "building", "established", "deep", "fading", "dormant")
    assert STAGE_MEMORY_BUDGETS == {
        "new": 0,
        "building": 500,
        "established": 1200,
        "deep": 2000,
        "fading": 800,
        "dormant": 200,
    }
