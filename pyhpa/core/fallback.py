"""Fallback when metrics fail (``spec.fallback`` and ``spec.metrics[].fallback``, KEDA's names).

Upstream keeps the current replica count while a metric cannot be computed and never scales down
then — but it cannot scale up either (a valid metric may only raise the count), so a night in which
the metrics chain is broken becomes a morning of overload. A HorizontalAutoscaler may give a fallback:

- **When a metric is in fallback.** Every sync in which a metric cannot be computed (any
  ``FailedGet*Metric``, for every metric type, CPU and memory included) adds one to its
  ``numberOfFailures``; a sync in which it can be computed resets it. The metric's fallback applies
  from the sync at which ``numberOfFailures > failureThreshold`` (KEDA: the count *passes* the
  threshold: ``failureThreshold: 3`` means three failed syncs as upstream, the fourth uses the
  fallback; ``0`` means the first failure) and/or ``now - firstFailureTime >= failureDurationSeconds``
  (KEP-5679's duration). With both given both must hold; with neither, ``failureThreshold`` is 3.
- **What it proposes** (``current`` = the target's ``spec.replicas`` at the sync):
  ``static`` (default) → ``replicas``; ``currentReplicas`` → ``current``;
  ``currentReplicasIfHigher`` → ``max(current, replicas)`` (the current count when it is higher);
  ``currentReplicasIfLower`` → ``min(current, replicas)`` (the current count when it is lower).
- **How it is combined.** The fallback replicas are that metric's proposal (source ``Fallback``):
  they join upstream's maximum over the metrics, so a healthy metric that wants more wins and the
  fallback never scales below what a healthy metric wants (unlike KEDA #6659); a metric in fallback
  is not an *invalid* metric for upstream's rule (which otherwise blocks every scale-down while a
  metric fails, and every decision when all fail). The result is then normalized as any
  recommendation (stabilization, policies, min/max).
- **A metric's own fallback** overrides the spec-wide one field by field; ``failureThreshold`` and
  ``failureDurationSeconds`` are one setting (a metric that gives either replaces both).

The failure counts are controller memory (``Memory.metric_failures``), input and output of ``decide``,
kept only for an HPA with a fallback: an HPA without one decides, writes and remembers exactly as before.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from functools import lru_cache

from .metrics import describe
from .model import (
    CONTAINER_RESOURCE,
    DEFAULT_FAILURE_THRESHOLD,
    EXTERNAL,
    FAILING,
    FALLBACK_BEHAVIORS,
    FALLBACK_CURRENT,
    FALLBACK_CURRENT_IF_HIGHER,
    FALLBACK_CURRENT_IF_LOWER,
    FALLBACK_SOURCE,
    FALLBACK_STATIC,
    HAPPY,
    HPA,
    OBJECT,
    PODS,
    ConditionType,
    Event,
    FallbackSpec,
    Memory,
    MetricFailures,
    MetricHealth,
    MetricSpec,
    SourceKind,
    SourceProposal,
)
from .sources import FallbackOutcome, SourceInputs, Stage

__all__ = ["FALLBACK_CONDITION", "FALLBACK_ENDED", "FALLBACK_STARTED", "FallbackReason", "FallbackSource",
           "FallbackTracker", "applies", "capped_failures", "check_fallback", "effective_fallback", "failure_caps",
           "fallback_replicas", "has_fallback", "metric_health", "metric_key"]

#: condition type and reasons
FALLBACK_CONDITION = ConditionType.FALLBACK


class FallbackReason(StrEnum):
    """The reasons of the ``Fallback`` condition."""

    FALLBACK_ACTIVE = "FallbackActive"
    METRICS_FAILING = "MetricsFailing"
    METRICS_HEALTHY = "MetricsHealthy"


#: event reasons
FALLBACK_STARTED = "FallbackStarted"
FALLBACK_ENDED = "FallbackEnded"


def has_fallback(hpa: HPA) -> bool:
    """True when the spec or any metric gives a fallback (only then are failures counted)."""
    if hpa.fallback is not None:
        return True
    return any(m.fallback is not None for m in hpa.metrics)


def metric_key(spec: MetricSpec) -> str:
    """A metric's key in the memory and ``status.metricHealth``: what is queried, not the target
    (``Resource/cpu``, ``ContainerResource/cpu/app``, ``Pods/rps``, ``Object/Ingress/main/hits``,
    ``External/queue``; a metric selector is appended as ``{a=b}``)."""
    if spec.type == CONTAINER_RESOURCE:
        key = f"{spec.type}/{spec.name}/{spec.container}"
    elif spec.type == OBJECT and spec.described_object is not None:
        key = f"{spec.type}/{spec.described_object[0]}/{spec.described_object[1]}/{spec.name}"
    else:
        key = f"{spec.type}/{spec.name}" if spec.name else spec.type
    if spec.selector and spec.type in (OBJECT, EXTERNAL, PODS):
        key += "{" + spec.selector + "}"
    return key


@lru_cache(maxsize=1024)
def effective_fallback(spec_wide: FallbackSpec | None, own: FallbackSpec | None) -> FallbackSpec | None:
    """The fallback that applies to one metric: its own over the spec-wide one, field by field, with
    the defaults filled in (behavior ``static``; neither trigger given: ``failureThreshold`` 3).
    None when neither is given."""
    if own is None and spec_wide is None:
        return None
    own = own or FallbackSpec()
    base = spec_wide or FallbackSpec()
    threshold, duration = own.failure_threshold, own.failure_duration_seconds
    if threshold is None and duration is None:
        threshold, duration = base.failure_threshold, base.failure_duration_seconds
    if threshold is None and duration is None:
        threshold = DEFAULT_FAILURE_THRESHOLD
    return FallbackSpec(
        replicas=own.replicas if own.replicas is not None else base.replicas,
        behavior=own.behavior or base.behavior or FALLBACK_STATIC,
        failure_threshold=threshold,
        failure_duration_seconds=duration,
    )


def check_fallback(fb: FallbackSpec) -> list[tuple[str, str]]:
    """What is wrong with an effective fallback, as (field, message) pairs (empty when valid).

    Fields: ``replicas``, ``behavior``, ``failureThreshold``, ``failureDurationSeconds``."""
    problems: list[tuple[str, str]] = []
    if fb.behavior not in FALLBACK_BEHAVIORS:
        problems.append(("behavior", f"must be one of {', '.join(FALLBACK_BEHAVIORS)}, got {fb.behavior!r}"))
    if fb.replicas is None and fb.behavior != FALLBACK_CURRENT:
        problems.append(("replicas", f"is required with behavior {fb.behavior}"))
    if fb.replicas is not None and fb.replicas < 0:
        problems.append(("replicas", f"must be at least 0, got {fb.replicas}"))
    if fb.failure_threshold is not None and fb.failure_threshold < 0:
        problems.append(("failureThreshold", f"must be at least 0, got {fb.failure_threshold}"))
    if fb.failure_duration_seconds is not None and not fb.failure_duration_seconds >= 0:
        problems.append(("failureDurationSeconds", f"must be at least 0, got {fb.failure_duration_seconds}"))
    return problems


def fallback_replicas(fb: FallbackSpec, current: int) -> int:
    """What a metric in fallback proposes, ``current`` being the target's ``spec.replicas``."""
    b, r = fb.behavior, fb.replicas
    if b == FALLBACK_CURRENT or r is None:
        return current
    if b == FALLBACK_CURRENT_IF_HIGHER:
        return max(current, r)
    if b == FALLBACK_CURRENT_IF_LOWER:
        return min(current, r)
    return r


