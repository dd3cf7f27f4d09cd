"""One sync of one HPA: ``decide`` (upstream: reconcileAutoscaler, after the scale GET).

Pure: it takes the HPA, the target's Scale, the pods, each metric's samples, the
controller memory and ``now``, and returns a ``Decision``. The caller performs the
rescale and the status write; if the rescale fails it calls ``rescale_failed``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .calculator import ReplicaCalculator
from .metrics import UNABLE_PREFIX, compute_proposal
from .model import (
    EXTERNAL,
    OBJECT,
    Condition,
    ControllerConfig,
    Decision,
    Event,
    HPA,
    Memory,
    MetricSamples,
    Pod,
    Proposal,
    Scale,
    Step,
)
from .normalize import normalize, store_scale_event
from .selector import SelectorError, matches, parse_selector

_NO_SAMPLES = MetricSamples()


def set_condition(conds: list[Condition], ctype: str, status: str, reason: str, message: str, now: float) -> None:
    """Upstream setCondition: update in place (new transition time only when status changes) or append."""
    for i, c in enumerate(conds):
        if c.type == ctype:
            t = c.last_transition_time if c.status == status else now
            conds[i] = Condition(ctype, status, reason, message, t)
            return
    conds.append(Condition(ctype, status, reason, message, now))


def tolerances(hpa: HPA, config: ControllerConfig) -> tuple[float, float]:
    """(scale-down, scale-up) tolerance: per-direction ``behavior.*.tolerance`` when the
    HPAConfigurableTolerance gate is on, else the controller-wide ``--horizontal-pod-autoscaler-tolerance``."""
    down = up = config.tolerance
    b = hpa.behavior
    if b is None or not config.configurable_tolerance:
        return down, up
    if b.scale_down.tolerance is not None:
        down = b.scale_down.tolerance
    if b.scale_up.tolerance is not None:
        up = b.scale_up.tolerance
    return down, up


class _Sync:
    """Mutable state of one sync; methods mirror the steps of reconcileAutoscaler."""

    __slots__ = ("hpa", "scale", "now", "config", "conds", "events", "proposals", "error", "others")

    def __init__(self, hpa: HPA, scale: Scale, now: float, config: ControllerConfig,
                 others: Sequence[tuple[str, str]] = ()):
        self.others = others
        self.hpa = hpa
        self.scale = scale
        self.now = now
        self.config = config
        self.conds = list(hpa.conditions)
        self.events: list[Event] = []
        self.proposals: list[Proposal] = []
        self.error: str | None = None

    def cond(self, ctype: str, status: str, reason: str, message: str) -> None:
        set_condition(self.conds, ctype, status, reason, message, self.now)

    def select_pods(self, pods: list[Pod]) -> list[Pod] | None:
        """validateAndParseSelector: None (with condition and event) when the selector is bad."""
        text = self.scale.selector
        if not text:
            self.events.append(Event("Warning", "SelectorRequired", "selector is required"))
            self.cond("ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector")
            self.error = "selector is required"
            return None
        try:
            reqs = parse_selector(text)
        except SelectorError as err:
            msg = f"couldn't convert selector into a corresponding internal selector object: {err}"
            self.events.append(Event("Warning", "InvalidSelector", msg))
            self.cond("ScalingActive", "False", "InvalidSelector", msg)
            self.error = msg
            return None
        selected = [p for p in pods if matches(reqs, p.labels)] if reqs else pods
        if self.others:
            owners = self.owners(selected)
            if len(owners) > 1:
                msg = f"pods by selector {text} are controlled by multiple HPAs: [{' '.join(owners)}]"
                self.events.append(Event("Warning", "AmbiguousSelector", msg))
                self.cond("ScalingActive", "False", "AmbiguousSelector", msg)
                self.error = msg
                return None
        return selected

    def owners(self, selected: list[Pod]) -> list[str]:
        """Sorted ``namespace/name`` of every HPA whose selector matches one of ``selected``
        (upstream: hpasControllingPodsUnderSelector); other HPAs' bad selectors match nothing."""
        keys = {f"{self.hpa.namespace}/{self.hpa.name}"}
        for key, text in self.others:
            try:
                reqs = parse_selector(text)
            except SelectorError:
                continue
            if reqs and any(matches(reqs, p.labels) for p in selected):
                keys.add(key)
        return sorted(keys)

    def metrics(self, pods: list[Pod], samples: list[MetricSamples]) -> tuple[int, str] | None:
        """computeReplicasForMetrics: (replicas, metric name), or None when the sync must stop."""
        selected = self.select_pods(pods)
        if selected is None:
            return None
        hpa, scale = self.hpa, self.scale
        down, up = tolerances(hpa, self.config)
        calc = ReplicaCalculator(selected, {}, scale.spec_replicas, down, up, self.now, self.config, hpa.namespace)
        replicas, name, invalid, first = 0, "", 0, None
        for i, spec in enumerate(hpa.metrics):
            s = samples[i] if i < len(samples) else _NO_SAMPLES
            p = compute_proposal(calc, spec, s, scale.status_replicas)
            self.proposals.append(p)
            if p.error is not None:
                self.events.append(Event("Warning", p.reason, p.note.removeprefix(UNABLE_PREFIX)))
                invalid += 1
                first = first or p
                continue
            if replicas == 0 or p.replicas > replicas:
                replicas, name = p.replicas, p.metric
        if first is not None:
            self.error = (
                f"invalid metrics ({invalid} invalid out of {len(hpa.metrics)}), first error is: {first.error}"
            )
        if invalid >= len(hpa.metrics) or (invalid > 0 and replicas < scale.spec_replicas):
            if first is not None:
                self.cond("ScalingActive", "False", first.reason, first.note)
            return None
        self.cond("ScalingActive", "True", "ValidMetricFound",
                  f"the HPA was able to successfully calculate a replica count from {name}")
        return replicas, name


