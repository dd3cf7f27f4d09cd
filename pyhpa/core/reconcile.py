"""One sync of one HPA: ``decide`` (upstream: reconcileAutoscaler, after the scale GET).

Pure: it takes the HPA, the target's Scale, the pods, each metric's samples, the
controller memory and ``now``, and returns a ``Decision``. The caller performs the
rescale and the status write; if the rescale fails it calls ``rescale_failed``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dataclasses import replace

from .calculator import ReplicaCalculator
from .combine import SPEC_MAX, SPEC_MIN, Bounds, decided_by, effective_bounds, prediction_proposal, recommend, \
    schedule_sources
from .fallback import FALLBACK_CONDITION, FallbackTracker, has_fallback, metric_health
from .metrics import UNABLE_PREFIX, compute_proposal, describe
from .model import (
    ENFORCE,
    EXTERNAL,
    FALLBACK_SOURCE,
    METRIC_SOURCE,
    NO_CPU_SAMPLES,
    NOT_PREDICTABLE,
    OBJECT,
    INVALID_PAUSE_ANNOTATION,
    OBSERVING,
    PAUSED,
    PAUSED_CONDITION,
    PINNED_AT_LIMIT,
    PREDICTING,
    PREDICTION_ACTIVE,
    RECOMMENDATION_SOURCE,
    SATURATION_ACTIVE,
    SATURATION_SOURCE,
    ActiveWindow,
    Condition,
    ControllerConfig,
    Decision,
    Event,
    Forecast,
    HPA,
    HPAStatus,
    Memory,
    MetricSamples,
    PauseStatus,
    Pod,
    PredictionStatus,
    Proposal,
    RESUMED,
    SaturationStatus,
    Scale,
    ScheduleStatus,
    SourceProposal,
    Step,
    ConditionType,
    Reason,
    SourceKind,
    SourceRef,
    recommendation_text,
)
from .normalize import normalize, store_scale_event
from .pause import pause_rule
from .prediction import PredictionSource
from .saturation import SaturationSource
from .sources import Source, SourceInputs
from .schedules import active_windows, expired_windows, next_change
from .selector import SelectorError, matches, parse_selector

_NO_SAMPLES = MetricSamples()
#: the sources of replica proposals beside the metrics, in the order of docs/combination.md
PROPOSAL_SOURCES: tuple[Source, ...] = (PredictionSource(), SaturationSource())
#: a given recommendation (``decide(prenormalized=...)``)
_GIVEN = SourceRef(SourceKind.RECOMMENDATION, "given")
#: kinds of ``decided_by`` that are steps of normalization, not sources
_NOT_SOURCES = frozenset((SourceKind.SPEC, SourceKind.STABILIZATION, SourceKind.POLICY))


def set_condition(conds: list[Condition], ctype: str, status: str, reason: str, message: str, now: float) -> None:
    """Upstream setCondition: update in place (new transition time only when status changes) or append."""
    for i, c in enumerate(conds):
        if c.type == ctype:
            if c.status == status and c.reason == reason and c.message == message:
                return  # unchanged: the same condition, transition time included (no new object per sync)
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

    __slots__ = ("hpa", "scale", "now", "config", "conds", "events", "proposals", "error", "others", "selected",
                 "fallback", "fallbacks")

    def __init__(self, hpa: HPA, scale: Scale, now: float, config: ControllerConfig,
                 others: Sequence[tuple[str, str]] = ()):
        self.others = others
        self.fallback: FallbackTracker | None = None
        self.fallbacks: dict[int, SourceProposal] = {}
        self.hpa = hpa
        self.scale = scale
        self.now = now
        self.config = config
        self.conds = list(hpa.conditions)
        self.events: list[Event] = []
        self.proposals: list[Proposal] = []
        self.error: str | None = None
        self.selected: list[Pod] = []

    def cond(self, ctype: str, status: str, reason: str, message: str) -> None:
        set_condition(self.conds, ctype, status, reason, message, self.now)

    def select_pods(self, pods: list[Pod]) -> list[Pod] | None:
        """validateAndParseSelector: None (with condition and event) when the selector is bad."""
        text = self.scale.selector
        if not text:
            self.events.append(Event("Warning", "SelectorRequired", "selector is required"))
            self.cond(ConditionType.SCALING_ACTIVE, "False", Reason.INVALID_SELECTOR, "the HPA target's scale is missing a selector")
            self.error = "selector is required"
            return None
        try:
            reqs = parse_selector(text)
        except SelectorError as err:
            msg = f"couldn't convert selector into a corresponding internal selector object: {err}"
            self.events.append(Event("Warning", "InvalidSelector", msg))
            self.cond(ConditionType.SCALING_ACTIVE, "False", Reason.INVALID_SELECTOR, msg)
            self.error = msg
            return None
        selected = [p for p in pods if matches(reqs, p.labels)] if reqs else pods
        if self.others:
            owners = self.owners(selected)
            if len(owners) > 1:
                # v1.37's text (validateAndParseSelector): two of them, "e.g." (upstream stops at two, in Go's
                # map order: this HPA and the first other one, sorted, here)
                me = f"{self.hpa.namespace}/{self.hpa.name}"
                two = sorted([me, next(k for k in owners if k != me)])
                msg = f"pods by selector {text} are controlled by more than one HPA (e.g. [{' '.join(two)}])"
                self.events.append(Event("Warning", "AmbiguousSelector", msg))
                self.cond(ConditionType.SCALING_ACTIVE, "False", Reason.AMBIGUOUS_SELECTOR, msg)
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

    def metrics(self, pods: list[Pod], samples: list[MetricSamples], mem: Memory) -> tuple[int, SourceRef] | None:
        """computeReplicasForMetrics: (replicas, the source that proposed them), or None when the sync must stop.

        With a fallback configured (``pyhpa.core.fallback``) a failing metric past its threshold
        proposes its fallback replicas instead of being invalid; ``mem.metric_failures`` is updated."""
        selected = self.select_pods(pods)
        if selected is None:
            return None
        self.selected = selected
        hpa, scale = self.hpa, self.scale
        down, up = tolerances(hpa, self.config)
        calc = ReplicaCalculator(selected, {}, scale.spec_replicas, down, up, self.now, self.config, hpa.namespace)
        track = self.fallback
        replicas, name, label, invalid, failed, first, first_invalid = 0, "", None, 0, 0, None, None
        for i, spec in enumerate(hpa.metrics):
            s = samples[i] if i < len(samples) else _NO_SAMPLES
            p = compute_proposal(calc, spec, s, scale.status_replicas)
            self.proposals.append(p)
            if p.error is not None:
                self.events.append(Event("Warning", p.reason, p.note.removeprefix(UNABLE_PREFIX)))
                failed += 1
                first = first or p
                fb = track.failed(spec, p.metric) if track is not None else None
                if fb is None:
                    invalid += 1
                    first_invalid = first_invalid or p
                    continue
                self.fallbacks[i] = fb
                if replicas == 0 or fb.replicas > replicas:
                    replicas, name, label = fb.replicas, p.metric, fb.ref
                continue
            if track is not None:
                track.succeeded(spec, p.metric)
            if replicas == 0 or p.replicas > replicas:
                replicas, name, label = p.replicas, p.metric, SourceRef(METRIC_SOURCE, p.metric)
        if first is not None:
            self.error = (
                f"invalid metrics ({failed} invalid out of {len(hpa.metrics)}), first error is: {first.error}"
            )
        if track is not None:
            mem.metric_failures = track.failures
            self.events.extend(track.events)
            self.cond(FALLBACK_CONDITION, *track.condition())
        if invalid >= len(hpa.metrics) or (invalid > 0 and replicas < scale.spec_replicas):
            if first_invalid is not None:  # without a fallback: upstream's first failing metric
                self.cond(ConditionType.SCALING_ACTIVE, "False", first_invalid.reason, first_invalid.note)
            return None
        if label is not None and label.kind == FALLBACK_SOURCE:
            self.cond(ConditionType.SCALING_ACTIVE, "True", Reason.FALLBACK_REPLICAS,
                      f"the replica count comes from the fallback of {name}, which is failing")
        else:
            self.cond(ConditionType.SCALING_ACTIVE, "True", Reason.VALID_METRIC_FOUND,
                      f"the HPA was able to successfully calculate a replica count from {name}")
        return replicas, label


def _scaled_to_zero_status(hpa: HPA) -> bool:
    """The first ScaledToZero condition is True (upstream getScaledToZeroConditionStatus)."""
    for c in hpa.conditions:
        if c.type == ConditionType.SCALED_TO_ZERO:
            return c.status == "True"
    return False


def _has_object_or_external(hpa: HPA) -> bool:
    return any(m.type in (OBJECT, EXTERNAL) for m in hpa.metrics)


def _current_metrics(proposals: list[Proposal]) -> tuple[dict, ...]:
    return tuple(p.status for p in proposals if p.status is not None)


def _scaled_to_zero_condition(sync: _Sync, current: int, desired: int, min_replicas: int) -> None:
    """KEP-2021 (HPAScaleToZero), on every rescale with the gate on: ScaledToZero=True when this
    rescale takes the workload from >0 to 0 (minReplicas 0, an Object or External metric), else
    False/NotScaledToZero; with the gate off, a rescale removes the (first) ScaledToZero condition, as
    upstream's removeCondition. Without a rescale the condition is left as it is."""
    if not sync.config.scale_to_zero:
        for i, c in enumerate(sync.conds):
            if c.type == ConditionType.SCALED_TO_ZERO:
                del sync.conds[i]
                return
        return
    if current > 0 and desired == 0 and min_replicas == 0 and _has_object_or_external(sync.hpa):
        sync.cond(ConditionType.SCALED_TO_ZERO, "True", Reason.SCALED_TO_ZERO, "the HPA controller scaled the workload to zero")
    else:
        sync.cond(ConditionType.SCALED_TO_ZERO, "False", Reason.NOT_SCALED_TO_ZERO, "the HPA controller did not scale the workload to zero")


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
    forecast: Forecast | None = None,
) -> Decision:
    """Decide one sync of ``hpa``.

    ``samples[i]`` answers ``hpa.metrics[i]``; ``pods`` are the pods of the HPA's
    namespace (the core applies ``scale.selector``); ``now`` is epoch seconds. With
    ``prenormalized`` set, metric evaluation is skipped and that recommendation is
    normalized. ``other_selectors`` are (``namespace/name``, selector text) of other HPAs
    that may select the same pods: if any does, the sync stops with AmbiguousSelector, as
    upstream. ``forecast`` is the forecaster's answer when ``hpa.prediction`` is set.
    Sources (metrics, fallback, prediction, schedule windows) are combined by the rule of
    ``pyhpa.core.combine``; without schedules, prediction and fallback the decision is upstream's. Never raises for bad metric data: failures become
    conditions, events and ``Decision.error``, as upstream.
    """
    sync = _Sync(hpa, scale, now, config, other_selectors)
    sync.cond(ConditionType.ABLE_TO_SCALE, "True", Reason.SUCCEEDED_GET_SCALE, "the HPA controller was able to get the target's current scale")
    current = scale.spec_replicas
    mem = memory.copy()
    if mem.recommendations is None:
        mem.recommendations = [(now, current)]
    if has_fallback(hpa):
        sync.fallback = FallbackTracker(hpa, mem.metric_failures, now, current)
    elif mem.metric_failures or any(c.type == FALLBACK_CONDITION for c in sync.conds):  # fallback removed
        mem.metric_failures = {}
        sync.conds = [c for c in sync.conds if c.type != FALLBACK_CONDITION]
    active = active_windows(hpa.schedules, now) if hpa.schedules else ()
    bounds = effective_bounds(hpa.min_replicas, hpa.max_replicas, active)
    if hpa.schedules:
        _schedule_condition(sync, active, bounds)
    elif any(c.type == ConditionType.SCHEDULE_ACTIVE for c in sync.conds):  # the windows were removed from the spec
        sync.conds[:] = [c for c in sync.conds if c.type != ConditionType.SCHEDULE_ACTIVE]
    out = _Outcome(bounds=bounds, active=active, sources=list(schedule_sources(active, bounds)))
    min_r, max_r = bounds.min_replicas, bounds.max_replicas
    steps: list[Step] = []
    desired, reason, recommended_by, pre = 0, "", None, None
    # upstream: a target at zero is only synced from zero when the HPA scaled it there
    # (ScaledToZero=True with the gate on) and it has an Object/External metric or a minReplicas > 0
    scaled_to_zero = config.scale_to_zero and _scaled_to_zero_status(hpa)
    if current == 0 and not (scaled_to_zero and (min_r != 0 or _has_object_or_external(hpa))):
        if not config.scale_to_zero:
            sync.conds[:] = [c for c in sync.conds if c.type != ConditionType.SCALED_TO_ZERO]
        sync.cond(ConditionType.SCALING_ACTIVE, "False", Reason.SCALING_DISABLED, "scaling is disabled since the replica count of the target is zero")
        return _finish(sync, out, current, current, "", mem, None, steps, None)
    if prenormalized is None and current != 0 and current > max_r:
        reason, desired = _bound_reason("above", bounds.max_source, max_r), max_r
        steps.append(Step("bounds", current, max_r, "TooManyReplicas", reason))
        out.decided_by = bounds.max_source
        _remember_window_bound(mem, bounds.max_source, max_r, current, min_r, max_r, hpa, now, config)
    elif prenormalized is None and current != 0 and current < min_r:
        reason, desired = _bound_reason("below", bounds.min_source, min_r), min_r
        steps.append(Step("bounds", current, min_r, "TooFewReplicas", reason))
        out.decided_by = bounds.min_source
        _remember_window_bound(mem, bounds.min_source, min_r, current, min_r, max_r, hpa, now, config)
    else:
        if prenormalized is None:
            got = sync.metrics(pods, samples, mem)
            if got is None:
                sync.events.append(Event("Warning", "FailedComputeMetricsReplicas", sync.error or ""))
                out.sources[:0] = _metric_sources(sync.proposals, sync.fallbacks)
                return _failed(sync, out, current, mem, steps)
            pre, winner = got
            out.sources[:0] = _metric_sources(sync.proposals, sync.fallbacks)
        else:
            pre = prenormalized
            winner = _GIVEN
            out.sources.insert(0, SourceProposal(source=RECOMMENDATION_SOURCE, name="given", replicas=prenormalized))
        extra = _evaluate(sync, out, samples, current, forecast, prenormalized is not None)
        if extra or active:
            pre, winner = recommend(extra, bounds, active, pre, winner)
        recommended_by = winner
        desired, rescale_by = (pre, winner) if pre > desired else (desired, None)
        if desired > current:
            reason = f"{recommendation_text(rescale_by)} above target"
            if rescale_by is not None and rescale_by.kind == FALLBACK_SOURCE:
                reason = f"fallback for {rescale_by.name}"
        if desired < current:
            reason = "All metrics below target"
        desired, mem.recommendations, able, limited, steps = normalize(
            current, desired, min_r, max_r, hpa.behavior, mem, now, config
        )
        sync.cond(ConditionType.ABLE_TO_SCALE, "True", able[0], able[1])
        sync.cond(ConditionType.SCALING_LIMITED, "False" if not steps or steps[-1].stage != "limit" else "True", limited[0], limited[1])
        out.decided_by = decided_by(winner, steps, bounds, hpa.behavior is not None)
        if current == 0 and min_r != 0 and scaled_to_zero and desired < min_r:  # from zero: at least minReplicas
            reason = reason or _bound_reason("below", bounds.min_source, min_r)
            steps.append(Step("bounds", desired, min_r, "TooFewReplicas", _bound_reason("below", bounds.min_source, min_r)))
            desired = min_r
            out.decided_by = bounds.min_source
    if desired != current:
        _scaled_to_zero_condition(sync, current, desired, min_r)
    return _finish(sync, out, current, desired, reason, mem, pre, steps, recommended_by)


