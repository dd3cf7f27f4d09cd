"""The replica calculator: one metric's replica proposal.

Follows upstream's ReplicaCalculator (pkg/controller/podautoscaler/replica_calculator.go)
as documented in "Horizontal Pod Autoscaling" (algorithm details): pods are grouped into
ready, unready (pending, not ready, CPU still initializing), missing (no sample) and
ignored (deleted or failed); the usage ratio of the ready pods decides unless missing or
unready pods must be filled in, in which case the ratio is recomputed conservatively and
the proposal never changes direction. Arithmetic is upstream's: integer milli-values,
utilization truncated to an integer percent before the ratio, ``ceil`` of float64,
replica counts saturating at 2^31-1 and sums at 2^63-1.
"""

from __future__ import annotations

import math

from .model import (
    MAX_INT32,
    MAX_INT64,
    ControllerConfig,
    MetricSamples,
    Pod,
    PodGroups,
    PodSample,
)

__all__ = [
    "MetricError", "ReplicaCalculator", "ceil_int32", "ceil_replicas", "ceil_saturate", "fdiv", "go_int32", "go_int64",
    "group_pods", "wrap_int32",
    "per_pod_replicas", "plain_replicas", "pod_amount", "pod_requests", "ready_pod_count",
    "resource_utilization_replicas", "saturate_int32", "sum_values", "sum_values_per_pod", "trunc_div",
    "usage_ratio", "usage_ratio_replicas", "utilization_ratio", "within", "wrap_int64",
]


class MetricError(Exception):
    """A metric could not be computed; the message is upstream's error text."""


MIN_INT32 = -MAX_INT32 - 1


def go_int32(x: float) -> int:
    """Go's ``int32(x)`` of a float64: truncation toward zero. For x out of int32's range or NaN Go's result is
    platform-defined (amd64, which kube-controller-manager runs on almost everywhere: -2^31; arm64: the nearest
    bound, NaN 0): pyhpa saturates as arm64 does (docs/exactness.md). Every float-to-int32 conversion of the
    decision (replica proposals, scale-up limits, percent policies) goes through here."""
    if x != x:
        return 0
    if x >= 2147483648.0:
        return MAX_INT32
    if x <= -2147483649.0:
        return MIN_INT32
    return int(x)


def wrap_int32(x: int) -> int:
    """Go int32 arithmetic (and an integer's conversion to int32): wrap into [-2^31, 2^31)."""
    return ((x + 2**31) % 2**32) - 2**31


def saturate_int32(x: float | int) -> int:
    """``int32(x)`` for an integral value that upstream clamps into int32."""
    if x >= MAX_INT32:
        return MAX_INT32
    if x <= -MAX_INT32 - 1:
        return -MAX_INT32 - 1
    return int(x)


def within(ratio: float, down: float, up: float) -> bool:
    """Upstream Tolerances.isWithin: ``1-down <= ratio <= 1+up`` in float64."""
    return (1.0 - down) <= ratio <= (1.0 + up)


def ceil_replicas(ratio: float, count: int) -> int:
    """``int32(math.Ceil(ratio * float64(count)))`` (``go_int32``)."""
    return ceil_int32(ratio * float(count))


def ceil_int32(x: float) -> int:
    """``int32(math.Ceil(x))`` (``go_int32``)."""
    return go_int32(math.ceil(x) if math.isfinite(x) else x)


