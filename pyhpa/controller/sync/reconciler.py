"""One sync of one autoscaler (upstream: HorizontalController.reconcileAutoscaler).

Gather (the target's Scale, the pods from the informer cache, each metric's answer, the controller
memory, the clock) into ``Gathered`` (the core's ``SyncInputs`` and the raw metric answers); let the decision
core (``pyhpa.core.decide``) decide; then act: update the target's scale when the decision says so
(``rescale_failed`` when that fails), keep the memory, write the status when it changed, and emit the
decision's events. Everything HPA-specific
is the core's; this module only moves inputs in and decisions out.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from ...core import (
    Decision,
    Event,
    HPAWarning,
    SyncInputs,
    check_hpa,
    decide,
    relevant_memory,
    rescale_failed,
)
from ...core.model import ConditionType, Reason
from ..cache.autoscaler import Autoscaler
from ..cache.informer import PodCache
from ..cache.scalecache import ScaleCache
from ..cache.selectors import SelectorIndex
from ..kube.api import ApiFailure, Cluster, SpecError
from ..outputs.events import EventRecorder
from ..outputs.logs import fields
from ..outputs.monitor import INTERNAL, NONE, SPEC, Monitor, action_label
from ..outputs.status import (
    StaleSpec,
    StatusWriter,
    remember_warnings,
    status_from_decision,
    status_with_condition,
    warning_entry,
    with_columns,
)
from ..outputs.writer import Writer, WritesDisabled
from .memory import MemoryStore
from .prediction import LivePredictions
from .sources import Fetched, MetricSources

log = logging.getLogger("pyhpa.controller.reconciler")


@dataclass(slots=True)
class Gathered:
    """Everything one sync gathered: the decision core's ``inputs`` (``pyhpa.core.SyncInputs``; its ``hpa`` is the
    autoscaler's core HPA as this sync decided it, ``autoscaler.hpa`` moves on with later syncs), the
    ``autoscaler`` and each metric's raw ``answers``: what ``pyhpa snapshot`` serializes into the explain snapshot
    format."""

    inputs: SyncInputs
    autoscaler: Autoscaler
    answers: list[Any]


@dataclass(slots=True)
class SyncResult:
    """How a sync ended. ``action``/``error`` are the reconciliation metric labels; ``retry`` asks for a
    backoff requeue (the sync could not finish its API calls), ``again`` for an immediate one."""

    key: str
    action: str = NONE
    error: str = NONE
    decision: Decision | None = None
    gathered: Gathered | None = None
    retry: bool = False
    again: bool = False
    message: str = ""
    #: why a sync that stopped before deciding failed (FailedGetScale, InvalidSpec); "" otherwise
    reason: str = ""


def _metric_error_label(error: str | None, reason: str) -> str:
    """spec for errors of the metric's spec (upstream: errSpec), internal for failed metric reads."""
    if error is None:
        return NONE
    if reason == "InvalidMetricSourceType" or "invalid" in error and "metric source" in error:
        return SPEC
    return INTERNAL


def decision_error_label(decision: Decision) -> str:
    """The reconciliation ``error`` label of a decision: the first error to occur, as upstream."""
    if decision.error is None:
        return NONE
    if any(e.reason in ("SelectorRequired", "InvalidSelector") for e in decision.events):
        return SPEC
    for p in decision.proposals:
        if p.error is not None:
            return _metric_error_label(p.error, p.reason)
    return INTERNAL


def _target(a: Autoscaler) -> str:
    ref = a.scale_target_ref
    return f"{ref.kind}/{ref.name}" if ref is not None else "-"


def decided_by(decision: Decision) -> str:
    """The source that set the final replica count: the core's ``Decision.decided_by`` as text (``Kind/name``, e.g.
    ``Metric/cpu resource utilization (percentage of request)``, ``Schedule/business-hours``), "-" without one."""
    return "-" if decision.decided_by is None else str(decision.decided_by)


def log_rescale(a: Autoscaler, decision: Decision) -> None:
    """One info line per rescale: the autoscaler, its target, old -> new, which source decided and why."""
    log.info("rescaled", extra=fields(
        autoscaler=a.key, target=_target(a), old=decision.current_replicas, new=decision.desired_replicas,
        decided_by=decided_by(decision), reason=decision.rescale_reason))


def log_failures(a: Autoscaler, decision: Decision) -> None:
    """One warning line per failed metric (its reason, e.g. FailedGetResourceMetric, and error), and one
    when the sync could not compute replicas for another reason (e.g. a missing selector)."""
    failed = False
    for p in decision.proposals:
        if p.error is not None:
            failed = True
            log.warning("metric failed", extra=fields(autoscaler=a.key, metric=p.metric, reason=p.reason or "-",
                                                      error=p.error))
    if decision.error and not failed:
        reason = next((e.reason for e in decision.events if e.type == "Warning"), "-")
        log.warning("cannot compute replicas", extra=fields(autoscaler=a.key, reason=reason, error=decision.error))


