"""Cron windows (``spec.schedules``) in the decision core: activity as a function of ``now``, time zones and
DST, excluded dates, and the one combination rule (floors, caps, effective bounds, who decided)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhpa.core import (
    Behavior,
    Memory,
    ScalingPolicy,
    ScalingRules,
    WindowSpec,
    active_windows,
    check_window,
    next_change,
    occurrences,
    with_status,
)
from tests.builders import cpu_hpa, cpu_pods, decided

UTC = ZoneInfo("UTC")
NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def window(name="w", start="0 8 * * *", tz=UTC, **kw) -> WindowSpec:
    return WindowSpec(name=name, start=start, time_zone=tz, time_zone_name=getattr(tz, "key", "UTC"), **kw)


def at(tz, *fields, fold=0) -> float:
    """Epoch seconds of a wall-clock time in ``tz`` (``fold=1``: the second of a repeated hour)."""
    return datetime(*fields, tzinfo=tz, fold=fold).timestamp()


def utc(*fields) -> float:
    return datetime(*fields, tzinfo=timezone.utc).timestamp()


def names(windows, now) -> list[str]:
    return [a.name for a in active_windows(windows, now)]


# ----------------------------------------------------------------------------------------- activity
def test_a_window_over_midnight_is_active_from_its_start_to_its_end_the_next_morning():
    night = window("night", "0 22 * * *", BERLIN, end="0 6 * * *", max_replicas=2)
    assert names([night], at(BERLIN, 2026, 6, 10, 21, 59, 59)) == []
    assert names([night], at(BERLIN, 2026, 6, 10, 22, 0)) == ["night"]
    assert names([night], at(BERLIN, 2026, 6, 11, 0, 0)) == ["night"]
    assert names([night], at(BERLIN, 2026, 6, 11, 5, 59, 59)) == ["night"]
    assert names([night], at(BERLIN, 2026, 6, 11, 6, 0)) == []
    (a,) = active_windows([night], at(BERLIN, 2026, 6, 11, 3, 0))
    assert (a.start, a.end) == (at(BERLIN, 2026, 6, 10, 22, 0), at(BERLIN, 2026, 6, 11, 6, 0))
    assert (a.min_replicas, a.max_replicas) == (None, 2)


def test_weekday_window_with_duration_and_its_next_changes():
    business = window("business", "0 8 * * 1-5", NY, duration_seconds=10 * 3600, min_replicas=4)
    friday_noon = at(NY, 2026, 6, 12, 12, 0)  # 2026-06-12 is a Friday
    assert names([business], friday_noon) == ["business"]
    assert next_change([business], friday_noon) == at(NY, 2026, 6, 12, 18, 0)
    saturday = at(NY, 2026, 6, 13, 9, 0)
    assert names([business], saturday) == []
    assert next_change([business], saturday) == at(NY, 2026, 6, 15, 8, 0)  # Monday
    assert next_change([], saturday) is None


def test_overlapping_windows_are_all_active_in_spec_order():
    day = window("day", "0 6 * * *", end="0 20 * * *", min_replicas=3)
    peak = window("peak", "0 11 * * *", end="0 14 * * *", min_replicas=8, max_replicas=12)
    both = [day, peak]
    assert names(both, utc(2026, 6, 10, 10, 0)) == ["day"]
    assert names(both, utc(2026, 6, 10, 12, 0)) == ["day", "peak"]
    assert names(both, utc(2026, 6, 10, 15, 0)) == ["day"]
    assert next_change(both, utc(2026, 6, 10, 10, 0)) == utc(2026, 6, 10, 11, 0)
    assert next_change(both, utc(2026, 6, 10, 12, 0)) == utc(2026, 6, 10, 14, 0)


def test_activity_is_a_function_of_now_at_the_exact_second_boundaries():
    w = window(start="30 9 * * *", duration_seconds=90, min_replicas=2)
    start = utc(2026, 6, 10, 9, 30)
    assert names([w], start - 0.001) == []
    assert names([w], start) == ["w"]
    assert names([w], start + 0.5) == ["w"]
    assert names([w], start + 89.999) == ["w"]
    assert names([w], start + 90) == []


# ----------------------------------------------------------------------------------------- DST
def test_spring_forward_a_start_in_the_skipped_hour_happens_when_the_gap_ends():
    """2026-03-08, America/New_York: 02:00 EST jumps to 03:00 EDT. A 02:30 start happens at 03:00 EDT."""
    w = window("early", "30 2 * * *", NY, duration_seconds=3600, min_replicas=5)
    gap_end = at(NY, 2026, 3, 8, 3, 0)
    assert gap_end == utc(2026, 3, 8, 7, 0)
    assert names([w], gap_end - 1) == []
    assert next_change([w], at(NY, 2026, 3, 8, 1, 0)) == gap_end
    (a,) = active_windows([w], at(NY, 2026, 3, 8, 3, 30))
    assert (a.start, a.end) == (gap_end, gap_end + 3600)
    assert names([w], gap_end + 3600) == []
    # the day after, back to 02:30 local (EDT)
    assert [s for s, _ in occurrences(w, at(NY, 2026, 3, 7, 12, 0), at(NY, 2026, 3, 10, 0, 0))] == [
        at(NY, 2026, 3, 8, 3, 0), at(NY, 2026, 3, 9, 2, 30)]


def test_spring_forward_an_end_cron_in_the_skipped_hour_ends_when_the_gap_ends():
    w = window("late", "0 22 * * *", NY, end="30 2 * * *", max_replicas=3)
    (a,) = active_windows([w], at(NY, 2026, 3, 8, 1, 0))
    assert a.end == at(NY, 2026, 3, 8, 3, 0)
    assert a.end - a.start == 4 * 3600  # 22:00 EST to 03:00 EDT: four hours elapsed


def test_fall_back_a_start_in_the_repeated_hour_happens_once_at_its_first_occurrence():
    """2026-11-01, America/New_York: 01:00-02:00 happens twice (EDT, then EST)."""
    w = window("batch", "30 1 * * *", NY, duration_seconds=3600, min_replicas=5)
    first = at(NY, 2026, 11, 1, 1, 30, fold=0)
    assert first == utc(2026, 11, 1, 5, 30)
    day = list(occurrences(w, at(NY, 2026, 10, 31, 12, 0), at(NY, 2026, 11, 2, 0, 0)))
    assert day == [(first, first + 3600)]  # not again at 01:30 EST
    assert names([w], at(NY, 2026, 11, 1, 1, 15, fold=1)) == ["batch"]  # 01:15 EST = 45 minutes after the start
    assert names([w], at(NY, 2026, 11, 1, 1, 30, fold=1)) == []  # 01:30 EST: one hour elapsed, over
    assert names([w], at(NY, 2026, 11, 1, 1, 45, fold=1)) == []


def test_fall_back_an_end_cron_ends_at_the_wall_clock_time_and_duration_is_elapsed_time():
    by_cron = window("cron", "0 0 * * *", NY, end="0 2 * * *", min_replicas=2)
    by_duration = window("elapsed", "0 0 * * *", NY, duration_seconds=7200, min_replicas=2)
    midnight = at(NY, 2026, 11, 1, 0, 0)
    (c,) = active_windows([by_cron], midnight + 60)
    (d,) = active_windows([by_duration], midnight + 60)
    assert c.end - c.start == 3 * 3600  # 00:00 EDT to 02:00 EST: three hours of elapsed time
    assert d.end - d.start == 7200  # ends at 01:00 EST
    assert d.end == at(NY, 2026, 11, 1, 1, 0, fold=1)


# DST days as (zone, date, the first hour of the skipped or repeated hour): spring forward skips [h:00, h+1:00),
# fall back repeats [h:00, h+1:00) (first in summer time, then in standard time)
SPRING = [(BERLIN, (2026, 3, 29), 2), (NY, (2026, 3, 8), 2)]
FALL = [(BERLIN, (2026, 10, 25), 2), (NY, (2026, 11, 1), 1)]


def occurrence_table(w, tz, day) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """The occurrences of ``w`` starting on ``day`` as ((hour, minute, fold) of the start, (day offset, hour,
    minute) of the end), wall-clock in ``tz``; and checks each against the activity every minute of the day."""
    since, until = at(tz, *day, 0, 0), at(tz, *day, 0, 0) + 25 * 3600
    rows, spans = [], list(occurrences(w, since - 86400, until))
    for s, e in spans:
        start, end = datetime.fromtimestamp(s, tz), datetime.fromtimestamp(e, tz)
        if start.date() == date(*day):
            rows.append(((start.hour, start.minute, start.fold), ((end.date() - start.date()).days, end.hour, end.minute)))
    for t in range(int(since), int(until), 60):
        assert (names([w], t) == [w.name]) == any(s <= t < e for s, e in spans), datetime.fromtimestamp(t, tz)
    return rows


@pytest.mark.parametrize("tz, day, h", SPRING)
@pytest.mark.parametrize("start, end, expected", [
    # the reported case: start and end in the skipped hour, both at the gap's end: empty, not active that day
    ("30 {h} * * *", "45 {h} * * *", [((3, 0, 0), (0, 3, 0))]),
    ("15 {h} * * *", "45 {h} * * *", [((3, 0, 0), (0, 3, 0))]),
    ("30 {h} * * *", "0 {h1} * * *", [((3, 0, 0), (0, 3, 0))]),  # an end at the gap's end: empty too
    ("30 {h} * * *", "0 4 * * *", [((3, 0, 0), (0, 4, 0))]),  # only the start in the gap
    ("0 1 * * *", "30 {h} * * *", [((1, 0, 0), (0, 3, 0))]),  # only the end in the gap
    ("45 {h} * * *", "15 {h} * * *", [((3, 0, 0), (1, 2, 15))]),  # the end written before the start: next day
    ("0 3 * * *", "45 {h} * * *", [((3, 0, 0), (1, 2, 45))]),  # a start at 03:00 itself is no gap start
    ("30 {h} * * *", "45 * * * *", [((3, 0, 0), (0, 3, 45))]),  # an hourly end does not fire in the gap
    ("*/20 {h} * * *", "0 4 * * *", []),  # nor does a start with * in its minute field
])
def test_spring_forward_a_window_in_the_skipped_hour_is_empty_and_one_half_in_it_is_cut_at_the_gap(
        tz, day, h, start, end, expected):
    """The gap is [02:00, 03:00) in both zones. A window is active over the real instants of its wall-clock
    span: whatever of it lies in the skipped hour happens at 03:00, so a window wholly inside it is empty."""
    w = window("w", start.format(h=h, h1=h + 1), tz, end=end.format(h=h, h1=h + 1), min_replicas=4)
    assert occurrence_table(w, tz, day) == expected
    if expected == [((3, 0, 0), (0, 3, 0))]:  # empty: at no time of the day, and no change for next_change
        gap_end = at(tz, *day, 3, 0)
        nxt = datetime.fromtimestamp(gap_end, tz).replace(day=day[2] + 1, hour=h, minute=int(start.split()[0]))
        assert [s for s, e in occurrences(w, gap_end, nxt.timestamp()) if e == s] == [gap_end]
        assert not any(names([w], t) for t in range(int(gap_end), int(nxt.timestamp()), 60))
        assert next_change([w], at(tz, *day, 0, 0)) == nxt.timestamp()
        assert names([w], nxt.timestamp()) == ["w"]


def test_a_duration_window_from_the_skipped_hour_lasts_its_elapsed_time():
    w = window("w", "30 2 * * *", BERLIN, duration_seconds=900, min_replicas=4)
    assert occurrence_table(w, BERLIN, (2026, 3, 29)) == [((3, 0, 0), (0, 3, 15))]


@pytest.mark.parametrize("tz, day, h", FALL)
@pytest.mark.parametrize("start, end, expected", [
    # the first reading (summer time, fold 0) only: 30 minutes, not again in the second reading
    ("15 {h} * * *", "45 {h} * * *", [((0, 15, 0), 30)]),
    ("0 {h0} * * *", "30 {h} * * *", [((-1, 0, 0), 90)]),
    # over the day, from the first reading to the next day's wall-clock time: an hour longer in elapsed time
    ("45 {h} * * *", "15 {h} * * *", [((0, 45, 0), (23 * 60 + 30) + 60)]),
    # an hourly start fires in both readings; the fixed end only in the first, so the occurrence that starts
    # in the second runs to the next day's (not to the first reading, 30 minutes before its start)
    ("15 * * * *", "45 {h} * * *", [((-1, 15, 0), 90), ((0, 15, 0), 30), ((0, 15, 1), 24 * 60 + 30)]),
])
def test_fall_back_a_window_in_the_repeated_hour_runs_once_for_its_wall_clock_span(tz, day, h, start, end, expected):
    """Occurrences starting from the hour before the repeated hour ``h`` to its second reading, as ((hour
    relative to ``h``, minute, fold) of the start, elapsed minutes), each checked against the activity."""
    w = window("w", start.format(h=h, h0=h - 1), tz, end=end.format(h=h), min_replicas=4)
    occurrence_table(w, tz, day)  # activity every minute of the day agrees with the occurrences
    first, last = at(tz, *day, h - 1, 0), at(tz, *day, h, 59, fold=1)
    rows = []
    for s, e in occurrences(w, first, last):
        if s >= first:
            local = datetime.fromtimestamp(s, tz)
            rows.append(((local.hour - h, local.minute, local.fold), (e - s) / 60))
    assert rows == expected


@pytest.mark.parametrize("tz, day, h", SPRING + FALL)
@given(start=st.sampled_from(["30 {h} * * *", "15 {h} * * *", "0 {h} * * *", "45 {h} * * *", "*/20 * * * *",
                              "15 * * * *", "0 1 * * *", "0,30 {h} * * *"]),
       end=st.sampled_from(["45 {h} * * *", "0 {h1} * * *", "30 {h} * * *", "15 {h} * * *", "45 * * * *",
                            "0 4 * * *"]),
       offsets=st.lists(st.integers(-6 * 3600, 30 * 3600), min_size=1, max_size=8))
@settings(max_examples=60, deadline=None)
def test_around_dst_no_occurrence_ends_before_it_starts_and_next_change_is_a_change(tz, day, h, start, end, offsets):
    """Around both switches in both zones: ends never before starts nor earlier for a later start, an empty
    occurrence is active at no time, and ``next_change`` is the next time the active set changes."""
    start, end = start.format(h=h), end.format(h=h, h1=h + 1)
    if start.split() == end.split():
        return
    w = window("w", start, tz, end=end, min_replicas=4)
    midnight = at(tz, *day, 0, 0)
    spans = list(occurrences(w, midnight - 86400, midnight + 2 * 86400))
    assert all(e >= s for s, e in spans)
    assert all(b[1] >= a[1] for a, b in zip(spans, spans[1:]))
    for s, e in spans:
        if s == e:
            assert w.name not in names([w], s)
    for o in offsets:
        now = midnight + o
        change = next_change([w], now)
        assert change > now
        before = [(a.start, a.end) for a in active_windows([w], now)]
        assert [(a.start, a.end) for a in active_windows([w], change - 0.001)] == before
        assert [(a.start, a.end) for a in active_windows([w], change)] != before

# ----------------------------------------------------------------------------------------- excludeDates
def test_exclude_dates_skip_the_start_on_that_local_date_only():
    holiday = date(2026, 12, 25)  # a Friday
    w = window("business", "0 8 * * 1-5", BERLIN, end="0 18 * * 1-5", min_replicas=4,
               exclude_dates=frozenset({holiday}))
    assert names([w], at(BERLIN, 2026, 12, 24, 12, 0)) == ["business"]
    assert names([w], at(BERLIN, 2026, 12, 25, 12, 0)) == []
    assert next_change([w], at(BERLIN, 2026, 12, 24, 20, 0)) == at(BERLIN, 2026, 12, 28, 8, 0)
    starts = [s for s, _ in occurrences(w, at(BERLIN, 2026, 12, 24, 0, 0), at(BERLIN, 2026, 12, 29, 0, 0))]
    assert starts == [at(BERLIN, 2026, 12, 24, 8, 0), at(BERLIN, 2026, 12, 28, 8, 0)]


def test_an_excluded_date_is_the_date_of_the_start_a_window_from_the_evening_before_runs_to_its_end():
    w = window("night", "0 22 * * *", NY, end="0 6 * * *", max_replicas=2,
               exclude_dates=frozenset({date(2026, 7, 4)}))
    assert names([w], at(NY, 2026, 7, 4, 3, 0)) == ["night"]  # started 3 July 22:00
    assert names([w], at(NY, 2026, 7, 4, 23, 0)) == []  # the 4 July start is skipped
    assert names([w], at(NY, 2026, 7, 5, 23, 0)) == ["night"]


def test_an_excluded_start_does_not_cut_short_an_occurrence_that_is_still_running():
    """Occurrences of one window overlap (a start every hour, two hours long): skipping the start on an
    excluded date leaves the previous day's last occurrence running to its end."""
    w = window("hourly", "0 * * * *", UTC, duration_seconds=7200, min_replicas=3,
               exclude_dates=frozenset({date(2026, 6, 11)}))
    assert names([w], utc(2026, 6, 11, 0, 30)) == ["hourly"]  # started 10 June 23:00, runs to 01:00
    (a,) = active_windows([w], utc(2026, 6, 11, 0, 30))
    assert (a.start, a.end) == (utc(2026, 6, 10, 23, 0), utc(2026, 6, 11, 1, 0))
    assert names([w], utc(2026, 6, 11, 1, 0)) == []
    assert names([w], utc(2026, 6, 11, 12, 0)) == []
    assert next_change([w], utc(2026, 6, 11, 0, 30)) == utc(2026, 6, 11, 1, 0)
    assert next_change([w], utc(2026, 6, 11, 1, 0)) == utc(2026, 6, 12, 0, 0)


