"""The ``Object`` metric type: a metric of one Kubernetes object (``describedObject``) from the custom metrics API
(custom.metrics.k8s.io, a MetricValue, ``pyhpa.adapters.metrics_api.object_samples``), with a Value or AverageValue
target. A snapshot keeps its answer under ``metrics.object.<name>``; its default history is
``sum(NAME{namespace, selector})``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...core.model import OBJECT, MetricSpec
from ..metrics_api import object_samples
from ..promql import matchers
from ..selectors import selector_text
from .base import MetricQuery, metric_identity, named_spec, named_type, shown_by_value, value_title


def _spec(source: Any, target_type: str, utilization: int | None, average: int | None,
          value: int | None) -> MetricSpec:
    d = source.describedObject
    return named_spec(OBJECT, source, target_type, utilization, average, value, (d.kind, d.name), d.apiVersion or "")


def _query(item: Any) -> MetricQuery:
    source = item.object
    d = source.describedObject
    return MetricQuery(OBJECT, source.metric.name, "", selector_text(source.metric.selector),
                       (d.apiVersion or "", d.kind, d.name))


def _ask(client: Any, namespace: str, q: MetricQuery, selector: str) -> Any:
    return client.object_metric(namespace, q.described, q.name, q.metric_selector)


def _history(q: MetricQuery, namespace: str, pods: str) -> tuple[str, str] | None:
    return f'sum({q.name}{{namespace="{namespace}"{matchers(q.metric_selector)}}})', "the metric's unit"


TYPE = named_type(
    name=OBJECT, field="object", api="custom", read=object_samples, what="object metric",
    spec=_spec, query=_query, ask=_ask, snapshot_key="object",
    shown=partial(shown_by_value, OBJECT, "object"), identity=metric_identity(OBJECT), title=value_title,
    history=_history,
)