def applies(fb: FallbackSpec, failures: MetricFailures, now: float) -> bool:
    """True when ``failures`` (this sync's included) pass ``fb``'s threshold and/or duration."""
    if fb.failure_threshold is not None and failures.number_of_failures <= fb.failure_threshold:
        return False
    if fb.failure_duration_seconds is not None and now - failures.first_failure_time < fb.failure_duration_seconds:
        return False
    return True


def _threshold_text(fb: FallbackSpec) -> str:
    parts = []
    if fb.failure_threshold is not None:
        parts.append(f"more than {fb.failure_threshold} failed syncs")
    if fb.failure_duration_seconds is not None:
        parts.append(f"{fb.failure_duration_seconds:g}s of failures")
    return " and ".join(parts)


class FallbackTracker:
    """The fallback part of one sync's metric evaluation (used by ``pyhpa.core.reconcile``).

    ``failed``/``succeeded`` are called for every metric in spec order; ``failed`` returns the
    Fallback source when the metric is in fallback. ``finish`` gives the new ``metric_failures``,
    the ``Fallback`` condition and the ``FallbackStarted``/``FallbackEnded`` events.
    """

    __slots__ = ("hpa", "previous", "now", "current", "failures", "sources", "events", "problems")

    def __init__(self, hpa: HPA, previous: dict[str, MetricFailures], now: float, current: int):
        self.hpa = hpa
        self.previous = previous
        self.now = now
        self.current = current
        self.failures: dict[str, MetricFailures] = {}
        self.sources: dict[str, SourceProposal] = {}
        self.events: list[Event] = []
        self.problems: list[str] = []

    def succeeded(self, spec: MetricSpec, name: str) -> None:
        key = metric_key(spec)
        prev = self.previous.get(key)
        if prev is not None and prev.fallback_since is not None:
            self.events.append(Event("Normal", FALLBACK_ENDED,
                                     f"fallback for {name} ended: the metric is available again after "
                                     f"{prev.number_of_failures} failed syncs"))

    def failed(self, spec: MetricSpec, name: str) -> SourceProposal | None:
        key = metric_key(spec)
        prev = self.previous.get(key)
        if key in self.failures:  # the same query twice in the spec: counted once per sync
            state = self.failures[key]
        elif prev is None:
            state = MetricFailures(number_of_failures=1, first_failure_time=self.now)
        else:
            state = MetricFailures(number_of_failures=prev.number_of_failures + 1,
                                   first_failure_time=prev.first_failure_time, fallback_since=prev.fallback_since)
        fb = effective_fallback(self.hpa.fallback, spec.fallback)
        if fb is None or not applies(fb, state, self.now):
            why = "no fallback" if fb is None else f"fallback after {_threshold_text(fb)}"
            self.problems.append(f"{name} ({state.number_of_failures} failed syncs; {why})")
            if state.fallback_since is not None:
                self.events.append(Event("Normal", FALLBACK_ENDED,
                                         f"fallback for {name} ended: its fallback no longer applies"))
            self.failures[key] = MetricFailures(number_of_failures=state.number_of_failures,
                                                first_failure_time=state.first_failure_time)
            return None
        replicas = fallback_replicas(fb, self.current)
        if state.fallback_since is None:
            state = MetricFailures(number_of_failures=state.number_of_failures,
                                   first_failure_time=state.first_failure_time, fallback_since=self.now)
            self.events.append(Event(
                "Warning", FALLBACK_STARTED,
                f"fallback for {name}: {replicas} replicas ({fb.behavior}) after {state.number_of_failures} "
                f"consecutive failed syncs over {self.now - state.first_failure_time:g}s"))
        self.failures[key] = state
        source = SourceProposal(source=FALLBACK_SOURCE, name=name, replicas=replicas,
                                note=f"{fb.behavior}: {state.number_of_failures} consecutive failed syncs")
        self.sources[key] = source
        return source

    def condition(self) -> tuple[str, str, str]:
        """(status, reason, message) of the ``Fallback`` condition."""
        if self.sources:
            active = "; ".join(f"{s.name}: {s.replicas} replicas" for s in self.sources.values())
            return "True", FallbackReason.FALLBACK_ACTIVE, f"metrics in fallback: {active}"
        if self.problems:
            return "False", FallbackReason.METRICS_FAILING, "failing metrics not in fallback: " + "; ".join(self.problems)
        return "False", FallbackReason.METRICS_HEALTHY, "every metric is available"


