"""Cron windows (``spec.schedules``): which are active at ``now``, and when that changes.

A window is active from an occurrence of its ``start`` cron up to the first occurrence of its
``end`` cron after that start (or ``durationSeconds`` of elapsed time after it), both read in the
window's IANA ``timeZone``. Activity is a function of ``now`` alone (no memory), so a restarted
controller, ``explain`` and ``simulate`` agree.

Time-zone rules (those of Debian's cron, as the ``cronsim`` library implements them, for a cron whose
minute and hour fields do not begin with ``*``, a *fixed-time* cron such as ``30 2 * * *``):

- a start or end in the hour skipped when clocks spring forward (02:30 on the spring-forward day
  in ``America/New_York``) happens at the first instant after the gap (03:00 local). A window whose
  start and end both lie in the skipped hour (``30 2`` to ``45 2``; or its end at the gap's end,
  ``0 3``) so starts and ends at that instant: that day's occurrence is *empty*, never active (it is
  listed by ``occurrences`` with start == end, and is no change for ``next_change``);
- a start or end in the hour repeated when clocks fall back happens once, at its first reading
  (01:30 EDT, not 01:30 EST again): a window that starts in the second reading (only a start cron
  with ``*`` in its minute or hour does) runs to the end's next occurrence, the next day's;
- a cron with ``*`` in its minute or hour field (``*/20 * * * *``, ``*/15 2 * * *``) runs in elapsed
  time: it never fires in the skipped hour and fires in both readings of the repeated one;
- ``durationSeconds`` is elapsed time: a 2-hour window over a DST switch lasts 7,200 s;
- ``excludeDates`` are dates of the window's *start* in its time zone: a window that starts at
  22:00 on an excluded date is skipped, and one that started the evening before runs to its end
  (also when occurrences of one window overlap).

A dated window (``WindowSpec.dated``: a ``start`` and an ``end`` date-time instead of crons) is
active once, from its ``start_time`` up to (not including) its ``end_time``; from ``end_time`` on it
is expired and never applies again. The adapters parse the date-times (RFC 3339, or a local date-time
in the window's zone) into those instants; the core only compares them.

The cron expressions are parsed by ``cronsim`` (5 fields); the core only evaluates them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from cronsim import CronSim, CronSimError

from .combine import Bounds, effective_bounds, schedule_sources
from .model import ActiveWindow, ConditionType, Reason, ScheduleStatus, SourceKind, WindowSpec
from .sources import BoundsOutcome, Outcome, SourceInputs, Stage, condition_dropped

__all__ = ["END_OF_CALENDAR", "SchedulesSource", "active_occurrence", "active_windows", "check_window", "check_windows",
           "expired_windows", "next_change", "occurrences"]

#: windows x minutes remembered by the memoized cron look-ups below (a few per autoscaler)
_CACHE = 65536

#: how many excluded starts in a row ``next_change`` and ``active_occurrence`` skip before they give up
_MAX_SKIPPED = 400
#: epoch seconds of 9999-12-31T23:59:59Z, the last second of the calendar (Python's ``datetime``): a window whose
#: end would come later runs to it, and a cron has no occurrence after it
END_OF_CALENDAR = 253402300799.0


def _cron(expr: str, start: datetime, reverse: bool = False) -> Iterator[datetime]:
    """cronsim's occurrences of ``expr`` after ``start`` (``reverse``: before it), until the calendar ends: none
    after 9999-12-31 or before 0001-01-01 (where cronsim's date arithmetic overflows)."""
    it = CronSim(expr, start, reverse=reverse)
    while True:
        try:
            occurrence = next(it)
        except (OverflowError, ValueError):  # past year 9999 (or before year 1): the calendar has no more
            return
        yield occurrence


def _local(ts: float, window: WindowSpec) -> datetime | None:
    """Epoch ``ts`` in the window's zone; within hours of the calendar's ends, where that local time would lie
    outside it: the calendar's first local instant (at its start), or None (at its end: nothing comes after)."""
    try:
        return datetime.fromtimestamp(ts, window.time_zone)
    except (OverflowError, ValueError):
        return datetime(1, 1, 1, tzinfo=window.time_zone) if ts < 0 else None


# Cron look-ups are pure functions of the window and a time; starts and ends fall on whole minutes, so
# for every time within one minute the latest start at or before it, and the first start after it, are
# the same. They are memoized per (window, minute), and the latest start also per occurrence (``_BRACKETS``:
# between two starts it does not change): a controller syncing an autoscaler every few seconds walks a
# cron about once per occurrence instead of at every sync. The caches hold results only, never state a
# decision depends on.

_ENDS: dict[tuple[WindowSpec, float], float] = {}


def _end_after(window: WindowSpec, start: datetime) -> float:
    """Epoch seconds at which the occurrence that started at ``start`` (as cronsim gave it) ends: equal to the
    start when the occurrence is empty (``_inside_gap``), never before it."""
    if window.end is None:
        return min(start.timestamp() + float(window.duration_seconds or 0), END_OF_CALENDAR)
    key = (window, start.timestamp())
    end = _ENDS.get(key)
    if end is None:
        if len(_ENDS) >= _CACHE:
            _ENDS.clear()
        end = _ENDS[key] = start.timestamp() if _inside_gap(window, start) else _first_end(window.end, start)
    return end


def _first_end(expr: str, start: datetime) -> float:
    """The first occurrence of the end cron ``expr`` after ``start`` in elapsed time (epoch s; the calendar's end if
    none): so a later start never ends earlier.

    cronsim reads a fixed-time cron from ``start``'s wall-clock time and gives the first reading of a repeated
    hour; from a start in the *second* reading (only a start cron with ``*`` in its minute or hour makes one)
    that first reading lies before the start, and the end is the cron's next occurrence (the next day's)."""
    begin = start.timestamp()
    for end in _cron(expr, start):
        if end.timestamp() > begin:
            return end.timestamp()
    return END_OF_CALENDAR


def _fixed_time(expr: str) -> bool:
    """Whether cronsim applies Debian cron's DST rules to ``expr`` (its minute and hour fields do not begin with
    ``*``): then a time in the skipped hour fires when the gap ends, and one in the repeated hour once, at its
    first reading. A cron with ``*`` there runs in elapsed time: never in the skipped hour, in both readings of
    the repeated one."""
    fields = expr.split()
    return not fields[0].startswith("*") and not fields[1].startswith("*")


def _inside_gap(window: WindowSpec, start: datetime) -> bool:
    """Whether the occurrence at ``start`` is empty: its start and its end both lie in the hour skipped when the
    clocks spring forward, so both happen when the gap ends (``30 2 * * *`` to ``45 2 * * *`` on the
    spring-forward day in Europe/Berlin: 03:00 CEST to 03:00 CEST).

    That is: the clocks jump at ``start``, the start cron is fixed-time (``_fixed_time``) and its latest
    wall-clock time at or before ``start``'s lies in the gap (cronsim moved it to the gap's end), and the end
    cron, fixed-time too, comes next at a wall-clock time after that one and not after the gap's end."""
    try:
        jump = start.utcoffset() - datetime.fromtimestamp(start.timestamp() - 1, start.tzinfo).utcoffset()
    except (OverflowError, ValueError):  # the calendar's first second: nothing before it
        return False
    if not jump or jump < timedelta(0) or not _fixed_time(window.start) or not _fixed_time(window.end):
        return False
    wall = start.replace(tzinfo=None)  # naive: cronsim walks wall-clock time, as it does for fixed-time crons
    written = next(_cron(window.start, wall + timedelta(seconds=1), reverse=True), None)
    if written is None or not wall - jump <= written < wall:
        return False
    end = next(_cron(window.end, written), None)
    return end is not None and end <= wall


#: per window, the occurrence bracket of its last look-up: (start, next start) as epoch seconds, then as cronsim gave
#: them (the next None at the calendar's end). Between two starts the latest start is the same for every time, so
#: a look-up inside the bracket needs no cron at all: one cron walk per occurrence instead of one per minute.
_BRACKETS: dict[WindowSpec, tuple[float, float, datetime, datetime | None]] = {}


def _start_at_or_before(window: WindowSpec, ts: float) -> datetime | None:
    """The latest start at or before epoch ``ts`` (local, aware; None: none since year 1); memoized per
    occurrence (``_BRACKETS``), else per minute."""
    b = _BRACKETS.get(window)
    if b is not None and b[0] <= ts < b[1]:
        return b[2]
    start = _start_at_or_before_minute(window, math.floor(ts) // 60 * 60)
    if start is not None:
        after = next(_cron(window.start, start), None)  # forward: elapsed time, as the fold correction walks
        if len(_BRACKETS) >= _CACHE:
            _BRACKETS.clear()
        _BRACKETS[window] = (start.timestamp(), math.inf if after is None else after.timestamp(), start, after)
    return start


@lru_cache(maxsize=_CACHE)
def _start_at_or_before_minute(window: WindowSpec, ts: float) -> datetime | None:
    """The latest start at or before epoch ``ts`` (local, aware; None when there is none since year 1).

    cronsim's reverse iteration walks wall-clock time, so in the second reading of the hour repeated
    on a fall-back day it misses a start whose wall time lies after ``ts``'s (at 01:15 EST it skips
    back past 01:30 EDT, which was 45 minutes earlier). Only there (``fold`` 1) is its candidate
    corrected by walking forward, which cronsim does in elapsed time.
    """
    try:
        at = datetime.fromtimestamp(math.floor(ts) + 1e-6, window.time_zone)  # reverse is strict: include ts
    except (OverflowError, ValueError):  # ts within a day of the calendar's ends, shown in a zone beyond them
        return None
    cand = next(_cron(window.start, at, reverse=True), None)
    if cand is None or (at.fold == 0 and cand.timestamp() <= ts):
        return cand
    for _ in range(_MAX_SKIPPED):  # never seen: a reverse candidate after ts
        if cand.timestamp() <= ts:
            break
        cand = next(_cron(window.start, cand, reverse=True), None)
        if cand is None:
            return None
    for later in _cron(window.start, cand):
        if later.timestamp() > ts:
            break
        cand = later
    return cand


def active_occurrence(window: WindowSpec, now: float) -> ActiveWindow | None:
    """The occurrence of ``window`` active at ``now`` (epoch s), or None.

    That is the latest start at or before ``now`` whose date is not excluded (``excludeDates``),
    if it has not ended yet. Ends never come earlier for a later start, so once a start (excluded
    or not) has ended, no earlier one is running either: an excluded start does not cut short an
    earlier occurrence that is still running.
    """
    if window.dated:
        if window.start_time <= now < window.end_time:
            return ActiveWindow(name=window.name, start=window.start_time, end=window.end_time,
                                min_replicas=window.min_replicas, max_replicas=window.max_replicas)
        return None
    start = _start_at_or_before(window, now)
    for _ in range(_MAX_SKIPPED):
        if start is None:
            return None
        end = _end_after(window, start)
        if now >= end:
            return None
        if start.date() not in window.exclude_dates:
            return ActiveWindow(name=window.name, start=start.timestamp(), end=end,
                                min_replicas=window.min_replicas, max_replicas=window.max_replicas)
        start = _start_at_or_before(window, start.timestamp() - 1)
    return None


def active_windows(windows: Sequence[WindowSpec], now: float) -> tuple[ActiveWindow, ...]:
    """The windows active at ``now``, in spec order."""
    out = []
    for w in windows:
        a = active_occurrence(w, now)
        if a is not None:
            out.append(a)
    return tuple(out)


def expired_windows(windows: Sequence[WindowSpec], now: float) -> tuple[str, ...]:
    """Names of the dated windows that have ended at ``now``, in spec order."""
    return tuple(w.name for w in windows if w.dated and now >= w.end_time)


def occurrences(window: WindowSpec, since: float, until: float) -> Iterator[tuple[float, float]]:
    """(start, end) epoch seconds of every non-excluded occurrence that overlaps ``[since, until)``,
    in time order (an occurrence already running at ``since`` comes first), and of every empty one that
    starts in it (start == end: a window inside the hour skipped when the clocks spring forward, never
    active). A dated window has one occurrence (none once it has expired at ``since``)."""
    if window.dated:
        if window.start_time < until and window.end_time > since:
            yield window.start_time, window.end_time
        return
    running = active_occurrence(window, since)
    if running is not None:
        yield running.start, running.end
    since_local = _local(math.floor(since) - 1, window)  # cronsim's starts come after it: from since on
    if since_local is None:
        return
    for start in _cron(window.start, since_local):
        ts = start.timestamp()
        if ts >= until:
            return
        if ts < since or start.date() in window.exclude_dates:
            continue
        end = _end_after(window, start)
        if ts == since and end > ts:  # running at since: yielded first
            continue
        yield ts, end


def next_change(windows: Sequence[WindowSpec], now: float,
                active: Sequence[ActiveWindow] | None = None) -> float | None:
    """Epoch seconds of the next start or end of any window after ``now`` (None without windows); an empty
    occurrence (``occurrences``) starts and ends nothing.

    The controller re-syncs an autoscaler then, so a floor applies at its start, not a period later.
    ``active`` is ``active_windows(windows, now)`` when the caller has it already (saves the work).
    """
    best: float | None = None
    running_by_name = None if active is None else {a.name: a for a in active}
    for w in windows:
        running = active_occurrence(w, now) if running_by_name is None else running_by_name.get(w.name)
        if running is not None and running.end > now:
            best = running.end if best is None else min(best, running.end)
        if w.dated:
            ts = w.start_time if w.start_time > now else None
        else:
            ts = _next_start_after(w, math.floor(now) // 60 * 60)
        if ts is not None and (best is None or ts < best):
            best = ts
    return best


def _next_start_after(window: WindowSpec, minute: float) -> float | None:
    """``_next_start``, from the occurrence memo (``_BRACKETS``) when the minute lies in its bracket: the bracket's
    next start, unless its date is excluded or it is empty."""
    b = _BRACKETS.get(window)
    if (b is not None and b[0] <= minute + 59 < b[1] and b[3] is not None and b[3].date() not in window.exclude_dates
            and _end_after(window, b[3]) > b[1]):
        return b[1]
    return _next_start(window, minute)


@lru_cache(maxsize=_CACHE)
def _next_start(window: WindowSpec, minute: float) -> float | None:
    """The first start after the minute that begins at epoch ``minute`` of an occurrence that is neither
    excluded nor empty (None past ``_MAX_SKIPPED`` such starts): the same for every time within that minute."""
    after = _local(minute + 59, window)
    if after is None:
        return None
    for skipped, start in enumerate(_cron(window.start, after)):
        if start.date() not in window.exclude_dates and _end_after(window, start) > start.timestamp():
            return start.timestamp()
        if skipped > _MAX_SKIPPED:
            return None
    return None


def check_window(window: WindowSpec) -> list[tuple[str, str]]:
    """What is wrong with one window, as (field, message) pairs (empty when it is valid).

    Fields are relative to the window (``start``, ``end``, ``durationSeconds``, ``minReplicas``).
    The time zone is resolved, and the date-times of a dated window parsed, by the caller (an unknown
    IANA name or a bad date never reaches the core).
    """
    problems = _check_dated(window) if window.dated else _check_crons(window)
    _check_bounds(window, problems)
    return problems


def _check_crons(window: WindowSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    probe = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for field, expr in (("start", window.start), ("end", window.end)):
        if expr is None:
            continue
        if len(expr.split()) != 5:
            problems.append((field, f"must be a 5-field cron expression (minute hour day month weekday), got {expr!r}"))
            continue
        try:
            CronSim(expr, probe)
        except CronSimError as err:
            problems.append((field, f"invalid cron expression {expr!r}: {err}"))
    if window.end is None and window.duration_seconds is None:
        problems.append(("end", "one of end or durationSeconds is required"))
    if window.end is not None and window.duration_seconds is not None:
        problems.append(("durationSeconds", "give either end or durationSeconds, not both"))
    if window.duration_seconds is not None and window.duration_seconds <= 0:
        problems.append(("durationSeconds", f"must be greater than 0, got {window.duration_seconds}"))
    if window.end is not None and window.end.split() == window.start.split():
        problems.append(("end", "must differ from start (the window would never be active)"))
    return problems


def _check_dated(window: WindowSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if window.end_time is None:
        problems.append(("end", "a dated window (start is a date-time) needs an end date-time"))
    elif window.end_time <= window.start_time:
        problems.append(("end", f"must be after start ({window.end!r} is not after {window.start!r})"))
    if window.duration_seconds is not None:
        problems.append(("durationSeconds", "a dated window takes an end date-time, not durationSeconds"))
    if window.exclude_dates:
        problems.append(("excludeDates", "applies to cron windows only (a dated window has one occurrence)"))
    return problems


def _check_bounds(window: WindowSpec, problems: list[tuple[str, str]]) -> None:
    if window.min_replicas is None and window.max_replicas is None:
        problems.append(("minReplicas", "a window needs minReplicas (a floor), maxReplicas (a cap) or both"))
    for field, value in (("minReplicas", window.min_replicas), ("maxReplicas", window.max_replicas)):
        if value is not None and value < 0:
            problems.append((field, f"must be at least 0, got {value}"))
    if window.max_replicas is not None and window.max_replicas < 1:
        problems.append(("maxReplicas", f"must be at least 1, got {window.max_replicas}"))
    if (window.min_replicas is not None and window.max_replicas is not None
            and window.min_replicas > window.max_replicas):
        problems.append(("minReplicas", f"minReplicas {window.min_replicas} is greater than maxReplicas {window.max_replicas}"))


def check_windows(windows: Sequence[WindowSpec]) -> list[tuple[int, str, str]]:
    """What is wrong between windows, as (index, field, message) triples (empty when nothing is).

    Two dated windows of the same kind (both floors, ``minReplicas``, or both caps, ``maxReplicas``)
    must not overlap: their spans ``[start_time, end_time)`` may touch but not intersect. The later
    one in spec order is named (field ``start``). Cron windows may overlap (the highest floor and the
    lowest cap count).
    """
    problems: list[tuple[int, str, str]] = []
    dated = [(i, w) for i, w in enumerate(windows) if w.dated and w.end_time is not None]
    for k, (j, b) in enumerate(dated):
        for i, a in dated[:k]:
            if not (a.start_time < b.end_time and b.start_time < a.end_time):
                continue
            kinds = [name for name, x, y in (("floors", a.min_replicas, b.min_replicas),
                                             ("caps", a.max_replicas, b.max_replicas))
                     if x is not None and y is not None]
            if kinds:
                problems.append((j, "start", f"dated window {b.name!r} overlaps dated window {a.name!r} "
                                             f"(spec.schedules[{i}]); both are {' and '.join(kinds)}: "
                                             "dated windows of the same kind must not overlap"))
                break
    return problems


_SCHEDULE_ACTIVE = ConditionType.SCHEDULE_ACTIVE  # read at every sync: bound once


class SchedulesSource:
    """The Schedule source (``spec.schedules``): each active window a floor and/or a cap (``schedule_sources``),
    the effective bounds (``effective_bounds``: the floor wins a conflict), the ``ScheduleActive`` condition and
    ``status.schedules`` (``active``, ``nextChangeTime``, ``expired``). Windows removed from the spec take their
    condition with them."""

    kind = SourceKind.SCHEDULE
    stage = Stage.BOUNDS
    condition_only = True  # what it leaves when retired is its condition alone

    def enabled(self, inputs: SourceInputs) -> bool:
        return bool(inputs.hpa.schedules)

    def retired(self, inputs: SourceInputs) -> Outcome | None:
        return condition_dropped(inputs, _SCHEDULE_ACTIVE)

    def evaluate(self, inputs: SourceInputs) -> BoundsOutcome:
        hpa, now = inputs.hpa, inputs.now
        active = active_windows(hpa.schedules, now)
        bounds = effective_bounds(hpa.min_replicas, hpa.max_replicas, active)
        status = ScheduleStatus(active=tuple(w.name for w in active), next_change=next_change(hpa.schedules, now, active),
                                expired=expired_windows(hpa.schedules, now))
        return BoundsOutcome(proposals=schedule_sources(active, bounds), conditions=(_schedule_condition(active, bounds),),
                             section=("schedules", status), bounds=bounds)


def _schedule_condition(active: tuple[ActiveWindow, ...], bounds: Bounds) -> tuple[str, str, str, str]:
    """``ScheduleActive``: the active windows and the bounds they set (a conflict: the floor wins)."""
    if not active:
        return ConditionType.SCHEDULE_ACTIVE, "False", Reason.NO_ACTIVE_WINDOW, "no schedule window is active"
    names = ", ".join(w.name for w in active)
    message = (f"active windows: {names}; effective minReplicas {bounds.min_replicas} ({bounds.min_source}), "
               f"maxReplicas {bounds.max_replicas} ({bounds.max_source})")
    if bounds.conflict:
        message += f"; {bounds.conflict}"
    return (ConditionType.SCHEDULE_ACTIVE, "True", Reason.FLOOR_AND_CAP_CONFLICT if bounds.conflict
            else Reason.WINDOW_ACTIVE, message)