class _Outcome:
    """What the combination rule adds to a sync: bounds, active windows, sources, the decider."""

    __slots__ = ("bounds", "active", "sources", "decided_by", "sections")

    def __init__(self, bounds: Bounds, active: tuple[ActiveWindow, ...], sources: list[SourceProposal]):
        self.bounds = bounds
        self.active = active
        self.sources = sources
        self.decided_by: SourceRef | None = None
        #: ``HPAStatus`` sections of the sources (field name -> value)
        self.sections: dict = {}


def _remember_window_bound(mem: Memory, source: SourceRef, bound: int, current: int, min_r: int, max_r: int, hpa: HPA,
                           now: float, config: ControllerConfig) -> None:
    """A window's floor or cap that moved the replicas (no metrics evaluated, as upstream outside its bounds)
    is recorded as this sync's recommendation, by normalization's own rule, as the syncs inside the window
    that follow record it: a window shorter than a sync period is still followed by the usual stabilization.
    Spec bounds keep upstream's behavior (nothing recorded)."""
    if source in (SPEC_MIN, SPEC_MAX):
        return
    _, mem.recommendations, *_ = normalize(current, bound, min_r, max_r, hpa.behavior, mem, now, config)


def _bound_reason(where: str, source: SourceRef, value: int) -> str:
    """Upstream's rescale reason for a spec bound; the window named for a schedule's."""
    if source in (SPEC_MIN, SPEC_MAX):
        return f"Current number of replicas {where} Spec.{'MaxReplicas' if where == 'above' else 'MinReplicas'}"
    bound = "maxReplicas" if where == "above" else "minReplicas"
    return f"Current number of replicas {where} {source} {bound} ({value})"