def _scaled_to_zero_status(hpa: HPA) -> bool:
    """The first ScaledToZero condition is True (upstream getScaledToZeroConditionStatus)."""
    for c in hpa.conditions:
        if c.type == "ScaledToZero":
            return c.status == "True"
    return False


def _has_object_or_external(hpa: HPA) -> bool:
    return any(m.type in (OBJECT, EXTERNAL) for m in hpa.metrics)


def _current_metrics(proposals: list[Proposal]) -> list[dict]:
    return [p.status for p in proposals if p.status is not None]


def _status(sync: _Sync, current: int, desired: int, last_scale: float | None) -> dict:
    return {
        "currentReplicas": current,
        "desiredReplicas": desired,
        "currentMetrics": _current_metrics(sync.proposals),
        "conditions": sync.conds,
        "lastScaleTime": last_scale,
    }


def _scaled_to_zero_condition(sync: _Sync, current: int, desired: int, min_replicas: int) -> None:
    """KEP-2021 (HPAScaleToZero), on every rescale with the gate on: ScaledToZero=True when this
    rescale takes the workload from >0 to 0 (minReplicas 0, an Object or External metric), else
    False/NotScaledToZero. Without a rescale the condition is left as it is."""
    if current > 0 and desired == 0 and min_replicas == 0 and _has_object_or_external(sync.hpa):
        sync.cond("ScaledToZero", "True", "ScaledToZero", "the HPA controller scaled the workload to zero")
    else:
        sync.cond("ScaledToZero", "False", "NotScaledToZero", "the HPA controller did not scale the workload to zero")


