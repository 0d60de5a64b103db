"""Decay in SQL, the same formula as scoring.decayed_importance (a test checks they agree)."""

from __future__ import annotations

from apps.memories import scoring


def decayed_importance_sql(*, at_sql: str, alias: str = "m") -> str:
    """SQL expression: the importance of memory row `alias` at time `at_sql` (a timestamptz expression)."""
    floors = " ".join(f"WHEN '{memory_type}' THEN {floor}" for memory_type, floor in scoring.DECAY_FLOOR.items())
    idle_days = f"EXTRACT(EPOCH FROM ({at_sql} - {alias}.accessed_at)) / 86400.0"
    decayed = (
        f"GREATEST(0.0, LEAST(1.0, {alias}.base_importance - {alias}.decay_rate * "
        f"GREATEST(0.0, {idle_days} - {scoring.DECAY_GRACE_DAYS})))"
    )
    # summaries derived from episodes (session compression) decay like the episodes they replace
    floor = (
        f"CASE WHEN {alias}.metadata ? 'compression_source' THEN 0.0 "
        f"ELSE LEAST({alias}.base_importance, CASE {alias}.memory_type {floors} ELSE 0.0 END) END"
    )
    return (
        f"CASE WHEN {alias}.is_pinned THEN {alias}.base_importance "
        f"ELSE ROUND(GREATEST({floor}, {decayed})::numeric, 4)::float8 END"
    )