def group_pods(
    pods: list[Pod],
    samples: dict[str, PodSample],
    is_cpu: bool,
    now: float,
    config: ControllerConfig,
) -> PodGroups:
    """Sort pods into ready / unready / missing / ignored (upstream: groupPods).

    Deleted or Failed pods are ignored; Pending pods are unready; pods without a sample
    are missing. For CPU only: a pod without a Ready condition or start time is unready;
    within ``cpu_initialization_period_seconds`` of its start a pod is unready if it is not
    Ready or its sample does not cover a full window since the Ready transition; after it,
    a pod is unready only if it is not Ready and has never been ready (the transition came
    within ``initial_readiness_delay_seconds`` of start).
    """
    groups = PodGroups()
    init_period = config.cpu_initialization_period_seconds
    delay = config.initial_readiness_delay_seconds
    ignored, unready, missing, why = groups.ignored, groups.unready, groups.missing, groups.unready_why
    get = samples.get
    ready = 0
    for pod in pods:
        phase = pod.phase
        if pod.deleted or phase == "Failed":
            ignored.append(pod.name)
            continue
        if phase == "Pending":
            unready.append(pod.name)
            why[pod.name] = "Pending"
            continue
        sample = get(pod.name)
        if sample is None:
            missing.append(pod.name)
            continue
        if is_cpu:
            start = pod.start_time
            # fast path: Ready and past the initialization period is always counted
            if not (pod.ready is True and start is not None and not start + init_period > now):
                reason = _cpu_unready(pod, sample, now, init_period, delay)
                if reason:
                    unready.append(pod.name)
                    why[pod.name] = reason
                    continue
        ready += 1
    groups.ready = ready
    return groups


def _cpu_unready(pod: Pod, sample: PodSample, now: float, init_period: float, delay: float) -> str:
    """Why a running pod's CPU sample is not trusted, or "" when it is.

    Only a Ready condition whose status is ``False`` makes a pod unready (upstream compares
    with ``ConditionFalse``): ``Unknown`` counts like ``True`` here.
    """
    if pod.ready is None or pod.start_time is None:
        return "no Ready condition or start time"
    ready_false = pod.ready is False and not pod.ready_unknown
    if pod.start_time + init_period > now:
        if ready_false:
            return "not Ready during the CPU initialization period"
        if sample.timestamp < pod.ready_transition_time + sample.window:
            return "sample older than one window after becoming Ready (CPU initialization period)"
        return ""
    if ready_false and pod.start_time + delay > pod.ready_transition_time:
        return "not Ready and never ready since start (initial readiness delay)"
    return ""


def pod_amount(pod: Pod, resource: str, container: str, limits: bool = False, pod_level: bool = True) -> int:
    """One pod's request (or limit) of ``resource`` in milli-units, the denominator of utilization.

    Upstream calculateRequests: with ``container`` empty, the pod-level value when pod-level
    requests are set and ``pod_level`` (the PodLevelResources gate, on by default since v1.34), else the sum
    over the regular and restartable init containers; with ``container`` named, that container's.
    Raises MetricError with upstream's text: "missing request for <r> in container <c> of Pod
    <p>", "missing pod-level request for <r> in Pod <p>", "container <c> not found in Pod <p>".
    Limits (``utilizationBasis: Limit``) follow the same rules with "limit" in the messages.
    """
    if not pod_level and not container and (pod.pod_level_limits if limits else pod.pod_level_requests):
        return _containers_sum(pod, resource, limits)
    value = (pod.limits if limits else pod.requests).get((resource, container))
    if value is not None:
        return value
    return _amount_missing(pod, resource, container, limits)


def _containers_sum(pod: Pod, resource: str, limits: bool) -> int:
    """The containers' sum of a pod that sets pod-level amounts, with the PodLevelResources gate off
    (upstream calculatePodRequestsFromContainers): int64 arithmetic; a container without the resource fails."""
    amounts = pod.limits if limits else pod.requests
    total = 0
    for c in pod.containers:
        value = amounts.get((resource, c))
        if value is None:
            raise MetricError(f"missing {'limit' if limits else 'request'} for {resource} in container {c} of Pod {pod.name}")
        total = wrap_int64(total + value)
    return total


