"""Chart geometry for the inspector's server-rendered SVGs: pure arithmetic, no ORM, no I/O.

The templates draw what these functions compute (coordinates in a fixed viewBox that scales to the
page width), so the charts need no JavaScript and are tested without a database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

WEEK = timedelta(days=7)

# moods top to bottom, from pleasant to unpleasant, so a timeline reads as "up is better"
MOOD_ORDER = (
    "excited",
    "happy",
    "grateful",
    "flirty",
    "neutral",
    "bored",
    "confused",
    "anxious",
    "frustrated",
    "sad",
    "angry",
)


@dataclass(frozen=True)
class WeekCount:
    start: datetime
    end: datetime
    active: int  # memories current at the end of the week
    new: int  # memories learned during the week


def weekly_memory_counts(
    spans: Sequence[tuple[datetime, datetime | None]], *, now: datetime, weeks: int = 12
) -> list[WeekCount]:
    """Per week (oldest first, the last one ending at `now`): how many memories were current at its end
    and how many were learned in it. A span is (learned at, no longer current at — or None)."""
    counts = []
    for index in range(weeks):
        end = now - WEEK * (weeks - 1 - index)
        start = end - WEEK
        active = sum(1 for began, ended in spans if began <= end and (ended is None or ended > end))
        new = sum(1 for began, _ in spans if start < began <= end)
        counts.append(WeekCount(start=start, end=end, active=active, new=new))
    return counts


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    value: int
    label: str


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    value: int
    label: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str
    anchor: str = "middle"  # SVG text-anchor: the first and last labels of a time axis stay inside the plot


@dataclass(frozen=True)
class CountChart:
    width: int
    height: int
    plot_left: float
    plot_right: float
    plot_top: float
    plot_bottom: float
    bars: list[Bar]
    points: list[Point]
    line: str  # SVG polyline points
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    total: int


def _nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5 × 10^k at or above value (an axis maximum people read at a glance)."""
    if value <= 1:
        return 1
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def count_chart(weeks: Sequence[WeekCount], *, width: int = 640, height: int = 180) -> CountChart:
    """Bars: memories learned per week; line: memories current at the end of each week."""
    left, right, top, bottom = 36.0, width - 8.0, 10.0, height - 22.0
    top_value = _nice_ceiling(max([week.active for week in weeks] + [week.new for week in weeks] + [1]))
    slot = (right - left) / max(len(weeks), 1)

    def y_of(value: int) -> float:
        return round(bottom - (bottom - top) * value / top_value, 1)

    bars, points, x_ticks = [], [], []
    for index, week in enumerate(weeks):
        label = f"week of {week.start:%d %b}"
        x = left + slot * index
        bars.append(
            Bar(
                x=round(x + slot * 0.2, 1),
                y=y_of(week.new),
                width=round(slot * 0.6, 1),
                height=round(bottom - y_of(week.new), 1),
                value=week.new,
                label=label,
            )
        )
        points.append(Point(x=round(x + slot / 2, 1), y=y_of(week.active), value=week.active, label=label))
        if index % 2 == (len(weeks) - 1) % 2:  # every other week, always including the last
            x_ticks.append(Tick(position=round(x + slot / 2, 1), label=f"{week.end:%d %b}"))
    y_ticks = [Tick(position=y_of(value), label=str(value)) for value in (0, top_value // 2, top_value)]
    if top_value == 1:
        y_ticks = [Tick(position=y_of(0), label="0"), Tick(position=y_of(1), label="1")]
    return CountChart(
        width=width,
        height=height,
        plot_left=left,
        plot_right=right,
        plot_top=top,
        plot_bottom=bottom,
        bars=bars,
        points=points,
        line=" ".join(f"{point.x},{point.y}" for point in points),
        y_ticks=y_ticks,
        x_ticks=x_ticks,
        total=weeks[-1].active if weeks else 0,
    )


@dataclass(frozen=True)
class MoodReading:
    at: datetime
    mood: str
    is_transition: bool


@dataclass(frozen=True)
class MoodDot:
    x: float
    y: float
    mood: str
    at: datetime
    is_transition: bool


@dataclass(frozen=True)
class MoodLane:
    y: float
    mood: str


@dataclass(frozen=True)
class MoodChart:
    width: int
    height: int
    plot_left: float
    plot_right: float
    lanes: list[MoodLane]
    dots: list[MoodDot]
    line: str
    x_ticks: list[Tick]


def mood_chart(readings: Sequence[MoodReading], *, width: int = 640, lane_height: int = 26) -> MoodChart | None:
    """One lane per mood that occurs (pleasant at the top), a dot per classified message along time."""
    if not readings:
        return None
    ordered = sorted(readings, key=lambda reading: reading.at)
    present = {reading.mood for reading in ordered}
    moods = [mood for mood in MOOD_ORDER if mood in present] + sorted(present - set(MOOD_ORDER))
    left, right, top = 78.0, width - 12.0, 10.0
    lane_y = {mood: top + lane_height * index + lane_height / 2 for index, mood in enumerate(moods)}
    height = int(top + lane_height * len(moods) + 26)
    first, last = ordered[0].at, ordered[-1].at
    span = (last - first).total_seconds()

    def x_of(at: datetime) -> float:
        if span <= 0:
            return round((left + right) / 2, 1)
        return round(left + (right - left) * (at - first).total_seconds() / span, 1)

    dots = [
        MoodDot(
            x=x_of(reading.at),
            y=round(lane_y[reading.mood], 1),
            mood=reading.mood,
            at=reading.at,
            is_transition=reading.is_transition,
        )
        for reading in ordered
    ]
    tick_count = 1 if span <= 0 else 4
    x_ticks = []
    for step in range(tick_count):
        at = first + timedelta(seconds=span * step / max(tick_count - 1, 1))
        anchor = "middle" if tick_count == 1 else {0: "start", tick_count - 1: "end"}.get(step, "middle")
        x_ticks.append(Tick(position=x_of(at), label=f"{at:%d %b}", anchor=anchor))
    return MoodChart(
        width=width,
        height=height,
        plot_left=left,
        plot_right=right,
        lanes=[MoodLane(y=round(lane_y[mood], 1), mood=mood) for mood in moods],
        dots=dots,
        line=" ".join(f"{dot.x},{dot.y}" for dot in dots),
        x_ticks=x_ticks,
    )
