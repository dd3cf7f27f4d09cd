"""``pyhpa snapshot``: the inputs of one sync of one autoscaler, in the explain snapshot format.

This module only fetches from the cluster; the format is written by ``pyhpa.adapters.snapshot``
(``snapshot_to_dict``), the module that also reads it.

The inputs are gathered by the controller's own code path (``Reconciler.gather``: the target's Scale, the
pods the Scale's selector picks from one pod LIST, every metric's answer through the same metric sources
and timeouts, the controller memory) with the write gate closed, and written as a snapshot
(tests/data/conformance/FORMAT.md) that ``pyhpa explain`` decides on exactly as the controller would:

- ``now``: the clock of the gathering (``--now``, else the wall clock);
- ``controller``: the controller flags, with the autoscaler's own settings (``spec.tolerance``, ...) applied;
- ``hpa``: an autoscaling/v2 HorizontalPodAutoscaler (a HorizontalAutoscaler's spec without its settings,
  its status without the memory), or, when the spec has extension fields (``schedules``, ...), a
  HorizontalAutoscaler that keeps them (``pyhpa.adapters.autoscaler.autoscaler_document``); PromQL metrics
  stay ``type: Prometheus`` items;
- ``scale``, ``pods`` (the pod objects as listed), ``metrics`` (each API's answer as received; failed
  calls listed in ``metrics.errors``), ``history`` (the memory kept in ``status.pyhpa``, when there is one,
  as ``StatusMemory`` gives it to a controller that starts now).
"""

from __future__ import annotations

from typing import Any

from lightkube.config.kubeconfig import SingleConfig
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler as HpaResource
from lightkube.resources.core_v1 import Pod as PodResource

from ..adapters.autoscaler import autoscaler_document
from ..adapters.errors import InputError
from ..adapters.metric_types import REGISTRY, MetricQuery
from ..adapters.parse import object_name
from ..adapters.prediction import forecast_from_status
from ..adapters.snapshot import controller_to_dict, metrics_to_dict, snapshot_to_dict
from . import Controller
from .cache.autoscaler import parse_autoscaler
from .kube.api import ApiFailure, HttpMetrics, LightkubeCluster, SpecError, as_failure
from .preview import never
from .settings import Settings
from .sync.memory import StatusMemory
from .sync.reconciler import Gathered

KINDS = {"horizontalautoscaler": "HorizontalAutoscaler", "hpa": "HorizontalPodAutoscaler"}