def _amount_missing(pod: Pod, resource: str, container: str, limits: bool) -> int:
    """The slow path of ``pod_amount``: upstream's error, or 0 where upstream finds nothing to add."""
    amounts = pod.limits if limits else pod.requests
    what = "limit" if limits else "request"
    name = pod.name
    if not pod.containers:  # no container information: the older hand-built form
        if limits:
            raise MetricError(f"missing {what} for {resource} in Pod {name}")
        cname = pod.missing_request.get((resource, container))
        if cname is None and not container:
            cname = pod.missing_request.get(("*", ""))
        if cname is None:
            return 0
        raise MetricError(f"missing {what} for {resource} in container {cname} of Pod {name}")
    if container:
        if container in pod.containers:
            raise MetricError(f"missing {what} for {resource} in container {container} of Pod {name}")
        raise MetricError(f"container {container} not found in Pod {name}")
    if pod.pod_level_limits if limits else pod.pod_level_requests:
        raise MetricError(f"missing pod-level {what} for {resource} in Pod {name}")
    for c in pod.containers:
        if amounts.get((resource, c)) is None:
            raise MetricError(f"missing {what} for {resource} in container {c} of Pod {name}")
    return 0  # pragma: no cover - the adapter writes the sum whenever every container has the resource


def pod_requests(pods: list[Pod], resource: str, container: str, limits: bool = False,
                 pod_level: bool = True) -> dict[str, int]:
    """Request (or limit) per pod in milli-units for every pod (upstream: calculateRequests); ``pod_level``:
    the PodLevelResources gate.

    Raises MetricError for the first pod upstream would refuse (see ``pod_amount``).
    """
    out: dict[str, int] = {}
    key = (resource, container)
    for pod in pods:
        if not pod_level and not container and (pod.pod_level_limits if limits else pod.pod_level_requests):
            out[pod.name] = _containers_sum(pod, resource, limits)
            continue
        value = (pod.limits if limits else pod.requests).get(key)
        out[pod.name] = value if value is not None else _amount_missing(pod, resource, container, limits)
    return out


def trunc_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def fdiv(a: float, b: float) -> float:
    """Go float64 division: x/0 is +-Inf, 0/0 is NaN (Python would raise)."""
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        return math.inf if a > 0 else -math.inf
    return a / b


def utilization_ratio(values: dict[str, int], requests: dict[str, int], target: int) -> tuple[float, int, int]:
    """(ratio, utilization %, average raw milli) over pods with a request (GetResourceUtilizationRatio)."""
    total = 0
    req_total = 0
    n = 0
    for name, value in values.items():
        req = requests.get(name)
        if req is None:
            continue
        total += value
        req_total += req
        n += 1
    total, req_total = wrap_int64(total), wrap_int64(req_total)  # int64 sums, as upstream adds them
    if req_total == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = wrap_int32(trunc_div(wrap_int64(total * 100), req_total))  # int32(int64 / int64)
    return fdiv(float(utilization), float(target)), utilization, trunc_div(total, n)


def usage_ratio(values: dict[str, int], target: int) -> tuple[float, int]:
    """(ratio, average milli) of plain per-pod values (GetMetricUsageRatio)."""
    total = 0
    for value in values.values():
        total += value
    avg = trunc_div(wrap_int64(total), len(values))  # an int64 sum, as upstream adds it
    return fdiv(float(avg), float(target)), avg


