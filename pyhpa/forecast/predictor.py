"""The online predictor of one autoscaler: history, refresh schedule, cheap forecasts, accuracy.

``Predictor`` keeps the metric's history (``observe``/``extend``: epoch s, metric units),
refits the model every ``refresh_seconds`` (``pyhpa.forecast.fitting.fit``), and between fits
answers ``forecast(now)`` in microseconds from the fitted model and the latest
observations. It never looks at data after ``now``: the caller feeds observations as they
happen, and a fit only reads history up to its own time.

Every forecast is remembered (one per grid cell) and, once the lead has passed, compared
with what was observed (``AccuracyTracker``); when recent forecasts are bad the predictor
steps aside with ``AccuracyTooLow`` (and comes back when they recover).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from statistics import median

import numpy as np

from .fitting import fit
from .model import (
    ACCURACY_TOO_LOW,
    HISTORY_UNAVAILABLE,
    INSUFFICIENT_HISTORY,
    PREDICTING,
    Accuracy,
    Fit,
    ForecastSettings,
    Prediction,
    SeasonalModel,
)

#: Hysteresis: stepped aside for accuracy, the prediction comes back below this share of the limits.
RECOVER_FACTOR = 0.8


def _back(m: SeasonalModel, y: float) -> float:
    """``pyhpa.forecast.fitting.backward`` for one number (metric units, >= 0)."""
    if m.transform == "log":
        return max(math.exp(y) - m.offset, 0.0)
    return max(y, 0.0) ** 2


class AccuracyTracker:
    """Forecasts issued at ``t`` for ``t + lead``, judged against the first observation at or after that.

    ``issue(t, target_time, point, high, last_value)`` registers one; ``observe(t, value)``
    judges every pending forecast whose target time has come. ``accuracy(now)`` summarizes
    the judged forecasts of the last ``window_seconds`` (running sums: O(1) per call).
    """

    __slots__ = ("window", "pending", "done", "_err", "_signed", "_total", "_pers", "_rel", "_rel_n", "_under",
                 "_cached")

    def __init__(self, window_seconds: float):
        self.window = window_seconds
        self.pending: deque[tuple[float, float, float, float, float]] = deque()
        # t, |err|, actual, |persist err|, under, signed err (forecast - actual)
        self.done: deque[tuple[float, float, float, float, bool, float]] = deque()
        self._err = self._signed = self._total = self._pers = self._rel = 0.0
        self._rel_n = self._under = 0
        self._cached: Accuracy | None = Accuracy()

    def issue(self, t: float, target: float, point: float, high: float, last: float) -> None:
        self.pending.append((target, t, point, high, last))

    def observe(self, t: float, value: float) -> None:
        pending = self.pending
        while pending and pending[0][0] <= t:
            _, issued, point, high, last = pending.popleft()
            item = (issued, abs(point - value), value, abs(last - value), value > high, point - value)
            self.done.append(item)
            self._add(item, 1)

    def _add(self, item: tuple, sign: int) -> None:
        _, err, actual, pers, under, signed = item
        self._err += sign * err
        self._signed += sign * signed
        self._total += sign * actual
        self._pers += sign * pers
        if actual > 0:
            self._rel += sign * err / actual
            self._rel_n += sign
        self._under += sign * under
        self._cached = None

    def accuracy(self, now: float) -> Accuracy:
        done = self.done
        cutoff = now - self.window
        while done and done[0][0] < cutoff:
            self._add(done.popleft(), -1)
        if self._cached is not None:
            return self._cached
        n = len(done)
        if n == 0:
            self._err = self._signed = self._total = self._pers = self._rel = 0.0  # no drift across empty windows
            self._rel_n = self._under = 0
            self._cached = Accuracy()
            return self._cached
        total = self._total
        self._cached = Accuracy(
            evaluations=n,
            mape=self._rel / self._rel_n if self._rel_n else None,
            wape=self._err / total if total > 0 else None,
            bias=self._signed / total if total > 0 else None,
            persistence_wape=self._pers / total if total > 0 else None,
            under_share=self._under / n,
        )
        return self._cached


class Predictor:
    """History, model and accuracy of one metric's workload total.

    ``settings`` as ``ForecastSettings``. Observations must come in time order
    (``observe``); ``extend`` loads a block of past history (e.g. from Prometheus) at once.
    """

    def __init__(self, settings: ForecastSettings = ForecastSettings()):
        self.settings = settings
        self._t: list[float] = []
        self._v: list[float] = []
        self.fit: Fit | None = None
        self._model: SeasonalModel | None = None
        self._next_fit = -math.inf
        self._recent: deque[tuple[float, float]] = deque()  # (t, de-seasonalized value) within level window
        self.tracker = AccuracyTracker(settings.accuracy_window_seconds)
        self._last_issue_cell: int | None = None
        self._aside = False
        self._level_key: tuple | None = None
        self._level_value = 0.0
        self._cells: tuple | None = None  # (c0, c1, model, window top, seasonal at c1, spread at c1, point top)

    # ------------------------------------------------------------------ history
    def extend(self, times, values) -> None:
        """Add past observations (epoch s, metric units), merged in time order; NaN values are gaps."""
        t = np.asarray(times, dtype=float)
        v = np.asarray(values, dtype=float)
        ok = np.isfinite(t) & np.isfinite(v)
        if not ok.any():
            return
        pairs = sorted(zip(self._t + t[ok].tolist(), self._v + v[ok].tolist()))
        self._t = [p[0] for p in pairs]
        self._v = [p[1] for p in pairs]
        self._next_fit = -math.inf

    def observe(self, t: float, value: float) -> None:
        """One observation at ``t`` (epoch s, not before the previous one); NaN or None is ignored."""
        if value is None or not math.isfinite(value):
            return
        if self._t and t < self._t[-1]:
            return
        self._t.append(t)
        self._v.append(value)
        self.tracker.observe(t, value)
        m = self._model
        if m is not None:
            self._recent.append((t, self._deseason(m, t, value)))

    @property
    def last_observation(self) -> float | None:
        """Time (epoch s) of the newest observation, None without history."""
        return self._t[-1] if self._t else None

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """(times, values) currently kept."""
        return np.asarray(self._t), np.asarray(self._v)

    # ------------------------------------------------------------------ fitting
    def refit_due(self, now: float) -> bool:
        """Whether a fit is due at ``now`` (epoch s): never fitted, history added, or ``refresh_seconds`` passed."""
        return now >= self._next_fit

    def refit(self, now: float) -> Fit:
        """Fit on the history of (now - history_seconds, now] and schedule the next fit."""
        s = self.settings
        self._trim(now)
        lo = bisect_left(self._t, now - s.history_seconds)
        hi = bisect_left(self._t, now + 1e-9) if self._t and self._t[-1] > now else len(self._t)
        return self.install(fit(self._t[lo:hi], self._v[lo:hi], now=now, settings=s, previous=self.fit), now)

    def replace_history(self, times, values) -> None:
        """Replace the history (e.g. by a fresh copy from Prometheus); times increasing, NaN values dropped."""
        self._t, self._v = [], []
        self.extend(times, values)

    def install(self, f: Fit, now: float) -> Fit:
        """Use ``f`` (a fit made at ``now``, possibly in another thread from a copy of the history) from now
        on and schedule the next fit ``refresh_seconds`` later."""
        s = self.settings
        lo = bisect_left(self._t, now - s.history_seconds)
        hi = len(self._t)
        self.fit = f
        self._model = f.model
        self._next_fit = now + s.refresh_seconds
        self._recent.clear()
        self._level_key = None
        m = f.model
        if m is not None:
            start = bisect_left(self._t, now - m.level_seconds, lo, hi)
            for i in range(start, hi):
                self._recent.append((self._t[i], self._deseason(m, self._t[i], self._v[i])))
        return f

    def _trim(self, now: float) -> None:
        keep_from = now - self.settings.history_seconds - self.settings.refresh_seconds
        i = bisect_left(self._t, keep_from)
        if i > 0:
            del self._t[:i]
            del self._v[:i]

    # ------------------------------------------------------------------ forecasting
    def forecast(self, now: float, refit: bool = True) -> Prediction:
        """The forecast for [now, now + lead]; refits first when due (unless ``refit`` is False: the caller
        refits on its own schedule, e.g. in the background)."""
        if refit and self.refit_due(now):
            self.refit(now)
        f = self.fit
        acc = self.tracker.accuracy(now)
        if f is None or f.model is None:
            reason = f.reason if f is not None else INSUFFICIENT_HISTORY
            msg = f.message if f is not None else "no history yet"
            return Prediction(now=now, reason=reason, message=msg, fit=f, accuracy=acc)
        m = f.model
        last = self.last_observation
        if last is None or now - last > self.settings.stale_seconds:
            when = "never" if last is None else f"{now - last:.0f} s ago"
            return Prediction(now=now, reason=HISTORY_UNAVAILABLE, fit=f, accuracy=acc,
                              message=f"no observation of the metric within {self.settings.stale_seconds:.0f} s "
                                      f"(last: {when})")
        level = self._level(m, now)
        lead = self.settings.lead_seconds
        step = m.step
        c0, c1 = int(now // step), int((now + lead) // step)
        cells = self._cells
        if cells is None or cells[0] != c0 or cells[1] != c1 or cells[2] is not m:
            werr = m.window_error
            top = max(self._s(m, c) + werr * m.spread(c) for c in range(c0, c1 + 1))
            top_point = max(self._s(m, c) for c in range(c0, c1 + 1))
            cells = self._cells = (c0, c1, m, top, self._s(m, c1), m.spread(c1), top_point)
        top, seas, spread = cells[3], cells[4], cells[5]
        upper = _back(m, level + top)
        expected = min(_back(m, level + cells[6]), upper)
        point_y = level + seas
        point = _back(m, point_y)
        low = _back(m, point_y + m.point_low * spread)
        high = _back(m, point_y + m.point_high * spread)
        if self._last_issue_cell != c0:
            self._last_issue_cell = c0
            self.tracker.issue(now, now + lead, point, high, self._v[-1])
        reason, msg, usable = self._judge(acc, f)
        return Prediction(now=now, reason=reason, message=msg, usable=usable, upper=upper, expected=expected,
                          point=point, low=low, high=high, fit=f, accuracy=acc)

    def _judge(self, acc: Accuracy, f: Fit) -> tuple[str, str, bool]:
        s = self.settings
        bad = False
        why = ""
        if acc.evaluations >= s.min_evaluations and acc.wape is not None:
            k = RECOVER_FACTOR if self._aside else 1.0
            pers = acc.persistence_wape
            worse = pers is not None and pers > 0 and acc.wape > s.persistence_factor * pers * k \
                and acc.wape > s.min_relative_error
            bias = acc.bias or 0.0
            if acc.wape > s.max_error * k:
                bad, why = True, f"recent forecasts are off by {100 * acc.wape:.0f} % (limit {100 * s.max_error:.0f} %)"
            elif abs(bias) > s.max_bias * k:
                side = "above" if bias > 0 else "below"
                bad, why = True, (f"recent forecasts are {100 * abs(bias):.0f} % {side} what happened on average "
                                  f"(limit {100 * s.max_bias:.0f} %)")
            elif worse:
                bad, why = True, (f"recent forecasts (error {100 * acc.wape:.0f} %) are worse than assuming nothing "
                                  f"changes ({100 * pers:.0f} %)")
        self._aside = bad
        if bad:
            return ACCURACY_TOO_LOW, (f"{why} over the last {acc.evaluations} forecasts; the prediction steps aside "
                                      "until they improve"), False
        return PREDICTING, f.message, True

    # ------------------------------------------------------------------ model helpers
    @staticmethod
    def _s(m: SeasonalModel, cell: int) -> float:
        total = 0.0
        for prof in m.profiles:
            total += prof[cell % len(prof)]
        return total

    def _deseason(self, m: SeasonalModel, t: float, value: float) -> float:
        y = math.log(max(value, 0.0) + m.offset) if m.transform == "log" else math.sqrt(max(value, 0.0))
        return y - self._s(m, int(t // m.step))

    def _level(self, m: SeasonalModel, now: float) -> float:
        """Median of the de-seasonalized observations of the last ``level_seconds`` (recomputed once per
        grid cell or when the newest observation changed it)."""
        recent = self._recent
        cutoff = now - m.level_seconds
        while len(recent) > 1 and recent[0][0] < cutoff:
            recent.popleft()
        if not recent:
            return m.level
        key = (int(now // m.step), len(recent), recent[-1][0])
        if self._level_key != key:
            if key[0] != (self._level_key or (None,))[0] or len(recent) < 32:
                self._level_value = median(d for _, d in recent)
            self._level_key = key
        return self._level_value
