"""``pyhpa run --preview``: what pyhpa would decide for the cluster's own HPAs, without touching anything.

The controller watches native autoscaling/v2 HorizontalPodAutoscalers instead of HorizontalAutoscalers and
syncs each one as usual (Scale GET, pods from the cache, metrics APIs), lets the decision core decide
(``pyhpa.core.decide``), and then only reports: one structured log line per sync and Prometheus metrics
comparing pyhpa's desired replicas with the cluster's ``status.desiredReplicas``. The write gate refuses
every write, so even a bug cannot scale, write a status or send an event.

Memory is kept in process, as upstream's controller keeps it: pyhpa's own recommendations (stabilization
window) and, for the scaling policies, the scale changes the cluster actually made (seen as a change of
the target's replicas between two syncs, dated by the HPA's ``status.lastScaleTime`` when that falls in
between) — not the rescales pyhpa would have made, which never happened.
"""

from __future__ import annotations

import logging
from typing import Any, AsyncIterator

from prometheus_client import CollectorRegistry, Counter, Gauge

from ..core import Decision, store_scale_event
from .cache.autoscaler import Autoscaler
from .cache.informer import Informers
from .kube.api import ListWatch
from .outputs.logs import fields, logfmt
from .outputs.monitor import NONE, SPEC, Monitor, action_label
from .sync.memory import InProcessMemory
from .sync.reconciler import Gathered, Reconciler, SyncResult, decision_error_label

log = logging.getLogger("pyhpa.preview")

AGREE, DIFFER, UNKNOWN, ERROR = "agree", "differ", "unknown", "error"


class PreviewMonitor(Monitor):
    """The controller's metrics plus the preview's: pyhpa's and the cluster's desired replicas per HPA,
    and how many syncs agreed with the cluster (``result`` agree or differ)."""

    def __init__(self, registry: CollectorRegistry | None = None):
        super().__init__(registry)
        labels = ["namespace", "hpa_name"]
        self.preview_desired = Gauge("pyhpa_preview_desired_replicas",
                                     "Desired replicas pyhpa would set for a native HPA (--preview).", labels,
                                     registry=self.registry)
        self.cluster_desired = Gauge("pyhpa_preview_cluster_desired_replicas",
                                     "status.desiredReplicas of the native HPA, as the cluster decided.", labels,
                                     registry=self.registry)
        self.preview_decisions = Counter("pyhpa_preview_decisions",
                                         "Preview syncs whose desired replicas agree or differ with the cluster's.",
                                         ["result"], registry=self.registry)

    def compared(self, namespace: str, name: str, desired: int, cluster: int | None) -> str:
        """Record one comparison; agree/differ, or unknown when the cluster has no desiredReplicas yet."""
        self.preview_desired.labels(namespace, name).set(desired)
        if cluster is None:
            return UNKNOWN
        self.cluster_desired.labels(namespace, name).set(cluster)
        result = AGREE if desired == cluster else DIFFER
        self.preview_decisions.labels(result).inc()
        return result

    def deleted(self, namespace: str, name: str) -> None:
        super().deleted(namespace, name)
        for gauge in (self.preview_desired, self.cluster_desired):
            try:
                gauge.remove(namespace, name)
            except KeyError:
                pass


