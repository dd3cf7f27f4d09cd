"""``pyhpa snapshot``: the inputs of one sync of one autoscaler, in the explain snapshot format.

The inputs are gathered by the controller's own code path (``Reconciler.gather``: the target's Scale, the
pods the Scale's selector picks from one pod LIST, every metric's answer through the same metric sources
and timeouts, the controller memory) with the write gate closed, and written as a snapshot
(tests/data/conformance/FORMAT.md) that ``pyhpa explain`` decides on exactly as the controller would:

- ``now``: the clock of the gathering (``--now``, else the wall clock);
- ``controller``: the controller flags, with the autoscaler's own settings (``spec.tolerance``, ...) applied;
- ``hpa``: an autoscaling/v2 HorizontalPodAutoscaler (a HorizontalAutoscaler's spec without its settings,
  its status without the memory); PromQL metrics stay ``type: Prometheus`` items;
- ``scale``, ``pods`` (the pod objects as listed), ``metrics`` (each API's answer as received; failed
  calls listed in ``metrics.errors``), ``history`` (the memory kept in ``status.pyhpa``, when there is one,
  as ``StatusMemory`` gives it to a controller that starts now).
"""

from __future__ import annotations

from typing import Any

from lightkube.config.kubeconfig import SingleConfig
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler as HpaResource

from ..adapters.autoscaler import API_VERSION as AUTOSCALER_API_VERSION
from ..adapters.autoscaler import KIND as AUTOSCALER_KIND
from ..adapters.errors import InputError
from ..adapters.kubectl import status_forecast
from ..adapters.parse import format_time
from ..adapters.promql import PROMETHEUS
from ..adapters.snapshot import forecast_to_dict, memory_to_dict
from . import Controller
from .api import ApiFailure, HttpMetrics, LightkubeCluster, SpecError, as_failure
from .autoscaler import MetricQuery, hpa_document, parse_autoscaler
from .memory import StatusMemory
from .preview import never
from .reconciler import SyncInputs
from .settings import Settings
from .sources import _samples

KINDS = {"horizontalautoscaler": "HorizontalAutoscaler", "hpa": "HorizontalPodAutoscaler"}
#: ``metrics`` key of the snapshot for each metric source type.
METRIC_KEYS = {"Resource": "resource", "ContainerResource": "resource", "Pods": "pods", "Object": "object",
               "External": "external", PROMETHEUS: "prometheus"}


def parse_key(key: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` → (namespace, name); InputError otherwise."""
    ns, slash, name = key.partition("/")
    if not slash or not ns or not name or "/" in name:
        raise InputError(f"expected NAMESPACE/NAME, got {key!r}", field="NAMESPACE/NAME")
    return ns, name


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
            inputs, _, _ = await controller.reconciler.gather(a, now)
        except (SpecError, ApiFailure) as err:
            raise InputError(f"cannot read the target's scale: {getattr(err, 'message', err)}",
                             obj=f"{KINDS[kind]} {namespace}/{name}", field="spec.scaleTargetRef") from None
        return snapshot_document(inputs, [raw_pods[p.name] for p in inputs.pods], settings, KINDS[kind])
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
        items, _ = await cluster.pods(namespace).list()
    except Exception as err:  # noqa: BLE001
        raise InputError(f"cannot list pods: {as_failure(err).message}", obj=f"namespace {namespace}") from None
    raw = {}
    for pod in items:
        controller.pods.upsert(f"{namespace}/{pod.metadata.name}", pod)
        raw[pod.metadata.name] = {"apiVersion": "v1", "kind": "Pod", **pod.to_dict()}
    return raw


def snapshot_document(inputs: SyncInputs, pods: list[dict], settings: Settings, kind: str) -> dict:
    """The snapshot (FORMAT.md) of one sync's inputs; ``pods`` are the selected pod objects as listed."""
    a = inputs.autoscaler
    spec = dict(a.obj.get("spec") or {})
    doc = {
        "name": a.key,
        "source": f"pyhpa snapshot of {kind} {a.key}",
        "level": "controller",
        "now": format_time(inputs.now),
        "controller": controller_document(inputs, settings),
        "hpa": hpa_document({"name": a.name, "namespace": a.namespace}, spec, a.status),
        "scale": {"apiVersion": "autoscaling/v1", "kind": "Scale",
                  "metadata": {"name": a.scale_target_ref.name, "namespace": a.namespace},
                  "spec": {"replicas": inputs.scale.spec_replicas},
                  "status": {"replicas": inputs.scale.status_replicas, "selector": inputs.scale.selector}},
        "pods": pods,
        "metrics": metrics_document(a.queries, inputs.answers),
    }
    if a.memory_status is not None:
        doc["history"] = memory_to_dict(inputs.memory)
    if "prediction" in spec:  # a HorizontalAutoscaler with spec.prediction, and the forecast it last had
        doc["hpa"] = dict(doc["hpa"], apiVersion=AUTOSCALER_API_VERSION, kind=AUTOSCALER_KIND,
                          spec=dict(doc["hpa"]["spec"], prediction=spec["prediction"]))
        forecast = inputs.forecast or status_forecast({"status": a.status})
        if forecast is not None:
            doc["forecast"] = forecast_to_dict(forecast)
    return doc


def controller_document(inputs: SyncInputs, settings: Settings) -> dict:
    """The snapshot's ``controller``: the decision core's config as this autoscaler gets it (flags with its
    own settings applied), plus the flags that only say how inputs were gathered."""
    c, a = inputs.config, inputs.autoscaler
    out = {
        "tolerance": c.tolerance,
        "cpuInitializationPeriodSeconds": c.cpu_initialization_period_seconds,
        "initialReadinessDelaySeconds": c.initial_readiness_delay_seconds,
        "downscaleStabilizationWindowSeconds": c.downscale_stabilization_window_seconds,
        "scaleUpLimitFactor": c.scale_up_limit_factor,
        "featureGates": {"HPAScaleToZero": c.scale_to_zero, "HPAConfigurableTolerance": c.configurable_tolerance},
        "syncPeriodSeconds": a.sync_period_seconds,
        "metricsTimeoutSeconds": settings.metrics_timeout_seconds,
    }
    if settings.prometheus_url:
        out["prometheusUrl"] = settings.prometheus_url
    return out


def metrics_document(queries: tuple[MetricQuery, ...], answers: list[Any]) -> dict:
    """``metrics``: each API's answer as received, by source and metric name; calls that failed (no answer,
    or one the controller could not read) in ``errors`` as ``resource`` / ``<key>:<metric name>``."""
    out: dict[str, Any] = {}
    errors: list[str] = []
    for q, answer in zip(queries, answers):
        key = METRIC_KEYS.get(q.type)
        if key is None or answer is None:  # unknown type, or not asked (unusable selector)
            continue
        label = key if key == "resource" else f"{key}:{q.name}"
        if not _readable(q, answer):
            if label not in errors:
                errors.append(label)
        elif key == "resource":
            out["resource"] = answer
        else:
            out.setdefault(key, {})[q.name] = answer
    if errors:
        out["errors"] = errors
    return out


def _readable(q: MetricQuery, answer: Any) -> bool:
    """An answer the snapshot loader can read (Prometheus: any JSON answer, errors included)."""
    if not isinstance(answer, dict):
        return False
    if q.type == PROMETHEUS:
        return True
    try:
        _samples(q, answer)
    except InputError:
        return False
    return True