def metric_health(hpa: HPA, failures: dict[str, MetricFailures],
                  sources: dict[str, SourceProposal]) -> tuple[MetricHealth, ...]:
    """``status.metricHealth``: one entry per metric of the spec (a query named twice: once), in spec
    order; ``sources`` are this sync's Fallback sources by metric key. Each ``number_of_failures`` is at most
    its metric's cap (``failure_caps``: past it more failures change no decision), so a metric that stays down
    does not change the status at every sync."""
    out, seen = [], set()
    caps = failure_caps(hpa) if any(f.number_of_failures > 1 for f in failures.values()) else None
    for spec in hpa.metrics:
        name = describe(spec)
        key = metric_key(spec)
        if key in seen:
            continue
        seen.add(key)
        f = failures.get(key)
        src = sources.get(key)
        if f is None:
            out.append(MetricHealth(metric=key, name=name, number_of_failures=0, status=HAPPY))
        else:
            n = f.number_of_failures if caps is None else min(f.number_of_failures, caps.get(key, f.number_of_failures))
            out.append(MetricHealth(metric=key, name=name, number_of_failures=n, status=FAILING,
                                    first_failure_time=f.first_failure_time, fallback_since=f.fallback_since,
                                    fallback_replicas=None if src is None else src.replicas))
    return tuple(out)


