"""Time in the query: the windows its time expressions name, and whether a memory's event time falls in one.

"What did she do on 31 Dec 2023?", "in May 2022", "last week", "two months ago", "by July 10", "the first week
of January", "last weekend", "at Christmas" — each becomes a window `[start, end)` against a reference time
(the request's `as_of`, else now; a replayed conversation is asked as of its last message). Spans are found
and dated by dateparser (`search_dates`, then `get_date_data` for the span's date and its period: a day, a
week, a month, a year); the constructs it does not read — weekends, "the first/last week(end) of <month>",
"the last two weeks of <month>", "the first half of <month>", early/mid/late/the beginning of <month>, "the
weekend/week/day before or after <date>", holidays, seasons and their beginning, middle or end — are the few
patterns below. "by"/"before"/"until"/"through" open the window to the past, "after"/"since" to the future.

A memory matches a window when the day it was said (`occurred_at`) or a day it names (its episode's index
terms: "yesterday I went bowling", said on 17 March, names 16 March) falls inside it. The match is a signal,
never a filter (a wrong parse must not hide the answer), worth the window's specificity: 1 for a day or two,
0.6 for a week, 0.3 for a month, 0.1 for longer ("this year" tells little). Graded, it gained on both
development sets where a flat 1 lost on BEAM (docs/benchmarks.md).

Pure (no Django); dateparser is imported on first use (`warm()`, called by config/wsgi.py at start-up,
pays its ~0.2 s once).
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from apps.memories.extraction.words import STOPWORDS

MONTHS = {name.lower(): index for index, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): index for index, name in enumerate(calendar.month_abbr) if name}
MONTHS["sept"] = 9
_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
_RELATIVE = r"(?:yesterday|today|tonight|tomorrow|ago|last|this past|past|next|weekend|week|month|year|decade)"
# a query without any of these names no time: dateparser is not called (most questions)
_CUE = re.compile(
    rf"\b(?:\d{{1,4}}(?:st|nd|rd|th)?|{_MONTH}|{_WEEKDAY}|{_RELATIVE}|christmas|halloween|"
    r"new year'?s?|valentine'?s?|thanksgiving|spring|summer|autumn|fall|winter)\b",
    re.IGNORECASE,
)
_ORDINAL = r"(first|1st|second|2nd|third|3rd|fourth|4th|last|final)"
_OF_MONTH = rf"\s+of\s+({_MONTH})(?:,?\s+(\d{{4}}))?"
_ORDINAL_WEEK = re.compile(rf"\b(?:the\s+)?{_ORDINAL}\s+week{_OF_MONTH}", re.IGNORECASE)
_ORDINAL_WEEKEND = re.compile(rf"\b(?:the\s+)?{_ORDINAL}\s+weekend{_OF_MONTH}", re.IGNORECASE)
_WEEKS_OF_MONTH = re.compile(rf"\b(?:the\s+)?(first|last)\s+(two|three|2|3)\s+weeks{_OF_MONTH}", re.IGNORECASE)
_HALF_OF_MONTH = re.compile(rf"\b(?:the\s+)?(first|1st|second|2nd|latter)\s+half{_OF_MONTH}", re.IGNORECASE)
_PART_OF_MONTH = re.compile(
    rf"\b(early|mid|middle of|late|end of|the end of|(?:the\s+)?(?:beginning|start) of)\s*-?\s*({_MONTH})"
    rf"(?:,?\s+(\d{{4}}))?",
    re.IGNORECASE,
)
# "the weekend before 4 October 2023", "the day after May 8": a span of days next to an absolute date
_DATE = (
    rf"\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?(?:\s+\d{{4}})?"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?(?!\d)"
)
_NEXT_TO_DATE = re.compile(
    rf"\b(?:(?:the|last|that)\s+)?(day|weekend|week)\s+(before|prior to|after)\s+(?:the\s+)?({_DATE})\b",
    re.IGNORECASE,
)
_PART_OF_SEASON = re.compile(
    r"\b(?:the\s+)?(beginning|start|middle|end)\s+of\s+(?:the\s+)?(?:(last|this|next)\s+)?"
    r"(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?(\d{4}))?\b",
    re.IGNORECASE,
)
_WEEKEND = re.compile(r"\b(last|this past|past|this|next)\s+weekend\b", re.IGNORECASE)
_SEASON = re.compile(
    r"\b(?:(last|this|this past|next)\s+)?(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?(\d{4}))?\b", re.IGNORECASE
)
_HOLIDAYS = {
    "christmas": (12, 24, 3),
    "christmas eve": (12, 24, 1),
    "new year's eve": (12, 31, 1),
    "new years eve": (12, 31, 1),
    "new year's day": (1, 1, 1),
    "halloween": (10, 31, 1),
    "valentine's day": (2, 14, 1),
    "valentines day": (2, 14, 1),
}
_HOLIDAY = re.compile(
    r"\b(" + "|".join(re.escape(name) for name in sorted(_HOLIDAYS, key=len, reverse=True)) + r")"
    r"(?:\s+(?:of\s+)?(\d{4}))?",
    re.IGNORECASE,
)
_SEASON_MONTHS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3}
_OPEN_PAST = datetime(1900, 1, 1, tzinfo=UTC)
_OPEN_FUTURE = datetime(2200, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class TimeWindow:
    start: datetime  # inclusive, aware (UTC)
    end: datetime  # exclusive
    text: str  # the expression as the query wrote it

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    @property
    def specificity(self) -> float:
        """How much a match tells: a day pins an event down, a year barely (time_match is this value)."""
        days = (self.end - self.start).days
        return 1.0 if days <= 2 else 0.6 if days <= 9 else 0.3 if days <= 31 else 0.1

    def explain(self) -> dict[str, str]:
        return {"text": self.text, "start": self.start.date().isoformat(), "end": self.end.date().isoformat()}


def windows(query: str, *, reference: datetime) -> tuple[TimeWindow, ...]:
    """The windows the query's time expressions name, against `reference` (aware); () when it names none."""
    if not _CUE.search(query):
        return ()
    reference = reference.astimezone(UTC)
    found: list[TimeWindow] = []
    rest = query
    for pattern, read in _CONSTRUCTS:
        for match in list(pattern.finditer(rest)):
            window = _within_calendar(read, match, reference)
            if window is not None:
                found.append(window)
                rest = rest.replace(match.group(0), " " * len(match.group(0)), 1)
    found += _dateparser_windows(rest, reference)
    return tuple(dict.fromkeys(found))


