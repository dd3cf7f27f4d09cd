"""Schedule windows tune offers: peaks the replays were late for at the same clock time every day or week.

A CronHPA or KEDA cron-scaler user writes a window by hand when they know "every day at 22:00 the load jumps
and the HPA is two minutes late". tune finds such times in the replays of the tuning part: the overload
episodes of each replayed setting are laid on a grid of ``BIN_SECONDS`` (5 minutes) of the UTC day, and a
bin *recurs* when that replay was overloaded in it

- on at least ``MIN_SHARE`` (60 %) of the days it covered and on at least ``MIN_DAYS`` (3) of them
  (a daily window), or else on the same weekday in at least ``MIN_SHARE`` of the weeks and at least two
  (a weekly window, from two weeks of tuning part on), and
- far more often than that replay's overload falls in any bin by chance: the binomial tail of the hits at
  the replay's own share of overloaded bins is below ``SIGNIFICANCE`` divided by the bins tested
  (``scipy.stats.binom``). A setting overloaded at random times, or all the time, recurs nowhere.

Recurring bins next to each other (one bin apart at most) make one peak. Its window starts
``lead_seconds`` (the pods' start-up) before the first recurring bin, on the 5-minute grid, and ends with the
last one: pods of the floor are Ready when the peak comes, and after the window the HPA's own scale-down
stabilization takes over. Its floor is sized from the history's demand in the window (``Peak.demand_rps``:
the median over the days of each day's highest load in it) at the candidate's target, times a factor the
search tunes (``pyhpa.tune.search``); whether a window is worth its pod-hours is the search's objective.

Pure functions of the replays' episodes and the tuning part's load: tune calls ``detect`` on the replays of
its first settings (the tuning part only, never the held-out rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

DAY = 86400
WEEK = 7 * DAY
BIN_SECONDS = 300
BINS = DAY // BIN_SECONDS
MIN_DAYS = 3
MIN_SHARE = 0.6
SIGNIFICANCE = 0.01
#: most windows offered (the ones recurring on the largest share of days)
MAX_WINDOWS = 4
#: cron day-of-week numbers of Python's weekday() (Monday 0) -> cron (Sunday 0)
_CRON_DOW = (1, 2, 3, 4, 5, 6, 0)
_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True, slots=True)
class Replayed:
    """One replay of the tuning part, for ``detect``: its ``label``, overload ``episodes`` ((start epoch s,
    seconds) pairs) and the span it covered (``start``, ``end``, epoch s: a replay stopped early covers less)."""

    label: str
    episodes: tuple[tuple[float, float], ...]
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Peak:
    """A recurring peak the replays were late for, and the window tune offers for it.

    ``start_minute``: minute of the UTC day the window starts (the pods' start-up before the first late bin);
    ``duration_seconds``: its length; ``weekdays``: Python weekdays (Monday 0) of the window's start, empty for
    every day; ``late_from``/``late_to``: minutes of the UTC day of the first late bin's start and the last's
    end; ``hits``/``seen``: days (or weeks, weekly) the replay ``replay`` was overloaded there / covered;
    ``demand_rps``: the history's demand in the window, requests/s (median over the days of each day's
    highest load in the window)."""

    start_minute: int
    duration_seconds: int
    weekdays: tuple[int, ...]
    late_from: int
    late_to: int
    hits: int
    seen: int
    replay: str
    demand_rps: float

    @property
    def name(self) -> str:
        h, m = divmod(self.start_minute, 60)
        when = "daily" if not self.weekdays else "weekly-" + "-".join(_DAY_NAMES[d].lower() for d in self.weekdays)
        return f"tune-{when}-{h:02d}{m:02d}"

    @property
    def cron(self) -> str:
        """The window's ``start`` cron (UTC)."""
        h, m = divmod(self.start_minute, 60)
        days = "*" if not self.weekdays else ",".join(str(_CRON_DOW[d]) for d in self.weekdays)
        return f"{m} {h} * * {days}"

    @property
    def late(self) -> str:
        """When the replays were late, ``HH:MM-HH:MM`` UTC."""
        return f"{_hhmm(self.late_from)}-{_hhmm(self.late_to)}"

    def why(self) -> str:
        """Why the window exists, in words (recommended.yaml's comment)."""
        every = "every day" if not self.weekdays else "every " + "/".join(_DAY_NAMES[d] for d in self.weekdays)
        unit = "days" if not self.weekdays else "weeks"
        return (f"{every} at {self.late} UTC the replays of the tuning part were "
                f"late for a peak: {self.replay} was overloaded there on {self.hits} of {self.seen} {unit}, far more "
                f"than at other times; the window starts {_hhmm(self.start_minute)} (the pods' start-up ahead) and "
                f"its floor is sized from the history's demand in it ({self.demand_rps:.4g} requests/s: the median "
                f"of each day's highest load there)")


def _hhmm(minute: int) -> str:
    h, m = divmod(minute % 1440, 60)
    return f"{h:02d}:{m:02d}"


