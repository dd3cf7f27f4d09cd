"""The rules of ``spec.prediction`` (a HorizontalAutoscaler's ``PredictionSpec``): one set of limits.

``check_prediction`` is the one check: the adapter that reads ``spec.prediction``, ``pyhpa forecast``'s
flags and the CRD's OpenAPI minimums (``deploy/generate_crd.py``) all take their limits from here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .calculator import ceil_replicas, ceil_saturate, within
from .combine import per_pod_target
from .metrics import metric_index_problem
from .model import (
    ENFORCE,
    HISTORY_UNAVAILABLE,
    HPA,
    MAX_INT32,
    METRIC_SOURCE_TYPES,
    NOT_PREDICTABLE,
    OBSERVING,
    PREDICTING,
    PREDICTION_ACTIVE,
    PREDICTION_MODES,
    PREDICTION_SOURCE,
    UTILIZATION,
    VALUE,
    Forecast,
    MetricSpec,
    Pod,
    PredictionSpec,
    PredictionStatus,
    SourceKind,
    SourceProposal,
)
from .sources import Outcome, SourceInputs, Stage, condition_dropped

__all__ = [
    "FORECASTABLE_TYPES", "MAX_QUANTILE", "MIN_HISTORY_SECONDS", "MIN_LEAD_SECONDS", "MIN_QUANTILE",
    "MIN_REFRESH_SECONDS", "PredictionSource", "check_prediction", "prediction_proposal", "provisioned_total",
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


def provisioned_total(metric: MetricSpec, forecast: Forecast) -> float | None:
    """The workload total (milli-units) the Prediction source provisions for, or None without a forecast.

    ``forecast.total_milli`` is the quantile Q of the total over the lead window and
    ``forecast.expected_milli`` its central forecast E. A Utilization target of u % already keeps
    ``100/u - 1`` of headroom above the load it is sized for (43 % at 70 %): forecast uncertainty
    well inside that headroom is absorbed by it, uncertainty as large as it is not. So for a
    Utilization target below 100 % the band counts in proportion to the share of the headroom it
    would use: ``E + w * (Q - E)`` with ``w = min(1, (Q - E) / (E * (100/u - 1)))`` — a narrow band
    (a forecast that is rarely wrong by much) adds little, a band as wide as the headroom is
    provisioned in full. Other targets (AverageValue, Value, no E, E >= Q) provision Q, the
    quantile as given.
    """
    total = forecast.total_milli
    if total is None:
        return None
    q = float(total)
    e = forecast.expected_milli
    u = metric.target_utilization if metric.target_type == UTILIZATION else None
    if e is None or not u or u >= 100 or e <= 0 or q <= e:
        return q
    band = q - float(e)
    weight = min(1.0, band / (float(e) * (100.0 / u - 1.0)))
    return float(e) + weight * band


def prediction_proposal(hpa: HPA, forecast: Forecast | None, pods: Sequence[Pod], current: int,
                        tolerance_down: float, tolerance_up: float,
                        metric_name: str) -> tuple[SourceProposal, float | None]:
    """The Prediction source of one sync (``hpa.prediction`` must be set) and the total it
    provisioned for (``provisioned_total`` of the forecast; None without a forecast or metric).

    AverageValue and Utilization targets: ``ceil(total / per-pod target)`` where the per-pod
    target is ``averageValue`` or ``averageUtilization`` % of the pods' mean request (mean limit with
    ``utilizationBasis: Limit``); Value targets: ``ceil(current * forecast / target)`` as upstream's
    usage ratio. Within the tolerance band around ``current`` the proposal is ``current``; replica
    counts saturate at 2^31-1 as upstream's (``ceil_replicas``). Units: milli-units.
    """
    spec = hpa.prediction
    assert spec is not None
    applied = spec.mode == ENFORCE
    if forecast is None or forecast.total_milli is None:
        reason = HISTORY_UNAVAILABLE if forecast is None else forecast.reason
        message = "no forecast was available" if forecast is None else forecast.message
        return SourceProposal(source=PREDICTION_SOURCE, name=metric_name, applied=False, error=reason,
                              note=message), None
    if not 0 <= spec.metric < len(hpa.metrics):
        return SourceProposal(source=PREDICTION_SOURCE, name=metric_name, applied=False, error="InvalidMetric",
                              note=f"spec.prediction.metric {spec.metric} names no entry of spec.metrics"), None
    m = hpa.metrics[spec.metric]
    total = provisioned_total(m, forecast)
    if m.target_type == VALUE and m.target_value_milli:
        ratio = total / float(m.target_value_milli)
        replicas = current if within(ratio, tolerance_down, tolerance_up) else ceil_replicas(ratio, current)
    else:
        per_pod, why = per_pod_target(m, pods)
        if per_pod is None or per_pod <= 0:
            why = why or "the metric's target cannot size a forecast"
            return SourceProposal(source=PREDICTION_SOURCE, name=metric_name, applied=False,
                                  error=NOT_PREDICTABLE, note=why), total
        ratio = total / (per_pod * current) if current > 0 else math.inf
        replicas = current if within(ratio, tolerance_down, tolerance_up) else ceil_saturate(total / per_pod, MAX_INT32)
    note = "" if applied else "Observe mode: computed and reported, never applied"
    return SourceProposal(source=PREDICTION_SOURCE, name=metric_name, replicas=max(replicas, 0),
                          applied=applied, note=note), total


class PredictionSource:
    """The Prediction source (``spec.prediction``): the forecast's proposal (``prediction_proposal``),
    the ``PredictionActive`` condition and ``status.prediction``."""

    kind = SourceKind.PREDICTION
    stage = Stage.PROPOSALS
    condition_only = True  # what it leaves when retired is its condition alone
    field = "prediction"

    def enabled(self, inputs: SourceInputs) -> bool:
        return inputs.hpa.prediction is not None

    def retired(self, inputs: SourceInputs) -> Outcome | None:
        """``spec.prediction`` removed: its ``PredictionActive`` condition goes with it."""
        return condition_dropped(inputs, PREDICTION_ACTIVE)

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
        return Outcome(proposals=(p,), conditions=(condition,), section=(self.field, status))
