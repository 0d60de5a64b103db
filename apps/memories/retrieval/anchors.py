"""The day of an event a question dates something by: "the day after the concert", "the weekend before her
trip", "after the move" (issue 31, item 5).

The question names no date, only an event (signals/time_window.event_anchors); the scope's memories date it.
The memories that hold all of the event's words (the scoped full-text index, as the keyword source; an event
more than EVENT_ROW_BUDGET memories mention is no one event), best match first, give the day it happened
(`time_window.event_day`: the day a memory names — "we went to the concert yesterday", said on 9 May, names
8 May — else the day it was said). The first MAX_EVENT_DAYS distinct days each become a window
(`EventAnchor.window`), which the search then uses like a date the question wrote: the time source, the time
signal and the breakdown (`time_window` says "the day after the concert" and its days). An event no memory
mentions names no window.

One statement, and only for a question that names such an event and no date of its own (a date it writes
says when more surely than an event it names).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import date

from apps.core.rows import bound_cursor
from apps.memories.retrieval.query import Scope
from apps.memories.retrieval.signals import time_window

# the event's days the windows come from: an event mentioned on several days ("the concert" planned on one,
# told about on another) is represented by its best-matching two
MAX_EVENT_DAYS = 2
# an event whose words more memories than this hold is no one event ("after the move" of someone who talks of
# moving all the time): it names no window. The statement reads at most one row more than this per event (the
# index finds them all, the heap is read until the limit), then ranks what it read. At 100k, "the day after the
# move" (1,817 matches in the heavy contact): 6.5 ms ranked whole, 5.0 ms with 200 here, 2.9 ms with 50 (of
# which ~1.5 ms the index's bitmap, ~2 ms planning); an event of one match 0.5 ms
EVENT_ROW_BUDGET = 50


def windows(scope: Scope, anchors: Sequence[time_window.EventAnchor]) -> tuple[time_window.TimeWindow, ...]:
    """The windows `anchors` name in this scope: for each, around each of the first MAX_EVENT_DAYS days its
    event's words are said of; () for an event the scope's memories never mention."""
    if not anchors:
        return ()
    scope_sql, params = scope.sql(owner=False)
    selects = []
    for index, anchor in enumerate(anchors):
        params[f"event_{index}"] = anchor.words
        tsquery = f"plainto_tsquery('english', %(event_{index})s)"
        selects.append(
            f"(SELECT {index}, ts_rank(m.search_vector, {tsquery}), m.occurred_at, m.index_terms "
            "FROM memories_memory m "
            # an event of words the dictionary drops ("the day after the themselves") names nothing: the
            # scope's token AND-ed with an empty tsquery would match every memory of the scope
            f"WHERE numnode({tsquery}) > 0 AND {scope_sql} AND {scope.matching(tsquery)} "
            "LIMIT %(event_rows)s)"
        )
    params["event_rows"] = EVENT_ROW_BUDGET + 1
    with bound_cursor() as cursor:
        cursor.execute(" UNION ALL ".join(selects), params)
        rows = cursor.fetchall()
    matched = Counter(row[0] for row in rows)
    days: dict[int, list[date]] = {}
    # each event's memories best match first, then the earliest said
    for index, _rank, occurred_at, index_terms in sorted(rows, key=lambda row: (row[0], -row[1], row[2])):
        if matched[index] > EVENT_ROW_BUDGET:
            continue
        day = time_window.event_day(occurred_at, index_terms or "")
        found = days.setdefault(index, [])
        if day not in found and len(found) < MAX_EVENT_DAYS:
            found.append(day)
    return tuple(
        dict.fromkeys(anchor.window(day) for index, anchor in enumerate(anchors) for day in days.get(index, []))
    )