# ----------------------------------------------------------------------------------------- check_window
@pytest.mark.parametrize("kw, field, words", [
    (dict(start="0 8 * *", end="0 18 * * *", min_replicas=2), "start", "5-field"),
    (dict(start="0 8 * * * *", end="0 18 * * *", min_replicas=2), "start", "5-field"),
    (dict(start="0 25 * * *", end="0 18 * * *", min_replicas=2), "start", "invalid cron"),
    (dict(start="0 8 * * *", end="0 8 * * *", min_replicas=2), "end", "must differ from start"),
    (dict(start="0 8 * * *", end="0  8 * * *", min_replicas=2), "end", "must differ from start"),
    (dict(start="0 8 * * *", min_replicas=2), "end", "one of end or durationSeconds"),
    (dict(start="0 8 * * *", end="0 9 * * *", duration_seconds=60, min_replicas=2), "durationSeconds", "not both"),
    (dict(start="0 8 * * *", duration_seconds=0, min_replicas=2), "durationSeconds", "greater than 0"),
    (dict(start="0 8 * * *", end="0 18 * * *"), "minReplicas", "minReplicas (a floor), maxReplicas (a cap)"),
    (dict(start="0 8 * * *", end="0 18 * * *", min_replicas=5, max_replicas=3), "minReplicas", "greater than maxReplicas"),
    (dict(start="0 8 * * *", end="0 18 * * *", max_replicas=0), "maxReplicas", "at least 1"),
])
def test_check_window_names_the_field(kw, field, words):
    problems = check_window(window(**kw))
    assert problems and problems[0][0] == field and words in problems[0][1], problems