class PreviewMemory(InProcessMemory):
    """In-process memory, plus the target's replicas at the last sync (to see the cluster's rescales)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, tuple[int, float]] = {}

    def forget(self, key: str) -> None:
        super().forget(key)
        self.seen.pop(key, None)


class DictListWatch:
    """A ListWatch whose objects (lightkube models) are handed on as plain dicts, the shape the
    HorizontalAutoscaler informer delivers (``parse_autoscaler`` reads both kinds the same way)."""

    def __init__(self, inner: ListWatch):
        self._inner = inner

    async def list(self) -> tuple[list, str]:
        items, rv = await self._inner.list()
        return [_as_dict(o) for o in items], rv

    async def watch(self, resource_version: str) -> AsyncIterator[tuple[str, Any]]:
        async for etype, obj in self._inner.watch(resource_version):
            yield etype, _as_dict(obj)


def _as_dict(obj: Any) -> Any:
    return obj.to_dict() if hasattr(obj, "to_dict") else obj


def conditions_text(conditions) -> str:
    """``Type=Status/Reason`` of each condition, comma-separated."""
    return ",".join(f"{c.type}={c.status}/{c.reason}" for c in conditions)


class PreviewReconciler(Reconciler):
    """A Reconciler that decides and reports, and never acts (``monitor`` is a PreviewMonitor,
    ``memory`` a PreviewMemory)."""

    monitor: PreviewMonitor
    memory: PreviewMemory

    async def gather(self, a: Autoscaler, now: float):
        """The usual inputs; a change of the target's replicas since the last sync is a scale event the
        cluster made, recorded in the memory as upstream records its own (scaling policies count it)."""
        gathered, handle, fetched = await super().gather(a, now)
        inputs = gathered.inputs
        current = inputs.scale.spec_replicas
        seen = self.memory.seen.get(a.key)
        self.memory.seen[a.key] = (current, now)
        if seen is not None and seen[0] != current and a.hpa.behavior is not None:
            last = a.hpa.last_scale_time
            at = last if last is not None and seen[1] < last <= now else now
            inputs.memory = store_scale_event(inputs.memory, a.hpa.behavior, seen[0], current, at)
        return gathered, handle, fetched

    async def _act(self, a: Autoscaler, gathered: Gathered, decision: Decision, handle: Any,
                   checks: Any = ()) -> SyncResult:
        """Keep pyhpa's recommendations (not its hypothetical rescale), report, write nothing (no events: the
        checks' warnings are not said either)."""
        self.memory.save(a, decision.memory_without_event or decision.memory)
        self.monitor.desired(a.namespace, a.name, decision.desired_replicas)
        cluster = cluster_desired(a)
        result = self.monitor.compared(a.namespace, a.name, decision.desired_replicas, cluster)
        self._report(a, result, decision.desired_replicas, cluster, gathered.inputs.scale.spec_replicas,
                     decision.rescale_reason if decision.rescale else (decision.error or ""),
                     conditions_text(decision.conditions))
        action = action_label(decision.current_replicas, decision.desired_replicas) if decision.rescale else NONE
        return SyncResult(a.key, action, decision_error_label(decision), decision, gathered,
                          message=decision.error or "")

    async def _failed_get_scale(self, a: Autoscaler, now: float, message: str, label: str) -> SyncResult:
        self._report(a, ERROR, None, cluster_desired(a), None, f"FailedGetScale: {message}", "")
        return SyncResult(a.key, NONE, label, retry=True, message=message, reason="FailedGetScale")

    async def _invalid_spec(self, a: Autoscaler, now: float) -> SyncResult:
        message = f"the HPA spec is invalid: {a.error}"
        self._report(a, ERROR, None, None, None, f"InvalidSpec: {message}", "")
        return SyncResult(a.key, NONE, SPEC, message=message, reason="InvalidSpec")

    def _report(self, a: Autoscaler, result: str, desired: int | None, cluster: int | None, current: int | None,
                reason: str, conditions: str) -> None:
        """The one structured log line of a preview sync."""
        cluster_conditions = conditions_text(a.hpa.conditions) if a.hpa is not None else ""
        log.info("preview", extra=fields(
            hpa=a.key, result=result, desired=desired, cluster_desired=cluster, current=current,
            cluster_current=a.status.get("currentReplicas"), reason=reason, conditions=conditions,
            cluster_conditions=cluster_conditions))


def cluster_desired(a: Autoscaler) -> int | None:
    """The HPA's ``status.desiredReplicas``; None until the cluster's HPA controller has synced it (no status
    conditions yet: a new HPA's status says 0 replicas, Go's zero value, not a decision)."""
    if a.hpa is None or not a.hpa.conditions:
        return None
    return a.hpa.status_desired_replicas


def never() -> bool:
    """The write gate of ``--preview``: no write, ever."""
    return False


def enable_preview(controller: Any) -> None:
    """Turn a just-built ``Controller`` into the preview: native HPA informer, gate closed, in-process
    memory, the preview's metrics and reconciler. Called from ``Controller.__init__`` when
    ``settings.preview``; ``controller.cluster`` must have ``hpas(namespace)``."""
    c = controller
    c.writer.gate = never
    c.memory = PreviewMemory()
    c.monitor = PreviewMonitor()
    old = c.reconciler
    c.reconciler = PreviewReconciler(c.autoscalers, c.pods, c.cluster, c.sources, c.memory, c.writer, c.status,
                                     c.events, c.monitor, old.clock)
    c.autoscaler_informer = Informers("hpas", lambda ns: DictListWatch(c.cluster.hpas(ns)), c.settings.namespaces,
                                     c._on_autoscaler, c._on_autoscaler_deleted)


__all__ = ["PreviewMonitor", "PreviewReconciler", "enable_preview", "logfmt"]