def _metric_sources(proposals: list[Proposal], fallbacks: dict[int, SourceProposal]) -> list[SourceProposal]:
    """One Metric source per metric, each followed by its Fallback source when it is in fallback."""
    out = []
    for i, p in enumerate(proposals):
        out.append(SourceProposal(source=METRIC_SOURCE, name=p.metric, replicas=p.replicas, error=p.error))
        if i in fallbacks:
            out.append(fallbacks[i])
    return out


def _schedule_condition(sync: _Sync, active: tuple[ActiveWindow, ...], bounds: Bounds) -> None:
    if not active:
        sync.cond(ConditionType.SCHEDULE_ACTIVE, "False", Reason.NO_ACTIVE_WINDOW, "no schedule window is active")
        return
    names = ", ".join(w.name for w in active)
    message = (f"active windows: {names}; effective minReplicas {bounds.min_replicas} ({bounds.min_source}), "
               f"maxReplicas {bounds.max_replicas} ({bounds.max_source})")
    if bounds.conflict:
        message += f"; {bounds.conflict}"
    sync.cond(ConditionType.SCHEDULE_ACTIVE, "True", Reason.FLOOR_AND_CAP_CONFLICT if bounds.conflict else Reason.WINDOW_ACTIVE, message)


def _evaluate(sync: _Sync, out: _Outcome, samples: list[MetricSamples], current: int, forecast: Forecast | None,
              given: bool) -> list[SourceProposal]:
    """Every enabled source of ``PROPOSAL_SOURCES``, in order, each ``Outcome`` applied: its proposal joins the
    sources (and is returned for the recommendation), its status section, events and condition are the sync's."""
    hpa = sync.hpa
    inputs = None
    proposals = []
    for source in PROPOSAL_SOURCES:
        if not source.enabled(hpa, given):
            continue
        if inputs is None:
            inputs = SourceInputs(hpa=hpa, now=sync.now, config=sync.config, current=current, pods=sync.selected,
                                  samples=samples, proposals=sync.proposals, conditions=sync.conds, forecast=forecast,
                                  tolerances=tolerances(hpa, sync.config))
        o = source.evaluate(inputs)
        out.sources.append(o.proposal)
        proposals.append(o.proposal)
        if o.section is not None:
            out.sections[o.section[0]] = o.section[1]
        sync.events.extend(o.events)
        if o.condition is not None:
            sync.cond(*o.condition)
    return proposals