def test_a_valid_window_has_no_problems():
    assert check_window(window(start="0 8 * * 1-5", end="0 18 * * 1-5", min_replicas=2, max_replicas=9)) == []
    assert check_window(window(start="@daily", duration_seconds=60, max_replicas=1)) != []  # 5 fields only


# ----------------------------------------------------------------------------------------- decide
def conds(d) -> dict:
    return {c.type: (c.status, c.reason) for c in d.conditions}


def low_cpu(n: int, now: float):
    """``n`` pods at 10 % of request against a 50 % target: the metric asks for fewer replicas."""
    return cpu_pods([100] * n, now=now)


def test_a_floor_raises_replicas_at_its_start_and_names_the_window():
    floor = window("business", "0 8 * * *", duration_seconds=3600, min_replicas=5)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(floor,))
    now = utc(2026, 6, 10, 8, 0)
    pods, samples = low_cpu(1, now)
    before = decided(hpa, 1, pods, samples, now - 1)
    assert not before.rescale and before.active_schedules == ()
    assert conds(before)["ScheduleActive"] == ("False", "NoActiveWindow")
    assert before.status.schedules.active == () and before.status.schedules.next_change == now
    d = decided(hpa, 1, pods, samples, now)
    assert d.rescale and d.desired_replicas == 5
    assert str(d.decided_by) == "Schedule/business"
    assert (d.min_replicas_effective, d.max_replicas_effective) == (5, 10)
    assert d.active_schedules == ("business",)
    assert d.rescale_reason == "Current number of replicas below Schedule/business minReplicas (5)"
    assert conds(d)["ScheduleActive"] == ("True", "WindowActive")
    assert "active windows: business" in next(c.message for c in d.conditions if c.type == "ScheduleActive")
    assert d.status.schedules.active == ("business",) and d.status.schedules.next_change == now + 3600
    sched = [s for s in d.sources if s.source == "Schedule"]
    assert [(s.name, s.min_replicas, s.max_replicas) for s in sched] == [("business", 5, None)]