def decide(
    hpa: HPA,
    scale: Scale,
    pods: list[Pod],
    samples: list[MetricSamples],
    memory: Memory,
    now: float,
    config: ControllerConfig,
    prenormalized: int | None = None,
    other_selectors: Sequence[tuple[str, str]] = (),
) -> Decision:
    """Decide one sync of ``hpa``.

    ``samples[i]`` answers ``hpa.metrics[i]``; ``pods`` are the pods of the HPA's
    namespace (the core applies ``scale.selector``); ``now`` is epoch seconds. With
    ``prenormalized`` set, metric evaluation is skipped and that recommendation is
    normalized. ``other_selectors`` are (``namespace/name``, selector text) of other HPAs
    that may select the same pods: if any does, the sync stops with AmbiguousSelector, as
    upstream. Never raises for bad metric data: failures become conditions, events and
    ``Decision.error``, as upstream.
    """
    sync = _Sync(hpa, scale, now, config, other_selectors)
    sync.cond("AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale")
    current = scale.spec_replicas
    mem = memory.copy()
    if mem.recommendations is None:
        mem.recommendations = [(now, current)]
    min_r, max_r = hpa.min_replicas, hpa.max_replicas
    steps: list[Step] = []
    desired, reason, metric_name, pre = 0, "", "", None
    # upstream: a target at zero is only synced from zero when the HPA scaled it there
    # (ScaledToZero=True with the gate on) and it has an Object/External metric or a minReplicas > 0
    scaled_to_zero = config.scale_to_zero and _scaled_to_zero_status(hpa)
    if current == 0 and not (scaled_to_zero and (min_r != 0 or _has_object_or_external(hpa))):
        if not config.scale_to_zero:
            sync.conds[:] = [c for c in sync.conds if c.type != "ScaledToZero"]
        sync.cond("ScalingActive", "False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
        return _finish(sync, current, current, False, "", mem, None, steps, "")
    if prenormalized is None and current != 0 and current > max_r:
        reason, desired = "Current number of replicas above Spec.MaxReplicas", max_r
        steps.append(Step("bounds", current, max_r, "TooManyReplicas", reason))
    elif prenormalized is None and current != 0 and current < min_r:
        reason, desired = "Current number of replicas below Spec.MinReplicas", min_r
        steps.append(Step("bounds", current, min_r, "TooFewReplicas", reason))
    else:
        if prenormalized is None:
            got = sync.metrics(pods, samples)
            if got is None:
                sync.events.append(Event("Warning", "FailedComputeMetricsReplicas", sync.error or ""))
                return _failed(sync, current, mem, steps)
            pre, metric_name = got
        else:
            pre, metric_name = prenormalized, "the given recommendation"
        desired, rescale_metric = (pre, metric_name) if pre > desired else (desired, "")
        if desired > current:
            reason = f"{rescale_metric} above target"
        if desired < current:
            reason = "All metrics below target"
        desired, mem.recommendations, able, limited, steps = normalize(
            current, desired, min_r, max_r, hpa.behavior, mem, now, config
        )
        sync.cond("AbleToScale", "True", able[0], able[1])
        sync.cond("ScalingLimited", "False" if not steps or steps[-1].stage != "limit" else "True", limited[0], limited[1])
        if current == 0 and min_r != 0 and scaled_to_zero and desired < min_r:  # from zero: at least minReplicas
            steps.append(Step("bounds", desired, min_r, "TooFewReplicas", "Current number of replicas below Spec.MinReplicas"))
            desired = min_r
            reason = reason or "Current number of replicas below Spec.MinReplicas"
    if config.scale_to_zero and desired != current:
        _scaled_to_zero_condition(sync, current, desired, min_r)
    return _finish(sync, current, desired, desired != current, reason, mem, pre, steps, metric_name)


def _failed(sync: _Sync, current: int, mem: Memory, steps: list[Step]) -> Decision:
    """Metrics failed: status gets current replicas and metrics; desired stays as it was."""
    status = _status(sync, current, _previous_desired(sync), sync.hpa.last_scale_time)
    return Decision(
        current, current, False, "", sync.proposals, None, steps, sync.conds, sync.events, mem, status,
        sync.error, "", mem,
    )


def _previous_desired(sync: _Sync) -> int:
    """status.desiredReplicas as it was (upstream passes hpa.Status.DesiredReplicas; 0 without a status)."""
    d = sync.hpa.status_desired_replicas
    return 0 if d is None else d


def _finish(sync: _Sync, current: int, desired: int, rescale: bool, reason: str, mem: Memory,
            pre: int | None, steps: list[Step], metric_name: str) -> Decision:
    without_event = mem
    last_scale = sync.hpa.last_scale_time
    if rescale:
        sync.cond("AbleToScale", "True", "SucceededRescale", f"the HPA controller was able to update the target scale to {desired}")
        sync.events.append(Event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}"))
        mem = store_scale_event(mem, sync.hpa.behavior, current, desired, sync.now)
        last_scale = sync.now
    else:
        desired = current
    status = _status(sync, current, desired, last_scale)
    return Decision(
        current, desired, rescale, reason, sync.proposals, pre, steps, sync.conds, sync.events, mem, status,
        sync.error, metric_name, without_event,
    )


def rescale_failed(decision: Decision, hpa: HPA, message: str, now: float) -> Decision:
    """The scale update failed (upstream: FailedRescale / FailedUpdateScale).

    Returns a new Decision: no rescale, AbleToScale=False, the scale event not recorded,
    status with current replicas and metrics only.
    """
    conds = list(decision.conditions)
    _restore_scaled_to_zero(conds, hpa)  # upstream sets ScaledToZero only after a successful update
    set_condition(conds, "AbleToScale", "False", "FailedUpdateScale",
                  f"the HPA controller was unable to update the target scale: {message}", now)
    events = [e for e in decision.events if e.reason != "SuccessfulRescale"]
    events.append(Event("Warning", "FailedRescale",
                        f"New size: {decision.desired_replicas}; reason: {decision.rescale_reason}; error: {message}"))
    previous = 0 if hpa.status_desired_replicas is None else hpa.status_desired_replicas
    status = dict(decision.status, conditions=conds, desiredReplicas=previous, lastScaleTime=hpa.last_scale_time)
    mem = decision.memory_without_event or decision.memory
    return Decision(
        decision.current_replicas, decision.current_replicas, False, decision.rescale_reason, decision.proposals,
        decision.prenormalized, decision.steps, conds, events, mem, status,
        f"failed to rescale: {message}", decision.metric_name, mem,
    )


def _restore_scaled_to_zero(conds: list[Condition], hpa: HPA) -> None:
    """Undo the sync's ScaledToZero update (only the first condition of the type is ever set)."""
    for i, c in enumerate(conds):
        if c.type == "ScaledToZero":
            before = next((o for o in hpa.conditions if o.type == "ScaledToZero"), None)
            if before is None:
                del conds[i]
            else:
                conds[i] = before
            return
