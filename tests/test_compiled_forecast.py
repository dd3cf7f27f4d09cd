"""The compiled forecaster (``native/src/forecast.rs``, the compiled workload's ``spec.prediction``) forecasts what
``pyhpa.forecast.predictor.Predictor`` forecasts, to the last bit: on random seasonal series with noise, level
shifts, bursts, gaps and NaNs, under random settings (lead, history, refresh, the accuracy limits that make it
step aside and come back), refitting through the compiled workload's own fit callback (``CompiledCluster._c_refit``; issue 55: the Python forecaster stays the
reference)."""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from native_gate import require_compiled_path

from pyhpa.forecast.model import ForecastSettings
from pyhpa.forecast.predictor import Predictor
from pyhpa.simulate import native
from pyhpa.simulate.compiled import CompiledCluster

require_compiled_path()

DAY = 86400.0
T0 = 1_375_660_800.0  # 2013-08-05T00:00Z


def _series(rng: np.random.Generator, s: dict) -> tuple[np.ndarray, np.ndarray]:
    """Minutes (epoch s, with jitter and holes) of a daily cycle times a level that shifts, with noise and bursts."""
    n = int((s["history_days"] + 1) * 1440)
    t = T0 + 60.0 * np.arange(n) + (rng.uniform(0, s["jitter"], n) if s["jitter"] else 0.0)
    phase = 2 * math.pi * ((t - T0) % DAY) / DAY
    level = s["base"] * np.where((t - T0) > s["shift_at"] * DAY, s["shift"], 1.0)
    v = level * (1 + s["amplitude"] * np.sin(phase)) * (1 + s["noise"] * rng.standard_normal(n))
    bursts = rng.random(n) < s["bursts"]
    v = np.where(bursts, v * 4, v)
    v = np.maximum(v, 0.0)
    if s["zeros"]:
        v[rng.random(n) < 0.02] = 0.0
    keep = rng.random(n) >= s["holes"]
    v[rng.random(n) < s["nans"]] = np.nan
    return t[keep], np.round(v[keep] * 1000.0)  # milli-units, as a workload total's samples sum


cases = st.fixed_dictionaries({
    "seed": st.integers(0, 2**31),
    "history_days": st.sampled_from([0.5, 2.5, 4.0, 7.0]),
    "base": st.sampled_from([2.0, 40.0, 900.0]),
    "amplitude": st.sampled_from([0.0, 0.3, 0.8]),
    "noise": st.sampled_from([0.0, 0.05, 0.4]),
    "bursts": st.sampled_from([0.0, 0.01]),
    "shift": st.sampled_from([1.0, 0.3, 3.0]),
    "shift_at": st.sampled_from([1.0, 4.5]),
    "zeros": st.booleans(),
    "jitter": st.sampled_from([0.0, 20.0]),
    "holes": st.sampled_from([0.0, 0.05]),
    "nans": st.sampled_from([0.0, 0.01]),
    "lead": st.sampled_from([60.0, 300.0, 1800.0]),
    "refresh": st.sampled_from([1800.0, 3600.0, 21600.0]),
    "quantile": st.sampled_from([0.5, 0.9, 0.99]),
    "max_error": st.sampled_from([1.0, 0.2, 0.05]),
    "max_bias": st.sampled_from([0.35, 0.05]),
    "min_evaluations": st.sampled_from([30, 3]),
    "stale": st.sampled_from([900.0, 120.0]),
    "sync": st.sampled_from([15.0, 60.0]),
})


@settings(max_examples=int(os.environ.get("PYHPA_COMPILED_EXAMPLES", 60)) // 3 or 1, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(s=cases)
def test_the_compiled_forecaster_forecasts_as_the_python_one(s):
    """History loaded at the start, then one observation per sync (in time order, NaNs among them) and a forecast
    at every sync: every forecast's numbers and whether it is usable are the Python predictor's."""
    rng = np.random.default_rng(s["seed"])
    times, values = _series(rng, s)
    fs = ForecastSettings(history_seconds=(7.0 if s["history_days"] >= 4 else 2.5) * DAY, lead_seconds=s["lead"],
                          quantile=s["quantile"], refresh_seconds=s["refresh"], max_error=s["max_error"], max_bias=s["max_bias"],
                          min_evaluations=s["min_evaluations"], stale_seconds=s["stale"])
    split = T0 + s["history_days"] * DAY
    past = times < split
    python = Predictor(fs)
    python.extend(times[past], values[past])
    h_times, h_values = python.history()
    # the compiled workload's own fit callback, on a stand-in for the workload (its settings and last fit)
    workload = SimpleNamespace(_forecast_settings=fs, _fit=None)

    def refit(t: list[float], v: list[float], now: float):
        return CompiledCluster._c_refit(workload, now, np.asarray(t).tobytes(), np.asarray(v).tobytes())

    compiled = native.rustcore.Forecaster(
        (fs.history_seconds, fs.lead_seconds, fs.refresh_seconds, fs.max_error, fs.max_bias, fs.persistence_factor,
         fs.min_relative_error, fs.accuracy_window_seconds, fs.min_evaluations, fs.stale_seconds),
        h_times.tolist(), h_values.tolist(), refit)
    later_t, later_v = times[~past], values[~past]
    i, n = 0, later_t.size
    now = split
    kinds = set()
    while i < n and now < split + DAY:
        while i < n and later_t[i] <= now:
            python.observe(float(later_t[i]), float(later_v[i]))
            compiled.observe(float(later_t[i]), float(later_v[i]))
            i += 1
        p = python.forecast(now)
        want = (str(p.reason), p.usable, p.upper, p.expected, p.point, p.low, p.high)
        assert compiled.forecast(now) == want, (now, p.reason, p.message)
        kinds.add(f"{p.reason} {'with' if p.upper is not None else 'without'} numbers")
        now += s["sync"]
    for k in sorted(kinds):
        event(k)