def test_a_cap_lowers_replicas_at_its_start():
    cap = window("night", "0 0 * * *", end="0 6 * * *", max_replicas=3)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(cap,))
    now = utc(2026, 6, 10, 0, 0, 15)
    pods, samples = cpu_pods([1000] * 8, now=now)  # busy: the metric wants more
    d = decided(hpa, 8, pods, samples, now, memory=Memory([(now - 600, 8)]))
    assert d.desired_replicas == 3 and str(d.decided_by) == "Schedule/night"
    assert d.max_replicas_effective == 3


def test_floor_and_cap_of_overlapping_windows_combine_and_the_lowest_cap_and_highest_floor_count():
    a = window("a", "0 6 * * *", end="0 20 * * *", min_replicas=3, max_replicas=9)
    b = window("b", "0 11 * * *", end="0 14 * * *", min_replicas=4, max_replicas=7)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(a, b))
    now = utc(2026, 6, 10, 12, 0)
    pods, samples = cpu_pods([1000] * 5, now=now)  # 200 % of target: metrics ask for 10
    d = decided(hpa, 5, pods, samples, now, memory=Memory([(now - 600, 5)]))
    assert (d.min_replicas_effective, d.max_replicas_effective) == (4, 7)
    assert d.desired_replicas == 7 and str(d.decided_by) == "Schedule/b"
    metric = [s for s in d.sources if s.source == "Metric"]
    assert [s.replicas for s in metric] == [10]


