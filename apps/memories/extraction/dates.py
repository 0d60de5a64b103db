"""Dates a message talks about, resolved against the day it was said (pure rules, no ORM).

"Yesterday I went bowling", said on 17 March 2022, is about 16 March 2022. An episode is indexed (and
embedded) with the day it was said *and* the days it names, so "what did James do on March 16?" finds it.
Only expressions that name a day, a weekend, a month or a year precisely are resolved; "last week",
"recently" or "a while ago" are left alone (no date to index honestly).
"""

from __future__ import annotations

import re
from datetime import date, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "a couple of": 2}
MAX_DAYS_AGO = 30

_DAY_BEFORE_YESTERDAY = re.compile(r"\bthe day before yesterday\b")
_DAY_AFTER_TOMORROW = re.compile(r"\bthe day after tomorrow\b")
_YESTERDAY = re.compile(r"\b(?:yesterday|last night)\b")
_TOMORROW = re.compile(r"\btomorrow\b")
_DAYS_AGO = re.compile(r"\b(\d{1,2}|a couple of|a|one|two|three|four|five|six|seven) days? ago\b")
_WEEKDAY = re.compile(r"\b(last|this past|next) (" + "|".join(WEEKDAYS) + r")\b")
_LAST_WEEKEND = re.compile(r"\b(?:last|this past) weekend\b")
_OVER_THE_WEEKEND = re.compile(r"\bover the weekend\b")
_THIS_WEEKEND = re.compile(r"\b(?:this(?: coming)?|the) weekend\b")
_LAST_MONTH = re.compile(r"\blast month\b")
_LAST_YEAR = re.compile(r"\blast year\b")


def format_day(day: date) -> str:
    """How people write a date, and how an episode's date is indexed: '8 May 2023'."""
    return f"{day.day} {day:%B %Y}"


_INDEX_TERM = re.compile(r"\d{1,2} [A-Z][a-z]+ \d{4}|[A-Z][a-z]+ \d{4}|\d{4}")


def index_terms_split(index_terms: str) -> list[str]:
    """The terms of an episode's index terms, as `format_day` and `mentioned_dates` write them and ingest joins
    them with spaces: '4 October 2023 3 October 2023 2022' → ['4 October 2023', '3 October 2023', '2022']."""
    return _INDEX_TERM.findall(index_terms)


def mentioned_dates(text: str, said_on: date) -> list[str]:
    """The days, months and years `text` names relative to `said_on`, formatted for indexing, in order of
    appearance kinds (days first), without duplicates and without `said_on` itself."""
    lowered = text.lower()
    days: list[date] = []
    if _DAY_BEFORE_YESTERDAY.search(lowered):
        days.append(said_on - timedelta(days=2))
        lowered = _DAY_BEFORE_YESTERDAY.sub(" ", lowered)
    if _DAY_AFTER_TOMORROW.search(lowered):
        days.append(said_on + timedelta(days=2))
        lowered = _DAY_AFTER_TOMORROW.sub(" ", lowered)
    if _YESTERDAY.search(lowered):
        days.append(said_on - timedelta(days=1))
    if _TOMORROW.search(lowered):
        days.append(said_on + timedelta(days=1))
    for match in _DAYS_AGO.finditer(lowered):
        count = int(match.group(1)) if match.group(1).isdigit() else NUMBERS[match.group(1)]
        if 0 < count <= MAX_DAYS_AGO:
            days.append(said_on - timedelta(days=count))
    for match in _WEEKDAY.finditer(lowered):
        weekday = WEEKDAYS.index(match.group(2))
        if match.group(1) == "next":
            days.append(said_on + timedelta(days=(weekday - said_on.weekday()) % 7 or 7))
        else:  # the most recent such day before today
            days.append(said_on - timedelta(days=(said_on.weekday() - weekday) % 7 or 7))
    days += [day for saturday in _weekends(lowered, said_on) for day in (saturday, saturday + timedelta(days=1))]
    terms = [format_day(day) for day in days if day != said_on]
    if _LAST_MONTH.search(lowered):
        previous = said_on.replace(day=1) - timedelta(days=1)
        terms.append(f"{previous:%B %Y}")
    if _LAST_YEAR.search(lowered):
        terms.append(str(said_on.year - 1))
    return list(dict.fromkeys(terms))


def _weekends(lowered: str, said_on: date) -> list[date]:
    """The Saturdays of the weekends `lowered` talks about. "Last weekend" is the one before this week's;
    "over the weekend" the one just gone when said Monday to Thursday, the current one on a Saturday or
    Sunday (on a Friday it may be either: none); "this weekend" or "the weekend" the coming one when said
    Wednesday to Friday, the current one at the weekend (on a Monday or Tuesday it may be the one just gone:
    none)."""
    weekday = said_on.weekday()
    previous = -(weekday + 2)  # days to the Saturday of last week's weekend
    current = 5 - weekday  # days to this week's Saturday (yesterday on a Sunday)
    offsets: list[int] = []
    if _LAST_WEEKEND.search(lowered):
        offsets.append(previous)
        lowered = _LAST_WEEKEND.sub(" ", lowered)
    if _OVER_THE_WEEKEND.search(lowered):
        if weekday != 4:
            offsets.append(current if weekday >= 5 else previous)
        lowered = _OVER_THE_WEEKEND.sub(" ", lowered)
    if _THIS_WEEKEND.search(lowered) and weekday >= 2:
        offsets.append(current)
    return [said_on + timedelta(days=offset) for offset in dict.fromkeys(offsets)]
