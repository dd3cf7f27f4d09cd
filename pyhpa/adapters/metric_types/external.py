"""The ``External`` metric type: a metric of something outside the cluster from the external metrics API
(external.metrics.k8s.io, an ExternalMetricValueList, ``pyhpa.adapters.metrics_api.external_samples``: every series
counts, upstream sums them), with a Value or AverageValue target. A snapshot keeps its answer under
``metrics.external.<name>`` (every item the external metrics API returned counts: upstream sums them all, and the
adapter behind the API applies the metric selector, so the snapshot holds its answer as given); its default history
is ``sum(NAME{selector})``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...core.model import EXTERNAL
from ..metrics_api import external_samples
from ..promql import matchers
from ..selectors import selector_text
from .base import MetricQuery, metric_identity, named_spec, named_type, shown_by_value, value_title


def _query(item: Any) -> MetricQuery:
    return MetricQuery(EXTERNAL, item.external.metric.name, "", selector_text(item.external.metric.selector))


def _ask(client: Any, namespace: str, q: MetricQuery, selector: str) -> Any:
    return client.external_metric(namespace, q.name, q.metric_selector)


def _history(q: MetricQuery, namespace: str, pods: str) -> tuple[str, str] | None:
    sel = matchers(q.metric_selector).lstrip(",")
    return f"sum({q.name}{{{sel}}})", "the metric's unit"


TYPE = named_type(
    name=EXTERNAL, field="external", api="external", read=external_samples, what="external metric",
    spec=partial(named_spec, EXTERNAL), query=_query, ask=_ask, snapshot_key="external",
    shown=partial(shown_by_value, EXTERNAL, "external"), identity=metric_identity(EXTERNAL), title=value_title,
    history=_history,
)