def _failed(sync: _Sync, out: _Outcome, current: int, mem: Memory, steps: list[Step]) -> Decision:
    """Metrics failed: status gets current replicas and metrics; desired stays as it was (a paused-replicas
    annotation still moves the target to its count)."""
    pause = sync.hpa.pause
    if pause is not None and pause.replicas is not None and pause.replicas != current:
        return _finish(sync, out, current, current, "", mem, None, steps, None)
    _pause(sync, out, current, current, "", steps)
    status = _status(sync, out, current, _previous_desired(sync), sync.hpa.last_scale_time, mem)
    return _decision(sync, out, current=current, desired=current, reason="", mem=mem, pre=None,
                     steps=steps, recommended_by=None, status=status, without_event=mem)


def _previous_desired(sync: _Sync) -> int:
    """status.desiredReplicas as it was (upstream passes hpa.Status.DesiredReplicas; 0 without a status)."""
    d = sync.hpa.status_desired_replicas
    return 0 if d is None else d


def _status(sync: _Sync, out: _Outcome, current: int, desired: int, last_scale: float | None,
            mem: Memory) -> HPAStatus:
    hpa = sync.hpa
    schedules = None
    if hpa.schedules:
        schedules = ScheduleStatus(active=tuple(w.name for w in out.active),
                                   next_change=next_change(hpa.schedules, sync.now, out.active),
                                   expired=expired_windows(hpa.schedules, sync.now))
    health = None
    if sync.fallback is not None:
        health = metric_health(hpa, mem.metric_failures, sync.fallback.sources)
    return HPAStatus(current_replicas=current, desired_replicas=desired,
                     current_metrics=_current_metrics(sync.proposals), conditions=tuple(sync.conds),
                     last_scale_time=last_scale, schedules=schedules, metric_health=health, **out.sections)


