"""Forecasting of a metric's workload total for predictive scaling (an adapter: numpy/scipy).

The decision core never fits anything: it receives the forecast as numbers (the quantile
of the workload total over [now, now + lead]). This package turns a metric's history into
that number: ``fit`` (robust seasonal model with period detection and model selection on a
held-out period), ``Predictor`` (history, refresh schedule, cheap forecasts per sync, online
accuracy tracking), ``ForecastLoop`` (a predictor fed one sync at a time: the simulator's and the
controller's loop), ``replay`` (forecast a trace point by point from its past only).
"""

from .bridge import observed_total, to_core_forecast
from .fitting import detect_periods, fit
from .loop import ForecastLoop
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
from .predictor import AccuracyTracker, Predictor
from .replay import Replay, replay

__all__ = [
    "ACCURACY_TOO_LOW", "DAY", "HISTORY_UNAVAILABLE", "INSUFFICIENT_HISTORY", "NOT_PREDICTABLE", "OBSERVING",
    "PREDICTING", "WEEK", "Accuracy", "AccuracyTracker", "Fit", "ForecastLoop", "ForecastSettings", "HoldoutScore",
    "Prediction",
    "Predictor", "Replay", "SeasonalModel", "detect_periods", "fit", "observed_total", "replay", "settings_for",
    "to_core_forecast",
]
