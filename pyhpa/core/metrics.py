"""Per-metric proposals (upstream: computeReplicasForMetric and computeStatusFor*Metric).

Each function returns a ``Proposal``; a metric that cannot be computed carries upstream's
error text and the ScalingActive=False reason (FailedGetResourceMetric, ...).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from . import calculator as calc_mod
from .calculator import MetricError, ReplicaCalculator
from .model import (
    AVERAGE_VALUE,
    CONTAINER_RESOURCE,
    EXTERNAL,
    LIMIT,
    METRIC_SOURCE,
    OBJECT,
    PODS,
    RESOURCE,
    VALUE,
    Event,
    MetricSamples,
    MetricSpec,
    Proposal,
    SourceKind,
    SourceProposal,
)
from .quantity import format_milli, format_milli_binary
from .sources import MetricsOutcome, SourceInputs, Stage, nothing_to_retire

__all__ = ["FAILED_REASON", "UNABLE_PREFIX", "MetricsSource", "compute_proposal", "describe", "metric_index_problem", "raw_text"]


#: upstream getUnableComputeReplicaCountCondition's message prefix; the event carries the rest
UNABLE_PREFIX = "the HPA was unable to compute the replica count: "

FAILED_REASON = {
    RESOURCE: "FailedGetResourceMetric",
    CONTAINER_RESOURCE: "FailedGetContainerResourceMetric",
    PODS: "FailedGetPodsMetric",
    OBJECT: "FailedGetObjectMetric",
    EXTERNAL: "FailedGetExternalMetric",
}


def _fail(spec: MetricSpec, reason: str, inner: str, outer: str) -> Proposal:
    """A failed metric: ``inner`` goes to the condition message, ``outer`` to the error."""
    p = Proposal(metric=describe(spec), spec=spec, error=outer, reason=reason)
    p.note = UNABLE_PREFIX + inner
    return p


def metric_index_problem(index: int, metrics: Sequence[MetricSpec] | None) -> str | None:
    """Why ``index`` (a source section's ``metric`` field, ``spec.<field>.metric``) names no entry of ``metrics``
    (the HPA's ``spec.metrics``), or None; without ``metrics`` only its sign."""
    if not index >= 0:
        return f"must be at least 0, got {index}"
    if metrics is not None and not index < len(metrics):
        n = len(metrics)
        return f"{index} names no entry of spec.metrics ({n} metric{'s' if n != 1 else ''})"
    return None


def describe(spec: MetricSpec) -> str:
    """Upstream's metric name used in messages ("cpu resource utilization (percentage of request)")."""
    t = spec.type
    basis = "limit" if spec.utilization_basis == LIMIT else "request"
    if t == RESOURCE:
        if spec.target_average_milli is None:
            return f"{spec.name} resource utilization (percentage of {basis})"
        return f"{spec.name} resource"
    if t == CONTAINER_RESOURCE:
        if spec.target_average_milli is None:
            return f"{spec.name} container resource utilization (percentage of {basis})"
        return f"{spec.name} resource"
    if t == PODS:
        return f"pods metric {spec.name}"
    if t == OBJECT and spec.target_type == VALUE:
        kind = spec.described_object[0] if spec.described_object else ""
        return f"{kind} metric {spec.name}"
    return f"external metric {spec.name}({_selector(spec)})"


def _selector(spec: MetricSpec) -> str:
    """The metric selector as upstream prints it (``%+v``)."""
    return spec.selector if spec.selector_go is None else spec.selector_go


def raw_text(spec: MetricSpec, raw_milli: int) -> str:
    """The quantity text upstream writes for a metric's current value: BinarySI for a memory Resource or
    ContainerResource metric (upstream buildQuantity, as metrics-server reports memory), DecimalSI otherwise."""
    if spec.name == "memory" and spec.type in (RESOURCE, CONTAINER_RESOURCE):
        return format_milli_binary(raw_milli)
    return format_milli(raw_milli)


def _value_status(spec: MetricSpec, current: dict) -> dict:
    t = spec.type
    if t == RESOURCE:
        return {"type": t, "resource": {"name": spec.name, "current": current}}
    if t == CONTAINER_RESOURCE:
        return {"type": t, "containerResource": {"name": spec.name, "container": spec.container, "current": current}}
    metric: dict = {"name": spec.name}
    if spec.selector_json is not None:  # upstream copies the spec's metric identifier whole, its selector too
        metric["selector"] = json.loads(spec.selector_json)
    if t == PODS:
        return {"type": t, "pods": {"metric": metric, "current": current}}
    if t == OBJECT:
        kind, name = spec.described_object or ("", "")
        described = {"kind": kind, "name": name}
        if spec.described_api_version:
            described["apiVersion"] = spec.described_api_version
        return {"type": t, "object": {"describedObject": described, "metric": metric, "current": current}}
    return {"type": t, "external": {"metric": metric, "current": current}}


def resource_proposal(calc: ReplicaCalculator, spec: MetricSpec, samples: MetricSamples) -> Proposal:
    """Resource and ContainerResource metrics (computeStatusForResourceMetricGeneric)."""
    container = spec.container if spec.type == CONTAINER_RESOURCE else ""
    reason = FAILED_REASON[spec.type]
    outer_prefix = (
        f"failed to get {spec.container} container metric value: "
        if spec.type == CONTAINER_RESOURCE
        else f"failed to get {spec.name} resource metric value: "
    )
    # upstream computeStatusForResourceMetricGeneric: an averageValue wins whatever the declared type
    by_value = spec.target_average_milli is not None
    if not by_value and spec.target_utilization is None:
        inner = "invalid resource metric source: neither an average utilization target nor an average value (usage) target was set"
        return _fail(spec, reason, inner, outer_prefix + inner)
    what = "usage" if by_value else "utilization"
    try:
        if samples.error is not None:
            raise MetricError(f"unable to get metrics for resource {spec.name}: {samples.error}")
        calc.samples = samples.pods or {}
        if by_value:
            replicas, raw, ratio, new_ratio, filled = calc_mod.plain_replicas(
                calc, spec.target_average_milli, spec.name == "cpu"
            )
            utilization = None
        else:
            replicas, utilization, raw, ratio, new_ratio, filled = calc_mod.resource_utilization_replicas(
                calc, spec.name, container, spec.target_utilization, spec.utilization_basis == LIMIT
            )
    except MetricError as err:
        inner = f"failed to get {spec.name} {what}: {err}"
        p = _fail(spec, reason, inner, outer_prefix + inner)
        p.groups = calc.groups
        return p
    current = {"averageValue": raw_text(spec, raw)}
    if utilization is not None:
        current = {"averageUtilization": utilization, "averageValue": current["averageValue"]}
    return Proposal(
        metric=describe(spec), spec=spec, replicas=replicas, utilization=utilization, raw_milli=raw,
        ratio=ratio, new_ratio=new_ratio, band=(1.0 - calc.down, 1.0 + calc.up), groups=calc.groups,
        filled=filled, status=_value_status(spec, current),
    )


def pods_proposal(calc: ReplicaCalculator, spec: MetricSpec, samples: MetricSamples) -> Proposal:
    """Pods metrics: per-pod average against an AverageValue target (computeStatusForPodsMetric)."""
    reason = FAILED_REASON[PODS]
    try:
        if samples.error is not None:
            raise MetricError(f"unable to get metric {spec.name}: {samples.error}")
        if spec.target_average_milli is None:
            raise MetricError("invalid pods metric source: no average value target was set")
        calc.samples = samples.pods or {}
        replicas, raw, ratio, new_ratio, filled = calc_mod.plain_replicas(calc, spec.target_average_milli, False)
    except MetricError as err:
        p = _fail(spec, reason, str(err), f"failed to get pods metric value: {err}")
        p.groups = calc.groups
        return p
    return Proposal(
        metric=describe(spec), spec=spec, replicas=replicas, raw_milli=raw, ratio=ratio, new_ratio=new_ratio,
        band=(1.0 - calc.down, 1.0 + calc.up), groups=calc.groups, filled=filled,
        status=_value_status(spec, {"averageValue": format_milli(raw)}),
    )


def object_proposal(calc: ReplicaCalculator, spec: MetricSpec, samples: MetricSamples, status_replicas: int) -> Proposal:
    """Object metrics: Value against the object, or AverageValue per replica (computeStatusForObjectMetric)."""
    reason = FAILED_REASON[OBJECT]
    outer = "failed to get object metric value: "
    kind, name = spec.described_object or ("", "")
    band = (1.0 - calc.down, 1.0 + calc.up)
    use_value = spec.target_type == VALUE and spec.target_value_milli is not None
    use_avg = spec.target_type == AVERAGE_VALUE and spec.target_average_milli is not None
    if not (use_value or use_avg):
        inner = "invalid object metric source: neither a value target nor an average value target was set"
        return _fail(spec, reason, inner, outer + inner)
    if samples.error is not None or not samples.values:
        err = samples.error or "no metric value returned"
        inner = f"unable to get metric {spec.name} on {kind} {calc.namespace}/{name}: {err}"
        return _fail(spec, reason, inner, outer + (inner if use_value else f"failed to get {spec.name} object metric: {inner}"))
    usage = samples.values[0]
    if use_value:
        ratio = calc_mod.fdiv(float(usage), float(spec.target_value_milli))
        try:
            replicas = calc_mod.usage_ratio_replicas(calc, ratio)
        except MetricError as err:
            return _fail(spec, reason, str(err), outer + str(err))
        current = {"value": format_milli(usage)}
        raw = usage
    else:
        replicas, raw, ratio = calc_mod.per_pod_replicas(calc, usage, spec.target_average_milli, status_replicas)
        current = {"averageValue": format_milli(raw)}
    return Proposal(
        metric=describe(spec), spec=spec, replicas=replicas, raw_milli=raw, ratio=ratio, band=band,
        status=_value_status(spec, current),
    )


def external_proposal(calc: ReplicaCalculator, spec: MetricSpec, samples: MetricSamples, status_replicas: int) -> Proposal:
    """External metrics: summed series, Value or AverageValue per replica (computeStatusForExternalMetric)."""
    reason = FAILED_REASON[EXTERNAL]
    outer = f"failed to get {spec.name} external metric value: "
    band = (1.0 - calc.down, 1.0 + calc.up)
    use_avg = spec.target_average_milli is not None
    if not use_avg and spec.target_value_milli is None:
        inner = "invalid external metric source: neither a value target nor an average value target was set"
        return _fail(spec, reason, inner, outer + inner)
    # upstream's wrapping differs by target: "failed to get X external metric" (AverageValue),
    # "failed to get external metric X" (Value)
    wrap = f"failed to get {spec.name} external metric: " if use_avg else f"failed to get external metric {spec.name}: "
    if samples.error is not None:
        inner = f"unable to get external metric {calc.namespace}/{spec.name}/{_selector(spec)}: {samples.error}"
        return _fail(spec, reason, inner, outer + wrap + inner)
    if use_avg:
        usage = calc_mod.sum_values_per_pod(samples)
        replicas, raw, ratio = calc_mod.per_pod_replicas(
            calc, usage, spec.target_average_milli, status_replicas, external=True)
        current = {"averageValue": format_milli(raw)}
    else:
        usage = calc_mod.sum_values(samples)
        ratio = calc_mod.fdiv(float(usage), float(spec.target_value_milli))
        try:
            replicas = calc_mod.usage_ratio_replicas(calc, ratio)
        except MetricError as err:
            inner = str(err)
            return _fail(spec, reason, inner, outer + wrap + inner)
        raw = usage
        current = {"value": format_milli(usage)}
    return Proposal(
        metric=describe(spec), spec=spec, replicas=replicas, raw_milli=raw, ratio=ratio, band=band,
        status=_value_status(spec, current),
    )


def compute_proposal(calc: ReplicaCalculator, spec: MetricSpec, samples: MetricSamples, status_replicas: int) -> Proposal:
    """Dispatch on the metric source type; an unknown type gives InvalidMetricSourceType."""
    calc.groups = None
    t = spec.type
    if t in (RESOURCE, CONTAINER_RESOURCE):
        return resource_proposal(calc, spec, samples)
    if t == PODS:
        return pods_proposal(calc, spec, samples)
    if t == OBJECT:
        return object_proposal(calc, spec, samples, status_replicas)
    if t == EXTERNAL:
        return external_proposal(calc, spec, samples, status_replicas)
    err = f'unknown metric source type "{t}"'
    p = Proposal(metric=f"{t} metric", spec=spec, error=err, reason="InvalidMetricSourceType")
    p.note = UNABLE_PREFIX + err
    return p


_NO_SAMPLES = MetricSamples()


class MetricsSource:
    """The Metric source (``spec.metrics``): each metric's proposal as upstream computes it
    (computeReplicasForMetric, ``compute_proposal``) for the pods the HPA selected, a Warning event for each metric
    that cannot be computed (its ``FailedGet*Metric`` reason). Upstream's rule over them (the largest; invalid
    metrics stop the sync) is the combination's (``pyhpa.core.reconcile``), after the fallback."""

    kind = SourceKind.METRIC
    stage = Stage.METRICS

    def enabled(self, inputs: SourceInputs) -> bool:
        return True

    retired = nothing_to_retire

    def evaluate(self, inputs: SourceInputs) -> MetricsOutcome:
        hpa, samples = inputs.hpa, inputs.samples
        down, up = inputs.tolerances
        calc = ReplicaCalculator(inputs.pods, {}, inputs.current, down, up, inputs.now, inputs.config, hpa.namespace)
        status_replicas = inputs.status_replicas
        metrics, sources, events = [], [], []
        for i, spec in enumerate(hpa.metrics):
            p = compute_proposal(calc, spec, samples[i] if i < len(samples) else _NO_SAMPLES, status_replicas)
            metrics.append(p)
            sources.append(SourceProposal(source=METRIC_SOURCE, name=p.metric, replicas=p.replicas, error=p.error))
            if p.error is not None:
                events.append(Event("Warning", p.reason, p.note.removeprefix(UNABLE_PREFIX)))
        return MetricsOutcome(proposals=tuple(sources), events=tuple(events), metrics=metrics)