def failure_caps(hpa: HPA | None) -> dict[str, int]:
    """Per metric key (``metric_key``), the count of consecutive failures past which more failures
    change no decision: one past its fallback's ``failureThreshold`` (the fallback applies from there on), 1
    when its fallback has a duration only (the count never decides). Metrics without a fallback: none."""
    caps: dict[str, int] = {}
    if hpa is None:
        return caps
    for m in hpa.metrics:
        fb = effective_fallback(hpa.fallback, m.fallback)
        if fb is not None:
            key = metric_key(m)
            cap = fb.failure_threshold + 1 if fb.failure_threshold is not None else 1
            caps[key] = max(caps.get(key, 0), cap)
    return caps


def capped_failures(memory: Memory, hpa: HPA | None) -> Memory:
    """``memory`` with each metric's ``number_of_failures`` at most its cap (``failure_caps``): the memory to
    persist (``status.pyhpa``), so that a metric that stays down does not rewrite the status at every sync;
    decides exactly as the uncapped count (the fallback applies either way, its ``fallback_since`` is kept).
    ``memory`` itself when no count is above its cap."""
    failures = memory.metric_failures
    if not failures or all(f.number_of_failures <= 1 for f in failures.values()):
        return memory
    caps = failure_caps(hpa)
    if not any(f.number_of_failures > caps.get(k, f.number_of_failures) for k, f in failures.items()):
        return memory
    capped = {k: f if f.number_of_failures <= caps.get(k, f.number_of_failures)
              else replace(f, number_of_failures=caps[k]) for k, f in failures.items()}
    return Memory(memory.recommendations, memory.scale_up_events, memory.scale_down_events, capped)


class FallbackSource:
    """The Fallback source (``spec.fallback``, ``spec.metrics[].fallback``): after the metrics, each failing
    metric's failures counted (``FallbackTracker``) and, past its threshold, its fallback replicas as the proposal
    that stands in for it in upstream's rule; the ``Fallback`` condition, the ``FallbackStarted``/``FallbackEnded``
    events, ``status.metricHealth`` (``metric_health``) and the new ``Memory.metric_failures``. A fallback removed
    from the spec takes its condition and its failure counts with it."""

    kind = SourceKind.FALLBACK
    stage = Stage.METRICS

    def enabled(self, inputs: SourceInputs) -> bool:
        return has_fallback(inputs.hpa)

    def retired(self, inputs: SourceInputs) -> FallbackOutcome | None:
        if not inputs.memory.metric_failures and inputs.condition(FALLBACK_CONDITION) is None:
            return None
        return FallbackOutcome(drop=FALLBACK_CONDITION, failures={})

    def evaluate(self, inputs: SourceInputs) -> FallbackOutcome:
        hpa = inputs.hpa
        track = FallbackTracker(hpa, inputs.memory.metric_failures, inputs.now, inputs.current)
        fallbacks, stands_for = [], []
        for i, (spec, p) in enumerate(zip(hpa.metrics, inputs.proposals)):
            if p.error is None:
                track.succeeded(spec, p.metric)
                continue
            fb = track.failed(spec, p.metric)
            if fb is not None:
                fallbacks.append(fb)
                stands_for.append(i)
        return FallbackOutcome(proposals=tuple(fallbacks), stands_for=tuple(stands_for),
                               conditions=((FALLBACK_CONDITION, *track.condition()),), events=tuple(track.events),
                               section=("metric_health", metric_health(hpa, track.failures, track.sources)),
                               failures=track.failures)