def _decision(sync: _Sync, out: _Outcome, *, current: int, desired: int, reason: str, mem: Memory,
              pre: int | None, steps: list[Step], recommended_by: SourceRef | None, status: HPAStatus,
              without_event: Memory) -> Decision:
    return Decision(
        current_replicas=current, desired_replicas=desired, rescale_reason=reason,
        proposals=sync.proposals, prenormalized=pre, steps=steps, events=sync.events,
        memory=mem, status=status, error=sync.error, memory_without_event=without_event,
        sources=_with_winner(out.sources, out.decided_by), decided_by=out.decided_by, recommended_by=recommended_by,
        min_replicas_effective=out.bounds.min_replicas, max_replicas_effective=out.bounds.max_replicas,
    )


def _with_winner(sources: list[SourceProposal], winner: SourceRef | None) -> tuple[SourceProposal, ...]:
    """The sources, the one that set the final number (``winner``) marked ``won``."""
    if winner is not None and winner.kind not in _NOT_SOURCES:
        for i, s in enumerate(sources):
            if s.source == winner.kind and s.name == winner.name:
                sources[i] = replace(s, won=True)
                break
    return tuple(sources)


def _finish(sync: _Sync, out: _Outcome, current: int, desired: int, reason: str, mem: Memory,
            pre: int | None, steps: list[Step], recommended_by: SourceRef | None) -> Decision:
    without_event = mem
    last_scale = sync.hpa.last_scale_time
    if sync.hpa.pause is not None or sync.conds and _was_paused(sync.conds):
        desired, reason = _pause(sync, out, current, desired, reason, steps)
    if desired != current:
        sync.cond(ConditionType.ABLE_TO_SCALE, "True", Reason.SUCCEEDED_RESCALE, f"the HPA controller was able to update the target scale to {desired}")
        sync.events.append(Event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}"))
        mem = store_scale_event(mem, sync.hpa.behavior, current, desired, sync.now)
        last_scale = sync.now
    else:
        desired = current
    status = _status(sync, out, current, desired, last_scale, mem)
    return _decision(sync, out, current=current, desired=desired, reason=reason, mem=mem, pre=pre,
                     steps=steps, recommended_by=recommended_by, status=status, without_event=without_event)


