"""The rules of ``spec.prediction`` (a HorizontalAutoscaler's ``PredictionSpec``): one set of limits.

``check_prediction`` is the one check: the adapter that reads ``spec.prediction``, ``pyhpa forecast``'s
flags and the CRD's OpenAPI minimums (``deploy/generate_crd.py``) all take their limits from here.
"""

from __future__ import annotations

from collections.abc import Sequence

import math

from .combine import prediction_proposal
from .metrics import metric_index_problem
from .model import (ENFORCE, HPA, METRIC_SOURCE_TYPES, NOT_PREDICTABLE, OBSERVING, PREDICTING, PREDICTION_ACTIVE,
                    PREDICTION_MODES, MetricSpec, PredictionSpec, PredictionStatus, SourceKind)
from .sources import Outcome, SourceInputs

__all__ = [
    "FORECASTABLE_TYPES", "MAX_QUANTILE", "MIN_HISTORY_SECONDS", "MIN_LEAD_SECONDS", "MIN_QUANTILE",
    "MIN_REFRESH_SECONDS", "PredictionSource", "check_prediction",
]

#: Shortest ``historySeconds`` (s): two hours, the least history a fit can find anything in.
MIN_HISTORY_SECONDS = 7200
#: Shortest ``leadSeconds`` (s); the lead must also be shorter than ``historySeconds``.
MIN_LEAD_SECONDS = 1
#: Shortest ``refreshSeconds`` (s) between refits.
MIN_REFRESH_SECONDS = 60
#: ``quantile`` lies in [MIN_QUANTILE, MAX_QUANTILE): at least the median, never the (unbounded) maximum.
MIN_QUANTILE = 0.5
MAX_QUANTILE = 1
#: Metric source types with a workload total to forecast (``spec.prediction.metric`` must name one).
FORECASTABLE_TYPES = METRIC_SOURCE_TYPES


def check_prediction(spec: PredictionSpec, metrics: Sequence[MetricSpec] | None = None) -> list[tuple[str, str]]:
    """What is wrong with ``spec``, as (field, message) pairs in field order (empty when it is valid).

    Fields are relative to ``spec.prediction`` (``metric``, ``historySeconds``, ``leadSeconds``,
    ``quantile``, ``mode``, ``refreshSeconds``, ``historyQuery``). The seconds and the quantile may be
    any numbers (``pyhpa forecast`` checks float flags with it); NaN is out of every range. With
    ``metrics`` (the HPA's ``spec.metrics``) the ``metric`` index must name one of a forecastable type.
    """
    problems: list[tuple[str, str]] = []
    why = metric_index_problem(spec.metric, metrics)
    if why is not None:
        problems.append(("metric", why))
    elif metrics is not None and metrics[spec.metric].type not in FORECASTABLE_TYPES:
        problems.append(("metric", f"spec.metrics[{spec.metric}] of type {metrics[spec.metric].type!r} "
                                   "cannot be forecast"))
    history, lead = spec.history_seconds, spec.lead_seconds
    if not history >= MIN_HISTORY_SECONDS:
        problems.append(("historySeconds", f"must be at least {MIN_HISTORY_SECONDS}, got {_num(history)}"))
    if not lead >= MIN_LEAD_SECONDS:
        problems.append(("leadSeconds", f"must be at least {MIN_LEAD_SECONDS}, got {_num(lead)}"))
    elif not lead < history:
        problems.append(("leadSeconds", f"must be shorter than historySeconds ({_num(history)})"))
    if not MIN_QUANTILE <= spec.quantile < MAX_QUANTILE:
        problems.append(("quantile", f"must be a number in [{MIN_QUANTILE:g}, {MAX_QUANTILE:g}), "
                                     f"got {spec.quantile!r}"))
    if spec.mode not in PREDICTION_MODES:
        problems.append(("mode", f"must be {' or '.join(PREDICTION_MODES)}, got {spec.mode!r}"))
    if not spec.refresh_seconds >= MIN_REFRESH_SECONDS:
        problems.append(("refreshSeconds", f"must be at least {MIN_REFRESH_SECONDS}, got {_num(spec.refresh_seconds)}"))
    query = spec.history_query
    if query is not None and (not isinstance(query, str) or not query.strip()):
        problems.append(("historyQuery", "must be a non-empty PromQL query"))
    return problems


def _num(x: float) -> str:
    """A number of seconds as written: ``7200`` for 7200 or 7200.0, ``0.5`` for 0.5."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


class PredictionSource:
    """The Prediction source (``spec.prediction``): the forecast's proposal (``pyhpa.core.combine.prediction_proposal``),
    the ``PredictionActive`` condition and ``status.prediction``."""

    kind = SourceKind.PREDICTION

    def enabled(self, hpa: HPA, given: bool) -> bool:
        return hpa.prediction is not None

    def evaluate(self, inputs: SourceInputs) -> Outcome:
        hpa, forecast = inputs.hpa, inputs.forecast
        spec = hpa.prediction
        assert spec is not None
        down, up = inputs.tolerances
        name = inputs.metric_name(spec.metric) if 0 <= spec.metric < len(hpa.metrics) else f"metrics[{spec.metric}]"
        p, provisioned = prediction_proposal(hpa, forecast, inputs.pods, inputs.current, down, up, name)
        if p.replicas is None:
            reason = p.error or NOT_PREDICTABLE
            condition = (PREDICTION_ACTIVE, "False", reason, p.note or "the prediction stepped aside")
        elif spec.mode != ENFORCE:
            reason = OBSERVING
            condition = (PREDICTION_ACTIVE, "False", reason,
                         f"Observe mode: the forecast asks for {p.replicas} replicas; not applied")
        else:
            reason = PREDICTING
            condition = (PREDICTION_ACTIVE, "True", reason,
                         f"the forecast over the next {spec.lead_seconds}s asks for {p.replicas} replicas")
        status = PredictionStatus(
            forecast_milli=None if forecast is None else forecast.total_milli,
            expected_milli=None if forecast is None else forecast.expected_milli,
            provisioned_milli=None if provisioned is None else math.ceil(provisioned - 1e-9),
            replicas=p.replicas, reason=reason, mode=spec.mode)
        return Outcome(proposal=p, condition=condition, section=("prediction", status))