class ReplicaCalculator:
    """The inputs one sync's metric computations share (upstream's ReplicaCalculator): the selected
    ``pods``, the metric's per-pod ``samples``, ``current`` replicas, the (``down``, ``up``)
    tolerances, ``now`` (epoch s), the controller ``config`` and the HPA's ``namespace``; ``groups``
    holds the last pod grouping (for ``explain``)."""

    __slots__ = ("pods", "samples", "current", "down", "up", "now", "config", "groups", "namespace")

    def __init__(self, pods, samples, current, down, up, now, config, namespace=""):
        self.namespace = namespace
        self.pods = pods
        self.samples = samples
        self.current = current
        self.down = down
        self.up = up
        self.now = now
        self.config = config
        self.groups: PodGroups | None = None

    def grouped_values(self, is_cpu: bool) -> dict[str, int]:
        """Group pods and return the values of the pods that count (ready, sampled)."""
        if not self.pods:
            raise MetricError("no pods returned by selector while calculating replica count")
        groups = group_pods(self.pods, self.samples, is_cpu, self.now, self.config)
        self.groups = groups
        values = {n: s.value for n, s in self.samples.items()}
        for name in groups.ignored:
            values.pop(name, None)
        for name in groups.unready:
            values.pop(name, None)
        if not values:
            raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
        return values

    def finish(self, ratio: float, values: dict[str, int], fill_missing, recompute):
        """Fill-in and direction guard shared by resource and plain per-pod metrics.

        Returns (replicas, new ratio or None, filled values or None). ``fill_missing``
        sets the assumed value of missing pods in ``values`` for this ratio and returns
        them; ``recompute`` gives the ratio of ``values``.
        """
        groups = self.groups
        scale_up_unready = bool(groups.unready) and ratio > 1.0
        if not scale_up_unready and not groups.missing:
            if within(ratio, self.down, self.up):
                return self.current, None, None
            return ceil_replicas(ratio, groups.ready), None, None
        filled = fill_missing(ratio, values) if groups.missing else {}
        if scale_up_unready:
            for name in groups.unready:
                values[name] = filled[name] = 0
        new_ratio = recompute(values)
        if (
            within(new_ratio, self.down, self.up)
            or (ratio > 1.0 and new_ratio < 1.0)
            or (ratio < 1.0 and new_ratio > 1.0)
        ):
            return self.current, new_ratio, filled
        replicas = ceil_replicas(new_ratio, len(values))
        if (new_ratio < 1.0 and replicas > self.current) or (new_ratio > 1.0 and replicas < self.current):
            return self.current, new_ratio, filled
        return replicas, new_ratio, filled


def resource_utilization_replicas(calc: ReplicaCalculator, resource: str, container: str, target: int,
                                  limits: bool = False):
    """Utilization target: (replicas, utilization %, raw avg milli, ratio, new ratio, filled).

    Upstream: GetResourceReplicas. Missing pods count as 0 % on scale-up and as
    ``max(100, target)`` % of their request on scale-down; unready pods count as 0 % on
    scale-up. With ``limits`` (``utilizationBasis: Limit``) the denominator is the pods'
    limits instead, by the same rules. Raises MetricError.
    """
    values = calc.grouped_values(resource == "cpu")
    requests = pod_requests(calc.pods, resource, container, limits, calc.config.pod_level_resources)
    ratio, utilization, raw = utilization_ratio(values, requests, target)

    def fill_missing(r: float, vals: dict[str, int]) -> dict[str, int]:
        filled: dict[str, int] = {}
        if r < 1.0:
            fallback = max(100, target)
            for name in calc.groups.missing:
                vals[name] = filled[name] = trunc_div(wrap_int64(requests.get(name, 0) * fallback), 100)
        elif r > 1.0:
            for name in calc.groups.missing:
                vals[name] = filled[name] = 0
        return filled

    def recompute(vals: dict[str, int]) -> float:
        return utilization_ratio(vals, requests, target)[0]

    replicas, new_ratio, filled = calc.finish(ratio, values, fill_missing, recompute)
    return replicas, utilization, raw, ratio, new_ratio, filled


def plain_replicas(calc: ReplicaCalculator, target_milli: int, is_cpu: bool):
    """Per-pod average target: (replicas, avg milli, ratio, new ratio, filled).

    Upstream: calcPlainMetricReplicas (Pods metrics and Resource AverageValue). Missing
    pods count as exactly the target on scale-down and as 0 on scale-up. Raises MetricError.
    """
    values = calc.grouped_values(is_cpu)
    ratio, usage = usage_ratio(values, target_milli)

    def fill_missing(r: float, vals: dict[str, int]) -> dict[str, int]:
        filled: dict[str, int] = {}
        if r == 1.0:
            return filled
        value = target_milli if r < 1.0 else 0
        for name in calc.groups.missing:
            vals[name] = filled[name] = value
        return filled

    def recompute(vals: dict[str, int]) -> float:
        return usage_ratio(vals, target_milli)[0]

    replicas, new_ratio, filled = calc.finish(ratio, values, fill_missing, recompute)
    return replicas, usage, ratio, new_ratio, filled


def ready_pod_count(pods: list[Pod]) -> int:
    """Running pods whose Ready condition is True (getReadyPodsCount)."""
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    return sum(1 for p in pods if p.phase == "Running" and p.ready is True)


