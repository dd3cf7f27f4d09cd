"""The ``Pods`` metric type: a metric of each pod from the custom metrics API (custom.metrics.k8s.io, a
MetricValueList of pods, ``pyhpa.adapters.metrics_api.pods_samples``), with an AverageValue target. A snapshot keeps
its answer under ``metrics.pods.<name>``; its default history is ``sum(NAME{namespace, pod=~"<target>-.*", selector})``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...core.model import PODS, MetricSpec
from ..metrics_api import pods_samples
from ..promql import matchers
from ..selectors import selector_text
from .base import (
    NOT_SHOWN,
    MetricQuery,
    Shown,
    metric_identity,
    metric_name,
    named_spec,
    named_type,
    quantity_text,
    written_source,
)


def _query(item: Any) -> MetricQuery:
    return MetricQuery(PODS, item.pods.metric.name, "", selector_text(item.pods.metric.selector))


def _ask(client: Any, namespace: str, q: MetricQuery, selector: str) -> Any:
    return client.pods_metric(namespace, q.name, selector, q.metric_selector)


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


TYPE = named_type(
    name=PODS, field="pods", api="custom", per_pod=True, read=pods_samples, what="pods metric",
    spec=partial(named_spec, PODS), query=_query, ask=_ask, snapshot_key="pods",
    shown=_shown, identity=metric_identity(PODS), title=_title, history=_history,
)
