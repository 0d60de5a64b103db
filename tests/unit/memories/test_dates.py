"""Relative dates resolved against the day a message was said (apps/memories/extraction/dates.py)."""

from __future__ import annotations

from datetime import date

import pytest

from apps.memories.extraction.dates import format_day, index_terms_split, mentioned_dates

THURSDAY = date(2022, 3, 17)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("By the way, yesterday I went bowling and got 2 strikes", ["16 March 2022"]),
        ("Watched the whole trilogy last night!", ["16 March 2022"]),
        ("The day before yesterday my cat got lost", ["15 March 2022"]),
        ("My dad passed away two days ago", ["15 March 2022"]),
        ("I got back 3 days ago", ["14 March 2022"]),
        ("a couple of days ago we met", ["15 March 2022"]),
        ("I printed it last Friday", ["11 March 2022"]),
        ("last Thursday was rough", ["10 March 2022"]),  # said on a Thursday: the one before
        ("this past Sunday we hiked", ["13 March 2022"]),
        ("The recital is next Monday", ["21 March 2022"]),
        ("The opening night is tomorrow", ["18 March 2022"]),
        ("I'm leaving the day after tomorrow evening", ["19 March 2022"]),  # not tomorrow
        ("Last weekend we went camping", ["12 March 2022", "13 March 2022"]),
        ("I started a new job last month", ["February 2022"]),
        ("We moved here last year", ["2021"]),
        ("Yesterday was fun and tomorrow will be too", ["16 March 2022", "18 March 2022"]),
        ("I'm going there today", []),  # the day it was said is indexed anyway
        ("Last week I went on a trip", []),  # no day, month or year named
        ("I have been busy recently", []),
        ("yesterdays are gone", []),
    ],
)
def test_relative_dates_are_resolved_against_the_day_said(text, expected):
    assert mentioned_dates(text, THURSDAY) == expected


def test_month_and_year_boundaries():
    assert mentioned_dates("yesterday", date(2022, 3, 1)) == ["28 February 2022"]
    assert mentioned_dates("last month", date(2023, 1, 10)) == ["December 2022"]
    assert mentioned_dates("tomorrow", date(2022, 12, 31)) == ["1 January 2023"]
    assert mentioned_dates("last weekend", date(2022, 3, 20)) == ["12 March 2022", "13 March 2022"]  # a Sunday


@pytest.mark.parametrize(
    ("text", "said_on", "expected"),
    [
        (
            "I did something fun with my pups over the weekend",
            date(2023, 10, 4),
            ["30 September 2023", "1 October 2023"],
        ),
        ("We went hiking over the weekend", date(2023, 10, 8), ["7 October 2023"]),  # a Sunday: this one
        ("I can't wait for the weekend, we're going camping", date(2023, 8, 4), ["5 August 2023", "6 August 2023"]),
        ("This weekend I'm heading to a nature reserve", date(2023, 8, 19), ["20 August 2023"]),  # a Saturday
        ("this coming weekend is the recital", date(2023, 8, 16), ["19 August 2023", "20 August 2023"]),
        (
            "Last weekend and this weekend both",
            date(2023, 8, 17),
            [
                "12 August 2023",
                "13 August 2023",
                "19 August 2023",
                "20 August 2023",
            ],
        ),
        ("this weekend I went out", date(2023, 8, 14), []),  # a Monday: the one gone or the one coming
        ("plans over the weekend?", date(2023, 8, 18), []),  # a Friday: either
        ("What do you do on weekends?", date(2023, 8, 16), []),  # habitual
    ],
)
def test_weekends_are_resolved_by_the_weekday_they_are_named_on(text, said_on, expected):
    assert mentioned_dates(text, said_on) == expected


def test_days_are_written_as_people_write_them():
    assert format_day(date(2023, 5, 8)) == "8 May 2023"


def test_index_terms_split_keeps_each_date_whole():
    """Index terms are dates joined by spaces; joining two episodes' terms word by word once turned
    '4 October 2023' + '3 October 2023' into '4 October 2023 3' (the day before lost)."""
    assert index_terms_split("4 October 2023 3 October 2023 September 2023 2022") == [
        "4 October 2023",
        "3 October 2023",
        "September 2023",
        "2022",
    ]
    assert index_terms_split("") == []