# "the day after the concert", "the weekend before her trip", "after the move": a time named by an event. The
# phrase is the event's words up to the first function word ("the visit to the hospital": "visit"), at most
# four; an event named by a time word ("the week after the holidays") or a number is left to the patterns above
_UNIT = r"(day|night|morning|afternoon|evening|weekend|week|month)"
_EVENT = re.compile(
    rf"\b(?:(?:the|that|a|one)\s+{_UNIT}\s+)?(before|after|prior to)\s+"
    r"(?:the|her|his|their|our|my|your|that)\s+([a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,3})",
    re.IGNORECASE,
)
_NOT_EVENTS = frozenset(
    {
        "day",
        "days",
        "night",
        "week",
        "weeks",
        "weekend",
        "month",
        "months",
        "year",
        "years",
        "time",
        "end",
        "beginning",
        "start",
        "middle",
        "first",
        "last",
        "next",
        "holidays",
        "spring",
        "summer",
        "autumn",
        "fall",
        "winter",
        "morning",
        "afternoon",
        "evening",
        "moment",
        "same",
        "other",
        "one",
        "two",
        "new",
    }
    | set(MONTHS)
)
_UNITS = {"night": "day", "morning": "day", "afternoon": "day", "evening": "day"}
MAX_EVENT_WORDS = 4


