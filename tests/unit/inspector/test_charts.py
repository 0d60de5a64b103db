"""The chart geometry is pure arithmetic: tested without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apps.inspector import charts

NOW = datetime(2026, 3, 31, 12, 0, tzinfo=UTC)


def test_weekly_counts_track_learned_and_retired_memories():
    spans = [
        (NOW - timedelta(days=20), None),  # learned in week 2 of 4, still current
        (NOW - timedelta(days=20), NOW - timedelta(days=3)),  # learned in week 2, superseded in week 4
        (NOW - timedelta(days=1), None),  # learned in the last week
        (NOW - timedelta(days=60), NOW - timedelta(days=40)),  # gone before the window
    ]
    weeks = charts.weekly_memory_counts(spans, now=NOW, weeks=4)
    assert [week.end for week in weeks] == [
        NOW - timedelta(days=21),
        NOW - timedelta(days=14),
        NOW - timedelta(days=7),
        NOW,
    ]
    assert [week.new for week in weeks] == [0, 2, 0, 1]
    assert [week.active for week in weeks] == [0, 2, 2, 2]


def test_count_chart_scales_to_a_nice_maximum_and_draws_every_week():
    weeks = [
        charts.WeekCount(
            start=NOW - timedelta(days=7 * (3 - i) + 7), end=NOW - timedelta(days=7 * (3 - i)), active=a, new=n
        )
        for i, (a, n) in enumerate([(0, 0), (3, 3), (7, 4), (7, 0)])
    ]
    chart = charts.count_chart(weeks, width=400, height=100)
    assert [tick.label for tick in chart.y_ticks] == ["0", "5", "10"]  # 7 rounds up to 10
    assert len(chart.bars) == 4 and len(chart.points) == 4
    assert chart.bars[0].height == 0.0
    # 7 of 10 on a plot from y=10 to y=78: 78 - 68 × 0.7
    assert chart.points[2].y == round(78 - 68 * 0.7, 1)
    assert chart.line.count(",") == 4
    assert chart.total == 7
    assert chart.x_ticks[-1].label == f"{NOW:%d %b}"


def test_count_chart_of_an_empty_scope_is_flat():
    weeks = charts.weekly_memory_counts([], now=NOW, weeks=3)
    chart = charts.count_chart(weeks)
    assert {point.y for point in chart.points} == {chart.plot_bottom}
    assert [tick.label for tick in chart.y_ticks] == ["0", "1"]


def test_mood_chart_orders_lanes_pleasant_first_and_places_dots_in_time():
    readings = [
        charts.MoodReading(at=NOW - timedelta(days=10), mood="sad", is_transition=False),
        charts.MoodReading(at=NOW, mood="happy", is_transition=True),
        charts.MoodReading(at=NOW - timedelta(days=5), mood="neutral", is_transition=True),
    ]
    chart = charts.mood_chart(readings, width=300)
    assert chart is not None
    assert [lane.mood for lane in chart.lanes] == ["happy", "neutral", "sad"]
    assert [dot.mood for dot in chart.dots] == ["sad", "neutral", "happy"]  # sorted by time
    assert chart.dots[0].x == chart.plot_left and chart.dots[-1].x == chart.plot_right
    assert chart.dots[1].x == round((chart.plot_left + chart.plot_right) / 2, 1)
    assert [tick.anchor for tick in chart.x_ticks] == ["start", "middle", "middle", "end"]
    lane_y = {lane.mood: lane.y for lane in chart.lanes}
    assert all(dot.y == lane_y[dot.mood] for dot in chart.dots)


def test_mood_chart_of_one_reading_and_of_none():
    assert charts.mood_chart([]) is None
    single = charts.mood_chart([charts.MoodReading(at=NOW, mood="bored", is_transition=False)], width=200)
    assert single is not None and len(single.x_ticks) == 1 and single.dots[0].x == round((78 + 188) / 2, 1)
