"""The status of an autoscaler from the decision core's ``HPAStatus``: ``render_status`` for a sync's whole status.

The autoscaling/v2 fields are written here (``condition_dict``); each HorizontalAutoscaler section (``schedules``,
``metricHealth``, ``saturation``, ``pause``, ``prediction``) is its API struct of ``pyhpa.api.v1alpha1``
(``ScheduleSection``, ...), converted from the core's status object by attribute name (``section``: msgspec's
``convert`` with ``from_attributes``; the struct's attributes are the core's names, its wire names are the API's),
so a field added to both is written with no code here. What this module adds are the write policies: the figures
that change at every sync are written only while they matter (``saturation_section``) or rounded
(``prediction_section``), so the status is rewritten when its content changes.

Times are metav1.Time text (RFC 3339, whole seconds, UTC: ``Time``); quantities are the core's milli-units as
Kubernetes quantity text (``Quantity``). The controller writes what ``render_status`` gives
(``pyhpa.controller.outputs.status``); ``pyhpa explain`` prints the prediction and saturation figures from the same
conversions.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, TypeVar

import msgspec

from ..core import Condition, HPAStatus, PredictionStatus
from ..core.model import PREDICTION_ACTIVE
from ..core.quantity import format_milli
from ..core.saturation import SaturationStatus
from . import v1alpha1 as api

__all__ = ["condition_dict", "prediction_figures", "prediction_section", "render_status",
           "saturation_figures", "saturation_section", "section", "time_text", "wire"]

#: significant digits of the forecast figures the status carries (rewritten when they change, not every sync)
STATUS_DIGITS = 3

S = TypeVar("S", bound=msgspec.Struct)


def time_text(ts: float) -> str:
    """Epoch seconds as metav1.Time text (RFC 3339, whole seconds, UTC)."""
    return _second_text(math.floor(ts))


@lru_cache(maxsize=4096)
def _second_text(second: int) -> str:
    dt = datetime.fromtimestamp(second, tz=timezone.utc)
    return f"{dt.year:04d}-" + dt.strftime("%m-%dT%H:%M:%SZ")  # %Y is not padded below year 1000 (glibc)


def condition_dict(c: Condition) -> dict:
    """An autoscaling/v2 HorizontalPodAutoscalerCondition."""
    out = {"type": c.type, "status": c.status}
    if c.last_transition_time is not None:
        out["lastTransitionTime"] = time_text(c.last_transition_time)
    if c.reason:
        out["reason"] = c.reason
    if c.message:
        out["message"] = c.message
    return out


def _from_core(tp: type, value: Any) -> Any:
    """``section``'s conversion of the core's values to the API's scalar types: epoch seconds to ``Time``,
    milli-units to ``Quantity`` (their text passes as is)."""
    if tp is api.Time:
        return api.Time(value if isinstance(value, str) else time_text(value))
    if tp is api.Quantity:
        return api.Quantity(value if isinstance(value, str) else format_milli(value))
    raise NotImplementedError(tp)


def section(value: Any, struct: type[S]) -> S:
    """The API struct ``struct`` of a core status object (``pyhpa.core.ScheduleStatus`` to
    ``pyhpa.api.v1alpha1.ScheduleSection``, ...): each field from the core's attribute of the same name (the
    core's other attributes are not written), times and quantities converted (``_from_core``). Raises
    msgspec.ValidationError when a value does not fit its field (a bug: the core's types are the API's)."""
    return msgspec.convert(value, struct, from_attributes=True, dec_hook=_from_core)


def wire(value: msgspec.Struct) -> dict:
    """An API struct as the API server stores it: wire (camelCase) names, fields at their defaults left out."""
    return msgspec.to_builtins(value, enc_hook=str)


def render_status(st: HPAStatus, generation: int, *, lead_seconds: int | None = None,
                  fit: dict | None = None, null_current_metrics: bool = False) -> dict:
    """The status of one sync (``observedGeneration`` is the spec generation synced): the autoscaling/v2 fields,
    then each section the sync has, converted from the core's (``section``): ``schedules``, ``metricHealth`` (each
    ``numberOfFailures`` as the core capped it), ``saturation`` (``saturation_section``), ``pause``, and
    ``prediction`` with ``lead_seconds`` (the spec's) and ``fit`` (``prediction_section``). ``currentMetrics`` is
    left out when the sync computed no metric, as the API server stores a HorizontalAutoscaler (a custom resource: a
    null is pruned), or with ``null_current_metrics`` written as ``null``, as an autoscaling/v2 HPA's status shows it
    (upstream's field has no omitempty: ``pyhpa explain -o json``)."""
    out = {"observedGeneration": generation, "desiredReplicas": st.desired_replicas}
    if st.current_replicas:
        out["currentReplicas"] = st.current_replicas
    if st.current_metrics is not None:
        out["currentMetrics"] = list(st.current_metrics)
    elif null_current_metrics:  # upstream's field has no omitempty (autoscaling/v2 types.go)
        out["currentMetrics"] = None
    if st.conditions:
        out["conditions"] = [condition_dict(c) for c in st.conditions]
    if st.last_scale_time is not None:
        out["lastScaleTime"] = time_text(st.last_scale_time)
    if st.schedules is not None:
        out["schedules"] = wire(section(st.schedules, api.ScheduleSection))
    if st.metric_health is not None:
        out["metricHealth"] = [wire(section(h, api.MetricHealthEntry)) for h in st.metric_health]
    if st.saturation is not None:
        out["saturation"] = wire(saturation_section(st.saturation))
    if st.pause is not None:
        out["pause"] = wire(section(st.pause, api.PauseSection))
    if st.prediction is not None and lead_seconds is not None:
        out["prediction"] = wire(prediction_section(st, lead_seconds, fit))
    return out


def prediction_section(st: HPAStatus, lead_seconds: int, fit: dict | None = None) -> api.PredictionSection:
    """``status.prediction``: the core's ``PredictionStatus`` (``section``) with its quantities rounded up to
    ``STATUS_DIGITS`` significant digits, ``lead_seconds`` (the spec's), the ``PredictionActive`` condition's
    message, and ``fit``: the figures of the fitted model, keyed by ``PredictionSection``'s attribute names
    (``pyhpa.controller.sync.prediction.LivePredictions.fit``)."""
    ps = st.prediction
    assert ps is not None
    rounded = dataclasses.replace(ps, **{name: None if m is None else _significant(m, STATUS_DIGITS) for name, m in (
        ("forecast_milli", ps.forecast_milli), ("expected_milli", ps.expected_milli),
        ("provisioned_milli", ps.provisioned_milli))})
    cond = next((c for c in st.conditions if c.type == PREDICTION_ACTIVE), None)
    return msgspec.structs.replace(section(rounded, api.PredictionSection), lead_seconds=lead_seconds,
                                   message=None if cond is None else cond.message, **(fit or {}))


def prediction_figures(ps: PredictionStatus, significant: int | None = None) -> dict:
    """The figures of ``status.prediction`` the core decides at one sync, from its ``PredictionStatus``.

    Keys, every one present (None where the core has no value): ``forecast``, ``expected``, ``provisioned``
    (the quantile, the central forecast and the total the replicas are sized for, as quantities in the
    metric's unit: ``900m`` cores for CPU), ``replicas`` (what the forecast asked for), ``reason`` (the
    ``PredictionActive`` reason) and ``mode``. With ``significant`` the quantities are rounded up to that
    many significant digits (the controller's status: rewritten when they change, not at every sync).
    """
    def quantity(m: int | None) -> str | None:
        if m is None:
            return None
        return format_milli(m if significant is None else _significant(m, significant))

    return {"forecast": quantity(ps.forecast_milli), "expected": quantity(ps.expected_milli),
            "provisioned": quantity(ps.provisioned_milli), "replicas": ps.replicas, "reason": ps.reason,
            "mode": ps.mode}


def _significant(milli_value: int, digits: int) -> int:
    """``milli_value`` rounded up to ``digits`` significant digits (``123456`` to 3: ``124000``)."""
    if milli_value == 0:
        return 0
    scale = 10 ** max(int(math.floor(math.log10(abs(milli_value)))) - digits + 1, 0)
    return int(math.ceil(milli_value / scale) * scale)


def saturation_section(st: SaturationStatus) -> api.SaturationSection:
    """``status.saturation`` of one sync, the core's ``SaturationStatus`` (``section``): ``reason`` (the
    ``SaturationActive`` reason), ``message``, ``mode``, ``pinned``, ``usagePercentOfLimit`` (the ready pods' CPU
    usage in percent of their CPU limit, when it could be judged), ``readyPods`` and ``replicas`` (what the source
    asked for, when pinned). The usage and the pods are written only while pinned: below the limit they change at
    every sync, and the status is rewritten when its content changes."""
    out = section(st, api.SaturationSection)
    if st.pinned and st.usage_percent is not None:
        return out
    return msgspec.structs.replace(out, usage_percent=None, ready_pods=None)


def saturation_figures(st: SaturationStatus) -> dict:
    """The figures of one sync's saturation source (``pyhpa explain -o json``'s ``saturation``, before ``applied``
    and ``won``): ``saturation_section`` with ``usagePercentOfLimit`` (None when it could not be judged) and
    ``readyPods`` whether pinned or not."""
    return {**wire(saturation_section(st)), "usagePercentOfLimit": st.usage_percent, "readyPods": st.ready_pods}
