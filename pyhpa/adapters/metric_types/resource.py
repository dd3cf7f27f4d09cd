"""The ``Resource`` and ``ContainerResource`` metric types: a resource of the pods (cpu, memory) from the resource
metrics API (metrics.k8s.io), per pod the sum over its containers (``Resource``) or one container's
(``ContainerResource``), as upstream's REST metrics client reads it (``pyhpa.adapters.metrics_api.resource_samples``).

One list of the namespace's pod metrics answers every such metric of an autoscaler in a sync (``shared``), and a
snapshot keeps that one answer (``metrics.resource``). Their default history (``spec.prediction``) is cAdvisor's:
``container_cpu_usage_seconds_total`` (cores) and ``container_memory_working_set_bytes`` (bytes).
"""

from __future__ import annotations

from typing import Any

from ...core.model import CONTAINER_RESOURCE, RESOURCE, MetricSamples, MetricSpec
from ..metrics_api import fetch_failed, resource_samples
from ..promql import label_value
from .base import NOT_SHOWN, SNAPSHOT_FAILED, MetricQuery, MetricType, Shown, quantity_text, written_source

#: the PromQL matchers of every container of a pod but the pause container (``POD``), as cAdvisor labels them
ALL_CONTAINERS = 'container!="",container!="POD"'


def _resource_type(name: str, field: str, container: bool) -> MetricType:
    """The type ``name`` (``Resource``, or ``ContainerResource`` with ``container``), its source in ``field``."""

    def spec(source: Any, target_type: str, utilization: int | None, average: int | None,
             value: int | None) -> MetricSpec:
        return MetricSpec(name, source.name, target_type, utilization, average, None,
                          getattr(source, "container", "") or "")

    def query(item: Any) -> MetricQuery:
        source = getattr(item, field)
        return MetricQuery(name, source.name, getattr(source, "container", "") or "")

    def ask(client: Any, namespace: str, q: MetricQuery, selector: str) -> Any:
        return client.resource_metrics(namespace, selector)

    def samples(q: MetricQuery, answer: Any) -> MetricSamples:
        return resource_samples(answer, q.name, q.container if container else "")

    def from_snapshot(spec: MetricSpec, q: MetricQuery | None, metrics: dict, errors: set) -> MetricSamples:
        if "resource" in errors:
            return MetricSamples(error=fetch_failed("resource", SNAPSHOT_FAILED))
        if "resource" not in metrics:
            return MetricSamples(error="no metrics returned from resource metrics API")
        return resource_samples(metrics["resource"], spec.name, spec.container if container else "")

    def shown(item: dict) -> Shown:
        found = written_source(item, field)
        if found is None:
            return NOT_SHOWN
        source, target = found
        resource = source.get("name", "")
        label, identity = f"{resource}: ", (name, resource, source.get("container", "") if container else "")
        average = target.get("averageValue")
        if average is not None:
            return Shown(field, "averageValue", quantity_text(average), label, identity=identity)
        utilization = target.get("averageUtilization")
        return Shown(field, "averageUtilization", "<auto>" if utilization is None else f"{utilization}%", label,
                     percent=True, required=True, identity=identity)

    def identity(source: dict) -> tuple[str, str, str]:
        return name, source.get("name", ""), source.get("container", "") if container else ""

    def title(spec: MetricSpec, utilization: bool) -> str:
        what = "CPU" if spec.name == "cpu" else spec.name
        where = f" of container {spec.container}" if container else ""
        return f"{what} utilization{where}" if utilization else f"{what} per pod{where}"

    def history(q: MetricQuery, namespace: str, pods: str) -> tuple[str, str] | None:
        where = pods + "," + (f'container="{label_value(q.container)}"' if container else ALL_CONTAINERS)
        if q.name == "cpu":
            return f"sum(rate(container_cpu_usage_seconds_total{{{where}}}[5m]))", "cores"
        if q.name == "memory":
            return f"sum(container_memory_working_set_bytes{{{where}}})", "bytes"
        return None

    return MetricType(
        name=name, field=field, api="resource", resource=True, container=container, per_pod=True,
        spec=spec, query=query, ask=ask, shared=True, samples=samples,
        snapshot_key="resource", snapshot_named=False, from_snapshot=from_snapshot,
        shown=shown, identity=identity, title=title, history=history,
    )


RESOURCE_TYPE = _resource_type(RESOURCE, "resource", container=False)
CONTAINER_RESOURCE_TYPE = _resource_type(CONTAINER_RESOURCE, "containerResource", container=True)
TYPES = (RESOURCE_TYPE, CONTAINER_RESOURCE_TYPE)
