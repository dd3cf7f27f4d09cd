"""Prometheus as a metric source, for users without a metrics adapter.

A pyhpa metric of type ``Prometheus`` is an instant PromQL query (Prometheus HTTP API
``GET /api/v1/query``), read through httpx2 (the HTTP client lightkube uses) with a timeout. Two shapes:

- per pod (``podLabel`` set, e.g. ``pod``): each series' value is that pod's value; the
  metric then behaves exactly like a ``Pods`` metric (AverageValue target, missing and
  unready pods handled by the core as upstream does);
- a single value (no ``podLabel``): the query must return one series or a scalar; the metric
  behaves like an ``External`` metric (Value or AverageValue target).

Values are converted to milli-units like ``Quantity.MilliValue()`` (rounded up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx2

from ..core.model import AVERAGE_VALUE, EXTERNAL, HPA, PODS, VALUE, MetricSamples, MetricSpec, PodSample
from .errors import InputError
from .parse import milli

DEFAULT_WINDOW_SECONDS = 60.0
#: ``spec.metrics[].type`` of a PromQL metric (a pyhpa extension of autoscaling/v2).
PROMETHEUS = "Prometheus"
#: Server of metrics read back from a snapshot: ``explain`` never queries, so none is needed.
OFFLINE_SERVER = "offline:"


@dataclass(frozen=True, slots=True)
class PromQuery:
    """One PromQL metric: ``server`` base URL, ``query``, ``pod_label`` (None: single value),
    ``timeout_seconds`` for the whole HTTP call."""

    server: str
    query: str
    pod_label: str | None = None
    timeout_seconds: float = 5.0


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


def _milli(text: str) -> int | None:
    try:
        v = Decimal(text)
    except InvalidOperation:
        return None
    if not v.is_finite():
        return None
    return math.ceil(v * 1000)


def samples_from_answer(answer: dict, q: PromQuery) -> MetricSamples:
    """MetricSamples from a Prometheus ``/api/v1/query`` JSON answer."""
    if not isinstance(answer, dict) or answer.get("status") != "success":
        err = answer.get("error") if isinstance(answer, dict) else None
        return MetricSamples(error=f"prometheus query failed: {err or 'malformed answer'}")
    data = answer.get("data") or {}
    rtype, result = data.get("resultType"), data.get("result")
    if rtype == "scalar":
        result = [{"metric": {}, "value": result}]
    elif rtype != "vector":
        return MetricSamples(error=f"prometheus query returned a {rtype}, want an instant vector or scalar")
    if not result:
        return MetricSamples(error="prometheus query returned no series")
    if q.pod_label:
        return _per_pod(result, q.pod_label)
    if len(result) != 1:
        return MetricSamples(error=f"prometheus query returned {len(result)} series, want one (or set podLabel)")
    ts, text = result[0]["value"]
    value = _milli(text)
    if value is None:
        return MetricSamples(error=f"prometheus query returned a non-finite value {text!r}")
    return MetricSamples(values=[value], timestamp=float(ts))


def _per_pod(result: list, label: str) -> MetricSamples:
    pods: dict[str, PodSample] = {}
    first = None
    for series in result:
        name = (series.get("metric") or {}).get(label)
        ts, text = series["value"]
        value = _milli(text)
        if name is None or value is None:
            continue  # a series without the pod label or with NaN is no pod's sample (reported as missing)
        pods[name] = PodSample(value, float(ts), DEFAULT_WINDOW_SECONDS)
        first = float(ts) if first is None else first
    if not pods:
        return MetricSamples(error=f"prometheus query returned no series with label {label!r} and a finite value")
    return MetricSamples(pods=pods, timestamp=first)


async def query_samples(client: httpx2.AsyncClient, q: PromQuery, at: float | None = None) -> MetricSamples:
    """Run the instant query (at epoch ``at``, or Prometheus' now) within its timeout.

    Never raises for server trouble: timeouts, HTTP and PromQL errors become
    ``MetricSamples.error`` (the core then reports the metric as upstream does).
    """
    return (await query_answer(client, q, at))[0]


async def query_answer(client: httpx2.AsyncClient, q: PromQuery, at: float | None = None) -> tuple[MetricSamples, Any]:
    """``query_samples`` plus the raw answer: the decoded ``/api/v1/query`` JSON, or the error text when
    there was none (timeout, connection error, a body that is not JSON). Never raises for server trouble."""
    params = {"query": q.query}
    if at is not None:
        params["time"] = f"{at:.3f}"
    try:
        r = await client.get(f"{q.server}/api/v1/query", params=params, timeout=q.timeout_seconds)
    except httpx2.TimeoutException:
        return _failed(f"prometheus query timed out after {q.timeout_seconds:g}s")
    except httpx2.HTTPError as err:
        return _failed(f"prometheus unreachable: {err}")
    try:
        answer = r.json()
    except ValueError:
        return _failed(f"prometheus answered HTTP {r.status_code} without JSON")
    return samples_from_answer(answer, q), answer


def _failed(message: str) -> tuple[MetricSamples, str]:
    return MetricSamples(error=message), message


def v2_equivalent(spec: MetricSpec, target: Any) -> dict:
    """The autoscaling/v2 ``spec.metrics[]`` item a PromQL metric acts as: a Pods metric (per pod) or an
    External metric (single value), named ``spec.name``, with the Prometheus metric's ``target``. This is
    also the shape of its ``status.currentMetrics`` entry (the core writes Pods/External statuses)."""
    key = "pods" if spec.type == PODS else "external"
    return {"type": spec.type, key: {"metric": {"name": spec.name}, "target": target}}


def split_prometheus(metrics: Any, field: str, default_server: str | None = None,
                     ) -> tuple[Any, dict[int, tuple[MetricSpec, PromQuery]]]:
    """``spec.metrics`` with every ``type: Prometheus`` item replaced by its ``v2_equivalent`` (so the rest of
    the HPA parses as autoscaling/v2), and those items parsed: ``{index: (MetricSpec, PromQuery)}``.

    ``field`` names the list in errors (``spec.metrics``); ``default_server`` is the controller's
    ``--prometheus-url``. Raises InputError naming the item's field. Anything that is not a list of
    mappings is returned as is (the HPA parser reports it).
    """
    if not isinstance(metrics, list):
        return metrics, {}
    out, found = list(metrics), {}
    for i, m in enumerate(metrics):
        if isinstance(m, dict) and m.get("type") == PROMETHEUS:
            spec, q = metric_from_dict(m, f"{field}[{i}]", default_server)
            found[i] = (spec, q)
            out[i] = v2_equivalent(spec, m["prometheus"].get("target"))
    return out, found


def with_prometheus(hpa: HPA, found: dict[int, tuple[MetricSpec, PromQuery]]) -> HPA:
    """``hpa`` with the metrics at ``found``'s indices replaced by the PromQL metrics' core specs."""
    if not found:
        return hpa
    metrics = tuple(found[i][0] if i in found else m for i, m in enumerate(hpa.metrics))
    return replace(hpa, metrics=metrics)


class RangeQueryError(Exception):
    """A ``/api/v1/query_range`` call that gave no usable answer (message says why)."""


#: Prometheus refuses range queries of more than 11,000 points per series.
MAX_RANGE_POINTS = 11000


def range_step(start: float, end: float, step: float = 60.0) -> float:
    """``step`` (s), raised to a whole minute multiple when the range would exceed Prometheus' point limit."""
    points = (end - start) / step
    if points <= MAX_RANGE_POINTS - 1:
        return step
    return float(math.ceil((end - start) / (MAX_RANGE_POINTS - 1) / 60.0) * 60)


async def query_range(client: httpx2.AsyncClient, server: str, query: str, start: float, end: float, step: float,
                      timeout_seconds: float) -> tuple[list[float], list[float]]:
    """Run a range query (``GET /api/v1/query_range``) and return (epoch times, values) of its one series.

    The query must return one series (wrap it in ``sum(...)``); NaN and infinite values are left out
    (gaps). Raises ``RangeQueryError`` for every failure: timeout, connection, HTTP or PromQL error,
    several series, a malformed answer.
    """
    params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    try:
        r = await client.get(f"{server.rstrip('/')}/api/v1/query_range", params=params, timeout=timeout_seconds)
    except httpx2.TimeoutException:
        raise RangeQueryError(f"prometheus range query timed out after {timeout_seconds:g}s") from None
    except httpx2.HTTPError as err:
        raise RangeQueryError(f"prometheus unreachable: {err}") from None
    try:
        answer = r.json()
    except ValueError:
        raise RangeQueryError(f"prometheus answered HTTP {r.status_code} without JSON") from None
    if not isinstance(answer, dict) or answer.get("status") != "success":
        err = answer.get("error") if isinstance(answer, dict) else None
        raise RangeQueryError(f"prometheus range query failed: {err or f'HTTP {r.status_code}'}")
    data = answer.get("data") or {}
    if data.get("resultType") != "matrix":
        raise RangeQueryError(f"prometheus range query returned a {data.get('resultType')}, want a matrix")
    result = data.get("result") or []
    if len(result) > 1:
        raise RangeQueryError(f"the history query returned {len(result)} series, want one (wrap it in sum(...))")
    times: list[float] = []
    values: list[float] = []
    for pair in (result[0].get("values") or []) if result else []:
        try:
            t, v = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            raise RangeQueryError(f"malformed sample in the range answer: {pair!r}") from None
        if math.isfinite(v):
            times.append(t)
            values.append(v)
    return times, values
