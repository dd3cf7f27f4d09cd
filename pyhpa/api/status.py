"""The status of an autoscaler, rendered from the decision core's ``HPAStatus``: one function, ``render_status``,
for every section (the autoscaling/v2 status and the HorizontalAutoscaler's ``schedules``, ``metricHealth``,
``prediction``, ``saturation``, ``pause``, typed in ``pyhpa.api.v1alpha1``).

Times are metav1.Time text (RFC 3339, whole seconds, UTC); quantities are the core's milli-units as Kubernetes
quantity text. The controller writes what ``render_status`` gives (``pyhpa.controller.outputs.status``), ``pyhpa
explain`` prints the prediction and saturation figures from the same renderers.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from functools import lru_cache

from ..core import Condition, HPAStatus, MetricHealth, PauseStatus, PredictionStatus
from ..core.model import PREDICTION_ACTIVE
from ..core.quantity import format_milli
from ..core.saturation import SaturationStatus

__all__ = ["PREDICTION_FIGURES", "condition_dict", "metric_health_dict", "pause_status", "prediction_figures",
           "render_status", "saturation_figures", "saturation_status", "time_text"]

#: The figures of ``prediction_figures`` the status carries when set (``mode`` is the spec's, not written back).
PREDICTION_FIGURES = ("replicas", "forecast", "expected", "provisioned")
#: significant digits of the forecast figures the status carries (rewritten when they change, not every sync)
STATUS_DIGITS = 3


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


def render_status(st: HPAStatus, generation: int, *, lead_seconds: int | None = None,
                  fit: dict | None = None) -> dict:
    """The status of one sync (``observedGeneration`` is the spec generation synced): the autoscaling/v2 fields,
    then each section the sync has: ``schedules``, ``metricHealth`` (each ``numberOfFailures`` as the core capped it),
    ``prediction`` (with ``lead_seconds``: the spec's, and
    ``fit``: the figures of the fitted model, ``lastFitTime``, ``model``, ``periodsSeconds``, ``accuracy``),
    ``saturation`` and ``pause``."""
    out = {"observedGeneration": generation, "desiredReplicas": st.desired_replicas}
    if st.current_replicas:
        out["currentReplicas"] = st.current_replicas
    if st.current_metrics:
        out["currentMetrics"] = list(st.current_metrics)
    if st.conditions:
        out["conditions"] = [condition_dict(c) for c in st.conditions]
    if st.last_scale_time is not None:
        out["lastScaleTime"] = time_text(st.last_scale_time)
    if st.schedules is not None:
        section: dict = {"active": list(st.schedules.active)}
        if st.schedules.next_change is not None:
            section["nextChangeTime"] = time_text(st.schedules.next_change)
        if st.schedules.expired:
            section["expired"] = list(st.schedules.expired)
        out["schedules"] = section
    if st.metric_health is not None:
        out["metricHealth"] = [metric_health_dict(h) for h in st.metric_health]
    if st.saturation is not None:
        out["saturation"] = saturation_status(st.saturation)
    if st.pause is not None:
        out["pause"] = pause_status(st.pause)
    if st.prediction is not None and lead_seconds is not None:
        out["prediction"] = prediction_section(st, lead_seconds, fit)
    return out


def prediction_section(st: HPAStatus, lead_seconds: int, fit: dict | None = None) -> dict:
    """``status.prediction``: ``reason``, ``leadSeconds``, the ``PredictionActive`` message, the figures the core
    decided (rounded up to ``STATUS_DIGITS`` significant digits), and ``fit``'s."""
    ps = st.prediction
    assert ps is not None
    out: dict = {"reason": ps.reason, "leadSeconds": lead_seconds}
    cond = next((c for c in st.conditions if c.type == PREDICTION_ACTIVE), None)
    if cond is not None:
        out["message"] = cond.message
    figures = prediction_figures(ps, significant=STATUS_DIGITS)
    out.update((key, figures[key]) for key in PREDICTION_FIGURES if figures[key] is not None)
    if fit:
        out.update(fit)
    return out


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


def saturation_status(st: SaturationStatus) -> dict:
    """``status.saturation`` of one sync from the core's ``SaturationStatus``: ``reason`` (the
    ``SaturationActive`` reason), ``message``, ``mode``, ``pinned``, ``usagePercentOfLimit`` (the ready pods'
    CPU usage in percent of their CPU limit, when it could be judged), ``readyPods`` and ``replicas`` (what
    the source asked for, when pinned). The usage and the pods are written only while pinned: below the
    limit they change at every sync, and the status is rewritten when its content changes."""
    out: dict = {"reason": st.reason, "message": st.message, "mode": st.mode, "pinned": st.pinned}
    if st.pinned and st.usage_percent is not None:
        out["usagePercentOfLimit"] = st.usage_percent
        out["readyPods"] = st.ready_pods
    if st.replicas is not None:
        out["replicas"] = st.replicas
    return out


def saturation_figures(st: SaturationStatus) -> dict:
    """The figures of one sync's saturation source (``pyhpa explain -o json``'s ``saturation``, before ``applied``
    and ``won``): ``saturation_status`` with ``usagePercentOfLimit`` (None when it could not be judged) and
    ``readyPods`` whether pinned or not."""
    return {**saturation_status(st), "usagePercentOfLimit": st.usage_percent, "readyPods": st.ready_pods}


def pause_status(p: PauseStatus) -> dict:
    """``status.pause`` while paused: ``reason`` (the Paused condition's), ``since`` (RFC 3339: when it was
    paused), ``replicas`` held (paused-replicas or the frozen count; absent when one direction is blocked)."""
    out: dict = {"reason": p.reason}
    if p.since is not None:
        out["since"] = time_text(p.since)
    if p.replicas is not None:
        out["replicas"] = p.replicas
    return out


def metric_health_dict(h: MetricHealth) -> dict:
    """One ``status.metricHealth`` entry: ``metric``, ``numberOfFailures`` (capped by the core,
    ``pyhpa.core.fallback.metric_health``), ``status`` (Happy/Failing), and while failing ``firstFailureTime``,
    and in fallback ``fallbackSince`` and ``fallbackReplicas``."""
    out: dict = {"metric": h.metric, "numberOfFailures": h.number_of_failures, "status": h.status}
    if h.first_failure_time is not None:
        out["firstFailureTime"] = time_text(h.first_failure_time)
    if h.fallback_since is not None:
        out["fallbackSince"] = time_text(h.fallback_since)
    if h.fallback_replicas is not None:
        out["fallbackReplicas"] = h.fallback_replicas
    return out