@dataclass(frozen=True)
class EventAnchor:
    """A time the query names by an event: the event's words, and the span before or after the day it
    happened (`unit` "" for all time before or after it)."""

    words: str  # the event as the query wrote it: "concert", "charity race"
    unit: str  # day | weekend | week | month | ""
    before: bool
    text: str  # the whole expression: "the day after the concert"

    def window(self, day: date) -> TimeWindow:
        """The window this anchor names once the event's day is known."""
        return _next_to(day, self.unit, self.before, self.text)


def event_anchors(query: str) -> tuple[EventAnchor, ...]:
    """The times `query` names by an event ("the day after the concert"); () when it names none (an event's
    day is read from the memories: retrieval/anchors.py)."""
    found: list[EventAnchor] = []
    for match in _EVENT.finditer(query):
        words: list[str] = []
        for word in match.group(3).split():
            lowered = word.lower().strip("'-")
            if lowered in STOPWORDS or len(lowered) <= 2:
                break
            words.append(word)
        if not words or words[0].lower() in _NOT_EVENTS:
            continue
        unit = (match.group(1) or "").lower()
        text = match.group(0)[: match.group(0).rindex(words[-1]) + len(words[-1])]
        found.append(
            EventAnchor(
                words=" ".join(words[:MAX_EVENT_WORDS]),
                unit=_UNITS.get(unit, unit),
                before=match.group(2).lower() != "after",
                text=text.strip(),
            )
        )
    return tuple(dict.fromkeys(found))


def event_day(said_on: datetime, index_terms: str) -> date:
    """The day a memory's event happened: the first day its index terms name ("yesterday we went to the
    concert", said on 9 May, names 8 May), else the day it was said."""
    named = _days_named(index_terms or "")
    return named[0] if named else said_on.astimezone(UTC).date()


# a memory outside every window the query names keeps this share of its score, less the narrower the window
# ("on 31 Dec" or "last weekend" say when; "this year" barely): a soft filter, neutral on both development
# sets (few of their questions name a time) and what makes "what did she do last weekend?" answerable
MISS_DISCOUNT = 0.5


def miss_factor(windows_: Iterable[TimeWindow]) -> float:
    """What a memory outside all of `windows_` is multiplied by: 1 − MISS_DISCOUNT × the narrowest's
    specificity; 1.0 when the query names no time."""
    specificities = [window.specificity for window in windows_]
    return round(1.0 - MISS_DISCOUNT * max(specificities), 4) if specificities else 1.0


def matches(windows_: Iterable[TimeWindow], moments: Iterable[datetime]) -> TimeWindow | None:
    """The first window that holds one of `moments` (a memory's event times), else None."""
    moments = list(moments)
    for window in windows_:
        if any(window.contains(moment) for moment in moments):
            return window
    return None


_INDEX_DAY = re.compile(r"\b(\d{1,2}) (" + "|".join(calendar.month_name[1:]) + r") (\d{4})\b")
_INDEX_MONTH = re.compile(r"(?<![\d]) ?\b(" + "|".join(calendar.month_name[1:]) + r") (\d{4})\b")


def named_days(index_terms: str) -> list[datetime]:
    """The days an episode's index terms name, in the format `extraction.dates` writes them: '8 May 2023'
    is that day; a month named alone ('April 2023', from "last month") counts as its first day."""
    days = [_day(day) for day in _days_named(index_terms)]
    without_days = _INDEX_DAY.sub(" ", index_terms)
    days += [
        datetime(int(year), MONTHS[month.lower()], 1, tzinfo=UTC) for month, year in _INDEX_MONTH.findall(without_days)
    ]
    return days


def _days_named(index_terms: str) -> list[date]:
    """The days (not the months) index terms name, in order: '8 May 2023' is that day."""
    return [date(int(year), MONTHS[month.lower()], int(day)) for day, month, year in _INDEX_DAY.findall(index_terms)]


def warm() -> None:
    """Import dateparser and run its first parse now (at start-up, not in the first request)."""
    _parser(datetime(2024, 1, 1, tzinfo=UTC)).get_date_data("1 January 2024")


