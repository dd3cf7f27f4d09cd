"""One autoscaler's observe -> fit -> forecast loop, as ``pyhpa simulate`` and ``pyhpa run`` drive it at each sync."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core import Forecast, MetricSamples, PredictionSpec
from .bridge import observed_total, to_core_forecast
from .model import Prediction, settings_for
from .predictor import Predictor


class ForecastLoop:
    """The forecaster of one ``spec.prediction`` (``spec``): a ``Predictor`` with its settings, fed a sync at a time.

    ``learn(now, samples)`` adds what the metrics APIs answered at a sync; ``forecast(now)`` forecasts
    [now, now + leadSeconds] for the core. ``last`` is the last ``Prediction`` (None before the first
    forecast, or after ``aside``); ``last_seen`` the timestamp (epoch s) of the newest observation learnt.
    """

    def __init__(self, spec: PredictionSpec):
        self.spec = spec
        self.predictor = Predictor(settings_for(spec))
        self.last: Prediction | None = None
        self.last_seen = -math.inf

    def learn(self, now: float, samples: Sequence[MetricSamples]) -> float | None:
        """Learn the workload total (milli-units, ``observed_total``) of the predicted metric's ``samples``
        (one ``MetricSamples`` per ``spec.metrics`` entry) and return it; None when that metric failed.

        The observation is dated by the samples' timestamp (``now`` without one) and learnt only when it is
        newer than the last one learnt: a sync that sees the same samples again adds nothing.
        """
        s = samples[self.spec.metric] if self.spec.metric < len(samples) else None
        total = observed_total(s) if s is not None else None
        seen = s.timestamp if s is not None and s.timestamp is not None else now
        if total is not None and seen > self.last_seen:
            self.predictor.observe(seen, total)
            self.last_seen = seen
        return total

    def forecast(self, now: float, refit: bool = True) -> Forecast:
        """The core's ``Forecast`` of [now, now + leadSeconds] (``to_core_forecast``), kept as ``last``.

        With ``refit`` the model is refitted first when due (``Predictor.forecast``); without it the caller
        refits on its own schedule (the controller: in the background, from Prometheus' history).
        """
        p = self.predictor.forecast(now, refit=refit)
        self.last = p
        return to_core_forecast(p)

    def aside(self, reason: str, message: str) -> Forecast:
        """No forecast at this sync (``last`` is cleared): the core's ``Forecast`` saying why (a
        ``PredictionActive`` reason and one sentence)."""
        self.last = None
        return Forecast(total_milli=None, reason=reason, message=message)
