"""The one rule that combines every source of a decision.

Sources (each a ``SourceProposal`` in ``Decision.sources``):

- **Metric** — each ``spec.metrics[]`` item, exactly as upstream computes it
  (computeReplicasForMetrics); upstream's rule for invalid metrics still applies first.
- **Fallback** — a metric that has failed past its fallback's threshold (``spec.fallback``,
  ``spec.metrics[].fallback``; ``pyhpa.core.fallback``): its fallback replicas are *its* proposal in
  upstream's maximum over the metrics, and it is not an invalid metric for upstream's rule; so a
  healthy metric that wants more wins, and a fallback never scales below a healthy metric.
- **Prediction** — ``spec.prediction``: the forecast of the metric's workload total over the lead
  window, provisioned for up to its quantile (``provisioned_total``: for a Utilization target
  the band above the central forecast counts in proportion to how much of the target's own
  headroom it would use), turned into replicas as upstream turns a metric value into replicas for
  that target (total / per-pod target, ``ceil``, tolerance around the current count).
- **Saturation** — ``spec.saturation``: while the ready pods use their whole CPU limit their utilization
  is a lower bound of the demand; the source assumes ``demandFactor`` times their usage and sizes it at
  the metric's target, never below the current replicas (``pyhpa.core.saturation``).
- **Schedule** — each active ``spec.schedules[]`` window: a floor (``minReplicas``) and/or a cap
  (``maxReplicas``).

The rule, in this order:

1. the **recommendation** is the largest replica proposal (metrics and fallbacks, an applied prediction or
   saturation) — as upstream takes the largest over metrics — raised to the highest active floor, then lowered to
   the lowest active cap; where a floor exceeds a cap, the floor wins (availability over cost);
2. the **effective bounds** are ``max(spec.minReplicas, floors)`` and ``min(spec.maxReplicas,
   caps)`` (again the floor wins a conflict);
3. upstream normalization then runs on the recommendation with the effective bounds in place of
   ``minReplicas``/``maxReplicas`` (stabilization, policies or the scale-up limit, bounds, with
   and without ``behavior``), so a floor raises replicas at its window's start, a cap lowers
   them at its start, and because the floor was the recommendation while it was active (also at
   a sync that moved the replicas to a window's bound without evaluating metrics, as upstream
   does outside its bounds: the bound is recorded as that sync's recommendation), the scale-down
   after a window ends waits out the stabilization window and the policies.

Without schedules, prediction, saturation and fallback every step is upstream's, bit for bit.
``decided_by`` names the source that set the final number (see ``decided_by``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .calculator import MetricError, ceil_replicas, ceil_saturate, pod_amount, within
from .model import (
    CONTAINER_RESOURCE,
    ENFORCE,
    HISTORY_UNAVAILABLE,
    LIMIT,
    MAX_INT32,
    NOT_PREDICTABLE,
    PREDICTION_SOURCE,
    RESOURCE,
    SCHEDULE_SOURCE,
    UTILIZATION,
    SourceKind,
    SourceRef,
    VALUE,
    ActiveWindow,
    Forecast,
    HPA,
    MetricSpec,
    Pod,
    SourceProposal,
    Step,
)

SPEC_MIN = SourceRef(SourceKind.SPEC, "minReplicas")
SPEC_MAX = SourceRef(SourceKind.SPEC, "maxReplicas")


@dataclass(slots=True, frozen=True, kw_only=True)
class Bounds:
    """Effective ``minReplicas``/``maxReplicas`` and who set each (``SPEC_MIN``/``SPEC_MAX`` or a ``Schedule``).

    ``conflict`` explains a floor that overrode a cap ("" when none did).
    """

    min_replicas: int
    max_replicas: int
    min_source: SourceRef = SPEC_MIN
    max_source: SourceRef = SPEC_MAX
    conflict: str = ""


def effective_bounds(min_replicas: int, max_replicas: int, active: Sequence[ActiveWindow]) -> Bounds:
    """``max(spec.minReplicas, floors)``, ``min(spec.maxReplicas, caps)``; a floor above the cap wins."""
    lo, lo_src, hi, hi_src = min_replicas, SPEC_MIN, max_replicas, SPEC_MAX
    for w in active:
        if w.min_replicas is not None and w.min_replicas > lo:
            lo, lo_src = w.min_replicas, SourceRef(SCHEDULE_SOURCE, w.name)
        if w.max_replicas is not None and w.max_replicas < hi:
            hi, hi_src = w.max_replicas, SourceRef(SCHEDULE_SOURCE, w.name)
    conflict = ""
    if lo > hi and (lo_src != SPEC_MIN or hi_src != SPEC_MAX):
        conflict = f"floor {lo} ({lo_src}) is above cap {hi} ({hi_src}): the floor wins"
        hi, hi_src = lo, lo_src
    return Bounds(min_replicas=lo, max_replicas=hi, min_source=lo_src, max_source=hi_src, conflict=conflict)


def schedule_sources(active: Sequence[ActiveWindow], bounds: Bounds) -> tuple[SourceProposal, ...]:
    """One Schedule source per active window (a note when its cap lost to a floor)."""
    out = []
    for w in active:
        note = ""
        if bounds.conflict and w.max_replicas is not None and w.max_replicas < bounds.max_replicas:
            note = f"cap {w.max_replicas} overridden: {bounds.conflict}"
        out.append(SourceProposal(source=SCHEDULE_SOURCE, name=w.name, min_replicas=w.min_replicas,
                                  max_replicas=w.max_replicas, note=note))
    return tuple(out)


def recommend(proposals: Sequence[SourceProposal], bounds: Bounds, active: Sequence[ActiveWindow],
              metric_recommendation: int, metric_source: SourceRef) -> tuple[int, SourceRef]:
    """Step 1 of the rule: (recommendation, the source that set it).

    ``metric_recommendation``/``metric_source`` are upstream's result over the metrics;
    ``proposals`` are the further replica sources (only applied ones count).
    """
    rec, label = metric_recommendation, metric_source
    for p in proposals:
        if p.applied and p.replicas is not None and p.replicas > rec:
            rec, label = p.replicas, p.ref
    floor = max((w.min_replicas for w in active if w.min_replicas is not None), default=None)
    if floor is not None and floor > rec:
        rec, label = floor, bounds.min_source
    if active and bounds.max_source != SPEC_MAX and rec > bounds.max_replicas:
        rec, label = bounds.max_replicas, bounds.max_source
    return rec, label


_LIMIT_SOURCE = {
    "ScaleUpLimit": SourceRef(SourceKind.POLICY, "scaleUp"),
    "ScaleDownLimit": SourceRef(SourceKind.POLICY, "scaleDown"),
}
_SCALE_UP_LIMIT = SourceRef(SourceKind.POLICY, "scaleUpLimit")
_DOWNSCALE = SourceRef(SourceKind.STABILIZATION, "downscale")
_STABILIZED_DOWN = SourceRef(SourceKind.STABILIZATION, "scaleDown")
_STABILIZED_UP = SourceRef(SourceKind.STABILIZATION, "scaleUp")


def decided_by(winner: SourceRef, steps: Sequence[Step], bounds: Bounds, with_behavior: bool) -> SourceRef:
    """The source that set the final number: the last normalization step that changed it
    (stabilization, a rate policy, a bound), else the winning recommendation."""
    if not steps:
        return winner
    last = steps[-1]
    if last.reason == "TooFewReplicas":
        return bounds.min_source
    if last.reason == "TooManyReplicas":
        return bounds.max_source
    if last.reason in _LIMIT_SOURCE:
        if not with_behavior and last.reason == "ScaleUpLimit":
            return _SCALE_UP_LIMIT
        return _LIMIT_SOURCE[last.reason]
    if last.stage == "stabilization":
        if not with_behavior:
            return _DOWNSCALE
        return _STABILIZED_DOWN if last.after > last.before else _STABILIZED_UP
    return winner


def _per_pod_target(spec: MetricSpec, pods: Sequence[Pod]) -> tuple[float | None, str]:
    """Milli-units one pod may carry at the target, or (None, why).

    A Utilization target is a percentage of the mean request (or limit, ``utilizationBasis: Limit``) of
    the pods that are neither deleted nor failed, each read as the replica calculator reads it
    (``pod_amount``: pod-level values when set, else the containers'; a missing one is upstream's error).
    """
    if spec.target_type == UTILIZATION and spec.type in (RESOURCE, CONTAINER_RESOURCE):
        container = spec.container if spec.type == CONTAINER_RESOURCE else ""
        limits = spec.utilization_basis == LIMIT
        key = (spec.name, container)
        total, count = 0, 0
        for p in pods:
            if p.deleted or p.phase == "Failed":
                continue
            value = (p.limits if limits else p.requests).get(key)  # pod_amount's fast path, inline: every sync
            if value is None:
                try:
                    value = pod_amount(p, spec.name, container, limits=limits)
                except MetricError as err:
                    return None, str(err)
            total += value
            count += 1
        if count == 0 or total <= 0 or not spec.target_utilization:
            return None, f"no pods with {'limits' if limits else 'requests'} to size the forecast against"
        return total / count * spec.target_utilization / 100.0, ""
    if spec.target_average_milli:
        return float(spec.target_average_milli), ""
    return None, ""


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
        per_pod, why = _per_pod_target(m, pods)
        if per_pod is None or per_pod <= 0:
            why = why or "the metric's target cannot size a forecast"
            return SourceProposal(source=PREDICTION_SOURCE, name=metric_name, applied=False,
                                  error=NOT_PREDICTABLE, note=why), total
        ratio = total / (per_pod * current) if current > 0 else math.inf
        replicas = current if within(ratio, tolerance_down, tolerance_up) else ceil_saturate(total / per_pod, MAX_INT32)
    note = "" if applied else "Observe mode: computed and reported, never applied"
    return SourceProposal(source=PREDICTION_SOURCE, name=metric_name, replicas=max(replicas, 0),
                          applied=applied, note=note), total

