"""Fit a robust seasonal model to a metric's history (numpy/scipy, no heavy models).

``fit(times, values, now=..., settings=...)`` takes the history of a workload total
(epoch seconds, values in the metric's unit; irregular times and gaps allowed) and
returns a ``Fit``: a ``SeasonalModel`` or the reason why there is none.

The method (in the spirit of Crane's DSP predictor and AHPA's robust decomposition):

1. The history is averaged onto a regular, epoch-aligned grid (60 s, coarser for long
   histories so a fit never sees more than ~20,000 points); empty grid cells are gaps
   and stay out of every estimate.
2. Too little history (under 2 hours, or no cycle found in under 2 days) is
   ``InsufficientHistory``; a flat series (5-95 % range within 2 % of the median) is
   ``NotPredictable``.
3. Period detection: the daily and weekly periods (when the history covers two cycles)
   and the strongest peaks of the periodogram (``scipy.signal.periodogram``, periods
   from 1 hour to half the history) are candidates; each is kept when its *seasonal
   strength* (share of the de-trended variance its robust profile explains) is at least
   0.25. A weekly profile is kept on top of a daily one when it explains at least 10 %
   of what the daily profile leaves.
4. Decomposition: in a variance-stabilizing space (log or square root), trend = a
   centred moving average over the longest period; each profile = the per-phase
   *median* over cycles of the de-trended series (outliers do not move a median),
   smoothed circularly (``scipy.ndimage.uniform_filter1d``). The level is not
   extrapolated from the trend: every forecast re-reads it from the latest observations
   (median of the de-seasonalized values), which follows trends and level shifts.
5. Model selection on a held-out period (the last day, or a quarter of a shorter
   history): every candidate (transform x profile smoothing x period set) forecasts each
   held-out point one lead ahead from the data before it, exactly as it would live; the
   lowest WAPE wins. A winner whose profile does not forecast the held-out period one hour
   ahead about as well as its recent level alone (within 5 %: a "cycle" fitted in noise), or
   that is no better than the training median (flat forecast), is ``NotPredictable``; one
   whose error exceeds ``max_error`` is ``AccuracyTooLow``.
6. Quantiles come from the winner's held-out errors at the lead horizon (in the transformed
   space, divided by the noise level of their hour of day, so that bands are wider where the
   history is noisier).

Everything is vectorized; a fit on 7 days of 1-minute history takes tens of milliseconds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.ndimage import median_filter, uniform_filter1d
from scipy.signal import find_peaks, periodogram

from .model import (
    ACCURACY_TOO_LOW,
    DAY,
    INSUFFICIENT_HISTORY,
    NOT_PREDICTABLE,
    PREDICTING,
    WEEK,
    Fit,
    ForecastSettings,
    HoldoutScore,
    SeasonalModel,
)

#: Grid steps (s) tried in order: divisors of a day, so daily and weekly phases are exact.
GRID_STEPS = (60, 120, 180, 240, 300, 360, 480, 600, 720, 900, 1200, 1440, 1800, 3600)
MAX_POINTS = 20160
MIN_SPAN_SECONDS = 2 * 3600.0
MIN_POINTS = 60
FLAT_SPREAD = 0.02
MIN_STRENGTH = 0.25
MIN_EXTRA_STRENGTH = 0.10
MIN_PERIOD_SECONDS = 3600.0
#: A candidate must beat the flat forecast (training median) by this factor on the held-out period.
FLAT_MARGIN = 0.9
#: A usable pattern: one hour ahead on the held-out period, the seasonal profile must forecast at least
#: about as well (within 5 %) as the recent level alone; otherwise the "cycle" is noise fitted in sample.
SKILL_HORIZON_SECONDS = 3600.0
SKILL_MARGIN = 1.05
SMOOTH_SECONDS = (600.0, 1800.0)
DISPERSION_BINS = 24
#: Period detection and model selection are repeated at most this often (s); refits in between
#: re-estimate the selected model on the new history.
RESELECT_SECONDS = 86400.0
LEVEL_SECONDS = (180.0, 600.0, 3600.0)
TRANSFORMS = ("log", "sqrt")
#: Recurring short events at fixed clock times (``_events``): looked for on grids of at most this step (s)
#: with at least this many cycles of the hourly and the daily profile. An event phase is kept when its
#: median over the cycles is at least ``EVENT_MIN_EFFECT`` (a relative change: 5 %) and ``EVENT_Z`` standard
#: errors away from 0, and when most cycles (``EVENT_MIN_SHARE``) show at least half of it, on the same side.
EVENT_MAX_STEP = 120.0
EVENT_PERIODS = (3600.0, DAY)
EVENT_MIN_CYCLES = (24, 3)
EVENT_MIN_EFFECT = 0.05
EVENT_Z = 3.0
EVENT_MIN_SHARE = 0.6
#: The main profile of an event candidate is median-filtered over this span first (s), so that events shorter
#: than about half of it stay out of it (and in the event profiles).
EVENT_FILTER_SECONDS = 900.0


def fit(times, values, *, now: float, settings: ForecastSettings = ForecastSettings(),
        previous: Fit | None = None) -> Fit:
    """Fit a model on the history before ``now`` (epoch s).

    ``times`` (epoch s) and ``values`` (metric units, >= 0; NaN = no data) are 1-d
    sequences of equal length, in any order; only points with ``now - history_seconds <
    t <= now`` are used (never anything after ``now``). Returns a ``Fit`` (never raises
    for bad data: it says ``InsufficientHistory`` or ``NotPredictable``).

    ``previous``: the last fit of the same series. When it holds a model whose periods and
    candidate were selected less than ``RESELECT_SECONDS`` (a day) before ``now``, period
    detection and model selection are not repeated: the profiles, noise levels and level of
    the same candidate are re-estimated on the new history (a few milliseconds).
    """
    t = np.asarray(times, dtype=float)
    x = np.asarray(values, dtype=float)
    keep = np.isfinite(t) & np.isfinite(x) & (t <= now) & (t > now - settings.history_seconds)
    t, x = t[keep], np.maximum(x[keep], 0.0)
    if t.size < MIN_POINTS:
        return Fit(fitted_at=now, reason=INSUFFICIENT_HISTORY, points=int(t.size),
                   message=f"only {t.size} samples of history (need at least {MIN_POINTS} over 2 hours)")
    span = float(t.max() - t.min())
    step = _grid_step(t, span)
    grid, i0 = _to_grid(t, x, step)
    points = int(np.count_nonzero(~np.isnan(grid)))
    common = {"fitted_at": now, "history_seconds": span, "points": points}
    if span < MIN_SPAN_SECONDS or points < MIN_POINTS:
        return Fit(reason=INSUFFICIENT_HISTORY, **common,
                   message=f"{_dur(span)} of history with {points} points (need at least 2 h; a daily cycle needs 2 days)")
    flat = _flat(grid)
    if flat:
        return Fit(reason=NOT_PREDICTABLE, message=flat, **common)
    reused = _refresh(previous, grid, i0, step, now, common)
    if reused is not None:
        return reused
    offset = _log_offset(grid)
    y = np.log(grid + offset)
    periods, strengths = detect_periods(y, i0, step, span)
    if not periods:
        best = max(strengths.values(), default=0.0)
        if span < 2 * DAY:
            return Fit(reason=INSUFFICIENT_HISTORY, **common,
                       message=f"no cycle in {_dur(span)} of history (seasonal strength {best:.2f}); "
                               "a daily cycle needs 2 days")
        return Fit(reason=NOT_PREDICTABLE, **common,
                   message=f"no usable daily, weekly or other cycle in {_dur(span)} of history "
                           f"(best seasonal strength {best:.2f} < {MIN_STRENGTH})")
    found = tuple(p * step for p in periods)
    found_strength = tuple(round(strengths[p], 3) for p in periods)
    common.update(periods=found, strengths=found_strength)
    chosen = _select(grid, i0, step, periods, offset, settings)
    if chosen is None:
        return Fit(reason=INSUFFICIENT_HISTORY, **common,
                   message=f"{_dur(span)} of history is too short to hold out a period for validation")
    cand, score, n_cands = chosen
    seasonal_wape, level_wape = _profile_skill(grid, i0, step, cand, offset)
    score = replace(score, ahead_wape=seasonal_wape, ahead_level_wape=level_wape)
    common.update(score=score, candidates=n_cands)
    if seasonal_wape > SKILL_MARGIN * level_wape:
        return Fit(reason=NOT_PREDICTABLE, **common,
                   message=f"the {_dur(cand.periods[0] * step)} profile does not forecast the held-out period "
                           f"{_dur(SKILL_HORIZON_SECONDS)} ahead better than the recent level alone "
                           f"({_pct(seasonal_wape)} against {_pct(level_wape)} error): no usable pattern")
    if not score.wape < FLAT_MARGIN * score.flat_wape:
        return Fit(reason=NOT_PREDICTABLE, **common,
                   message=f"the seasonal model ({_pct(score.wape)} error on the held-out period) is no better than "
                           f"the mean ({_pct(score.flat_wape)})")
    if score.wape > settings.max_error:
        return Fit(reason=ACCURACY_TOO_LOW, **common,
                   message=f"the best model is off by {_pct(score.wape)} on the held-out period "
                           f"(limit {_pct(settings.max_error)})")
    model = _final_model(grid, i0, step, cand, offset)
    per = ", ".join(_dur(p) for p in found)
    return Fit(reason=PREDICTING, model=model, selected_at=now, **common,
               message=f"{model.name} model with period {per}{describe_events(model)}; held-out error "
                       f"{_pct(score.wape)} (mean: {_pct(score.flat_wape)}, last value: "
                       f"{_pct(score.persistence_wape)})")


def _refresh(previous: Fit | None, grid, i0: int, step: float, now: float, common: dict) -> Fit | None:
    """The previous fit's candidate re-estimated on the new history, or None when a full fit is due."""
    m = previous.model if previous is not None else None
    if m is None or previous.selected_at is None or now - previous.selected_at >= RESELECT_SECONDS or m.step != step:
        return None
    periods = tuple(int(round(p / step)) for p in m.seasonal_periods)
    if max(periods) > grid.size:
        return None
    cand = _Candidate(m.transform, int(round(m.smooth_seconds / step)), int(round(m.level_seconds / step)), periods,
                      m.window_error, m.point_low, m.point_high, m.event_filter_seconds > 0)
    model = _final_model(grid, i0, step, cand, _log_offset(grid))
    return Fit(reason=PREDICTING, model=model, periods=previous.periods, strengths=previous.strengths,
               score=previous.score, candidates=0, selected_at=previous.selected_at, message=previous.message,
               **common)