def _was_paused(conds: list[Condition]) -> bool:
    """A ``Paused`` condition other than ``Resumed`` is there (the annotations were just removed)."""
    for c in conds:
        if c.type == PAUSED_CONDITION:
            return c.reason != RESUMED
    return False


def _pause(sync: _Sync, out: _Outcome, current: int, desired: int, reason: str,
           steps: list[Step]) -> tuple[int, str]:
    """The pause annotations (``pyhpa.core.pause``), last: (desired, rescale reason) after them; the ``Paused``
    condition, ``status.pause``, the Pause source and step, and the events ``Paused``/``Resumed`` (Normal) and
    ``InvalidPauseAnnotation`` (Warning) when they appear."""
    spec = sync.hpa.pause
    before = next((c for c in sync.conds if c.type == PAUSED_CONDITION), None)
    got = pause_rule(spec, current, desired) if spec is not None else None
    problems = "; ".join(spec.problems) if spec is not None else ""
    if got is None:
        if problems:
            message = f"not paused: ignored {problems}"
            sync.cond(PAUSED_CONDITION, "False", INVALID_PAUSE_ANNOTATION, message)
        elif before is not None and before.reason != RESUMED:
            message = "no pause annotation: autoscaling resumed"
            sync.cond(PAUSED_CONDITION, "False", RESUMED, message)
            if before.status == "True":
                sync.events.append(Event("Normal", RESUMED, message))
        if problems and (before is None or before.message != message):
            sync.events.append(Event("Warning", INVALID_PAUSE_ANNOTATION, message))
        return desired, reason
    out.sources.append(got.source)
    if got.desired != desired:
        steps.append(Step("pause", desired, got.desired, got.reason, got.message))
        if got.desired != current:
            reason = got.message
    if got.holds or got.desired != desired:
        out.decided_by = got.source.ref
    message = got.message + (f"; ignored {problems}" if problems else "")
    sync.cond(PAUSED_CONDITION, "True", got.reason, message)
    if before is None or before.status != "True":
        sync.events.append(Event("Normal", PAUSED, got.message))
    if problems and (before is None or before.message != message):
        sync.events.append(Event("Warning", INVALID_PAUSE_ANNOTATION, f"ignored {problems}"))
    since = next(c.last_transition_time for c in sync.conds if c.type == PAUSED_CONDITION)
    out.sections["pause"] = PauseStatus(reason=got.reason, message=message, since=since,
                                        replicas=got.source.replicas)
    return got.desired, reason


