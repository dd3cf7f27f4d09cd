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

from collections.abc import Sequence
from dataclasses import dataclass

from .calculator import MetricError, pod_amount
from .model import (
    CONTAINER_RESOURCE,
    LIMIT,
    RESOURCE,
    SCHEDULE_SOURCE,
    UTILIZATION,
    ActiveWindow,
    MetricSpec,
    Pod,
    SourceKind,
    SourceProposal,
    SourceRef,
    Step,
    source_ref,
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
            lo, lo_src = w.min_replicas, source_ref(SCHEDULE_SOURCE, w.name)
        if w.max_replicas is not None and w.max_replicas < hi:
            hi, hi_src = w.max_replicas, source_ref(SCHEDULE_SOURCE, w.name)
    conflict = ""
    if lo > hi and (lo_src is not SPEC_MIN or hi_src is not SPEC_MAX):
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


def recommend(proposals: Sequence[SourceProposal], bounds: Bounds, windows: Sequence[SourceProposal],
              metric_recommendation: int, metric_source: SourceRef) -> tuple[int, SourceRef]:
    """Step 1 of the rule: (recommendation, the source that set it).

    ``metric_recommendation``/``metric_source`` are upstream's result over the metrics (or a given
    recommendation); ``proposals`` are the further replica sources (only applied ones count); ``windows`` the
    Schedule sources of the active windows (``schedule_sources``: floors and caps).
    """
    rec, label = metric_recommendation, metric_source
    for p in proposals:
        if p.applied and p.replicas is not None and p.replicas > rec:
            rec, label = p.replicas, p.ref
    floor = max((w.min_replicas for w in windows if w.min_replicas is not None), default=None)
    if floor is not None and floor > rec:
        rec, label = floor, bounds.min_source
    if windows and bounds.max_source is not SPEC_MAX and rec > bounds.max_replicas:
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


def per_pod_target(spec: MetricSpec, pods: Sequence[Pod]) -> tuple[float | None, str]:
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
