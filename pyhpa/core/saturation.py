"""The Saturation source (``spec.saturation``): pods pinned at their CPU limit ask for more.

A pod whose CPU is limited cannot use more than its limit: when the demand rises above what the pods can
serve, their CPU usage stops at the limit and the utilization the HPA reads is a *lower bound* of the
demand. Upstream then proposes ``usage / target`` (1.43x the pods at a 70 % target when they read 100 %),
waits a sync and a start-up, sees the new pods pinned too, and proposes 1.43x again: a burst of 2.5x
takes two or three rounds (kubernetes/kubernetes#51650, #18291). Knative's KPA answers a burst with its
panic mode; the Saturation source is the same idea for CPU-limited pods:

- **Pinned** — the ready pods of the metric (``pyhpa.core.calculator.group_pods``: ready, CPU initialized,
  with a sample) use at least ``pinnedPercent`` of their CPU limit, summed over them
  (``pod_amount(..., limits=True)``: the pod-level limit when set, else the containers'; for a
  ContainerResource metric that container's). A pod without a CPU limit is never pinned: its usage shows
  the whole demand, and the source stays out (``NoCPULimit``).
- **Proposal** — while pinned, the demand is assumed to be ``demandFactor`` times the ready pods' usage,
  sized at the metric's target as the Prediction source sizes a total (``averageUtilization`` % of the
  pods' mean request, or limit with ``utilizationBasis: Limit``; ``averageValue``):
  ``ceil(usage x demandFactor / per-pod target)``, never below the current replicas (in panic KPA never
  scales down). It counts the *ready* pods only: pods still starting add nothing, so the proposal does not
  compound from sync to sync while they start; when they are ready and still pinned, the next round asks
  ``demandFactor`` times again.
- **Bounds** — the proposal is one more replica source in the combination rule (the largest wins), so
  upstream's stabilization, ``behavior`` policies (or the scale-up limit) and min/max apply to it; the
  scale-down stabilization window keeps the pods for its length after the burst, as KPA leaves panic after
  a full stable window.

Not pinned, the source asks for nothing and says why. Without ``spec.saturation`` nothing here runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .calculator import MetricError, ceil_saturate, group_pods, pod_amount
from .combine import per_pod_target
from .metrics import metric_index_problem
from .model import (
    BELOW_LIMIT,
    CONTAINER_RESOURCE,
    ENFORCE,
    MAX_INT32,
    NO_CPU_LIMIT,
    NO_CPU_SAMPLES,
    OBSERVING,
    PINNED_AT_LIMIT,
    PREDICTION_MODES,
    RESOURCE,
    SATURATION_ACTIVE,
    SATURATION_SOURCE,
    ControllerConfig,
    Event,
    MetricSamples,
    MetricSpec,
    Pod,
    PodGroups,
    SaturationSpec,
    SaturationStatus,
    SourceKind,
    SourceProposal,
)
from .sources import Outcome, SourceInputs, Stage, condition_dropped

__all__ = [
    "MAX_DEMAND_FACTOR", "MAX_PINNED_PERCENT", "MIN_DEMAND_FACTOR", "MIN_PINNED_PERCENT", "SaturationSource",
    "SaturationSpec", "SaturationStatus", "check_saturation", "saturation_metric", "saturation_proposal",
]

#: ``pinnedPercent`` lies in [MIN_PINNED_PERCENT, MAX_PINNED_PERCENT] (percent of the CPU limit).
MIN_PINNED_PERCENT = 50
MAX_PINNED_PERCENT = 100
#: ``demandFactor`` lies in (MIN_DEMAND_FACTOR, MAX_DEMAND_FACTOR]: more than what the pods show, at most 10x.
MIN_DEMAND_FACTOR = 1.0
MAX_DEMAND_FACTOR = 10.0


def _is_cpu(m: MetricSpec) -> bool:
    return m.type in (RESOURCE, CONTAINER_RESOURCE) and m.name == "cpu"


def saturation_metric(spec: SaturationSpec, metrics: Sequence[MetricSpec]) -> int | None:
    """The index of the metric ``spec`` watches: ``spec.metric``, or the first Resource/ContainerResource
    ``cpu`` metric; None when there is none."""
    if spec.metric is not None:
        return spec.metric if 0 <= spec.metric < len(metrics) else None
    return next((i for i, m in enumerate(metrics) if _is_cpu(m)), None)


def check_saturation(spec: SaturationSpec, metrics: Sequence[MetricSpec] | None = None) -> list[tuple[str, str]]:
    """What is wrong with ``spec``, as (field, message) pairs (empty when it is valid); fields are relative to
    ``spec.saturation``. With ``metrics`` (the HPA's ``spec.metrics``) the watched metric must be a
    Resource or ContainerResource ``cpu`` metric with a Utilization or AverageValue target."""
    problems: list[tuple[str, str]] = []
    why = None if spec.metric is None else metric_index_problem(spec.metric, metrics)
    if why is not None:
        problems.append(("metric", why))
    elif metrics is not None:
        i = saturation_metric(spec, metrics)
        if i is None:
            problems.append(("metric", "spec.metrics has no Resource or ContainerResource cpu metric to watch "
                                       "(pods are pinned at their CPU limit)"))
        elif not _is_cpu(metrics[i]):
            problems.append(("metric", f"spec.metrics[{i}] is not a Resource or ContainerResource cpu metric"))
    if not MIN_PINNED_PERCENT <= spec.pinned_percent <= MAX_PINNED_PERCENT:
        problems.append(("pinnedPercent", f"must be in [{MIN_PINNED_PERCENT}, {MAX_PINNED_PERCENT}] (percent of the "
                                          f"CPU limit), got {spec.pinned_percent!r}"))
    if not MIN_DEMAND_FACTOR < spec.demand_factor <= MAX_DEMAND_FACTOR:
        problems.append(("demandFactor", f"must be above {MIN_DEMAND_FACTOR:g} and at most {MAX_DEMAND_FACTOR:g}, "
                                         f"got {spec.demand_factor!r}"))
    if spec.mode not in PREDICTION_MODES:
        problems.append(("mode", f"must be {' or '.join(PREDICTION_MODES)}, got {spec.mode!r}"))
    return problems


def saturation_proposal(spec: SaturationSpec, metric: MetricSpec, samples: MetricSamples, pods: Sequence[Pod],
                        current: int, now: float, config: ControllerConfig, name: str,
                        groups: PodGroups | None = None) -> tuple[SourceProposal, SaturationStatus]:
    """The Saturation source of one sync and what ``status.saturation`` reports (see the module docstring).

    ``metric``/``samples`` are the watched cpu metric and what the metrics API answered for it (millicores);
    ``pods`` the pods the HPA selected; ``current`` the target's replicas; ``now`` epoch s; ``name`` the metric
    as upstream names it in messages; ``groups`` the replica calculator's grouping of these pods for this
    metric when the sync has it (else it is made here, by the same rule). Never raises: a pod without a CPU
    limit or no sample to judge makes the source stay out (``SourceProposal.error``: the ``SaturationActive``
    reason)."""
    applied = spec.mode == ENFORCE
    if samples.error is not None or not samples.pods:
        return _aside(spec, name, NO_CPU_SAMPLES, "no CPU samples of the pods this sync: nothing to judge")
    container = metric.container if metric.type == CONTAINER_RESOURCE else ""
    if groups is None:
        groups = group_pods(list(pods), samples.pods, True, now, config)
    skip = set(groups.unready).union(groups.ignored) if groups.unready or groups.ignored else ()
    got = samples.pods.get
    key = ("cpu", container)
    usage = limit = ready = 0
    for p in pods:
        s = got(p.name)
        if s is None or p.name in skip:
            continue
        value = p.limits.get(key)  # pod_amount's fast path, inline: this runs at every sync
        if value is None:
            try:
                value = pod_amount(p, "cpu", container, limits=True)
            except MetricError as err:
                return _aside(spec, name, NO_CPU_LIMIT, f"no CPU limit to be pinned at ({err}): the pods' usage is "
                                                        "not capped and shows the whole demand")
        limit += value
        usage += s.value
        ready += 1
    if ready == 0 or limit <= 0:
        return _aside(spec, name, NO_CPU_SAMPLES, "no ready pod with a CPU sample and a CPU limit to judge")
    percent = usage * 100 // limit
    if percent < spec.pinned_percent:  # the message does not change with the usage: no status write per sync
        message = (f"the ready pods use less than {spec.pinned_percent} % of their CPU limit: "
                   "their usage shows the demand")
        return _aside(spec, name, BELOW_LIMIT, message, percent, ready)
    per_pod, why = per_pod_target(metric, pods)
    if per_pod is None or per_pod <= 0:
        return _aside(spec, name, NO_CPU_SAMPLES, why or "the metric's target cannot size the demand", percent, ready)
    replicas = max(ceil_saturate(usage * spec.demand_factor / per_pod - 1e-9, MAX_INT32), current)
    message = (f"the {ready} ready pods use {percent} % of their CPU limit: the demand is above what they can show; "
               f"assuming {spec.demand_factor:g}x their usage ({_cores(usage * spec.demand_factor)}) asks for "
               f"{replicas} replicas")
    reason = PINNED_AT_LIMIT if applied else OBSERVING
    note = "" if applied else "Observe mode: computed and reported, never applied"
    source = SourceProposal(source=SATURATION_SOURCE, name=name, replicas=replicas, applied=applied, note=note)
    return source, SaturationStatus(reason=reason, message=message, mode=spec.mode, pinned=True,
                                    usage_percent=percent, ready_pods=ready, replicas=replicas)


def _aside(spec: SaturationSpec, name: str, reason: str, message: str, percent: int | None = None,
           ready: int = 0) -> tuple[SourceProposal, SaturationStatus]:
    source = SourceProposal(source=SATURATION_SOURCE, name=name, applied=False, error=reason, note=message)
    return source, SaturationStatus(reason=reason, message=message, mode=spec.mode, usage_percent=percent,
                                    ready_pods=ready)


def _cores(milli: float) -> str:
    return f"{math.ceil(milli - 1e-9)}m CPU"


_NO_SAMPLES = MetricSamples()


class SaturationSource:
    """The Saturation source (``spec.saturation``, the rules above): its proposal, the ``SaturationActive``
    condition, ``status.saturation`` and a Warning event ``PinnedAtLimit`` when the pods become pinned. It needs
    the metrics' samples: not evaluated when a recommendation is given. What it means to the people who read
    it (``Explained``): active is pinned."""

    kind = SourceKind.SATURATION
    stage = Stage.PROPOSALS
    condition_only = True  # what it leaves when retired is its condition alone
    field = "saturation"
    active_words = "pods pinned at their CPU limit"
    never_active = "the ready pods never reached pinnedPercent of their CPU limit"

    @staticmethod
    def summary(spec: SaturationSpec) -> str:
        """``spec`` in one line: ``pinned at 95 % of the CPU limit, demand factor 2, mode Enforce``."""
        return (f"pinned at {spec.pinned_percent} % of the CPU limit, demand factor {spec.demand_factor:g}, "
                f"mode {spec.mode}")

    @staticmethod
    def active_text(spec: SaturationSpec) -> str:
        """Pinned, with ``spec``'s threshold: ``pods pinned at 95 % of their CPU limit``."""
        return f"pods pinned at {spec.pinned_percent} % of their CPU limit"

    @staticmethod
    def explain(st: SaturationStatus) -> tuple[str, ...]:
        """One sync's ``status.saturation`` in lines: pinned, its message; else the ready pods' usage when it
        could be judged and why the source stays out."""
        if st.replicas is not None:
            return (f"pinned: {st.message}",)
        judged = () if st.usage_percent is None else (
            f"the {st.ready_pods} ready pods use {st.usage_percent} % of their CPU limit",)
        return (*judged, f"stays out [{st.reason}]: {st.message}")

    def enabled(self, inputs: SourceInputs) -> bool:
        return inputs.hpa.saturation is not None and not inputs.given

    def retired(self, inputs: SourceInputs) -> Outcome | None:
        """``spec.saturation`` removed: its ``SaturationActive`` condition goes with it (kept while a given
        recommendation skips the source)."""
        return None if inputs.hpa.saturation is not None else condition_dropped(inputs, SATURATION_ACTIVE)

    def evaluate(self, inputs: SourceInputs) -> Outcome:
        hpa = inputs.hpa
        spec = hpa.saturation
        assert spec is not None
        i = saturation_metric(spec, hpa.metrics)
        if i is None:  # an object the adapter would refuse: say so, never raise
            p = SourceProposal(source=SATURATION_SOURCE, name="cpu", applied=False, error=NO_CPU_SAMPLES,
                               note="spec.saturation watches no Resource or ContainerResource cpu metric")
            st = SaturationStatus(reason=NO_CPU_SAMPLES, message=p.note, mode=spec.mode)
        else:
            s = inputs.samples[i] if i < len(inputs.samples) else _NO_SAMPLES
            groups = inputs.proposals[i].groups if i < len(inputs.proposals) else None  # the metric's own grouping
            p, st = saturation_proposal(spec, hpa.metrics[i], s, inputs.pods, inputs.current, inputs.now,
                                        inputs.config, inputs.metric_name(i), groups)
        events = ()
        before = inputs.condition(SATURATION_ACTIVE)
        if st.pinned and (before is None or before.reason not in (PINNED_AT_LIMIT, OBSERVING)):
            events = (Event("Warning", PINNED_AT_LIMIT, st.message),)
        condition = (SATURATION_ACTIVE, "True" if st.reason == PINNED_AT_LIMIT else "False", st.reason, st.message)
        return Outcome(proposals=(p,), conditions=(condition,), section=(self.field, st), events=events)
