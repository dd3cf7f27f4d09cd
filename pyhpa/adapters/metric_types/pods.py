"""The ``Pods`` metric type: a metric of each pod from the custom metrics API (custom.metrics.k8s.io, a
MetricValueList of pods, ``pyhpa.adapters.metrics_api.pods_samples``), with an AverageValue target. A snapshot keeps
its answer under ``metrics.pods.<name>``; its default history is ``sum(NAME{namespace, pod=~"<target>-.*", selector})``.
"""

from __future__ import annotations

from typing import Any

from ...core.model import PODS, MetricSamples, MetricSpec
from ..metrics_api import pods_samples
from ..promql import matchers
from ..selectors import selector_text
from .base import (
    NOT_SHOWN,
    MetricQuery,
    MetricType,
    Shown,
    metric_identity,
    metric_name,
    named_spec,
    quantity_text,
    snapshot_named_samples,
    written_source,
)


def _spec(source: Any, target_type: str, utilization: int | None, average: int | None,
          value: int | None) -> MetricSpec:
    return named_spec(PODS, source, target_type, utilization, average, value)


def _query(item: Any) -> MetricQuery:
    return MetricQuery(PODS, item.pods.metric.name, "", selector_text(item.pods.metric.selector))


def _ask(client: Any, namespace: str, q: MetricQuery, selector: str) -> Any:
    return client.pods_metric(namespace, q.name, selector, q.metric_selector)


def _samples(q: MetricQuery, answer: Any) -> MetricSamples:
    return pods_samples(answer, f"pods metric {q.name}")


def _from_snapshot(spec: MetricSpec, q: MetricQuery | None, metrics: dict, errors: set) -> MetricSamples:
    return snapshot_named_samples(TYPE, spec.name, metrics, errors, pods_samples)


def _shown(item: dict) -> Shown:
    found = written_source(item, "pods")
    if found is None:
        return NOT_SHOWN
    source, target = found
    return Shown("pods", "averageValue", quantity_text(target.get("averageValue")),
                 identity=(PODS, metric_name(source), ""))


def _title(spec: MetricSpec, utilization: bool) -> str:
    return f"{spec.name} per pod"


def _history(q: MetricQuery, namespace: str, pods: str) -> tuple[str, str] | None:
    return f"sum({q.name}{{{pods}{matchers(q.metric_selector)}}})", "the metric's unit"


TYPE = MetricType(
    name=PODS, field="pods", api="custom", per_pod=True,
    spec=_spec, query=_query, ask=_ask, samples=_samples,
    snapshot_key="pods", from_snapshot=_from_snapshot,
    shown=_shown, identity=metric_identity(PODS), title=_title, history=_history,
)