def test_a_floor_above_a_cap_wins_and_the_decision_says_so():
    floor = window("launch", "0 9 * * *", end="0 17 * * *", min_replicas=6)
    cap = window("budget", "0 0 * * *", end="0 23 * * *", max_replicas=4)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(cap, floor))
    now = utc(2026, 6, 10, 12, 0)
    for usage, want in ((100, 6), (1000, 6)):  # metrics low or high: the floor holds either way
        pods, samples = cpu_pods([usage] * 6, now=now)
        d = decided(hpa, 6, pods, samples, now, memory=Memory([(now - 600, 6)]))
        assert d.desired_replicas == want
        assert (d.min_replicas_effective, d.max_replicas_effective) == (6, 6)
        assert conds(d)["ScheduleActive"] == ("True", "FloorAndCapConflict")
        message = next(c.message for c in d.conditions if c.type == "ScheduleActive")
        assert "floor 6 (Schedule/launch) is above cap 4 (Schedule/budget): the floor wins" in message
        budget = next(s for s in d.sources if s.name == "budget")
        assert "overridden" in budget.note
    pods, samples = cpu_pods([100] * 2, now=now)
    d = decided(hpa, 2, pods, samples, now)
    assert d.desired_replicas == 6 and str(d.decided_by) == "Schedule/launch"


