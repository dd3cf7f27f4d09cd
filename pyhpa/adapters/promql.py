"""A client of Prometheus' HTTP API: instant queries (``GET /api/v1/query``) and range queries
(``GET /api/v1/query_range``), read through httpx2 (the HTTP client lightkube uses) with a timeout, and the PromQL
text pyhpa writes (label values, matchers of a label selector).

Its users: the ``Prometheus`` metric type (``pyhpa.adapters.metric_types.prometheus``: the spec, and how its instant
query's answer becomes the core's samples) and the history of ``spec.prediction`` (range queries). An instant
query's answer is read in two shapes:

- per pod (``PromQuery.pod_label`` set, e.g. ``pod``): each series' value is that pod's value (as a ``Pods``
  metric's);
- a single value (no ``pod_label``): the query must return one series or a scalar (as an ``External`` metric's).

Values are converted to milli-units like ``Quantity.MilliValue()`` (rounded up).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx2

from ..core.model import MetricSamples, PodSample
from ..core.selector import SelectorError, parse_selector

DEFAULT_WINDOW_SECONDS = 60.0
#: Server of metrics read back from a snapshot: ``explain`` never queries, so none is needed.
OFFLINE_SERVER = "offline:"


def label_value(text: str) -> str:
    """``text`` as a PromQL string literal's content (backslashes and double quotes escaped)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def regex_literal(text: str) -> str:
    """``text`` matched literally by an RE2 regex (only regex metacharacters escaped: PromQL strings
    refuse unknown escapes such as ``\\-``)."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)


#: a label name PromQL takes in a matcher
_PROM_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def matchers(selector: str) -> str:
    """The equality requirements of a label selector text (``a=b,c=d``, read by the one selector parser,
    ``pyhpa.core.selector``) as PromQL matchers, each after a comma (``,a="b",c="d"``); other requirements, label
    names PromQL does not take, and a selector that does not parse are left out."""
    try:
        reqs = parse_selector(selector or "")
    except SelectorError:
        return ""
    return "".join(f',{key}="{label_value(value)}"' for op, key, value in reqs
                   if op == "=" and _PROM_LABEL.fullmatch(key))


@dataclass(frozen=True, slots=True)
class PromQuery:
    """One PromQL metric: ``server`` base URL, ``query``, ``pod_label`` (None: single value),
    ``timeout_seconds`` for the whole HTTP call."""

    server: str
    query: str
    pod_label: str | None = None
    timeout_seconds: float = 5.0


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