# --- the constructs dateparser does not read --------------------------------------------------------------


def _day(value: date) -> datetime:
    return datetime(value.year, value.month, value.day, tzinfo=UTC)


def _year_for_month(month: int, explicit: str | None, reference: datetime) -> int:
    """A month without a year is the latest one not after the reference's month."""
    if explicit:
        return int(explicit)
    return reference.year if month <= reference.month else reference.year - 1


def _month_named(name: str, year_text: str | None, reference: datetime) -> tuple[date, date]:
    """The first and the last day of the month a query names ("October", "Oct. 2023")."""
    month = MONTHS[name.lower().rstrip(".")]
    year = _year_for_month(month, year_text, reference)
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _ordinal_week(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    first, last = _month_named(match.group(2), match.group(3), reference)
    which = match.group(1).lower()
    start = last - timedelta(days=6) if which in ("last", "final") else first + timedelta(days=7 * _ORDINALS[which])
    return TimeWindow(_day(start), _day(start + timedelta(days=7)), match.group(0).strip())


def _part_of_month(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    first, last = _month_named(match.group(2), match.group(3), reference)
    part = match.group(1).lower()
    if part == "early" or part.endswith(("beginning of", "start of")):
        days = (1, 10)
    else:
        days = (11, 20) if part in ("mid", "middle of") else (21, last.day)
    return TimeWindow(
        _day(first.replace(day=days[0])), _day(first.replace(day=days[1])) + timedelta(days=1), match.group(0).strip()
    )


def _weekend(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    today = reference.date()
    which = match.group(1).lower()
    saturday = today + timedelta(days=5 - today.weekday())  # this week's (yesterday on a Sunday)
    if which in ("last", "this past", "past"):
        saturday -= timedelta(days=7)
    elif which == "next" and today.weekday() >= 5:
        saturday += timedelta(days=7)
    return TimeWindow(_day(saturday), _day(saturday + timedelta(days=2)), match.group(0).strip())


def _ordinal_weekend(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    """The n-th (or last) Saturday of the month and its Sunday."""
    first, last = _month_named(match.group(2), match.group(3), reference)
    which = match.group(1).lower()
    if which in ("last", "final"):
        saturday = last - timedelta(days=(last.weekday() - 5) % 7)
    else:
        saturday = first + timedelta(days=(5 - first.weekday()) % 7 + 7 * _ORDINALS[which])
    return TimeWindow(_day(saturday), _day(saturday + timedelta(days=2)), match.group(0).strip())


def _weeks_of_month(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    """ "the first two weeks of May": its first 14 days; "the last three weeks of May": its last 21."""
    first, last = _month_named(match.group(3), match.group(4), reference)
    days = timedelta(days=7 * {"two": 2, "2": 2, "three": 3, "3": 3}[match.group(2).lower()])
    following = last + timedelta(days=1)
    if match.group(1).lower() == "first":
        return TimeWindow(_day(first), _day(first + days), match.group(0).strip())
    return TimeWindow(_day(following - days), _day(following), match.group(0).strip())


def _half_of_month(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    first, last = _month_named(match.group(2), match.group(3), reference)
    middle = first.replace(day=16)
    if match.group(1).lower() in ("first", "1st"):
        return TimeWindow(_day(first), _day(middle), match.group(0).strip())
    return TimeWindow(_day(middle), _day(last) + timedelta(days=1), match.group(0).strip())


def _next_to_date(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    """The day, weekend or week just before or after an absolute date ("the weekend before 4 October 2023")."""
    data = _parser(reference.replace(tzinfo=None)).get_date_data(match.group(3))
    if data is None or data.date_obj is None or (data.period or "day") != "day":
        return None
    return _next_to(data.date_obj.date(), match.group(1).lower(), match.group(2).lower() != "after", match.group(0))


def _next_to(anchor: date, unit: str, before: bool, text: str) -> TimeWindow:
    """The day, weekend, week or month just before or after the day `anchor`; no unit ("before the trip"):
    all time up to the anchor's day, or from it on (the day itself in both: what was said the day of)."""
    if unit == "":
        if before:
            return TimeWindow(_OPEN_PAST, _day(anchor + timedelta(days=1)), text.strip())
        return TimeWindow(_day(anchor), _OPEN_FUTURE, text.strip())
    if unit == "month":
        start = anchor - timedelta(days=30) if before else anchor + timedelta(days=1)
        return TimeWindow(_day(start), _day(start + timedelta(days=30)), text.strip())
    if unit == "day":
        start = anchor + timedelta(days=-1 if before else 1)
        length = 1
    elif unit == "week":
        start = anchor - timedelta(days=7) if before else anchor + timedelta(days=1)
        length = 7
    else:  # the Saturday before (a Sunday's is the week before) or after, and its Sunday
        back = (anchor.weekday() - 5) % 7 or 7
        start = (
            anchor - timedelta(days=back + 7 if anchor.weekday() == 6 else back)
            if before
            else (anchor + timedelta(days=(5 - anchor.weekday()) % 7 or 7))
        )
        length = 2
    return TimeWindow(_day(start), _day(start + timedelta(days=length)), text.strip())


def _season_start(name: str, which: str, year_text: str | None, reference: datetime) -> datetime:
    """The first day of the season named: of the year given, else its latest start not after the reference;
    "last" one before that, "next" one after."""
    first_month = _SEASON_MONTHS[name]
    if year_text:
        year = int(year_text)
    else:
        year = reference.year if (reference.month, reference.day) >= (first_month, 1) else reference.year - 1
        if which == "last":
            year -= 1
        elif which == "next":
            year += 1
    return datetime(year, first_month, 1, tzinfo=UTC)


def _month_after(start: datetime, months: int) -> datetime:
    index = start.month - 1 + months
    return datetime(start.year + index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _part_of_season(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    """ "the end of summer 2023": the season's last month; its beginning or start the first, its middle the
    second."""
    part, which, name = match.group(1).lower(), (match.group(2) or "").lower(), match.group(3).lower()
    start = _season_start(name, which, match.group(4), reference)
    offset = {"beginning": 0, "start": 0, "middle": 1, "end": 2}[part]
    return TimeWindow(_month_after(start, offset), _month_after(start, offset + 1), match.group(0).strip())


def _season(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    which, name, year_text = (match.group(1) or "").lower(), match.group(2).lower(), match.group(3)
    if name == "fall" and not which and not year_text:
        return None  # "fall" alone is usually the verb
    start = _season_start(name, which, year_text, reference)
    return TimeWindow(start, _month_after(start, 3), match.group(0).strip())


def _holiday(match: re.Match[str], reference: datetime) -> TimeWindow | None:
    month, day, length = _HOLIDAYS[match.group(1).lower().replace("\u2019", "'")]
    if match.group(2):
        year = int(match.group(2))
    else:
        year = reference.year if (reference.month, reference.day) >= (month, day) else reference.year - 1
    start = datetime(year, month, day, tzinfo=UTC)
    return TimeWindow(start, start + timedelta(days=length), match.group(0).strip())


_CONSTRUCTS: tuple[tuple[re.Pattern[str], Any], ...] = (
    (_NEXT_TO_DATE, _next_to_date),
    (_ORDINAL_WEEKEND, _ordinal_weekend),
    (_WEEKS_OF_MONTH, _weeks_of_month),
    (_HALF_OF_MONTH, _half_of_month),
    (_ORDINAL_WEEK, _ordinal_week),
    (_PART_OF_MONTH, _part_of_month),
    (_WEEKEND, _weekend),
    (_HOLIDAY, _holiday),
    (_PART_OF_SEASON, _part_of_season),
    (_SEASON, _season),
)


# --- dateparser ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _parser(reference: datetime) -> Any:
    from dateparser.date import DateDataParser

    return DateDataParser(
        languages=["en"],
        settings={
            "RELATIVE_BASE": reference.replace(tzinfo=None),
            "PREFER_DATES_FROM": "past",
            "RETURN_TIME_AS_PERIOD": True,
        },
    )


_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
# the spans dateparser reads: absolute dates (any order of day, month and year), a month or year alone,
# weekdays, and relative expressions; dateparser's own search (search_dates) finds them too, but costs
# 3–15 ms a query and reads "we", "sun" or "may I" as dates (measured on the development sets' questions)
_SPAN = re.compile(
    rf"\b(?:(?:by|before|until|till|through|thru|after|since|prior to)\s+)?(?:"
    rf"\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
    rf"|{_ORD}\s+(?:of\s+)?{_MONTH},?(?:\s+\d{{4}})?"
    rf"|{_MONTH}\s+{_ORD}(?:,?\s+\d{{4}})?(?!\d)"
    rf"|{_MONTH},?\s+\d{{4}}"
    rf"|(?:in|of|during|since|by|before|until|through|after)\s+{_MONTH}"
    rf"|(?:in|of|during|since|by|before|until|after)\s+\d{{4}}(?!\d)"
    rf"|(?:last|this|next|this past|past)\s+(?:week|month|year|{_MONTH}|{_WEEKDAY}day|{_WEEKDAY})"
    rf"|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of)\s+"
    rf"(?:days?|weeks?|months?|years?)\s+ago"
    rf"|yesterday|today|tonight|tomorrow|the day before yesterday"
    rf"|on\s+{_WEEKDAY}(?:day)?"
    rf")\b",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^(?:(?:by|before|until|till|through|thru|after|since|prior to|in|of|on|during)\s+)+", re.IGNORECASE
)


def _within_calendar(read: Any, match: re.Match[str], reference: datetime) -> TimeWindow | None:
    """`read(match, reference)`, or None for an expression whose window leaves the calendar Python can count
    ("late December 9999", "summer 0000"): a question may name any year, and must never fail for it."""
    try:
        window: TimeWindow | None = read(match, reference)
    except (OverflowError, ValueError):
        return None
    return window


def _dateparser_windows(text: str, reference: datetime) -> list[TimeWindow]:
    naive_reference = reference.replace(tzinfo=None)
    found: list[TimeWindow] = []
    for match in _SPAN.finditer(text):
        span = match.group(0)
        lead = span.split()[0].lower()
        cleaned = _LEAD.sub("", span).strip()
        data = _parser(naive_reference).get_date_data(cleaned)
        if data is None or data.date_obj is None:
            continue
        try:
            window = _period_window(data.date_obj, data.period or "day", cleaned)
        except (OverflowError, ValueError):  # "since 9999": the year after is past the calendar's end
            window = None
        if window is None:
            continue
        if lead in ("by", "before", "until", "till", "through", "thru", "prior"):
            window = TimeWindow(_OPEN_PAST, window.end, cleaned)
        elif lead in ("after", "since"):
            window = TimeWindow(window.start, _OPEN_FUTURE, cleaned)
        found.append(window)
    return found


def _period_window(moment: datetime, period: str, text: str) -> TimeWindow | None:
    day = date(moment.year, moment.month, moment.day)
    lowered = text.lower()
    if period in ("day", "time", "part_of_day"):
        return TimeWindow(_day(day), _day(day + timedelta(days=1)), text)
    if period == "week":
        monday = day - timedelta(days=day.weekday())
        return TimeWindow(_day(monday), _day(monday + timedelta(days=7)), text)
    if period == "month":
        if not re.search(rf"\b(?:{_MONTH}|month)\b", lowered):
            return None  # "the 5th": a day of some month, which one unknown
        first = date(day.year, day.month, 1)
        following = date(day.year + day.month // 12, day.month % 12 + 1, 1)
        return TimeWindow(_day(first), _day(following), text)
    if period == "year":
        return TimeWindow(datetime(day.year, 1, 1, tzinfo=UTC), datetime(day.year + 1, 1, 1, tzinfo=UTC), text)
    return None
