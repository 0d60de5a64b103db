"""A conversation's turns split into sessions at silences (apps/conversations/sessions.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apps.conversations.sessions import SessionState, later_sessions_pattern, session_id, sessions_assign

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
GAP = timedelta(minutes=30)


def minutes(*offsets: float) -> list[datetime]:
    return [T0 + timedelta(minutes=offset) for offset in offsets]


def test_a_silence_longer_than_the_gap_opens_the_next_session():
    numbers, state = sessions_assign(SessionState(0, None), minutes(0, 5, 34, 35, 70, 24 * 60), gap=GAP)
    assert numbers == [0, 0, 0, 0, 1, 2]  # 29 minutes is not a silence, 35 is, and so is the next day
    assert state == SessionState(2, T0 + timedelta(days=1))


def test_a_silence_of_exactly_the_gap_stays_in_the_session():
    assert sessions_assign(SessionState(0, None), minutes(0, 30), gap=GAP)[0] == [0, 0]


def test_the_state_carries_over_from_the_batch_before():
    _, state = sessions_assign(SessionState(0, None), minutes(0, 10), gap=GAP)
    assert sessions_assign(state, minutes(20, 90), gap=GAP) == ([0, 1], SessionState(1, T0 + timedelta(minutes=90)))


def test_turns_are_walked_in_time_order_and_late_ones_join_the_current_session():
    # a batch sent out of order is numbered by time, not by position
    assert sessions_assign(SessionState(0, None), minutes(120, 0, 5), gap=GAP)[0] == [1, 0, 0]
    # a turn older than the latest one (a late delivery) joins the current session: nothing is renumbered
    state = SessionState(3, T0 + timedelta(days=2))
    assert sessions_assign(state, minutes(0), gap=GAP) == ([3], state)


def test_the_first_session_keeps_the_conversation_id():
    assert [session_id("chat-42", n) for n in (0, 1, 12)] == ["chat-42", "chat-42/1", "chat-42/12"]


def test_the_pattern_of_later_sessions_escapes_like_wildcards():
    assert later_sessions_pattern("chat-42") == "chat-42/%"
    assert later_sessions_pattern("50%_off\\x") == "50\\%\\_off\\\\x/%"