def _run(hpa, syncs, current, start, period=15.0, usage=100):
    """Sync ``syncs`` times every ``period`` s from ``start`` at low load; [(now, desired, decided_by)]."""
    memory, out, now = Memory(), [], start
    for _ in range(syncs):
        pods, samples = cpu_pods([usage] * current, now=now)
        d = decided(hpa, current, pods, samples, now, memory=memory)
        memory, hpa, current = d.memory, with_status(hpa, d.status), d.desired_replicas
        out.append((now, current, str(d.decided_by)))
        now += period
    return out


def test_after_a_window_ends_the_scale_down_waits_for_the_stabilization_window():
    floor = window("business", "0 8 * * *", duration_seconds=1800, min_replicas=6)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(floor,))
    start = utc(2026, 6, 10, 7, 59, 30)
    end = utc(2026, 6, 10, 8, 30)
    rows = _run(hpa, 200, 1, start)
    by_time = {t: (r, who) for t, r, who in rows}
    assert by_time[start][0] == 1
    assert by_time[utc(2026, 6, 10, 8, 0)] == (6, "Schedule/business")  # at the start, not a sync later
    assert all(r == 6 for t, r, _ in rows if utc(2026, 6, 10, 8, 0) <= t < end)
    # the window ends at 08:30; metrics ask for 1 but the last floor recommendation (08:29:45) holds for 300 s
    assert by_time[end] == (6, "Stabilization/downscale")
    held = [t for t, r, _ in rows if t >= end and r == 6]
    assert max(held) == utc(2026, 6, 10, 8, 34, 45)
    assert by_time[utc(2026, 6, 10, 8, 35)] == (2, "Metric/cpu resource utilization (percentage of request)")


def test_after_a_window_ends_the_scale_down_follows_the_behavior_policies():
    behavior = Behavior(ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))),
                        ScalingRules(60, "Max", (ScalingPolicy("Pods", 1, 60),)))
    floor = window("business", "0 8 * * *", duration_seconds=1800, min_replicas=6)
    hpa = replace(cpu_hpa(min_r=1, max_r=10, behavior=behavior), schedules=(floor,))
    rows = _run(hpa, 200, 1, utc(2026, 6, 10, 7, 59, 45))
    end = utc(2026, 6, 10, 8, 30)
    after = [(t - end, r, who) for t, r, who in rows if t >= end]
    assert after[0] == (0, 6, "Stabilization/scaleDown")
    downs = [(t, r, who) for (t, r, who), (_, prev, _) in zip(after[1:], after) if r < prev]
    assert downs[0][0] == 45  # the last floor recommendation (08:29:45) leaves the 60 s window at 08:30:45
    assert [r for _, r, _ in downs] == [5, 4, 3, 2, 1]
    assert [who for _, _, who in downs] == ["Policy/scaleDown"] * 4 + [
        "Metric/cpu resource utilization (percentage of request)"]  # 2 -> 1 is within the policy
    assert [b[0] - a[0] for a, b in zip(downs, downs[1:])] == [60, 60, 60, 60]  # one pod per 60 s


