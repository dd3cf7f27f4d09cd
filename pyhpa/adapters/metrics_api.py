"""Answers of the three metrics APIs (JSON) as the core's ``MetricSamples``.

Follows upstream's REST metrics client (pkg/controller/podautoscaler/metrics): a pod's
resource value is the sum over its containers and the pod is left out when a container
lacks the resource; a ContainerResource value is that container's; custom per-pod
metrics default to a 1-minute window; External values are kept per series and summed by
the core; an empty answer is an error ("no metrics returned from ... API").
"""

from __future__ import annotations

from ..core.calculator import wrap_int64
from ..core.model import MetricSamples, PodSample
from .errors import InputError
from .parse import duration, milli, timestamp

DEFAULT_WINDOW = 60.0


def fetch_failed(api: str, message: str) -> str:
    """The error of a call of metrics API ``api`` (``resource``, ``custom``, ``external``: a metric type's
    ``MetricType.api``) that failed, as upstream's REST metrics client wraps it (``unable to fetch metrics from custom
    metrics API: <message>``); an empty answer is not wrapped."""
    return f"unable to fetch metrics from {api} metrics API: {message}"


def _items(answer: dict, where: str) -> list:
    items = answer.get("items") if isinstance(answer, dict) else None
    if items is None:
        raise InputError("expected an object with 'items'", field=where)
    if not isinstance(items, list):
        raise InputError("'items' must be a list", field=f"{where}.items")
    return items


def resource_samples(answer: dict, resource: str, container: str = "", where: str = "metrics.resource") -> MetricSamples:
    """A metrics.k8s.io PodMetricsList as per-pod samples of ``resource`` (milli-units)."""
    items = _items(answer, where)
    if not items:
        return MetricSamples(error="no metrics returned from resource metrics API")
    pods: dict[str, PodSample] = {}
    per_container: dict[str, dict[str, int]] | None = None
    seen: tuple = (None, None, 0.0, 0.0)  # the last item's (timestamp, window) texts and values: one scrape's repeat
    for i, m in enumerate(items):
        containers = m.get("containers") or []
        try:  # the hot path of every sync: field names are only built for an error message
            ts_text, window_text = m.get("timestamp"), m.get("window", "0s")
            if ts_text == seen[0] and window_text == seen[1] and isinstance(ts_text, str):
                ts, window = seen[2], seen[3]
            else:
                ts, window = timestamp(ts_text), duration(window_text)
                seen = (ts_text, window_text, ts, window)
            value = _pod_value(containers, resource, container, "")
        except (InputError, AttributeError):
            f = f"{where}.items[{i}]"  # again, with the field names: raises the same error, named
            ts = timestamp(m.get("timestamp"), f"{f}.timestamp")
            window = duration(m.get("window", "0s"), f"{f}.window")
            value = _pod_value(containers, resource, container, f)
        if value is not None:
            name = (m.get("metadata") or {}).get("name")
            pods[name] = PodSample(value, ts, window)
            if not container and len(containers) > 1:  # for pyhpa.core.checks: who in the pod uses what
                per_container = per_container if per_container is not None else {}
                per_container[name] = {c.get("name"): milli((c.get("usage") or {})[resource]) for c in containers}
    first = timestamp(items[0].get("timestamp"), f"{where}.items[0].timestamp")
    return MetricSamples(pods=pods, timestamp=first, containers=per_container)


def _pod_value(containers: list, resource: str, container: str, f: str) -> int | None:
    """The pod's value, or None when the pod is left out (container or resource missing)."""
    if container:
        for j, c in enumerate(containers):
            if c.get("name") == container:
                usage = c.get("usage") or {}
                if resource not in usage:
                    return None
                return milli(usage[resource], f"{f}.containers[{j}].usage.{resource}")
        return None
    if not containers:
        return None
    total = 0
    for j, c in enumerate(containers):
        usage = c.get("usage") or {}
        if resource not in usage:
            return None
        total += milli(usage[resource], f"{f}.containers[{j}].usage.{resource}")
    return wrap_int64(total)  # upstream adds the containers' values as int64


def pods_samples(answer: dict, where: str) -> MetricSamples:
    """A custom.metrics.k8s.io MetricValueList of pods as per-pod samples."""
    items = _items(answer, where)
    if not items:
        return MetricSamples(error="no metrics returned from custom metrics API")
    pods: dict[str, PodSample] = {}
    for i, m in enumerate(items):
        f = f"{where}.items[{i}]"
        name = (m.get("describedObject") or {}).get("name")
        window = m.get("windowSeconds")
        pods[name] = PodSample(
            milli(m.get("value"), f"{f}.value"), timestamp(m.get("timestamp"), f"{f}.timestamp"),
            float(window) if window is not None else DEFAULT_WINDOW,
        )
    return MetricSamples(pods=pods, timestamp=timestamp(items[0].get("timestamp"), f"{where}.items[0].timestamp"))


def object_samples(answer: dict, where: str) -> MetricSamples:
    """A custom.metrics.k8s.io MetricValue (or a MetricValueList with one item) of one object."""
    if isinstance(answer, dict) and "items" in answer:
        items = _items(answer, where)
        if not items:
            return MetricSamples(error="no metrics returned from custom metrics API")
        answer, where = items[0], f"{where}.items[0]"
    if not isinstance(answer, dict) or "value" not in answer:
        raise InputError("expected a MetricValue with 'value'", field=where)
    ts = timestamp(answer.get("timestamp"), f"{where}.timestamp") if answer.get("timestamp") else None
    return MetricSamples(values=[milli(answer["value"], f"{where}.value")], timestamp=ts)


def external_samples(answer: dict, where: str, selector=None) -> MetricSamples:
    """An external.metrics.k8s.io ExternalMetricValueList, keeping series whose labels match ``selector``."""
    items = _items(answer, where)
    values, first = [], None
    for i, m in enumerate(items):
        labels = m.get("metricLabels") or {}
        if selector is not None and not selector(labels):
            continue
        values.append(milli(m.get("value"), f"{where}.items[{i}].value"))
        if first is None:
            first = timestamp(m.get("timestamp"), f"{where}.items[{i}].timestamp")
    if not values:
        return MetricSamples(error="no metrics returned from external metrics API")
    return MetricSamples(values=values, timestamp=first)
