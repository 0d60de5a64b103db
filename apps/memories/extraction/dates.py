"""Dates a message talks about, resolved against the day it was said (pure rules, no ORM).

"Yesterday I went bowling", said on 17 March 2022, is about 16 March 2022. An episode is indexed (and
embedded) with the day it was said *and* the days it names, so "what did James do on March 16?" finds it.
Only expressions that name a day, a month or a year precisely are resolved; "last week", "recently" or "a
while ago" are left alone (no date to index honestly).
"""

from __future__ import annotations

import re
from datetime import date, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "a couple of": 2}
MAX_DAYS_AGO = 30

_DAY_BEFORE_YESTERDAY = re.compile(r"\bthe day before yesterday\b")
_YESTERDAY = re.compile(r"\b(?:yesterday|last night)\b")
_TOMORROW = re.compile(r"\btomorrow\b")
_DAYS_AGO = re.compile(r"\b(\d{1,2}|a couple of|a|one|two|three|four|five|six|seven) days? ago\b")
_WEEKDAY = re.compile(r"\b(last|this past|next) (" + "|".join(WEEKDAYS) + r")\b")
_LAST_WEEKEND = re.compile(r"\b(?:last|this past) weekend\b")
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
    if _LAST_WEEKEND.search(lowered):
        sunday = said_on - timedelta(days=said_on.weekday() + 1)
        days += [sunday - timedelta(days=1), sunday]
    terms = [format_day(day) for day in days if day != said_on]
    if _LAST_MONTH.search(lowered):
        previous = said_on.replace(day=1) - timedelta(days=1)
        terms.append(f"{previous:%B %Y}")
    if _LAST_YEAR.search(lowered):
        terms.append(str(said_on.year - 1))
    return list(dict.fromkeys(terms))
