"""One sync of one HPA: ``decide`` (upstream: reconcileAutoscaler, after the scale GET).

Pure: it takes the HPA, the target's Scale, the pods, each metric's samples, the
controller memory and ``now``, and returns a ``Decision``. The caller performs the
rescale and the status write; if the rescale fails it calls ``rescale_failed``.

``decide`` evaluates every source (``SOURCES``, ``pyhpa.core.sources``) in one loop, in the order of
docs/combination.md, and between their stages runs upstream's steps of reconcileAutoscaler: the early branches
(replicas outside the bounds, a target at zero), the selector, the rule over the metrics, normalization, the
rescale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from .combine import SPEC_MAX, SPEC_MIN, Bounds, decided_by, effective_bounds, recommend
from .fallback import FallbackSource, metric_health
from .metrics import MetricsSource, describe
from .model import (
    EXTERNAL,
    FALLBACK_SOURCE,
    HPA,
    METRIC_SOURCE,
    OBJECT,
    RECOMMENDATION_SOURCE,
    Condition,
    ConditionType,
    ControllerConfig,
    Decision,
    Event,
    Forecast,
    HPAStatus,
    Memory,
    MetricSamples,
    Pod,
    Proposal,
    Reason,
    Scale,
    SourceKind,
    SourceProposal,
    SourceRef,
    Step,
    SyncInputs,
    recommendation_text,
    source_ref,
)
from .normalize import normalize, store_scale_event
from .pause import PauseSource
from .prediction import PredictionSource
from .saturation import SaturationSource
from .schedules import SchedulesSource
from .selector import SelectorError, matches, parse_selector
from .sources import (
    BoundsOutcome,
    FallbackOutcome,
    HoldOutcome,
    MetricsOutcome,
    Outcome,
    Source,
    Stage,
    nothing_to_retire,
)

__all__ = ["SOURCES", "decide", "rescale_failed", "set_condition", "tolerances", "with_status"]

#: Every source of a decision, in the order of docs/combination.md (``pyhpa.core.sources``): ``decide`` is one loop
#: over them.
SOURCES: tuple[Source, ...] = (SchedulesSource(), MetricsSource(), FallbackSource(), PredictionSource(),
                               SaturationSource(), PauseSource())
#: a given recommendation (``SyncInputs.prenormalized``)
_GIVEN = SourceRef(SourceKind.RECOMMENDATION, "given")
#: kinds of ``decided_by`` that are steps of normalization, not sources
_NOT_SOURCES = frozenset((SourceKind.SPEC, SourceKind.STABILIZATION, SourceKind.POLICY))
#: enum members the hot path names, bound once (an enum's attribute access costs ~10x a global's in Python 3.11)
_ABLE_TO_SCALE, _SCALING_ACTIVE, _SCALING_LIMITED, _SCALED_TO_ZERO = (
    ConditionType.ABLE_TO_SCALE, ConditionType.SCALING_ACTIVE, ConditionType.SCALING_LIMITED,
    ConditionType.SCALED_TO_ZERO)
_VALID_METRIC_FOUND, _SUCCEEDED_RESCALE, _SUCCEEDED_GET_SCALE, _NOT_SCALED_TO_ZERO = (
    Reason.VALID_METRIC_FOUND, Reason.SUCCEEDED_RESCALE, Reason.SUCCEEDED_GET_SCALE, Reason.NOT_SCALED_TO_ZERO)
_METRICS, _HOLD = Stage.METRICS, Stage.HOLD
#: the tolerances of a sync that stopped before any source read them
_NO_TOLERANCES = (0.0, 0.0)
#: why a sync stopped before the recommendation (``_Sync.stop``)
_DISABLED, _AT_BOUND, _FAILED = "disabled", "bound", "failed"


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
    """The state of one sync: what the sources read (``pyhpa.core.sources.SourceInputs``) and what the steps of the
    rule add (bounds, sources, steps, the decider); its methods are the steps of reconcileAutoscaler."""

    __slots__ = ("hpa", "scale", "now", "config", "conditions", "events", "proposals", "error", "others", "pods",
                 "current", "given", "samples", "memory", "forecast", "tolerances", "desired", "reason", "steps",
                 "bounds", "sources", "windows", "metric_sources", "fallbacks", "extra", "sections", "decided_by",
                 "recommended_by", "pre", "winner", "stop", "scaled_to_zero", "given_replicas", "status_replicas", "enabled")

    def __init__(self, hpa: HPA, scale: Scale, now: float, config: ControllerConfig, others: Sequence[tuple[str, str]],
                 samples: Sequence[MetricSamples], forecast: Forecast | None, given: int | None, memory: Memory):
        self.hpa = hpa
        self.scale = scale
        self.now = now
        self.config = config
        self.others = others
        self.conditions = list(hpa.conditions)
        self.events: list[Event] = []
        self.proposals: list[Proposal] = []
        self.error: str | None = None
        self.pods: list[Pod] = []
        self.current = scale.spec_replicas
        self.status_replicas = scale.status_replicas
        self.given = given is not None
        self.pre: int | None = None
        self.given_replicas = given
        self.winner: SourceRef | None = None
        self.samples = samples
        self.memory = memory
        self.forecast = forecast
        self.tolerances = _NO_TOLERANCES  # set when the sync goes on to the sources that read them
        self.desired = 0
        self.reason = ""
        self.steps: list[Step] = []
        self.bounds = _spec_bounds(hpa.min_replicas, hpa.max_replicas)
        self.sources: list[SourceProposal] = []
        self.windows: tuple[SourceProposal, ...] = ()
        self.metric_sources: tuple[SourceProposal, ...] = ()
        self.fallbacks: dict[int, SourceProposal] = {}
        self.extra: list[SourceProposal] = []
        self.sections: dict = {}
        self.decided_by: SourceRef | None = None
        self.recommended_by: SourceRef | None = None
        self.stop: str | None = None
        self.scaled_to_zero = False
        #: the kinds of the sources the HPA uses at this sync
        self.enabled: list[SourceKind] = []

    # ----- what the sources read (SourceInputs) --------------------------------------------------------------------
    def metric_name(self, i: int) -> str:
        """``spec.metrics[i]`` as upstream names it in messages (``describe``; the sync's proposal has it already)."""
        return self.proposals[i].metric if i < len(self.proposals) else describe(self.hpa.metrics[i])

    def condition(self, ctype: str) -> Condition | None:
        """The condition of ``ctype`` as it stands (None: none)."""
        for c in self.conditions:
            if c.type == ctype:
                return c
        return None

    # ----- applying outcomes -----------------------------------------------------------------------------------------
    def cond(self, ctype: str, status: str, reason: str, message: str) -> None:
        set_condition(self.conditions, ctype, status, reason, message, self.now)

    def apply(self, o: Outcome) -> None:
        """One source's outcome, one way: its condition dropped or set, its events, its section, its proposals."""
        if o.drop is not None:
            self.conditions[:] = [c for c in self.conditions if c.type != o.drop]
        for c in o.conditions:
            set_condition(self.conditions, *c, self.now)
        if o.events:
            self.events.extend(o.events)
        if o.section is not None:
            self.sections[o.section[0]] = o.section[1]
        if isinstance(o, MetricsOutcome):
            self.proposals = o.metrics
            self.metric_sources = o.proposals
        elif isinstance(o, FallbackOutcome):
            if o.failures is not None:
                self.memory.metric_failures = o.failures
            self.fallbacks = dict(zip(o.stands_for, o.proposals))
        elif isinstance(o, BoundsOutcome):
            self.bounds = o.bounds
            self.windows = o.proposals
            self.sources.extend(o.proposals)
        elif isinstance(o, HoldOutcome):
            self.sources.extend(o.proposals)
            if o.replicas is not None:
                if o.step is not None:
                    self.steps.append(o.step)
                    if o.replicas != self.current:
                        self.reason = o.step.message
                if o.decides:
                    self.decided_by = o.proposals[0].ref
                self.desired = o.replicas
        else:
            self.sources.extend(o.proposals)
            self.extra.extend(o.proposals)

    # ----- the steps between the stages ------------------------------------------------------------------------------
    def after_bounds(self, pods: list[Pod]) -> None:
        """Upstream's early branches with the effective bounds (a target at zero; replicas above the maximum or
        below the minimum scale straight to it), then the selector."""
        hpa, config, current = self.hpa, self.config, self.current
        bounds = self.bounds
        min_r, max_r = bounds.min_replicas, bounds.max_replicas
        # upstream: a target at zero is only synced from zero when the HPA scaled it there
        # (ScaledToZero=True with the gate on) and it has an Object/External metric or a minReplicas > 0
        self.scaled_to_zero = config.scale_to_zero and _scaled_to_zero_status(hpa)
        if current == 0 and not (self.scaled_to_zero and (min_r != 0 or _has_object_or_external(hpa))):
            if not config.scale_to_zero:
                self.conditions[:] = [c for c in self.conditions if c.type != _SCALED_TO_ZERO]
            self.cond(_SCALING_ACTIVE, "False", Reason.SCALING_DISABLED,
                      "scaling is disabled since the replica count of the target is zero")
            self.stop, self.desired = _DISABLED, current
            return
        if self.given:
            self.tolerances = tolerances(hpa, config)
            return
        if current != 0 and (current > max_r or current < min_r):
            above = current > max_r
            bound, source = (max_r, bounds.max_source) if above else (min_r, bounds.min_source)
            self.reason = _bound_reason("above" if above else "below", source, bound)
            self.steps.append(Step("bounds", current, bound, "TooManyReplicas" if above else "TooFewReplicas",
                                   self.reason))
            self.desired, self.decided_by, self.stop = bound, source, _AT_BOUND
            _remember_window_bound(self.memory, source, bound, current, min_r, max_r, hpa, self.now, config)
            return
        self.tolerances = tolerances(hpa, config)
        selected = self.select_pods(pods)
        if selected is None:
            self.events.append(Event("Warning", "FailedComputeMetricsReplicas", self.error or ""))
            self.stop, self.desired = _FAILED, self.current
            return
        self.pods = selected

    def after_metrics(self, pods: list[Pod]) -> None:
        """Upstream's rule over the metrics (computeReplicasForMetrics): the largest proposal, a metric in fallback
        proposing its fallback replicas instead of being invalid; invalid metrics stop the sync (all of them, or
        any when the rest would scale down). A given recommendation stands in for it."""
        if self.stop is not None:
            return
        if self.given:
            self.pre, self.winner = self.given_replicas, _GIVEN
            self.sources.insert(0, SourceProposal(source=RECOMMENDATION_SOURCE, name="given", replicas=self.pre))
            return
        hpa = self.hpa
        replicas, name, label, invalid, failed, first, first_invalid = 0, "", None, 0, 0, None, None
        fallbacks = self.fallbacks
        front = []
        for i, p in enumerate(self.proposals):
            front.append(self.metric_sources[i])
            if p.error is not None:
                failed += 1
                first = first or p
                fb = fallbacks.get(i)
                if fb is None:
                    invalid += 1
                    first_invalid = first_invalid or p
                    continue
                front.append(fb)
                if replicas == 0 or fb.replicas > replicas:
                    replicas, name, label = fb.replicas, p.metric, fb.ref
                continue
            if replicas == 0 or p.replicas > replicas:
                replicas, name, label = p.replicas, p.metric, source_ref(METRIC_SOURCE, p.metric)
        self.sources[:0] = front
        if first is not None:
            self.error = f"invalid metrics ({failed} invalid out of {len(hpa.metrics)}), first error is: {first.error}"
        if invalid >= len(hpa.metrics) or (invalid > 0 and replicas < self.current):
            if first_invalid is not None:  # without a fallback: upstream's first failing metric
                self.cond(_SCALING_ACTIVE, "False", first_invalid.reason, first_invalid.note)
            self.events.append(Event("Warning", "FailedComputeMetricsReplicas", self.error or ""))
            self.stop, self.desired = _FAILED, self.current
            return
        if label is not None and label.kind == FALLBACK_SOURCE:
            self.cond(_SCALING_ACTIVE, "True", Reason.FALLBACK_REPLICAS,
                      f"the replica count comes from the fallback of {name}, which is failing")
        else:
            self.cond(_SCALING_ACTIVE, "True", _VALID_METRIC_FOUND,
                      f"the HPA was able to successfully calculate a replica count from {name}")
        self.pre, self.winner = replicas, label

    def after_proposals(self, pods: list[Pod]) -> None:
        """The recommendation (``pyhpa.core.combine.recommend``: the largest applied proposal, the windows' floors
        and caps), then upstream's normalization with the effective bounds."""
        if self.stop is None:
            self.recommendation()
        if self.stop in (None, _AT_BOUND) and self.desired != self.current:
            _scaled_to_zero_condition(self, self.current, self.desired, self.bounds.min_replicas)

    def recommendation(self) -> None:
        """Steps 1 to 3 of the rule (docs/combination.md): the recommendation, the effective bounds, normalization;
        ``AbleToScale``, ``ScalingLimited`` and the decider; from zero, at least ``minReplicas``."""
        hpa, config, current, bounds, mem, now = self.hpa, self.config, self.current, self.bounds, self.memory, self.now
        pre, winner = self.pre, self.winner
        if self.extra or self.windows:
            pre, winner = recommend(self.extra, bounds, self.windows, pre, winner)
        self.pre = pre
        self.recommended_by = winner
        desired, rescale_by = (pre, winner) if pre > 0 else (0, None)
        reason = ""
        if desired > current:
            reason = f"{recommendation_text(rescale_by)} above target"
            if rescale_by is not None and rescale_by.kind == FALLBACK_SOURCE:
                reason = f"fallback for {rescale_by.name}"
        if desired < current:
            reason = "All metrics below target"
        min_r, max_r = bounds.min_replicas, bounds.max_replicas
        desired, mem.recommendations, able, limited, steps = normalize(
            current, desired, min_r, max_r, hpa.behavior, mem, now, config
        )
        self.cond(_ABLE_TO_SCALE, "True", able[0], able[1])
        self.cond(_SCALING_LIMITED, "False" if not steps or steps[-1].stage != "limit" else "True",
                  limited[0], limited[1])
        self.decided_by = decided_by(winner, steps, bounds, hpa.behavior is not None)
        if current == 0 and min_r != 0 and self.scaled_to_zero and desired < min_r:  # from zero: at least minReplicas
            reason = reason or _bound_reason("below", bounds.min_source, min_r)
            steps.append(Step("bounds", desired, min_r, "TooFewReplicas", _bound_reason("below", bounds.min_source, min_r)))
            desired = min_r
            self.decided_by = bounds.min_source
        self.desired, self.reason, self.steps = desired, reason, steps

    # ----- upstream's steps ------------------------------------------------------------------------------------------
    def select_pods(self, pods: list[Pod]) -> list[Pod] | None:
        """validateAndParseSelector: None (with condition and event) when the selector is bad."""
        text = self.scale.selector
        if not text:
            self.events.append(Event("Warning", "SelectorRequired", "selector is required"))
            self.cond(_SCALING_ACTIVE, "False", Reason.INVALID_SELECTOR, "the HPA target's scale is missing a selector")
            self.error = "selector is required"
            return None
        try:
            reqs = parse_selector(text)
        except SelectorError as err:
            msg = f"couldn't convert selector into a corresponding internal selector object: {err}"
            self.events.append(Event("Warning", "InvalidSelector", msg))
            self.cond(_SCALING_ACTIVE, "False", Reason.INVALID_SELECTOR, msg)
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
                self.cond(_SCALING_ACTIVE, "False", Reason.AMBIGUOUS_SELECTOR, msg)
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

    # ----- the decision -------------------------------------------------------------------------------------------
    def finish(self) -> Decision:
        """The rescale (a ``SuccessfulRescale`` event, the scale event remembered) and the status; a sync whose
        metrics failed and that does not rescale writes the status upstream writes then (the previous desired
        replicas)."""
        hpa, current, mem = self.hpa, self.current, self.memory
        if self.stop == _FAILED and self.desired == current:
            status = self.status(_previous_desired(hpa), hpa.last_scale_time, mem)
            return self.decision(desired=current, memory=mem, status=status, without_event=mem)
        without_event = mem
        last_scale = hpa.last_scale_time
        desired = self.desired
        if desired != current:
            self.cond(_ABLE_TO_SCALE, "True", _SUCCEEDED_RESCALE,
                      f"the HPA controller was able to update the target scale to {desired}")
            self.events.append(Event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {self.reason}"))
            mem = store_scale_event(mem, hpa.behavior, current, desired, self.now)
            last_scale = self.now
        status = self.status(desired, last_scale, mem)
        return self.decision(desired=desired, memory=mem, status=status, without_event=without_event)

    def status(self, desired: int, last_scale: float | None, mem: Memory) -> HPAStatus:
        hpa = self.hpa
        sections = self.sections
        if "metric_health" not in sections and FALLBACK_SOURCE in self.enabled:  # the metrics were not evaluated
            sections["metric_health"] = metric_health(hpa, mem.metric_failures, {})
        return HPAStatus(current_replicas=self.current, desired_replicas=desired,
                         current_metrics=_current_metrics(self.proposals), conditions=tuple(self.conditions),
                         last_scale_time=last_scale, **sections)

    def decision(self, *, desired: int, memory: Memory, status: HPAStatus, without_event: Memory) -> Decision:
        bounds = self.bounds
        return Decision(
            desired_replicas=desired, rescale_reason=self.reason,
            proposals=self.proposals, prenormalized=self.pre, steps=self.steps, events=self.events,
            memory=memory, status=status, error=self.error, memory_without_event=without_event,
            sources=_with_winner(self.sources, self.decided_by), decided_by=self.decided_by,
            recommended_by=self.recommended_by, min_replicas_effective=bounds.min_replicas,
            max_replicas_effective=bounds.max_replicas,
        )


def _scaled_to_zero_status(hpa: HPA) -> bool:
    """The first ScaledToZero condition is True (upstream getScaledToZeroConditionStatus)."""
    for c in hpa.conditions:
        if c.type == _SCALED_TO_ZERO:
            return c.status == "True"
    return False


def _has_object_or_external(hpa: HPA) -> bool:
    return any(m.type in (OBJECT, EXTERNAL) for m in hpa.metrics)


#: the ``status.currentMetrics`` entry of a metric that failed: upstream's zero MetricStatus (``{"type": ""}``)
FAILED_METRIC_STATUS: dict = {"type": ""}


def _current_metrics(proposals: list[Proposal]) -> tuple[dict, ...] | None:
    """``status.currentMetrics`` as upstream's computeReplicasForMetrics makes it: one entry per ``spec.metrics``
    item, in order, a failed metric's left at the zero MetricStatus (``{"type": ""}``), so that entry *i* is always
    metric *i* (kubectl's TARGETS column reads it so); None (the API's ``null``) when the sync computed no metric
    (the replica count out of bounds, scaling disabled, a selector refused)."""
    if not proposals:
        return None
    return tuple(FAILED_METRIC_STATUS if p.status is None else p.status for p in proposals)


def _scaled_to_zero_condition(sync: _Sync, current: int, desired: int, min_replicas: int) -> None:
    """KEP-2021 (HPAScaleToZero), on every rescale with the gate on: ScaledToZero=True when this
    rescale takes the workload from >0 to 0 (minReplicas 0, an Object or External metric), else
    False/NotScaledToZero; with the gate off, a rescale removes the (first) ScaledToZero condition, as
    upstream's removeCondition. Without a rescale the condition is left as it is."""
    if not sync.config.scale_to_zero:
        for i, c in enumerate(sync.conditions):
            if c.type == _SCALED_TO_ZERO:
                del sync.conditions[i]
                return
        return
    if current > 0 and desired == 0 and min_replicas == 0 and _has_object_or_external(sync.hpa):
        sync.cond(_SCALED_TO_ZERO, "True", Reason.SCALED_TO_ZERO, "the HPA controller scaled the workload to zero")
    else:
        sync.cond(_SCALED_TO_ZERO, "False", _NOT_SCALED_TO_ZERO, "the HPA controller did not scale the workload to zero")


def decide(inputs: SyncInputs) -> Decision:
    """Decide one sync of one HPA from ``inputs`` (``SyncInputs``, built by keyword):

    - ``hpa``: the HPA, spec and the status it carries (its conditions, last scale time);
    - ``scale``: the target's Scale (``spec_replicas``: the current replica count; ``selector``: the pods' selector);
    - ``pods``: the pods of the HPA's namespace (the core applies ``scale.selector``);
    - ``samples``: ``samples[i]`` answers ``hpa.metrics[i]`` (milli-units, epoch s; ``error`` when the call failed);
    - ``memory``: the controller memory before the sync, not changed (the memory after is ``Decision.memory``);
    - ``now``: epoch seconds of the sync; ``config``: the controller flags and feature gates;
    - ``prenormalized``: a recommendation (replicas) given instead of the metrics': their evaluation is skipped and
      it is normalized (None: the metrics decide);
    - ``other_selectors``: (``namespace/name``, selector text) of other HPAs that may select the same pods: if any
      does, the sync stops with AmbiguousSelector, as upstream;
    - ``forecast``: the forecaster's answer when ``hpa.prediction`` is set (None: no forecast).

    Every source (``SOURCES``: schedules, metrics, fallback, prediction, saturation, pause) is evaluated in one
    loop and combined by the rule of ``pyhpa.core.combine`` (docs/combination.md); without the extensions the
    decision is upstream's. Never raises for bad metric data: failures become conditions, events and
    ``Decision.error``, as upstream.
    """
    hpa, scale, pods, now = inputs.hpa, inputs.scale, inputs.pods, inputs.now
    mem = inputs.memory.copy()
    if mem.recommendations is None:
        mem.recommendations = [(now, scale.spec_replicas)]
    sync = _Sync(hpa, scale, now, inputs.config, inputs.other_selectors, inputs.samples, inputs.forecast,
                 inputs.prenormalized, mem)
    sync.cond(_ABLE_TO_SCALE, "True", _SUCCEEDED_GET_SCALE,
              "the HPA controller was able to get the target's current scale")
    upstream_only = None  # the HPA carries upstream's conditions only: a source whose trace is a condition left none
    for source, steps, retires in _PLAN:
        for step in steps:  # the rule's steps on entering the stages up to the source's
            step(sync, pods)
        stage = source.stage
        if not source.enabled(sync):
            if retires:
                if retires == _CONDITION_ONLY:
                    if upstream_only is None:
                        upstream_only = _upstream_only(hpa.conditions)
                    if upstream_only:
                        continue
                gone = source.retired(sync)
                if gone is not None:
                    sync.apply(gone)
            continue
        sync.enabled.append(source.kind)
        # evaluated unless the sync stopped before its stage (the hold runs always; the metrics not with a given
        # recommendation)
        if stage is _HOLD or (sync.stop is None and not (stage is _METRICS and sync.given)):
            sync.apply(source.evaluate(sync))
    for step in _LAST_STEPS:
        step(sync, pods)
    return sync.finish()


#: the rule's step on entering each stage after the first (``pyhpa.core.sources``)
_STEP = {Stage.METRICS: _Sync.after_bounds, Stage.PROPOSALS: _Sync.after_metrics, Stage.HOLD: _Sync.after_proposals}


def _steps(after: Stage, to: Stage) -> tuple:
    """The steps on entering the stages after ``after`` up to ``to``."""
    return tuple(_STEP[s] for s in Stage if after < s <= to and s in _STEP)


#: how a source retires (``_PLAN``): never, always asked, or asked only when the HPA carries a condition upstream does
#: not set (a source whose only trace is its condition: ``Source.condition_only``)
_NEVER, _ALWAYS, _CONDITION_ONLY = 0, 1, 2
_UPSTREAM_CONDITIONS = frozenset((_ABLE_TO_SCALE, _SCALING_ACTIVE, _SCALING_LIMITED, _SCALED_TO_ZERO))


def _upstream_only(conditions: Sequence[Condition]) -> bool:
    """Every condition is one of upstream's four."""
    for c in conditions:
        if c.type not in _UPSTREAM_CONDITIONS:
            return False
    return True


def _retires(s: Source) -> int:
    if getattr(type(s), "retired", None) is nothing_to_retire:
        return _NEVER
    return _CONDITION_ONLY if getattr(s, "condition_only", False) else _ALWAYS


#: each source with the steps that run before it and how it retires; the steps after the last
_PLAN = tuple((s, _steps(SOURCES[i - 1].stage if i else Stage.BOUNDS, s.stage), _retires(s))
              for i, s in enumerate(SOURCES))
_LAST_STEPS = _steps(SOURCES[-1].stage, Stage.DONE)


def _remember_window_bound(mem: Memory, source: SourceRef, bound: int, current: int, min_r: int, max_r: int, hpa: HPA,
                           now: float, config: ControllerConfig) -> None:
    """A window's floor or cap that moved the replicas (no metrics evaluated, as upstream outside its bounds)
    is recorded as this sync's recommendation, by normalization's own rule, as the syncs inside the window
    that follow record it: a window shorter than a sync period is still followed by the usual stabilization.
    Spec bounds keep upstream's behavior (nothing recorded)."""
    if source is SPEC_MIN or source is SPEC_MAX:  # the spec's own (``effective_bounds`` gives these objects)
        return
    _, mem.recommendations, *_ = normalize(current, bound, min_r, max_r, hpa.behavior, mem, now, config)


def _bound_reason(where: str, source: SourceRef, value: int) -> str:
    """Upstream's rescale reason for a spec bound; the window named for a schedule's."""
    if source is SPEC_MIN or source is SPEC_MAX:  # the spec's own (``effective_bounds`` gives these objects)
        return f"Current number of replicas {where} Spec.{'MaxReplicas' if where == 'above' else 'MinReplicas'}"
    bound = "maxReplicas" if where == "above" else "minReplicas"
    return f"Current number of replicas {where} {source} {bound} ({value})"


def _previous_desired(hpa: HPA) -> int:
    """status.desiredReplicas as it was (upstream passes hpa.Status.DesiredReplicas; 0 without a status)."""
    d = hpa.status_desired_replicas
    return 0 if d is None else d


def _with_winner(sources: list[SourceProposal], winner: SourceRef | None) -> tuple[SourceProposal, ...]:
    """The sources, the one that set the final number (``winner``) marked ``won``. Every proposal was made by this
    sync and has not left it yet, so it is marked in place (``dataclasses.replace`` would copy it at ~5 us a sync)."""
    if winner is not None and winner.kind not in _NOT_SOURCES:
        for s in sources:
            if s.source == winner.kind and s.name == winner.name:
                object.__setattr__(s, "won", True)
                break
    return tuple(sources)


@lru_cache(maxsize=4096)
def _spec_bounds(min_replicas: int, max_replicas: int) -> Bounds:
    """The spec's bounds, no window active (``effective_bounds``; a ``Bounds`` is immutable: one per pair)."""
    return effective_bounds(min_replicas, max_replicas, ())


def rescale_failed(decision: Decision, hpa: HPA, message: str, now: float) -> Decision:
    """The scale update failed (upstream: FailedRescale / FailedUpdateScale).

    Returns a new Decision: no rescale, AbleToScale=False, the scale event not recorded,
    status with current replicas and metrics only.
    """
    conds = list(decision.conditions)
    _restore_scaled_to_zero(conds, hpa)  # upstream sets ScaledToZero only after a successful update
    set_condition(conds, _ABLE_TO_SCALE, "False", Reason.FAILED_UPDATE_SCALE,
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
        if c.type == _SCALED_TO_ZERO:
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