def parse_key(key: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` → (namespace, name), each a name the API server takes (``parse.object_name``); InputError
    otherwise."""
    ns, slash, name = key.partition("/")
    if not slash or not ns or not name or "/" in name:
        raise InputError(f"expected NAMESPACE/NAME, got {key!r}", field="NAMESPACE/NAME")
    return object_name(ns, "NAMESPACE/NAME", label=True), object_name(name, "NAMESPACE/NAME")


async def take_snapshot(settings: Settings, config: SingleConfig, namespace: str, name: str,
                        kind: str = "horizontalautoscaler", now: float = 0.0, http: str = "aiohttp") -> dict:
    """Gather the inputs of one sync of ``namespace/name`` at epoch ``now`` and return the snapshot document.
    ``kind`` is ``horizontalautoscaler`` or ``hpa`` (a native autoscaling/v2 HPA). Writes nothing."""
    cluster = LightkubeCluster(config, settings.api_timeout_seconds, settings.field_manager,
                               settings.list_chunk_size, settings.watch_timeout_seconds, http)
    metrics = HttpMetrics(cluster.raw, cluster.discovery, settings.metrics_timeout_seconds)
    # the memory a controller process without a working copy loads: what status.pyhpa keeps, if anything
    controller = Controller(settings, cluster, metrics, memory=StatusMemory(lambda: now), gate=never,
                            clock=lambda: now)
    try:
        a = parse_autoscaler(await _fetch(cluster, kind, namespace, name), settings)
        if a.hpa is None:
            raise InputError(f"the spec is invalid: {a.error}", obj=f"{KINDS[kind]} {namespace}/{name}")
        raw_pods = await _load_pods(controller, cluster, namespace)
        try:
            gathered, _, _ = await controller.reconciler.gather(a, now)
        except (SpecError, ApiFailure) as err:
            raise InputError(f"cannot read the target's scale: {getattr(err, 'message', err)}",
                             obj=f"{KINDS[kind]} {namespace}/{name}", field="spec.scaleTargetRef") from None
        return snapshot_document(gathered, [raw_pods[p.name] for p in gathered.inputs.pods], settings, KINDS[kind])
    finally:
        await controller.sources.close()
        await cluster.close()


async def _fetch(cluster: LightkubeCluster, kind: str, namespace: str, name: str) -> dict:
    """The object, as a plain dict; InputError when it is not there or the API cannot be reached."""
    label = f"{KINDS[kind]} {namespace}/{name}"
    try:
        if kind == "hpa":
            return (await cluster.client.get(HpaResource, name, namespace=namespace)).to_dict()
        return await cluster.get_autoscaler(namespace, name)
    except Exception as err:  # noqa: BLE001 - every failure is one line for the user
        failure = as_failure(err)
        problem = "not found" if failure.code == 404 else f"cannot read it: {failure.message}"
        raise InputError(problem, obj=label) from None


async def _load_pods(controller: Controller, cluster: LightkubeCluster, namespace: str) -> dict[str, dict]:
    """One LIST of the namespace's pods into the controller's pod cache (what its informer keeps); returns
    each pod object as received, by name."""
    try:
        items, _ = await cluster.listwatch(PodResource, namespace).list()  # whole pods: the snapshot keeps them
    except Exception as err:  # noqa: BLE001
        raise InputError(f"cannot list pods: {as_failure(err).message}", obj=f"namespace {namespace}") from None
    raw = {}
    for pod in items:
        controller.pods.upsert(f"{namespace}/{pod.metadata.name}", pod)
        raw[pod.metadata.name] = {"apiVersion": "v1", "kind": "Pod", **pod.to_dict()}
    return raw


def snapshot_document(gathered: Gathered, pods: list[dict], settings: Settings, kind: str) -> dict:
    """The snapshot (FORMAT.md, written by ``pyhpa.adapters.snapshot.snapshot_to_dict``) of what one sync
    gathered; ``pods`` are the selected pod objects as listed."""
    a, inputs = gathered.autoscaler, gathered.inputs
    c = inputs.config
    controller = controller_to_dict(c, syncPeriodSeconds=a.sync_period_seconds,
                                    metricsTimeoutSeconds=settings.metrics_timeout_seconds,
                                    prometheusUrl=settings.prometheus_url or None)
    answers = [(q.type, q.name, answer, answer is not None and _readable(q, answer))
               for q, answer in zip(a.queries, gathered.answers)]
    return snapshot_to_dict(
        name=a.key, source=f"pyhpa snapshot of {kind} {a.key}", now=inputs.now, controller=controller,
        hpa=autoscaler_document({"name": a.name, "namespace": a.namespace, "annotations": dict(a.pause) or None},
                                dict(a.spec or {}), a.status),
        scale=inputs.scale, scale_name=a.scale_target_ref.name, namespace=a.namespace, pods=pods,
        metrics=metrics_to_dict(answers), memory=inputs.memory if a.memory_status is not None else None,
        forecast=_forecast(gathered),
    )


def _forecast(gathered: Gathered):
    """With ``spec.prediction``: the forecast of this sync, else the one the controller last wrote in
    ``status.prediction`` (``pyhpa snapshot`` has no forecaster of its own)."""
    a = gathered.autoscaler
    if a.hpa is None or a.hpa.prediction is None:
        return None
    return gathered.inputs.forecast or forecast_from_status(a.status)


def _readable(q: MetricQuery, answer: Any) -> bool:
    """An answer the snapshot loader can read, as the metric's type says (``MetricType.readable``; Prometheus: any
    JSON answer, errors included)."""
    t = REGISTRY.get(q.type)
    return t is not None and t.readable(q, answer)
