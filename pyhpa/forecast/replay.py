"""Replay a series through a ``Predictor``, forecasting each point only from its past.

Used by ``pyhpa forecast`` and the tests. A row at ``t`` stands for the interval
[t, t + step) and is known at ``t + step`` (as a metrics pipeline reports it). The
forecast of a row is issued ``lead`` seconds before that, at ``t + step - lead``, and uses
only the rows known by then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .model import DAY, PREDICTING, Accuracy, ForecastSettings
from .predictor import Predictor


@dataclass(slots=True)
class Replay:
    """Per evaluated row (arrays of equal length): ``times`` (epoch s, row start), ``actual``,
    ``point``/``low``/``high`` (NaN where there was no forecast), ``upper`` (the highest quantile
    over the lead window, issued at the same time), ``reasons`` (the forecast's reason).
    ``periods`` the periods (s) of the last fit, ``model`` its name, ``fits`` how many fits ran,
    ``accuracy`` over all rows with a forecast."""

    times: np.ndarray
    actual: np.ndarray
    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    upper: np.ndarray
    reasons: list[str]
    periods: tuple[float, ...]
    model: str
    fits: int
    accuracy: Accuracy
    step: float


def replay(times, values, *, settings: ForecastSettings = ForecastSettings(), start: float | None = None,
           end: float | None = None, progress=None) -> Replay:
    """Forecast every row with ``start <= t < end`` from the rows known before it.

    ``times`` (epoch s, increasing) and ``values`` (metric units); rows before ``start``
    are history only. ``progress(done_fraction)`` is called now and then.
    """
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    step = float(np.median(np.diff(t))) if t.size > 1 else 60.0
    lead = settings.lead_seconds
    start = t[0] if start is None else start
    end = t[-1] + step if end is None else end
    rows = np.flatnonzero((t >= start) & (t < end))
    pred = Predictor(settings)
    known_until = 0  # rows [0, known_until) have been observed
    n = rows.size
    point, low, high, upper = (np.full(n, np.nan) for _ in range(4))
    reasons: list[str] = []
    fits = 0
    last_fit = None
    first = t[rows[0]] + step - lead if n else 0.0
    head = int(np.searchsorted(t + step, first, side="right"))
    if head:
        pred.extend(t[:head], v[:head])
        known_until = head
    every = max(1, n // 100)
    for j, i in enumerate(rows):
        issue = t[i] + step - lead
        while known_until < t.size and t[known_until] + step <= issue:
            pred.observe(t[known_until] + step, v[known_until])
            known_until += 1
        f = pred.forecast(issue)
        if pred.fit is not last_fit:
            fits, last_fit = fits + 1, pred.fit
        reasons.append(f.reason)
        if f.point is not None:
            point[j], low[j], high[j], upper[j] = f.point, f.low, f.high, f.upper
        if progress is not None and j % every == 0:
            progress(j / n)
    actual = v[rows]
    acc = accuracy(actual, point, high, np.array([r == PREDICTING for r in reasons], dtype=bool))
    f = pred.fit
    periods = f.periods if f is not None else ()
    model = f.model.name if f is not None and f.model is not None else "none"
    return Replay(t[rows], actual, point, low, high, upper, reasons, periods, model, fits, acc, step)


def accuracy(actual: np.ndarray, point: np.ndarray, high: np.ndarray, use: np.ndarray) -> Accuracy:
    """Accuracy of point forecasts against what happened, over the rows ``use`` (a bool mask) with a forecast
    (``point`` not NaN): MAPE (rows with actual > 0), WAPE (None unless the actuals sum above 0) and the share of
    rows whose actual is above the ``high`` band; ``Accuracy()`` when no row counts. Arrays of equal length, metric
    units. The one formula of ``replay`` and of ``pyhpa simulate``'s summary."""
    ok = use & ~np.isnan(point)
    n = int(ok.sum())
    if n == 0:
        return Accuracy()
    a, p = actual[ok], point[ok]
    pos = a > 0
    mape = float(np.mean(np.abs(p[pos] - a[pos]) / a[pos])) if pos.any() else None
    wape = float(np.abs(p - a).sum() / a.sum()) if a.sum() > 0 else None
    under = float(np.mean(a > high[ok]))
    return Accuracy(evaluations=n, mape=mape, wape=wape, under_share=under)


def describe_periods(periods) -> str:
    """"1d, 7d" / "none"."""
    if not periods:
        return "none"
    out = []
    for p in periods:
        out.append(f"{p / DAY:g}d" if p >= DAY and math.isclose(p / DAY, round(p / DAY)) else f"{p / 3600:g}h")
    return ", ".join(out)
