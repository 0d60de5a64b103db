"""Sessions within a conversation (pure: no database).

A client may send a whole chat under one `conversation_id` — one thread per end-user, kept for months — or a
new id per visit. Retrieval groups turns by *session* (the session prior, the neighbouring turns, context
embeddings, compression: docs/retrieval.md §3), so a conversation id kept for months would be one session
whose turns share nothing. A conversation's messages are therefore split into sessions at silences: a turn
that comes more than `gap` after the one before it starts the next session. The first session keeps the
conversation's own id (what a conversation per visit gives, unchanged); later ones are `<id>/<n>` — a
conversation id never holds "/" (the API refuses it), so no client id can be mistaken for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

SEPARATOR = "/"
CONVERSATION_ID_MAX_LENGTH = 255  # what the API accepts (Conversation.external_id)
# the longest session id: a conversation id of CONVERSATION_ID_MAX_LENGTH and a session number of a
# PositiveIntegerField (10 digits). Memory.source_session_id holds it whole: cut to the conversation id's
# length, `<id>/12` of a 254-character id would read `<id>/1` and two sessions would group as one.
SESSION_ID_MAX_LENGTH = CONVERSATION_ID_MAX_LENGTH + len(SEPARATOR) + 10


@dataclass(frozen=True)
class SessionState:
    """Where a conversation stands: the number of its current session and the time of its latest turn."""

    number: int
    last_at: datetime | None


def session_id(conversation_id: str, number: int) -> str:
    return conversation_id if number == 0 else f"{conversation_id}{SEPARATOR}{number}"


def later_sessions_pattern(conversation_id: str) -> str:
    """A LIKE pattern matching the conversation's later sessions (`<id>/<n>`; the first is the id itself)."""
    escaped = conversation_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}{SEPARATOR}%"


def sessions_assign(
    state: SessionState, times: Sequence[datetime], *, gap: timedelta
) -> tuple[list[int], SessionState]:
    """The session number of each of a conversation's new turns (`times`, in the order they are written)
    and the state after them. Turns are walked in time order; a turn later than the latest so far by more
    than `gap` opens the next session. A turn that arrives out of order (earlier than the latest turn) joins
    the current session: the sessions already written are not renumbered."""
    numbers = [0] * len(times)
    number, last_at = state.number, state.last_at
    for index in sorted(range(len(times)), key=lambda i: times[i]):
        at = times[index]
        if last_at is not None and at - last_at > gap:
            number += 1
        if last_at is None or at > last_at:
            last_at = at
        numbers[index] = number
    return numbers, SessionState(number, last_at)