def _grid(r: Replayed) -> tuple[int, np.ndarray, np.ndarray]:
    """(first UTC day number, seen, hit): boolean (days, BINS) arrays, a bin seen when the replay covered it
    whole, hit when an overload episode overlaps it."""
    d0 = int(r.start // DAY)
    days = int(math.ceil(r.end / DAY)) - d0
    b = np.arange(days * BINS) + d0 * BINS
    seen = ((b * BIN_SECONDS >= r.start) & ((b + 1) * BIN_SECONDS <= r.end)).reshape(days, BINS)
    hit = np.zeros(days * BINS, dtype=bool)
    for start, seconds in r.episodes:
        if seconds <= 0:
            continue
        lo = int(start // BIN_SECONDS) - d0 * BINS
        hi = int(math.ceil((start + seconds) / BIN_SECONDS)) - d0 * BINS
        hit[max(lo, 0):max(min(hi, hit.size), 0)] = True
    return d0, seen, hit.reshape(days, BINS) & seen


def _recurring(r: Replayed) -> dict[int, tuple[tuple[int, ...], int, int]]:
    """Recurring bins of one replay: bin -> (weekdays (empty: daily), hits, seen)."""
    from scipy.stats import binom

    d0, seen, hit = _grid(r)
    cells = int(seen.sum())
    if not cells or not hit.any():
        return {}
    p = float(hit.sum()) / cells
    out: dict[int, tuple[tuple[int, ...], int, int]] = {}
    n, k = seen.sum(axis=0), hit.sum(axis=0)
    daily = (k >= MIN_DAYS) & (k >= MIN_SHARE * n) & (binom.sf(k - 1, n, p) < SIGNIFICANCE / BINS)
    for b in np.flatnonzero(daily):
        out[int(b)] = ((), int(k[b]), int(n[b]))
    weekday = (np.arange(seen.shape[0]) + d0 + 3) % 7  # 1970-01-01 was a Thursday (weekday 3)
    for w in range(7):
        rows = weekday == w
        nw, kw = seen[rows].sum(axis=0), hit[rows].sum(axis=0)
        weekly = (kw >= 2) & (kw >= MIN_SHARE * nw) & (binom.sf(kw - 1, nw, p) < SIGNIFICANCE / (BINS * 7)) & ~daily
        for b in np.flatnonzero(weekly):
            days, hits, seen_ = out.get(int(b), ((), 0, 0))
            out[int(b)] = (tuple(sorted({*days, w})), hits + int(kw[b]), seen_ + int(nw[b]))
    return out


def detect(replays: Sequence[Replayed], times: np.ndarray, rps: np.ndarray, end: float,
           lead_seconds: float) -> list[Peak]:
    """The recurring peaks of ``replays`` (see the module's docstring), strongest first, at most
    ``MAX_WINDOWS``. ``times``/``rps``: the tuning part's load (epoch s, requests/s; each row holds until the
    next, the last until ``end``) for the windows' demand; ``lead_seconds``: the pods' start-up."""
    best: dict[tuple[int, tuple[int, ...]], tuple[int, int, str]] = {}
    for r in replays:
        for b, (days, hits, seen) in _recurring(r).items():
            key = (b, days)
            if key not in best or hits / seen > best[key][0] / best[key][1]:
                best[key] = (hits, seen, r.label)
    peaks = []
    for days in sorted({d for _, d in best}):
        bins = sorted(b for b, d in best if d == days)
        for group in _runs(bins, wrap=not days):
            stats = [best[(b % BINS, days)] for b in group if (b % BINS, days) in best]
            hits, seen, label = max(stats, key=lambda s: (s[0] / s[1], s[0]))
            lead_bins = math.ceil(lead_seconds / BIN_SECONDS)
            first = group[0] - lead_bins
            start_minute = (first * BIN_SECONDS // 60) % 1440
            shift = -1 if first < 0 else 0  # the lead starts the window on the day before
            duration = (group[-1] + 1 - first) * BIN_SECONDS
            weekdays = tuple(sorted((d + shift) % 7 for d in days))
            demand = _demand(times, rps, end, start_minute * 60, duration, weekdays)
            if demand <= 0:
                continue
            peaks.append(Peak(start_minute=start_minute, duration_seconds=int(duration), weekdays=weekdays,
                              late_from=group[0] * BIN_SECONDS // 60, late_to=(group[-1] + 1) * BIN_SECONDS // 60,
                              hits=hits, seen=seen, replay=label, demand_rps=demand))
    peaks.sort(key=lambda p: (-p.hits / p.seen, -p.hits, p.start_minute))
    return peaks[:MAX_WINDOWS]


def _runs(bins: list[int], wrap: bool) -> list[list[int]]:
    """Bins one apart at most, grouped, gaps filled (``wrap``: the last bins of the day join the first ones,
    numbered from -1 back)."""
    groups: list[list[int]] = []
    for b in bins:
        if groups and b - groups[-1][-1] <= 2:
            groups[-1].extend(range(groups[-1][-1] + 1, b + 1))
        else:
            groups.append([b])
    if wrap and len(groups) > 1 and groups[0][0] + BINS - groups[-1][-1] <= 2:
        last = [b - BINS for b in groups.pop()]
        groups[0] = last + list(range(last[-1] + 1, groups[0][0])) + groups[0]
    return groups


def _demand(times: np.ndarray, rps: np.ndarray, end: float, offset: float, duration: float,
            weekdays: tuple[int, ...]) -> float:
    """Median over the days (those of ``weekdays``, else all) of the highest load in [day + offset, + duration)."""
    if not times.size:
        return 0.0
    highs = []
    day = math.floor(times[0] / DAY) * DAY
    while day + offset < end:
        a, b = day + offset, day + offset + duration
        if (not weekdays or int((day // DAY + 3) % 7) in weekdays) and b > times[0]:
            i = max(int(np.searchsorted(times, a, side="right")) - 1, 0)
            j = int(np.searchsorted(times, b, side="left"))
            if j > i:
                highs.append(float(np.max(rps[i:j])))
        day += DAY
    return float(np.median(highs)) if highs else 0.0
