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
from bisect import bisect_left, insort
from collections import deque

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


class _History:
    """Observations (epoch s, metric units) in time order, in numpy arrays that grow by doubling: appending is
    O(1) amortized, a window is a view (a fit reads it without a copy), old points go by moving the start."""

    __slots__ = ("_t", "_v", "_start", "_end")

    def __init__(self, times: np.ndarray | None = None, values: np.ndarray | None = None):
        self._fill(np.empty(0) if times is None else times, np.empty(0) if values is None else values)

    def _fill(self, times: np.ndarray, values: np.ndarray) -> None:
        """Hold ``times``/``values`` (copied) in new arrays of twice their size (at least 1024)."""
        n = times.size
        self._t, self._v = np.empty(max(1024, 2 * n)), np.empty(max(1024, 2 * n))
        self._t[:n], self._v[:n] = times, values
        self._start, self._end = 0, n

    def __len__(self) -> int:
        return self._end - self._start

    def append(self, t: float, value: float) -> None:
        if self._end == self._t.size:  # full: what is kept moves into arrays twice its size
            self._fill(self.times(), self.values())
        self._t[self._end] = t
        self._v[self._end] = value
        self._end += 1

    def times(self) -> np.ndarray:
        """The times kept (a view)."""
        return self._t[self._start:self._end]

    def values(self) -> np.ndarray:
        """The values kept (a view)."""
        return self._v[self._start:self._end]

    def last(self) -> tuple[float, float] | None:
        """The newest (time, value), None when empty."""
        if self._end == self._start:
            return None
        return float(self._t[self._end - 1]), float(self._v[self._end - 1])

    def index(self, t: float, lo: int = 0) -> int:
        """The position (0 = oldest kept) of the first observation at or after ``t``, searching from ``lo``."""
        return lo + int(np.searchsorted(self._t[self._start + lo:self._end], t, side="left"))

    def drop_before(self, t: float) -> None:
        """Forget the observations before ``t``."""
        self._start += self.index(t)


class Predictor:
    """History, model and accuracy of one metric's workload total.

    ``settings`` as ``ForecastSettings``. Observations must come in time order
    (``observe``); ``extend`` loads a block of past history (e.g. from Prometheus) at once.
    """

    def __init__(self, settings: ForecastSettings = ForecastSettings()):
        self.settings = settings
        self._h = _History()
        self.fit: Fit | None = None
        self._model: SeasonalModel | None = None
        self._next_fit = -math.inf
        self._recent: deque[tuple[float, float]] = deque()  # (t, de-seasonalized value) within level window
        self._ordered: list[float] = []  # the same de-seasonalized values, sorted (their median is the level)
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
        all_t = np.concatenate((self._h.times(), t[ok]))
        all_v = np.concatenate((self._h.values(), v[ok]))
        order = np.argsort(all_t, kind="stable")  # merged in time order; equal times keep the older first
        self._h = _History(all_t[order], all_v[order])
        self._next_fit = -math.inf

    def observe(self, t: float, value: float) -> None:
        """One observation at ``t`` (epoch s, not before the previous one); NaN or None is ignored."""
        if value is None or not math.isfinite(value):
            return
        newest = self._h.last()
        if newest is not None and t < newest[0]:
            return
        self._h.append(t, value)
        self.tracker.observe(t, value)
        m = self._model
        if m is not None:
            d = self._deseason(m, t, value)
            self._recent.append((t, d))
            insort(self._ordered, d)

    @property
    def last_observation(self) -> float | None:
        """Time (epoch s) of the newest observation, None without history."""
        newest = self._h.last()
        return None if newest is None else newest[0]

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """(times, values) currently kept (copies)."""
        return self._h.times().copy(), self._h.values().copy()

    # ------------------------------------------------------------------ fitting
    def refit_due(self, now: float) -> bool:
        """Whether a fit is due at ``now`` (epoch s): never fitted, history added, or ``refresh_seconds`` passed."""
        return now >= self._next_fit

    def refit(self, now: float) -> Fit:
        """Fit on the history of (now - history_seconds, now] and schedule the next fit."""
        s = self.settings
        self._trim(now)
        h = self._h
        lo = h.index(now - s.history_seconds)
        hi = h.index(now + 1e-9, lo)
        return self.install(fit(h.times()[lo:hi], h.values()[lo:hi], now=now, settings=s, previous=self.fit), now)

    def replace_history(self, times, values) -> None:
        """Replace the history (e.g. by a fresh copy from Prometheus); times increasing, NaN values dropped."""
        self._h = _History()
        self.extend(times, values)

    def install(self, f: Fit, now: float) -> Fit:
        """Use ``f`` (a fit made at ``now``, possibly in another thread from a copy of the history) from now
        on and schedule the next fit ``refresh_seconds`` later."""
        s = self.settings
        h = self._h
        lo = h.index(now - s.history_seconds)
        self.fit = f
        self._model = f.model
        self._next_fit = now + s.refresh_seconds
        self._recent.clear()
        self._ordered.clear()
        self._level_key = None
        m = f.model
        if m is not None:
            start = h.index(now - m.level_seconds, lo)
            for t, v in zip(h.times()[start:].tolist(), h.values()[start:].tolist()):
                d = self._deseason(m, t, v)
                self._recent.append((t, d))
                insort(self._ordered, d)
        return f

    def _trim(self, now: float) -> None:
        self._h.drop_before(now - self.settings.history_seconds - self.settings.refresh_seconds)

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
            self.tracker.issue(now, now + lead, point, high, self._h.last()[1])
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
        recent, ordered = self._recent, self._ordered
        cutoff = now - m.level_seconds
        while len(recent) > 1 and recent[0][0] < cutoff:
            del ordered[bisect_left(ordered, recent.popleft()[1])]
        if not recent:
            return m.level
        key = (int(now // m.step), len(recent), recent[-1][0])
        if self._level_key != key:
            if key[0] != (self._level_key or (None,))[0] or len(recent) < 32:
                n = len(ordered)  # the median of the sorted values, as statistics.median computes it
                self._level_value = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
            self._level_key = key
        return self._level_value