def rescale_failed(decision: Decision, hpa: HPA, message: str, now: float) -> Decision:
    """The scale update failed (upstream: FailedRescale / FailedUpdateScale).

    Returns a new Decision: no rescale, AbleToScale=False, the scale event not recorded,
    status with current replicas and metrics only.
    """
    conds = list(decision.conditions)
    _restore_scaled_to_zero(conds, hpa)  # upstream sets ScaledToZero only after a successful update
    set_condition(conds, ConditionType.ABLE_TO_SCALE, "False", Reason.FAILED_UPDATE_SCALE,
                  f"the HPA controller was unable to update the target scale: {message}", now)
    events = [e for e in decision.events if e.reason != "SuccessfulRescale"]
    events.append(Event("Warning", "FailedRescale",
                        f"New size: {decision.desired_replicas}; reason: {decision.rescale_reason}; error: {message}"))
    previous = 0 if hpa.status_desired_replicas is None else hpa.status_desired_replicas
    status = replace(decision.status, conditions=tuple(conds), desired_replicas=previous,
                     last_scale_time=hpa.last_scale_time)
    mem = decision.memory_without_event or decision.memory
    return replace(decision, desired_replicas=decision.current_replicas,
                   events=events, memory=mem, status=status, error=f"failed to rescale: {message}",
                   memory_without_event=mem)


def _restore_scaled_to_zero(conds: list[Condition], hpa: HPA) -> None:
    """Undo the sync's ScaledToZero update (only the first condition of the type is ever set or removed);
    a condition the sync removed (gate off) goes back after the conditions that preceded it."""
    before = next((o for o in hpa.conditions if o.type == "ScaledToZero"), None)
    for i, c in enumerate(conds):
        if c.type == ConditionType.SCALED_TO_ZERO:
            if before is None:
                del conds[i]
            else:
                conds[i] = before
            return
    if before is not None:
        earlier = {o.type for o in hpa.conditions[:hpa.conditions.index(before)]}
        conds.insert(sum(1 for c in conds if c.type in earlier), before)


def with_status(hpa: HPA, status: HPAStatus) -> HPA:
    """``hpa`` carrying the status a sync wrote (conditions, last scale time, desired replicas):
    what the next sync of the same object reads. Used by the controller and the simulator. ``hpa`` itself
    when nothing of it changed (a steady sync builds no new object)."""
    conditions = tuple(status.conditions)
    if (conditions == hpa.conditions and status.last_scale_time == hpa.last_scale_time
            and status.desired_replicas == hpa.status_desired_replicas):
        return hpa
    return replace(hpa, conditions=conditions, last_scale_time=status.last_scale_time,
                   status_desired_replicas=status.desired_replicas)
