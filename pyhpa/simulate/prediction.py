"""Predictive scaling in the simulator: the forecaster learns only from the past.

Before the run, the trace rows before ``--start`` are the metric's history, turned into the
metric's workload total through the profile as Prometheus would have recorded it from pods that
served that load (``history_totals``). During the run, at every sync, it learns the total the
HPA observed (the metric's samples summed over the pods, or the Object/External value) and
forecasts [now, now + leadSeconds]; the forecast goes to ``pyhpa.core.decide`` as numbers. It
never sees a trace row the simulated cluster has not yet lived through.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from ..core import HPA, Forecast, MetricSamples, PredictionSpec
from ..forecast import ForecastLoop
from ..forecast.replay import accuracy
from .metrics import MIB_MILLI, MetricView
from .profile import Profile
from .target import Target


def total_unit(view: MetricView) -> tuple[str, float]:
    """(unit, factor from milli-units) of a metric's workload total: millicores, MiB or the metric's unit."""
    if view.kind in ("cpu", "idle") and view.spec.name == "cpu":
        return "millicores", 1.0
    if view.spec.name == "memory" and view.kind in ("memory", "idle"):
        return "MiB", 1.0 / MIB_MILLI
    return view.unit or view.spec.name, 0.001


def history_totals(view: MetricView, hpa: HPA, target: Target, profile: Profile, cap: float, rps: np.ndarray,
                   columns: dict[str, np.ndarray]) -> np.ndarray:
    """The metric's workload total (milli-units) per history row, as Prometheus would have recorded it:
    ``pods = clamp(ceil(load / pod capacity), minReplicas, maxReplicas)`` pods serving ``min(load,
    pods x capacity)``; CPU ``cpu_baseline_millicores x pods + cpu_millicore_seconds_per_request x served``,
    memory ``memory_baseline_mebibytes x pods + memory_mebibytes_per_rps x served``, served requests/s,
    or the trace column (times its scale) for column-fed metrics."""
    kind = view.kind
    if kind in ("column", "pods_column"):
        return columns[view.column] * view.scale * 1000.0
    pods = np.clip(np.ceil(rps / cap), hpa.min_replicas, hpa.max_replicas)
    served = np.minimum(rps, pods * cap)
    if kind == "cpu":
        return profile.cpu_baseline_millicores * pods + profile.cpu_millicore_seconds_per_request * served
    if kind == "memory":
        mib = profile.memory_baseline_mebibytes * pods + profile.memory_mebibytes_per_rps * served
        return mib * MIB_MILLI
    if kind == "served":
        return served * 1000.0
    return np.zeros(rps.size)


def history_start(times: np.ndarray, history_seconds: float) -> int:
    """Where the forecaster's history begins in ``times`` (epoch s, ascending: the trace rows before the simulated
    span): the first row at most ``history_seconds`` (``spec.prediction.historySeconds``) before the last one; 0 when
    there is none. ``SimPrediction`` learns from there on, and a fleet keeps no row before it
    (``pyhpa.fleet.spec._replayed``)."""
    if not times.size:
        return 0
    return int(np.searchsorted(times, times[-1] - history_seconds, side="left"))


class SimPrediction:
    """The forecaster of one simulated HPA (``hpa.prediction`` set) and what it said at each sync.

    ``step(now, samples)`` learns the newest observation and returns the core's ``Forecast`` (``loop``, the
    ``ForecastLoop`` the controller runs too, refitting inline when due);
    ``times``/``observed``/``upper``/``point``/``low``/``high``/``provisioned`` (epoch s; metric-total units, see
    ``total_unit``; NaN where there is none) keep every sync's figures for the plot and the summary, as C doubles
    (``array("d")``, 8 bytes a figure, not a Python float's 32 in a list: a fleet of 200 predicting workloads over a
    week holds 56 million of them).
    """

    def __init__(self, spec: PredictionSpec, view: MetricView, history_times: np.ndarray, history_values: np.ndarray):
        self.spec = spec
        self.view = view
        self.unit, self.factor = total_unit(view)
        self.loop = ForecastLoop(spec)
        keep = slice(history_start(history_times, spec.history_seconds), None)
        if history_times.size:
            self.loop.predictor.extend(history_times[keep], history_values[keep])
        self.history_rows = history_times[keep].size
        self.times = array("d")
        self.observed = array("d")
        self.upper = array("d")
        self.provisioned = array("d")  # what the core sized the replicas for (``record_provisioned``)
        self.point = array("d")
        self.low = array("d")
        self.high = array("d")
        self.reasons: dict[str, int] = {}
        self.decided = 0  # syncs whose final number the prediction set (Decision.decided_by)

    def step(self, now: float, samples: list[MetricSamples]) -> Forecast:
        """Learn the metric's newest total, then forecast [now, now + lead]."""
        total = self.loop.learn(now, samples)
        forecast = self.loop.forecast(now)
        p = self.loop.last
        f = self.factor
        nan = math.nan
        self.times.append(now)
        self.observed.append(nan if total is None else total * f)
        self.upper.append(nan if p.upper is None else p.upper * f)
        self.point.append(nan if p.point is None else p.point * f)
        self.low.append(nan if p.low is None else p.low * f)
        self.high.append(nan if p.high is None else p.high * f)
        self.reasons[p.reason] = self.reasons.get(p.reason, 0) + 1
        return forecast

    def record_provisioned(self, milli: int | None) -> float | None:
        """Keep the total the core provisioned for at this sync (``PredictionStatus.provisioned_milli``,
        None when it stepped aside); returns it in metric-total units for the timeline."""
        v = None if milli is None else round(milli * self.factor, 4)
        self.provisioned.append(math.nan if v is None else v)
        return v

    def forecast_value(self) -> float | None:
        """The last forecast (the highest quantile over the lead window) in metric-total units."""
        p = self.loop.last
        return None if p is None or p.upper is None or not p.usable else round(p.upper * self.factor, 4)

    def summary(self) -> dict:
        """summary.json ``prediction``: settings, syncs per reason, accuracy of the point forecasts
        (``pyhpa.forecast.replay.accuracy``: MAPE, WAPE, share of actual totals above the high band) over the
        run, each sync's forecast judged against the total observed at the first sync a lead later."""
        t = np.asarray(self.times)
        obs = np.asarray(self.observed)
        point = np.asarray(self.point)
        lead = self.spec.lead_seconds
        idx = np.searchsorted(t, t + lead)
        ok = (idx < t.size) & np.isfinite(point)
        idx = np.minimum(idx, t.size - 1)
        actual = obs[idx]
        ok &= np.isfinite(actual)
        acc = accuracy(actual, point, np.asarray(self.high), ok)
        fit = self.loop.predictor.fit
        return {
            "metric": self.spec.metric,
            "mode": self.spec.mode,
            "lead_seconds": lead,
            "history_seconds": self.spec.history_seconds,
            "quantile": self.spec.quantile,
            "refresh_seconds": self.spec.refresh_seconds,
            "history_rows_before_start": self.history_rows,
            "unit": self.unit,
            "syncs_by_reason": dict(sorted(self.reasons.items())),
            "syncs_decided_by_prediction": self.decided,
            "model": fit.model.name if fit is not None and fit.model is not None else None,
            "periods_seconds": list(fit.periods) if fit is not None else [],
            "forecasts_judged": acc.evaluations,
            "mape": _round(acc.mape),
            "wape": _round(acc.wape),
            "under_forecast_share": _round(acc.under_share),
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
