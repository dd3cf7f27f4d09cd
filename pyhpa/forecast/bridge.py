"""Between the forecaster and the decision core: observations from metric samples, forecasts as numbers."""

from __future__ import annotations

import math

from ..core import Forecast, MetricSamples
from .model import Prediction


def observed_total(s: MetricSamples) -> float | None:
    """The workload total of one metric's samples (milli-units): the pods' values summed, or the
    Object value / the sum of the External series; None when the metric failed."""
    if s.error is not None:
        return None
    if s.pods:
        return float(sum(p.value for p in s.pods.values()))
    if s.values:
        return float(sum(s.values))
    return None


def to_core_forecast(p: Prediction) -> Forecast:
    """The core's ``Forecast`` (milli-units, rounded up as ``MilliValue()``) of a ``Prediction``:
    the quantile and the central forecast over the window only when the prediction is usable,
    else the reason and message of stepping aside."""
    if p.usable and p.upper is not None:
        expected = None if p.expected is None else int(math.ceil(p.expected - 1e-9))
        return Forecast(total_milli=int(math.ceil(p.upper - 1e-9)), expected_milli=expected, reason=p.reason,
                        message=p.message)
    return Forecast(total_milli=None, reason=p.reason, message=p.message)