class Reconciler:
    """Syncs autoscalers by key; ``autoscalers`` and ``pods`` are the informers' caches."""

    def __init__(self, autoscalers: dict[str, Autoscaler], pods: PodCache, cluster: Cluster, sources: MetricSources,
                 memory: MemoryStore, writer: Writer, status: StatusWriter, events: EventRecorder, monitor: Monitor,
                 clock: Callable[[], float] = time.time, predictions: LivePredictions | None = None):
        self.autoscalers = autoscalers
        self.pods = pods
        self.cluster = cluster
        self.sources = sources
        self.memory = memory
        self.writer = writer
        self.status = status
        self.events = events
        self.monitor = monitor
        self.clock = clock
        self.predictions = predictions
        self.selectors = SelectorIndex()
        self.on_synced: Callable[[SyncResult], None] | None = None
        self.scales: ScaleCache | None = None  # targets' Scale from informers (pyhpa.controller.cache.scalecache)
        self._live: set[str] = set()  # keys whose next Scale read must be a GET (the cache may be stale)

    async def sync(self, key: str) -> SyncResult | None:
        """Sync ``key``; None when the autoscaler is gone. Never raises for API failures."""
        a = self.autoscalers.get(key)
        if a is None:
            return None
        start = time.perf_counter()
        try:
            result = await self._sync(a)
        except WritesDisabled as err:
            result = SyncResult(key, message=str(err))
        except StaleSpec as err:
            result = SyncResult(key, again=True, message=str(err))
        except ApiFailure as err:
            result = SyncResult(key, NONE, INTERNAL, retry=True, message=err.message)
            log.warning("sync failed", extra=fields(autoscaler=key, error=err.message))
        self.monitor.reconciliation(result.action, result.error, time.perf_counter() - start)
        if key in self.autoscalers:  # not deleted meanwhile (its series are gone and stay gone)
            self.monitor.autoscalers.synced(a, result, self.clock(), self.predictions)
        if self.on_synced is not None:
            self.on_synced(result)
        return result

    async def _sync(self, a: Autoscaler) -> SyncResult:
        now = self.clock()
        if a.hpa is None:
            return await self._invalid_spec(a, now)
        try:
            gathered, handle, fetched = await self.gather(a, now)
        except SpecError as err:
            return await self._failed_get_scale(a, now, str(err), SPEC)
        except ApiFailure as err:
            return await self._failed_get_scale(a, now, err.message, INTERNAL)
        inputs = gathered.inputs
        if inputs.hpa.prediction is not None and self.predictions is not None:
            inputs.forecast = self.predictions.forecast(a, now, inputs.samples)
        decision = decide(inputs)
        if decision.rescale and handle is None:  # decided from the Scale cache: never write from it
            try:
                live, handle = await self.cluster.get_scale(a.namespace, a.scale_target_ref)
            except SpecError as err:
                return await self._failed_get_scale(a, now, str(err), SPEC)
            except ApiFailure as err:
                return await self._failed_get_scale(a, now, err.message, INTERNAL)
            if live != inputs.scale:  # the cache was behind: decide again from the live Scale
                self._live.add(a.key)
                return await self._sync(a)
        self._observe_metrics(decision, fetched, inputs.scale.spec_replicas, a)
        checks = check_hpa(a.hpa, inputs.scale, inputs.pods, inputs.samples, a.config)
        return await self._act(a, gathered, decision, handle, checks)

    def _say(self, a: Autoscaler, status: dict, events: list[Event], checks: list[HPAWarning], now: float,
             stored: dict | None = None) -> None:
        """Send this sync's events, each Warning only when its cause was not said before: ``status.warnings``
        (``remember_warnings``) keeps the causes said, so a lasting cause is said once — not at every sync, not
        by another replica, not after a restart. Normal events (a rescale) are always sent. The checks'
        warnings (``pyhpa.core.check_hpa``: ScaleStarvation, PodSumHidesContainer, what keeps the autoscaler
        from working as written) are logged when said."""
        warnings = [e for e in events if e.type == "Warning"]
        check_events = [Event("Warning", w.reason, w.message) for w in checks]
        entries = [warning_entry(e) for e in warnings] + [warning_entry(e, w) for e, w in zip(check_events, checks)]
        new = remember_warnings(status, a.status if stored is None else stored, entries)
        if not new and len(warnings) == len(events):
            return
        fresh = {(e["reason"], e["message"]) for e in new}
        for event in events:
            if event.type != "Warning" or (event.reason, event.message[:1024]) in fresh:
                self.events.emit(a, event, now)
        for event in check_events:
            if (event.reason, event.message[:1024]) in fresh:
                log.warning("%s: %s: %s", a.key, event.reason, event.message)
                self.events.emit(a, event, now)

    async def gather(self, a: Autoscaler, now: float) -> tuple[Gathered, Any, list[Fetched]]:
        """The inputs of one sync of ``a`` (a valid spec) at epoch ``now``: the target's Scale (and the Scale
        object read, to write back), its pods from the cache, every metric's answer, the memory. Raises
        SpecError / ApiFailure when the Scale cannot be read; metric failures are in the samples.
        ``pyhpa snapshot`` serializes exactly this."""
        hpa, config = a.hpa, a.config  # as the sync started: an informer update may replace them meanwhile
        scale = None
        if self.scales is not None and a.key not in self._live:
            scale, handle = self.scales.get(a.namespace, a.scale_target_ref), None
        if scale is None:
            self._live.discard(a.key)
            scale, handle = await self.cluster.get_scale(a.namespace, a.scale_target_ref)
        pods = self.pods.select(a.namespace, scale.selector)
        self.selectors.put(a.key, a.namespace, scale.selector)
        others = self.selectors.candidates(a.key, a.namespace, pods)
        fetched = await self.sources.gather(a, scale)
        inputs = SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=[f.samples for f in fetched],
                            memory=self.memory.load(a, now), now=now, config=config, other_selectors=others)
        return Gathered(inputs, a, [f.answer for f in fetched]), handle, fetched

    async def _act(self, a: Autoscaler, gathered: Gathered, decision: Decision, handle: Any,
                   checks: list[HPAWarning] = ()) -> SyncResult:
        error, retry, now = decision_error_label(decision), False, gathered.inputs.now
        log_failures(a, decision)
        if decision.rescale:
            try:
                await self.writer.update_scale(a.namespace, a.scale_target_ref, handle, decision.desired_replicas)
                log_rescale(a, decision)
            except ApiFailure as err:
                log.warning("rescale failed", extra=fields(
                    autoscaler=a.key, target=_target(a), old=decision.current_replicas, new=decision.desired_replicas,
                    error=err.message))
                decision = rescale_failed(decision, a.hpa, err.message, now)
                error, retry = (INTERNAL if error == NONE else error), True
                self._live.add(a.key)  # the target moved (409) or the write failed: read it live next time
        memory = relevant_memory(decision.memory, a.hpa, a.config, now)
        self.memory.save(a, memory)
        self.monitor.desired(a.namespace, a.name, decision.desired_replicas)
        fit = self.predictions.fit(a.key) if self.predictions is not None and a.hpa.prediction is not None else None
        status = with_columns(status_from_decision(decision, a.generation, a.hpa, fit), a,
                              [p.status for p in decision.proposals])  # one per spec metric, None: it failed
        stored = a.status
        self._say(a, status, decision.events, list(checks), now, stored)  # before the status write, as upstream
        await self.status.write(a, status, memory, decision, stored)
        action = action_label(decision.current_replicas, decision.desired_replicas) if decision.rescale else NONE
        return SyncResult(a.key, action, error, decision, gathered, retry=retry, message=decision.error or "")

    def _observe_metrics(self, decision: Decision, fetched: list[Fetched], current: int, a: Autoscaler) -> None:
        """metric_type is ``spec.metrics[].type`` as written (``Prometheus`` for PromQL metrics)."""
        for p, f, q in zip(decision.proposals, fetched, a.queries):
            action = action_label(current, p.replicas) if p.replicas is not None else NONE
            self.monitor.metric_computation(action, _metric_error_label(p.error, p.reason), f.seconds, q.type)

    async def _failed_get_scale(self, a: Autoscaler, now: float, message: str, label: str) -> SyncResult:
        """Upstream: event FailedGetScale, condition AbleToScale=False FailedGetScale, status written."""
        log.warning("failed to get scale", extra=fields(autoscaler=a.key, target=_target(a), reason="FailedGetScale",
                                                        error=message))
        status = status_with_condition(a, ConditionType.ABLE_TO_SCALE, "False", Reason.FAILED_GET_SCALE,
                                       f"the HPA controller was unable to get the target's current scale: {message}",
                                       now)
        self._say(a, status, [Event("Warning", "FailedGetScale", message)], [], now)
        await self.status.write(a, status)
        return SyncResult(a.key, NONE, label, retry=True, message=message, reason="FailedGetScale")

    async def _invalid_spec(self, a: Autoscaler, now: float) -> SyncResult:
        """A spec the API server accepted but the controller cannot read: condition and event, others go on."""
        message = f"the HPA spec is invalid: {a.error}"
        log.warning("invalid spec", extra=fields(autoscaler=a.key, reason="InvalidSpec", error=a.error))
        status = status_with_condition(a, ConditionType.SCALING_ACTIVE, "False", Reason.INVALID_SPEC, message, now)
        self._say(a, status, [Event("Warning", "InvalidSpec", message)], [], now)
        await self.status.write(a, status)
        return SyncResult(a.key, NONE, SPEC, message=message, reason="InvalidSpec")