def usage_ratio_replicas(calc: ReplicaCalculator, ratio: float) -> int:
    """Replicas for a whole-object ratio (getUsageRatioReplicaCount).

    At 0 current replicas (scale from zero) tolerance is ignored: ``ceil(ratio)``.
    """
    if calc.current != 0:
        if within(ratio, calc.down, calc.up):
            return calc.current
        try:
            ready = ready_pod_count(calc.pods)
        except MetricError as err:
            raise MetricError(f"unable to calculate ready pods: {err}") from None
        x = ratio * float(ready)
        return MAX_INT32 if x > MAX_INT32 else ceil_int32(x)  # upstream caps this one
    return ceil_int32(ratio)


def per_pod_replicas(calc: ReplicaCalculator, usage: int, target_milli: int, status_replicas: int,
                     external: bool = False) -> tuple[int, int, float]:
    """AverageValue over the whole object: (replicas, usage per replica, ratio).

    Upstream: GetObjectPerPodMetricReplicas / GetExternalPerPodMetricReplicas; the ratio
    is against ``target * status.replicas``. The usage per replica is
    ``int64(ceil(usage / status.replicas))`` as Go computes it on amd64 (``go_int64``): with
    ``status.replicas`` 0 that is -2^63 (upstream issue #140956); for External a usage that
    saturated at 2^63-1 is reported as is.
    """
    replicas = status_replicas
    ratio = fdiv(float(usage), float(target_milli) * float(status_replicas))
    if not within(ratio, calc.down, calc.up):
        x = fdiv(float(usage), float(target_milli))
        x = math.ceil(x) if math.isfinite(x) else x
        replicas = MAX_INT32 if external and x > MAX_INT32 else go_int32(x)  # External: capped
    if external and float(usage) >= float(MAX_INT64):
        return replicas, MAX_INT64, ratio
    per_replica = fdiv(float(usage), float(status_replicas))
    return replicas, go_int64(math.ceil(per_replica) if math.isfinite(per_replica) else per_replica), ratio


def go_int64(x: float) -> int:
    """Go's ``int64(x)`` for a float64 on amd64 (linux/amd64, the platform kube-controller-manager
    ships for most): out of range or NaN gives -2^63 (CVTTSD2SQ's "integer indefinite").

    Only the reported per-replica averages use this; replica counts (int32) saturate at
    the int32 bounds instead (``ceil_replicas``), which is what arm64 computes; amd64 gives
    -2^31 there. See docs/exactness.md.
    """
    if x != x or x >= 9223372036854775808.0 or x < -9223372036854775808.0:
        return -MAX_INT64 - 1
    return int(x)


def wrap_int64(x: int) -> int:
    """Go int64 arithmetic: wrap into [-2^63, 2^63)."""
    return ((x + 2**63) % 2**64) - 2**63


def ceil_saturate(x: float, limit: int) -> int:
    """ceil(x) converted to an integer type of max ``limit``, saturating at its bounds (NaN gives 0):
    Go's float-to-integer conversion as arm64 computes it (docs/exactness.md)."""
    if x != x:
        return 0
    if x >= limit:
        return limit
    if x <= -limit - 1:
        return -limit - 1
    return math.ceil(x)


def sum_values(samples: MetricSamples) -> int:
    """External Value target: the sum of every series the API returned (GetExternalMetricReplicas).

    Upstream caps a positive overflow at 2^63-1 and stops adding; other sums wrap as int64.
    """
    total = 0
    for value in samples.values or ():
        if value > 0 and total > MAX_INT64 - value:
            return MAX_INT64
        total = wrap_int64(total + value)
    return total


def sum_values_per_pod(samples: MetricSamples) -> int:
    """External AverageValue target: the running sum of GetExternalPerPodMetricReplicas.

    Upstream treats any negative running total as an int64 overflow: the usage becomes
    2^63-1 and the remaining series are not added (a negative sample does it too).
    """
    total = 0
    for value in samples.values or ():
        total = wrap_int64(total + value)
        if total < 0:
            return MAX_INT64
    return total