def test_a_restarted_controller_applies_the_active_window_without_memory():
    floor = window("business", "0 8 * * *", end="0 18 * * *", min_replicas=5)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(floor,))
    now = utc(2026, 6, 10, 12, 34, 56)
    pods, samples = low_cpu(2, now)
    d = decided(hpa, 2, pods, samples, now)
    assert d.desired_replicas == 5 and d.active_schedules == ("business",)
    pods, samples = low_cpu(5, now)
    d = decided(hpa, 5, pods, samples, now)
    assert not d.rescale and d.desired_replicas == 5 and str(d.decided_by) == "Schedule/business"


behaviors = st.one_of(st.none(), st.just(Behavior(
    ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))),
    ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),)))))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2000), min_size=1, max_size=8), st.integers(1, 12), behaviors,
       st.integers(0, 600))
def test_an_inactive_window_changes_nothing_but_the_schedule_condition(usages, current, behavior, age):
    """Upstream's decision is untouched by windows that are not active: same replicas, memory, events, and
    the same conditions apart from ScheduleActive=False."""
    now = utc(2026, 6, 10, 12, 0)
    later = window("later", "0 20 * * *", end="0 22 * * *", min_replicas=9, max_replicas=9)
    plain = cpu_hpa(min_r=1, max_r=12, behavior=behavior)
    with_windows = replace(plain, schedules=(later,))
    pods, samples = cpu_pods(usages, now=now)
    memory = Memory([(now - age, current)])
    a = decided(plain, current, pods, samples, now, memory=memory)
    b = decided(with_windows, current, pods, samples, now, memory=memory)
    assert (a.desired_replicas, a.rescale, a.rescale_reason, a.memory, a.events, a.steps) == (
        b.desired_replicas, b.rescale, b.rescale_reason, b.memory, b.events, b.steps)
    assert [c for c in b.conditions if c.type != "ScheduleActive"] == a.conditions
    assert conds(b)["ScheduleActive"] == ("False", "NoActiveWindow")
    assert a.status.schedules is None and b.status.schedules.next_change == utc(2026, 6, 10, 20, 0)
    assert (b.min_replicas_effective, b.max_replicas_effective) == (1, 12)


@pytest.mark.parametrize("behavior", [None, Behavior(
    ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))),
    ScalingRules(120, "Max", (ScalingPolicy("Percent", 100, 15),)))])
def test_a_window_shorter_than_a_sync_period_is_still_followed_by_the_stabilization_window(behavior):
    """The only sync inside a 10 s window moves the replicas to the floor without evaluating metrics (as upstream
    below minReplicas); the floor is still this sync's recommendation, so the next sync, after the window, holds."""
    floor = window("burst", "0 8 * * *", duration_seconds=10, min_replicas=4)
    hpa = replace(cpu_hpa(min_r=1, max_r=10, behavior=behavior), schedules=(floor,))
    start = utc(2026, 6, 10, 8, 0)
    pods, samples = low_cpu(1, start)
    d = decided(hpa, 1, pods, samples, start, memory=Memory([(start - 600, 1)]))
    assert d.desired_replicas == 4 and d.proposals == [] and (start, 4) in d.memory.recommendations
    hpa = with_status(hpa, d.status)
    pods, samples = low_cpu(4, start + 15)
    after = decided(hpa, 4, pods, samples, start + 15, memory=d.memory)
    assert after.active_schedules == () and after.desired_replicas == 4
    assert str(after.decided_by) == ("Stabilization/downscale" if behavior is None else "Stabilization/scaleDown")
    window_s = 300 if behavior is None else 120
    pods, samples = low_cpu(4, start + window_s + 1)
    later = decided(hpa, 4, pods, samples, start + window_s + 1, memory=after.memory)
    assert later.desired_replicas == 1


