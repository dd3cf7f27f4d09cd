"""The ``External`` metric type: a metric of something outside the cluster from the external metrics API
(external.metrics.k8s.io, an ExternalMetricValueList, ``pyhpa.adapters.metrics_api.external_samples``: every series
counts, upstream sums them), with a Value or AverageValue target. A snapshot keeps its answer under
``metrics.external.<name>``; its default history is ``sum(NAME{selector})``.
"""

from __future__ import annotations

from typing import Any

from ...core.model import EXTERNAL, MetricSamples, MetricSpec
from ..metrics_api import external_samples
from ..promql import matchers
from ..selectors import selector_text
from .base import (
    MetricQuery,
    MetricType,
    Shown,
    metric_identity,
    named_spec,
    shown_by_value,
    snapshot_named_samples,
    value_title,
)


def _spec(source: Any, target_type: str, utilization: int | None, average: int | None,
          value: int | None) -> MetricSpec:
    return named_spec(EXTERNAL, source, target_type, utilization, average, value)


def _query(item: Any) -> MetricQuery:
    return MetricQuery(EXTERNAL, item.external.metric.name, "", selector_text(item.external.metric.selector))


def _ask(client: Any, namespace: str, q: MetricQuery, selector: str) -> Any:
    return client.external_metric(namespace, q.name, q.metric_selector)


def _samples(q: MetricQuery, answer: Any) -> MetricSamples:
    return external_samples(answer, f"external metric {q.name}")


def _from_snapshot(spec: MetricSpec, q: MetricQuery | None, metrics: dict, errors: set) -> MetricSamples:
    # every item the external metrics API returned counts (upstream sums them all; the adapter
    # behind the API applies the metric selector, so the snapshot holds its answer as given)
    return snapshot_named_samples(TYPE, spec.name, metrics, errors, external_samples)


def _shown(item: dict) -> Shown:
    return shown_by_value(EXTERNAL, "external", item)


def _history(q: MetricQuery, namespace: str, pods: str) -> tuple[str, str] | None:
    sel = matchers(q.metric_selector).lstrip(",")
    return f"sum({q.name}{{{sel}}})", "the metric's unit"


TYPE = MetricType(
    name=EXTERNAL, field="external", api="external",
    spec=_spec, query=_query, ask=_ask, samples=_samples,
    snapshot_key="external", from_snapshot=_from_snapshot,
    shown=_shown, identity=metric_identity(EXTERNAL), title=value_title, history=_history,
)
