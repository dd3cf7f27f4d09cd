"""The ``Prometheus`` metric type, a pyhpa extension of autoscaling/v2 (HorizontalAutoscaler only): an instant PromQL
query (``GET /api/v1/query``) asked of a Prometheus server by the controller itself, for users without a metrics
adapter. Its API fields are ``pyhpa.api.v1alpha1.PrometheusMetric`` (``spec.metrics[].prometheus``). Two shapes:

- per pod (``podLabel`` set, e.g. ``pod``): each series' value is that pod's value; the metric then acts exactly as a
  ``Pods`` metric (AverageValue target, missing and unready pods handled by the core as upstream does);
- a single value (no ``podLabel``): the query must return one series or a scalar; the metric acts as an ``External``
  metric (Value or AverageValue target).

The core decides it as the type it acts as (``v2_equivalent``: also the shape of its ``status.currentMetrics`` entry
and of its TARGETS text); its answer is read by ``pyhpa.adapters.promql`` (values in milli-units, as
``Quantity.MilliValue()``, rounded up). A snapshot keeps the answer under ``metrics.prometheus.<name>`` (a failed
query: ``prometheus:<name>`` in ``metrics.errors``); its default history is its own query (summed when per pod).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...core.model import AVERAGE_VALUE, EXTERNAL, PODS, VALUE, MetricSamples, MetricSpec
from ..errors import InputError
from ..parse import milli
from ..promql import PromQuery, query_answer, samples_from_answer
from . import external, pods
from .base import MetricQuery, MetricType, Shown, value_title

#: ``spec.metrics[].type`` of a PromQL metric (a pyhpa extension of autoscaling/v2).
PROMETHEUS = "Prometheus"


def metric_from_dict(d: dict, field: str, default_server: str | None = None) -> tuple[MetricSpec, PromQuery]:
    """(core MetricSpec, PromQuery) from a ``{"type": "Prometheus", "prometheus": {...}}`` metric.

    ``prometheus``: ``name`` (for messages and status), ``query``, ``server`` (default
    ``default_server``), ``podLabel``, ``timeoutSeconds`` (default 5), ``target`` (a
    MetricTarget: AverageValue for per-pod queries; Value or AverageValue otherwise).
    Raises InputError naming ``field``.
    """
    p = d.get("prometheus")
    if not isinstance(p, dict):
        raise InputError("a Prometheus metric needs the 'prometheus' field", field=f"{field}.prometheus")
    f = f"{field}.prometheus"
    query, server = p.get("query"), p.get("server") or default_server
    if not isinstance(query, str) or not query.strip():
        raise InputError("needs a PromQL 'query'", field=f"{f}.query")
    if not server:
        raise InputError("needs a 'server' (or the controller's --prometheus-url)", field=f"{f}.server")
    timeout = p.get("timeoutSeconds", 5)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise InputError("must be a positive number of seconds", field=f"{f}.timeoutSeconds")
    pod_label = p.get("podLabel")
    target = p.get("target") or {}
    if not isinstance(target, dict):
        raise InputError("must be a MetricTarget (type and value or averageValue)", field=f"{f}.target")
    ttype = target.get("type")
    allowed = (AVERAGE_VALUE,) if pod_label else (VALUE, AVERAGE_VALUE)
    if ttype not in allowed:
        raise InputError(f"target type {ttype!r} not allowed here (allowed: {', '.join(allowed)})", field=f"{f}.target.type")
    key = "averageValue" if ttype == AVERAGE_VALUE else "value"
    if key not in target:
        raise InputError(f"target type {ttype} needs {key}", field=f"{f}.target.{key}")
    value = milli(target[key], f"{f}.target.{key}")
    name = str(p.get("name") or query)
    if pod_label:
        spec = MetricSpec(PODS, name, AVERAGE_VALUE, None, value)
    elif ttype == AVERAGE_VALUE:
        spec = MetricSpec(EXTERNAL, name, AVERAGE_VALUE, None, value, None, "", "promql")
    else:
        spec = MetricSpec(EXTERNAL, name, VALUE, None, None, value, "", "promql")
    return spec, PromQuery(server.rstrip("/"), query, pod_label, float(timeout))


def v2_equivalent(spec: MetricSpec, target: Any) -> dict:
    """The autoscaling/v2 ``spec.metrics[]`` item a PromQL metric acts as: a Pods metric (per pod) or an
    External metric (single value), named ``spec.name``, with the Prometheus metric's ``target``. This is
    also the shape of its ``status.currentMetrics`` entry (the core writes Pods/External statuses)."""
    key = "pods" if spec.type == PODS else "external"
    return {"type": spec.type, key: {"metric": {"name": spec.name}, "target": target}}


def _extension(item: dict, field: str, server: str | None) -> tuple[MetricSpec, MetricQuery, dict]:
    spec, q = metric_from_dict(item, field, server)
    return spec, MetricQuery(PROMETHEUS, spec.name, params=q), v2_equivalent(spec, item["prometheus"].get("target"))


async def _fetch(http: Any, q: MetricQuery) -> tuple[MetricSamples, Any]:
    """One instant query, bounded by the metric's ``timeoutSeconds`` as a whole (httpx2's own timeout
    is per read, so a server that trickles bytes could otherwise take longer)."""
    prom: PromQuery = q.params
    try:
        async with asyncio.timeout(prom.timeout_seconds):
            return await query_answer(http, prom)
    except TimeoutError:
        answer = f"prometheus query timed out after {prom.timeout_seconds:g}s"
        return MetricSamples(error=answer), answer


def _from_snapshot(spec: MetricSpec, q: MetricQuery | None, metrics: dict, errors: set) -> MetricSamples:
    if q is None:  # no query: not read as a Prometheus metric
        return MetricSamples()
    answers = metrics.get("prometheus") or {}
    if TYPE.snapshot_label(spec.name) in errors:
        return MetricSamples(error="the prometheus query failed (listed in the snapshot's metrics.errors)")
    if spec.name not in answers:
        return MetricSamples(error=f"no prometheus metric {spec.name!r} in the snapshot")
    return samples_from_answer(answers[spec.name], q.params)


def _shown(item: dict) -> Shown:
    """A Prometheus metric, shown as the Pods (``podLabel``) or External metric it acts as."""
    source = item.get("prometheus")
    source = source if isinstance(source, dict) else {}
    name = source.get("name") or source.get("query") or ""
    target = source.get("target") if isinstance(source.get("target"), dict) else {}
    if source.get("podLabel"):
        return pods.TYPE.shown({"type": PODS, "pods": {"metric": {"name": name}, "target": target}})
    return external.TYPE.shown({"type": EXTERNAL, "external": {"metric": {"name": name}, "target": target}})


def _history(q: MetricQuery, namespace: str, pod_matchers: str) -> tuple[str, str] | None:
    prom: PromQuery = q.params
    return (f"sum({prom.query})" if prom.pod_label else prom.query), "the query's unit"


TYPE = MetricType(
    name=PROMETHEUS, field="prometheus", api="prometheus",
    extension=_extension, fetch=_fetch,
    snapshot_key="prometheus", from_snapshot=_from_snapshot,
    shown=_shown, title=value_title, history=_history,
)
