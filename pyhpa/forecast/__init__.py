"""Forecasting of a metric's workload total for predictive scaling (an adapter: numpy/scipy).

The decision core never fits anything: it receives the forecast as numbers (the quantile
of the workload total over [now, now + lead]). This package turns a metric's history into
that number: ``fit`` (robust seasonal model with period detection and model selection on a
held-out period), ``Predictor`` (history, refresh schedule, cheap forecasts per sync, online
accuracy tracking), ``ForecastLoop`` (a predictor fed one sync at a time: the simulator's and the
controller's loop), ``replay`` (forecast a trace point by point from its past only).
"""

import sys
from importlib import import_module
from types import ModuleType

from .model import (
    ACCURACY_TOO_LOW,
    DAY,
    HISTORY_UNAVAILABLE,
    INSUFFICIENT_HISTORY,
    NOT_PREDICTABLE,
    OBSERVING,
    PREDICTING,
    WEEK,
    Accuracy,
    Fit,
    ForecastSettings,
    HoldoutScore,
    Prediction,
    SeasonalModel,
    settings_for,
)

#: names imported on first use: their modules bring numpy and scipy (about 90 MB resident), which a process
#: that never forecasts (``pyhpa run`` without ``spec.prediction``, every other command) must not pay for
_LAZY = {"observed_total": "bridge", "to_core_forecast": "bridge", "detect_periods": "fitting", "fit": "fitting",
         "ForecastLoop": "loop", "AccuracyTracker": "predictor", "Predictor": "predictor", "Replay": "replay",
         "replay": "replay"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    if name != "replay":  # the function shares its name with its module: see _Package
        globals()[name] = value
    return value


class _Package(ModuleType):
    """``pyhpa.forecast.replay`` is the function ``replay`` (as when it was imported eagerly here), also once the
    submodule of the same name has been imported (the import system then sets the package's attribute to the
    module: ignored; the submodule stays in ``sys.modules``)."""

    @property
    def replay(self):
        return import_module(".replay", __name__).replay

    @replay.setter
    def replay(self, value) -> None:
        pass


sys.modules[__name__].__class__ = _Package


__all__ = [
    "ACCURACY_TOO_LOW", "DAY", "HISTORY_UNAVAILABLE", "INSUFFICIENT_HISTORY", "NOT_PREDICTABLE", "OBSERVING",
    "PREDICTING", "WEEK", "Accuracy", "AccuracyTracker", "Fit", "ForecastLoop", "ForecastSettings", "HoldoutScore",
    "Prediction",
    "Predictor", "Replay", "SeasonalModel", "detect_periods", "fit", "observed_total", "replay", "settings_for",
    "to_core_forecast",
]