# ----------------------------------------------------------------------------- grid
def _grid_step(t: np.ndarray, span: float) -> float:
    if t.size <= 1:
        return _first_step(60.0, span)
    d = np.diff(t)
    spacing = float(np.median(d if (d >= 0).all() else np.diff(np.sort(t))))  # a predictor's history is sorted
    return _first_step(spacing, span)


def _first_step(spacing: float, span: float) -> float:
    want = max(spacing, span / MAX_POINTS)
    for s in GRID_STEPS:
        if s >= want - 1e-9:
            return float(s)
    return float(GRID_STEPS[-1])


def _to_grid(t: np.ndarray, x: np.ndarray, step: float) -> tuple[np.ndarray, int]:
    """Mean per grid cell [k*step, (k+1)*step) (NaN: no data) and the absolute index of cell 0."""
    k = np.floor(t / step).astype(np.int64)
    i0 = int(k.min())
    idx = k - i0
    n = int(idx.max()) + 1
    sums = np.bincount(idx, weights=x, minlength=n)
    counts = np.bincount(idx, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = sums / counts
    grid[counts == 0] = np.nan
    return grid, i0


def _flat(grid: np.ndarray) -> str:
    lo, med, hi = np.nanpercentile(grid, [5, 50, 95])
    if hi <= 0:
        return "the metric has been 0 throughout the history: nothing to predict"
    if hi - lo <= FLAT_SPREAD * max(abs(med), 1e-12):
        return (f"the metric is flat (5-95 % range {_pct((hi - lo) / med)} of its median): nothing to predict, "
                "the reactive path suffices")
    return ""


def _log_offset(grid: np.ndarray) -> float:
    med = float(np.nanmedian(grid))
    base = med if med > 0 else float(np.nanmean(grid))
    return max(0.01 * base, 1e-9)


# ----------------------------------------------------------------------------- transforms
def forward(transform: str, x, offset: float):
    """Values into the model's space: log(x + offset) or sqrt(x)."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    return np.log(x + offset) if transform == "log" else np.sqrt(x)


def backward(transform: str, y, offset: float):
    """From the model's space back to metric units (>= 0)."""
    y = np.asarray(y, dtype=float)
    if transform == "log":
        return np.maximum(np.exp(y) - offset, 0.0)
    return np.square(np.maximum(y, 0.0))


# ----------------------------------------------------------------------------- decomposition
def _moving_average(y: np.ndarray, w: int) -> np.ndarray:
    """Centred mean over ``w`` cells, ignoring NaN (partial windows at the ends)."""
    valid = ~np.isnan(y)
    v = np.where(valid, y, 0.0)
    cs = np.concatenate(([0.0], np.cumsum(v)))
    cc = np.concatenate(([0], np.cumsum(valid)))
    n = y.size
    lo = np.clip(np.arange(n) - w // 2, 0, n)
    hi = np.clip(np.arange(n) + (w - w // 2), 0, n)
    cnt = cc[hi] - cc[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (cs[hi] - cs[lo]) / cnt
    out[cnt == 0] = np.nan
    return out


def nanmedian_rows(a: np.ndarray) -> np.ndarray:
    """Median of each row of a 2-d array ignoring NaN (NaN for an all-NaN row); one sort, no masked arrays."""
    srt = np.sort(a, axis=1)  # NaN sort last
    count = np.count_nonzero(~np.isnan(a), axis=1)
    rows = np.arange(a.shape[0])
    lo = np.maximum((count - 1) // 2, 0)
    hi = np.maximum(count // 2, 0)
    med = (srt[rows, lo] + srt[rows, np.minimum(hi, a.shape[1] - 1)]) / 2.0
    med[count == 0] = np.nan
    return med


def _phase_matrix(r: np.ndarray, i0: int, period: int) -> np.ndarray:
    """``r`` laid out as (phase, cycle): phase = absolute cell index mod ``period``; NaN where not seen."""
    lead = i0 % period
    total = lead + r.size
    cycles = -(-total // period)
    m = np.full(cycles * period, np.nan)
    m[lead:lead + r.size] = r
    return m.reshape(cycles, period).T


def _phase_median(r: np.ndarray, i0: int, period: int) -> np.ndarray:
    """Per-phase median over cycles (phase = absolute cell index mod ``period``); NaN where never seen."""
    return nanmedian_rows(_phase_matrix(r, i0, period))


def _smooth_circular(prof: np.ndarray, width: int, robust: int = 0) -> np.ndarray:
    """Fill never-seen phases by circular interpolation, then (``robust`` > 1) a circular median filter over
    ``robust`` cells, which removes bumps shorter than about half of it, then a circular moving average."""
    bad = np.isnan(prof)
    if bad.all():
        return np.zeros_like(prof)
    if bad.any():
        idx = np.arange(prof.size)
        prof = prof.copy()
        prof[bad] = np.interp(idx[bad], idx[~bad], prof[~bad], period=prof.size)
    if robust > 1 and prof.size > robust:
        prof = median_filter(prof, size=robust, mode="wrap")
    if width > 1:
        prof = uniform_filter1d(prof, size=min(width, prof.size), mode="wrap")
    return prof - prof.mean()


def _profiles(y: np.ndarray, i0: int, periods: tuple[int, ...], width: int, robust: int = 0,
              trend_of: np.ndarray | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Robust profiles, one per period (ascending): each from what the previous ones leave; and the residual
    they leave (series - trend - profiles). The trend is the moving average of ``trend_of`` (default ``y``)
    over the longest period."""
    r = y - _moving_average(y if trend_of is None else trend_of, max(periods))
    out = []
    for p in periods:
        prof = _smooth_circular(_phase_median(r, i0, p), width, robust)
        out.append(prof)
        r = r - prof[(i0 + np.arange(r.size)) % p]
    return out, r


def _events(r: np.ndarray, i0: int, step: float, floor: float) -> list[tuple[int, np.ndarray]]:
    """Recurring short events at fixed clock times in the residual ``r`` (series - trend - smooth profiles):
    one sparse profile per period of ``EVENT_PERIODS`` (hourly: spikes at :00 and :30 of most hours; daily:
    an event at the same minute on most days), as ``(period in cells, profile)``, each from what the
    previous leaves. A phase is an event when the median of ``r`` over the cycles is at least ``floor``
    (the transform's ``EVENT_MIN_EFFECT``) and ``EVENT_Z`` standard errors of a median away from 0, and at
    least ``EVENT_MIN_SHARE`` of the cycles show half of it or more on the same side: a spike of one day,
    or of a few hours, is not an event. Every other phase is 0."""
    out: list[tuple[int, np.ndarray]] = []
    if step > EVENT_MAX_STEP:
        return out
    center = np.nanmedian(r)
    sigma = 1.4826 * float(np.nanmedian(np.abs(r - center))) if np.isfinite(center) else 0.0
    for period_s, min_cycles in zip(EVENT_PERIODS, EVENT_MIN_CYCLES):
        p = int(round(period_s / step))
        if p < 2 or r.size < min_cycles * p:
            continue
        m = _phase_matrix(r, i0, p)
        seen = np.count_nonzero(~np.isnan(m), axis=1)
        if np.median(seen) < min_cycles:
            continue
        med = nanmedian_rows(m)
        base = float(np.nanmedian(med))  # most phases hold no event: their level is the baseline, not an event
        m = m - base
        med = med - base
        size = np.abs(med)
        with np.errstate(invalid="ignore", divide="ignore"):
            thr = np.maximum(floor, EVENT_Z * 1.2533 * sigma / np.sqrt(np.maximum(seen, 1)))
            agree = (np.sign(m) == np.sign(med)[:, None]) & (np.abs(m) >= size[:, None] / 2)
            share = np.count_nonzero(agree, axis=1) / np.maximum(seen, 1)
        keep = (size >= thr) & (share >= EVENT_MIN_SHARE) & (seen >= min_cycles)
        if not keep.any():
            continue
        ev = np.where(keep, med, 0.0)
        out.append((p, ev))
        r = r - ev[(i0 + np.arange(r.size)) % p]
    return out


def _event_floor(transform: str, y: np.ndarray) -> float:
    """``EVENT_MIN_EFFECT`` in the transform's space: a relative change in log space; in square-root space
    half of it times the typical square root (d sqrt(x) = sqrt(x) dx / 2x)."""
    if transform == "log":
        return EVENT_MIN_EFFECT
    return EVENT_MIN_EFFECT / 2 * max(float(np.nanmedian(y)), 1e-12)


def _decompose(y: np.ndarray, i0: int, step: float, cand: _Candidate) -> tuple[list[np.ndarray], list]:
    """The candidate's smooth profiles and (with ``cand.events``) its event profiles, fitted on ``y``."""
    if not cand.events:
        return _profiles(y, i0, cand.periods, cand.smooth)[0], []
    robust = int(round(EVENT_FILTER_SECONDS / step))
    floor = _event_floor(cand.transform, y)
    profs, r = _profiles(y, i0, cand.periods, cand.smooth, robust)
    events = _events(r, i0, step, floor)
    if events:  # the trend (a moving average) took in a share of the events: once more, its input without them
        profs, r = _profiles(y, i0, cand.periods, cand.smooth, robust, trend_of=y - _seasonal((), (), i0, y.size,
                                                                                               events))
        events = _events(r, i0, step, floor)
    return profs, events


def _seasonal(profiles, periods, i0: int, n: int, events=()) -> np.ndarray:
    idx = i0 + np.arange(n)
    s = np.zeros(n)
    for prof, p in zip(profiles, periods):
        s += prof[idx % p]
    for p, ev in events:
        s += ev[idx % p]
    return s


def _dispersion(y: np.ndarray, i0: int, periods: tuple[int, ...], s: np.ndarray) -> np.ndarray:
    """Relative noise level per bin of the shortest period (24 bins a day at most): the median absolute
    residual (series - trend - seasonal) in each bin, smoothed over neighbouring bins, floored at 0.3 and
    scaled to mean 1. Forecast bands are this times a quantile of standardized errors, so they are wider
    where the history is noisier (e.g. busy hours) and narrower where it is calm."""
    p = periods[0]
    nb = max(1, min(DISPERSION_BINS, p))
    r = np.abs(y - _moving_average(y, max(periods)) - s)
    if p % nb == 0:  # phases laid out as (cycles, bins, cells per bin): one row per bin
        lead = i0 % p
        cycles = -(-(lead + r.size) // p)
        m = np.full(cycles * p, np.nan)
        m[lead:lead + r.size] = r
        out = nanmedian_rows(m.reshape(cycles, nb, p // nb).transpose(1, 0, 2).reshape(nb, -1))
    else:
        b = ((i0 + np.arange(y.size)) % p) * nb // p
        ok = ~np.isnan(r)
        out = np.full(nb, np.nan)
        for k in range(nb):
            sel = r[ok & (b == k)]
            if sel.size:
                out[k] = np.median(sel)
    if np.isnan(out).all() or np.nanmean(out) <= 0:
        return np.ones(nb)
    out = np.where(np.isnan(out), np.nanmedian(out), out)
    if nb >= 3:
        out = uniform_filter1d(out, size=3, mode="wrap")
    out = np.maximum(out, 0.3 * np.median(out))
    return out / out.mean()


def _dispersion_at(disp: np.ndarray, i0: int, period: int, n: int) -> np.ndarray:
    nb = disp.size
    return disp[((i0 + np.arange(n)) % period) * nb // period]


def _strength(r: np.ndarray, resid: np.ndarray) -> float:
    ok = ~np.isnan(r) & ~np.isnan(resid)
    if ok.sum() < 10:
        return 0.0
    var = float(np.var(r[ok]))
    return 0.0 if var <= 0 else max(0.0, 1.0 - float(np.var(resid[ok])) / var)


# ----------------------------------------------------------------------------- periods
def detect_periods(y: np.ndarray, i0: int, step: float, span: float) -> tuple[tuple[int, ...], dict[int, float]]:
    """Seasonal periods (grid cells, ascending) of the log series ``y`` and every candidate's strength.

    Candidates: one day and one week (when ``span`` covers two of them) and the three
    strongest periodogram peaks between 1 hour and half the history that are not a
    harmonic of a day. Kept: the strongest candidate with strength >= 0.25, plus the
    weekly period on top of the daily one when it explains >= 10 % of the rest.
    """
    n = y.size
    day, week = int(round(DAY / step)), int(round(WEEK / step))
    cands: list[int] = []
    if span >= 2 * DAY - step:
        cands.append(day)
    if span >= 2 * WEEK - step:
        cands.append(week)
    for p in _peaks(y, step, span):
        snapped = day if abs(p - day) <= 0.1 * day else week if abs(p - week) <= 0.1 * week else p
        harmonic = any(abs(day / k - snapped) <= 0.05 * snapped for k in range(2, 13)) and day in cands
        if snapped not in cands and not harmonic and 2 * snapped * step <= span + step:
            cands.append(snapped)
    width = max(1, int(round(min(900.0, day * step / 96) / step)))
    strengths: dict[int, float] = {}
    trend_cache: dict[int, np.ndarray] = {}
    for p in cands:
        r = trend_cache.setdefault(p, y - _moving_average(y, p))
        prof = _smooth_circular(_phase_median(r, i0, p), width)
        strengths[p] = _strength(r, r - prof[(i0 + np.arange(n)) % p])
    good = [p for p in cands if strengths[p] >= MIN_STRENGTH and p != week]
    if not good:
        if week in strengths and strengths[week] >= MIN_STRENGTH:
            return (week,), strengths
        return (), strengths
    primary = max(good, key=lambda p: strengths[p])
    if primary == day and week in strengths:
        r = y - _moving_average(y, week)
        prof_d = _smooth_circular(_phase_median(r, i0, day), width)
        rest = r - prof_d[(i0 + np.arange(n)) % day]
        prof_w = _smooth_circular(_phase_median(rest, i0, week), width * 4)
        extra = _strength(rest, rest - prof_w[(i0 + np.arange(n)) % week])
        if extra >= MIN_EXTRA_STRENGTH:
            return (day, week), strengths
    return (primary,), strengths


def _peaks(y: np.ndarray, step: float, span: float) -> list[int]:
    """Periods (cells) of the three strongest periodogram peaks in [1 h, span / 2]."""
    ok = ~np.isnan(y)
    if ok.sum() < 16:
        return []
    idx = np.arange(y.size)
    filled = np.interp(idx, idx[ok], y[ok])
    freqs, power = periodogram(filled, detrend="linear")
    with np.errstate(divide="ignore"):
        period = np.where(freqs > 0, 1.0 / np.maximum(freqs, 1e-300), np.inf)
    band = (period >= MIN_PERIOD_SECONDS / step) & (period <= span / step / 2)
    if not band.any():
        return []
    p = np.where(band, power, 0.0)
    peaks, _ = find_peaks(p)
    if peaks.size == 0:
        return []
    top = peaks[np.argsort(p[peaks])[::-1][:3]]
    return [int(round(period[k])) for k in top if np.isfinite(period[k])]


# ----------------------------------------------------------------------------- selection
@dataclass(slots=True, frozen=True)
class _Candidate:
    transform: str
    smooth: int
    level: int
    periods: tuple[int, ...]
    window_error: float
    point_low: float
    point_high: float
    events: bool = False


def _select(grid, i0, step, periods, offset, settings: ForecastSettings):
    """The best candidate on the held-out period: (candidate, score, count), or None if too short."""
    n = grid.size
    hold = _holdout_cells(n, step)
    n_tr = n - hold
    m = max(1, int(math.ceil(settings.lead_seconds / step)))
    if hold <= m + 2 or n_tr < 2:
        return None
    sets = [periods] if len(periods) == 1 else [periods, periods[:1]]
    sets = [s for s in sets if max(s) <= n_tr]
    if not sets:
        return None
    x_all = grid
    flat_value = float(np.nanmedian(grid[:n_tr]))
    best = None
    count = 0
    for transform in TRANSFORMS:
        y = forward(transform, grid, offset)
        for ps, smooth_s, events in itertools.product(sets, SMOOTH_SECONDS, (False, True)):
            if events and smooth_s != SMOOTH_SECONDS[0]:
                continue  # the event candidates' profiles are median-filtered first: the narrow smoothing suffices
            width = max(1, int(round(smooth_s / step)))
            shape = _Candidate(transform, width, 0, ps, 0.0, 0.0, 0.0, events)
            profs, evs = _decompose(y[:n_tr], i0, step, shape)
            if events and not evs:
                continue  # nothing recurs at minute scale: the candidate without events stands for it
            s = _seasonal(profs, ps, i0, n, evs)
            disp = _dispersion_at(_dispersion(y[:n_tr], i0, ps, s[:n_tr]), i0, ps[0], n)
            for level_s in LEVEL_SECONDS:
                k = max(1, int(round(level_s / step)))
                result = _holdout(y, x_all, s, disp, n_tr, m, k, transform, offset, settings.quantile, flat_value)
                count += 1
                if result is None:
                    continue
                score, errs = result
                if best is None or score.wape < best[1].wape:
                    best = (replace(shape, level=k, window_error=errs[0], point_low=errs[1], point_high=errs[2]),
                            score)
    if best is None:
        return None
    return best[0], best[1], count


def _holdout_cells(n: int, step: float) -> int:
    """Cells held out for validation: the last day, or a quarter of a shorter history (at least 2 h)."""
    return int(round(min(DAY, max(2 * 3600.0, n * step / 4)) / step))


def _profile_skill(grid, i0, step, cand: _Candidate, offset: float) -> tuple[float, float]:
    """(WAPE of the candidate, WAPE of its level alone) forecasting the held-out period
    ``SKILL_HORIZON_SECONDS`` ahead (``_holdout``), with profiles from the data before it. A real cycle
    makes the first clearly smaller; a cycle found in noise does not."""
    n = grid.size
    n_tr = n - _holdout_cells(n, step)
    m = max(1, int(round(SKILL_HORIZON_SECONDS / step)))
    y = forward(cand.transform, grid, offset)
    profs, events = _decompose(y[:n_tr], i0, step, cand)
    seasonal = _seasonal(profs, cand.periods, i0, n, events)
    flat = np.ones(n)
    out = []
    for s in (seasonal, np.zeros(n)):
        result = _holdout(y, grid, s, flat, n_tr, m, cand.level, cand.transform, offset, 0.5, 0.0)
        if result is None:
            return 0.0, 0.0
        out.append(result[0].wape)
    return out[0], out[1]


def _trailing_median(d: np.ndarray, k: int, lo: int, hi: int) -> np.ndarray:
    """Median of d[i-k+1 .. i] ignoring NaN, for i in [lo, hi)."""
    start = max(0, lo - k + 1)
    seg = d[start:hi]
    pad = k - 1 - (lo - start)
    if pad > 0:
        seg = np.concatenate((np.full(pad, np.nan), seg))
    return nanmedian_rows(sliding_window_view(seg, k))


def _holdout(y, x, s, disp, n_tr, m, k, transform, offset, q, flat_value):
    """Forecast every held-out cell i+1..i+m from the level known at the end of cell i.

    Returns (HoldoutScore, (window_error, point_low, point_high)) or None without data; the errors are
    quantiles of the pointwise errors divided by the relative dispersion ``disp`` of their cell.
    """
    n = y.size
    lo, hi = n_tr - 1, n - m
    if hi - lo < 3:
        return None
    d = y - s
    level = _trailing_median(d, k, lo, hi)
    # Carry the last known level over gaps (as a live forecast would).
    level = _ffill(level)
    point = level + s[lo + m:hi + m]
    actual_y = y[lo + m:hi + m]
    actual_x = x[lo + m:hi + m]
    now_x = x[lo:hi]
    ok = ~np.isnan(level) & ~np.isnan(actual_x)
    if ok.sum() < 3 or np.nansum(actual_x[ok]) <= 0:
        return None
    px = backward(transform, point[ok], offset)
    ax = actual_x[ok]
    total = float(ax.sum())
    wape = float(np.abs(px - ax).sum() / total)
    flat = float(np.abs(flat_value - ax).sum() / total)
    pers_ok = ok & ~np.isnan(now_x)
    pers = float(np.abs(now_x[pers_ok] - actual_x[pers_ok]).sum() / max(actual_x[pers_ok].sum(), 1e-12)) \
        if pers_ok.any() else math.nan
    e_pt = ((actual_y - point) / disp[lo + m:hi + m])[ok]
    low, high = (float(v) for v in np.quantile(e_pt, [1 - q, q]))
    werr = high
    score = HoldoutScore(wape=wape, flat_wape=flat, persistence_wape=pers, evaluations=int(ok.sum()))
    return score, (werr, low, high)


def _ffill(a: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(a)
    if ok.all() or not ok.any():
        return a
    idx = np.where(ok, np.arange(a.size), 0)
    np.maximum.accumulate(idx, out=idx)
    out = a[idx]
    out[: int(np.argmax(ok))] = np.nan
    return out


def _final_model(grid, i0, step, cand: _Candidate, offset: float) -> SeasonalModel:
    """Refit the chosen candidate's profiles on all the history; level at the end."""
    y = forward(cand.transform, grid, offset)
    profs, events = _decompose(y, i0, step, cand)
    s = _seasonal(profs, cand.periods, i0, y.size, events)
    disp = _dispersion(y, i0, cand.periods, s)
    d = y - s
    ok = np.flatnonzero(~np.isnan(d))
    k = cand.level
    last = ok[-k:]
    return SeasonalModel(
        transform=cand.transform, offset=offset, step=step,
        periods=tuple(p * step for p in cand.periods) + tuple(p * step for p, _ in events),
        profiles=tuple(tuple(float(v) for v in p) for p in profs) + tuple(tuple(float(v) for v in ev)
                                                                          for _, ev in events),
        smooth_seconds=cand.smooth * step, level_seconds=cand.level * step,
        window_error=cand.window_error, point_low=cand.point_low, point_high=cand.point_high,
        dispersion=tuple(float(v) for v in disp),
        level=float(np.median(d[last])), level_time=(i0 + int(ok[-1]) + 1) * step,
        event_profiles=len(events), event_filter_seconds=EVENT_FILTER_SECONDS if cand.events else 0.0,
    )


# ----------------------------------------------------------------------------- text
def describe_events(model: SeasonalModel, most: int = 4) -> str:
    """"; events each hour at :00-:03, :30-:33 (up to +95 %)" for a model with event profiles, else ""."""
    parts = []
    for period in sorted(set(model.periods[len(model.periods) - model.event_profiles:])):
        cells = sorted((off, v) for p, off, v in model.events() if p == period and v > 0)
        if not cells:
            continue
        runs: list[list[float]] = []
        for off, _ in cells:
            if runs and off - runs[-1][1] <= model.step + 1e-9:
                runs[-1][1] = off
            else:
                runs.append([off, off])
        fmt = (lambda x: f":{int(x // 60):02d}") if period <= 3600 else \
            (lambda x: f"{int(x // 3600):02d}:{int(x % 3600 // 60):02d}")
        at = ", ".join(fmt(a) if a == b else f"{fmt(a)}-{fmt(b)}" for a, b in runs[:most])
        more = f" and {len(runs) - most} more" if len(runs) > most else ""
        top = max(v for _, v in cells)
        height = f"up to +{_pct(math.expm1(top))}" if model.transform == "log" else f"up to +{top:.3g} in sqrt"
        parts.append(f"each {'hour' if period <= 3600 else 'day'} at {at}{more} UTC ({height})")
    return "; recurring events " + " and ".join(parts) if parts else ""


def _dur(seconds: float) -> str:
    if seconds >= DAY and abs(seconds / DAY - round(seconds / DAY)) < 0.02:
        return f"{round(seconds / DAY):d}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h".replace(".0h", "h")
    return f"{seconds / 60:.0f}min"


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f} %"
