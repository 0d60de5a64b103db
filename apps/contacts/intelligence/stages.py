"""Relationship stages, active streaks and churn risk (contact-intelligence.txt §5, chat-engine-memory.txt §3.4)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

STAGES = ("new", "building", "established", "deep", "fading", "dormant")

# Token budget for injected memories per stage (chat-engine-memory.txt §3.4)
STAGE_MEMORY_BUDGETS: dict[str, int] = {
    "new": 0,
    "building": 500,
    "established": 1200,
    "deep": 2000,
    "fading": 800,
    "dormant": 200,
}


@dataclass(frozen=True)
class Density:
    """What a stage's context holds besides its token budget (chat-engine-memory.txt §3.4, "context density")."""

    memory_types: tuple[str, ...]  # the memory types searched
    recent_episode_days: int | None = None  # episodes only when they happened this recently
    last_topic_only: bool = False  # no search: the contact's most recent episode, what they last talked about


EVERYTHING = Density(("fact", "preference", "episode", "pattern"))
STAGE_DENSITY: dict[str, Density] = {
    "new": Density(()),  # no memories: a first interaction
    "building": Density(("fact",)),  # basic facts only
    "established": Density(("fact", "preference", "episode"), recent_episode_days=30),  # + recent episodes
    "deep": EVERYTHING,  # full context, patterns included
    "fading": Density(("fact", "preference")),  # key facts to re-engage
    "dormant": Density((), last_topic_only=True),  # minimal: name (the header) + last topic
}

BUILDING_MIN_SESSIONS = 3
ESTABLISHED_MIN_SESSIONS = 15
DEEP_MIN_SESSIONS = 30
DEEP_MIN_STREAK_DAYS = 14

SECONDS_PER_DAY = 86_400


def days_between(earlier: datetime | None, later: datetime) -> float | None:
    if earlier is None:
        return None
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def relationship_stage(
    *,
    sessions_count: int,
    active_streak: int,
    last_seen_at: datetime | None,
    now: datetime,
    fading_after_days: int = 14,
    dormant_after_days: int = 45,
) -> str:
    """The stage a contact is in now.

    new (< 3 sessions) never fades: there is no relationship to lose yet. From building on, inactivity wins:
    ≥ dormant_after_days → dormant, ≥ fading_after_days → fading. Otherwise by activity: deep (30+ sessions and a
    14+ day streak), established (15+ sessions, including 30+ without the streak), building (3-14 sessions).
    A contact never seen (last_seen_at None) is judged by sessions alone.
    """
    if sessions_count < BUILDING_MIN_SESSIONS:
        return "new"
    inactive_days = days_between(last_seen_at, now)
    if inactive_days is not None:
        if inactive_days >= dormant_after_days:
            return "dormant"
        if inactive_days >= fading_after_days:
            return "fading"
    if sessions_count >= DEEP_MIN_SESSIONS and active_streak >= DEEP_MIN_STREAK_DAYS:
        return "deep"
    if sessions_count >= ESTABLISHED_MIN_SESSIONS:
        return "established"
    return "building"


def next_streak(*, previous_streak: int, last_session_date: date | None, session_date: date) -> int:
    """Consecutive calendar days with a session, counted in the caller's timezone (pass local dates).

    First session → 1; same day → unchanged (at least 1); next day → +1; any gap → 1. A session dated before the
    last one (late, out-of-order ingest) leaves the streak unchanged.
    """
    current = max(previous_streak, 1)
    if last_session_date is None:
        return 1
    gap_days = (session_date - last_session_date).days
    if gap_days <= 0:
        return current
    if gap_days == 1:
        return current + 1
    return 1


CHURN_GRACE_DAYS = 2.0
CHURN_FULL_INACTIVITY_DAYS = 30.0
CHURN_MAX_FROM_INACTIVITY = 0.8
CHURN_ENGAGEMENT_WEIGHT = 0.4  # a 50% drop in messages per session adds 0.2 (§4.2) …
CHURN_MAX_FROM_ENGAGEMENT = 0.2  # … and that is the most it adds
CHURN_RECOVERY_FACTOR = 0.5


def churn_risk(*, days_inactive: float, engagement_drop: float, current: float) -> float:
    """Churn risk in 0..1, rounded to 3 decimals.

    target = inactivity + engagement, capped at 1, where
      inactivity = 0 below 2 days, rising linearly to 0.8 at 30 days and staying there:
                   0.8 * clamp((days_inactive - 2) / 28, 0, 1)
      engagement = min(0.2, 0.4 * clamp(engagement_drop, 0, 1))   (engagement_drop: 0.5 means messages per
                   session fell by half; a 50%+ drop adds the 0.2 of §4.2)
    risk = max(target, 0.5 * current): risk rises at once, but when a contact comes back it halves per
    recomputation instead of snapping to zero — one message after a long absence is not yet a recovery.
    """
    inactivity_share = _clamp((days_inactive - CHURN_GRACE_DAYS) / (CHURN_FULL_INACTIVITY_DAYS - CHURN_GRACE_DAYS))
    inactivity = CHURN_MAX_FROM_INACTIVITY * inactivity_share
    engagement = min(CHURN_MAX_FROM_ENGAGEMENT, CHURN_ENGAGEMENT_WEIGHT * _clamp(engagement_drop))
    target = _clamp(inactivity + engagement)
    return round(max(target, CHURN_RECOVERY_FACTOR * _clamp(current)), 3)


def _clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return max(low, min(high, value))