def test_a_spec_bound_records_nothing_as_upstream():
    hpa = cpu_hpa(min_r=3, max_r=10)
    now = utc(2026, 6, 10, 8, 0)
    pods, samples = low_cpu(1, now)
    memory = Memory([(now - 600, 1)])
    d = decided(hpa, 1, pods, samples, now, memory=memory)
    assert d.desired_replicas == 3 and d.memory.recommendations == memory.recommendations


def test_removing_the_windows_removes_the_schedule_condition_and_status():
    w = window("business", "0 8 * * *", end="0 18 * * *", min_replicas=3)
    hpa = replace(cpu_hpa(min_r=1, max_r=10), schedules=(w,))
    now = utc(2026, 6, 10, 12, 0)
    pods, samples = low_cpu(3, now)
    d = decided(hpa, 3, pods, samples, now)
    assert "ScheduleActive" in conds(d)
    without = replace(with_status(hpa, d.status), schedules=())
    again = decided(without, 3, pods, samples, now + 15, memory=d.memory)
    assert "ScheduleActive" not in conds(again) and again.status.schedules is None
    assert [c.type for c in again.conditions] == ["AbleToScale", "ScalingActive", "ScalingLimited"]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3 * 366 * 86400))
def test_next_change_with_the_active_windows_given_is_the_same(offset):
    ws = (window("b", "0 8 * * 1-5", NY, end="0 18 * * 1-5", min_replicas=4,
                 exclude_dates=frozenset({date(2026, 7, 3)})),
          window("n", "30 1 * * *", NY, duration_seconds=5400, max_replicas=2),
          window("h", "*/20 * * * *", BERLIN, duration_seconds=1500, min_replicas=2))
    now = utc(2026, 1, 1, 0, 0) + offset
    change = next_change(ws, now)
    assert change == next_change(ws, now, active_windows(ws, now))
    assert change > now
    # nothing changes before it, and something changes at it
    before = names(ws, now)
    assert names(ws, change - 0.001) == before
    after = [(a.name, a.start) for a in active_windows(ws, change)]
    assert after != [(a.name, a.start) for a in active_windows(ws, now)]


@pytest.mark.parametrize("cron", ["30 1 * * *", "*/20 * * * *", "0 * * * *", "30 2 * * *", "59 0 * * *"])
@pytest.mark.parametrize("day", [(2026, 11, 1), (2026, 3, 8)])
def test_the_latest_start_is_found_every_five_minutes_around_both_dst_switches(cron, day):
    """Against a reference that walks forward (elapsed time) from a day before: every 5 minutes from 23:00 the
    day before to 04:00, in both readings of a repeated hour."""
    from cronsim import CronSim

    w = window("w", cron, NY, duration_seconds=3 * 86400, min_replicas=1)
    first = at(NY, *day, 0, 0) - 3600
    for ts in range(int(first), int(first) + 6 * 3600, 300):
        for t in (ts, ts + 59.5):
            expected = None
            for s in CronSim(cron, datetime.fromtimestamp(t - 86400 - 7200, NY)):  # a day may have 25 hours
                if s.timestamp() > t:
                    break
                expected = s.timestamp()
            (a,) = active_windows([w], t)
            assert a.start == expected, (cron, datetime.fromtimestamp(t, NY))


@pytest.mark.parametrize("cron", ["30 1 * * *", "*/20 * * * *", "0 * * * *", "30 2 * * *", "0 8 * * 1-5"])
@given(st.lists(st.integers(0, 6 * 86400), min_size=1, max_size=40), st.booleans())
@settings(max_examples=40, deadline=None)
def test_the_occurrence_memo_answers_as_a_cold_look_up_around_both_dst_switches(cron, offsets, ordered):
    """The memo of the latest start per occurrence is filled by one look-up and read by the next: whatever the
    order of the times (a controller's syncs move forward, ``explain`` jumps), each answer is the one of a window
    never looked up before (another name: nothing memoized)."""
    w = window("w", cron, NY, duration_seconds=5400, min_replicas=1,
               exclude_dates=frozenset({date(2026, 11, 2), date(2026, 3, 9)}))

    def seen(ws, t):
        return [(a.start, a.end) for a in active_windows(ws, t)], next_change(ws, t)

    for day in ((2026, 11, 1), (2026, 3, 8)):
        first = at(NY, *day, 0, 0) - 3 * 86400
        for i, o in enumerate(sorted(offsets) if ordered else offsets):
            t = first + o + (o % 7) * 0.5
            cold = seen((replace(w, name=f"cold-{cron}-{day}-{i}-{t}"),), t)
            assert seen((w,), t) == cold, (cron, datetime.fromtimestamp(t, NY))
