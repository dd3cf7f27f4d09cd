"""Resource, custom and external metrics APIs with values set by tests."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Union

from .errors import KubeError, path_not_found
from .selectors import labels_match, parse_label_selector, selector_object

METRICS_GROUP = "metrics.k8s.io"
CUSTOM_GROUP = "custom.metrics.k8s.io"
EXTERNAL_GROUP = "external.metrics.k8s.io"
METRICS_VERSIONS = {METRICS_GROUP: "v1beta1", CUSTOM_GROUP: "v1beta2", EXTERNAL_GROUP: "v1beta1"}
CORE_KINDS = {"pods": "Pod", "services": "Service", "nodes": "Node", "namespaces": "Namespace",
              "deployments.apps": "Deployment", "statefulsets.apps": "StatefulSet", "replicasets.apps": "ReplicaSet",
              "ingresses.networking.k8s.io": "Ingress", "jobs.batch": "Job"}

Timestamp = Union[None, str, float, int, datetime]


def timestamp_str(ts: Timestamp) -> str:
    """RFC 3339 UTC string from None (now), epoch seconds, a datetime or a string (kept)."""
    if isinstance(ts, str):
        return ts
    if ts is None:
        ts = datetime.now(timezone.utc)
    elif isinstance(ts, (int, float)):
        ts = datetime.fromtimestamp(ts, timezone.utc)
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def quantity(value: Any) -> str:
    """A Kubernetes quantity string: strings are kept, numbers rendered (fractions in milli-units)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not value.is_integer():
        return f"{round(value * 1000)}m"
    return str(int(value))


def described(resource: str, ns: Optional[str], name: str) -> dict:
    """``describedObject`` for ``deployments.apps``-style resource names (core apiVersion is "/v1")."""
    plural, _, group = resource.partition(".")
    kind = CORE_KINDS.get(resource) or plural[:-1].capitalize()
    obj = {"kind": kind, "name": name, "apiVersion": f"{group}/v1" if group else "/v1"}
    if ns:
        obj["namespace"] = ns
    return obj


@dataclass
class Series:
    """A stored custom/external metric: values keyed by pod/object name (or a list for external)."""

    values: Any
    labels: dict = field(default_factory=dict)
    timestamp: str = ""
    window_seconds: Optional[int] = None


class MetricsStore:
    """Values the metrics endpoints serve; pods are looked up through ``pod_lookup(ns) -> [Pod dicts]``."""

    def __init__(self, pod_lookup: Callable[[Optional[str]], list[dict]]):
        self.lock = threading.Lock()
        self.pod_lookup = pod_lookup
        self.pod_metrics: dict[tuple[str, str], dict] = {}
        self.pods: dict[tuple[str, str], Series] = {}
        self.objects: dict[tuple[Optional[str], str, str, str], Series] = {}
        self.external: dict[tuple[str, str], Series] = {}

    # ----- values (set by tests and fixtures) ----------------------------------------------------------
    def set_pod_metrics(self, ns: str, pod_name: str, containers: dict[str, dict[str, Any]],
                        timestamp: Timestamp = None, window: Any = "30s") -> None:
        """Serve ``metrics.k8s.io`` usage for one pod: ``{"container": {"cpu": "250m", "memory": "64Mi"}}``.

        Only pods ``pod_lookup`` knows are reported (their labels drive ``labelSelector``); ``timestamp``
        defaults to now; ``window`` is a duration string or seconds.
        """
        usage = {c: {k: quantity(v) for k, v in u.items()} for c, u in containers.items()}
        window = window if isinstance(window, str) else f"{int(window)}s"
        with self.lock:
            self.pod_metrics[(ns, pod_name)] = {"containers": usage, "timestamp": timestamp_str(timestamp),
                                                "window": window}

    def set_many_pod_metrics(self, ns: str, pods: dict[str, dict[str, dict[str, Any]]],
                             timestamp: Timestamp = None, window: Any = "30s") -> None:
        """``set_pod_metrics`` for several pods of ``ns`` at once (``{pod: {container: usage}}``): a reader sees
        all of the new values or none (one lock), as a metrics-server scrape replaces its whole answer."""
        stamp = timestamp_str(timestamp)
        window = window if isinstance(window, str) else f"{int(window)}s"
        entries = {(ns, name): {"containers": {c: {k: quantity(v) for k, v in u.items()} for c, u in containers.items()},
                                "timestamp": stamp, "window": window} for name, containers in pods.items()}
        with self.lock:
            self.pod_metrics.update(entries)

    def clear_pod_metrics(self, ns: Optional[str] = None, pod_name: Optional[str] = None) -> None:
        """Forget resource metrics: all, one namespace's, or one pod's."""
        with self.lock:
            for key in list(self.pod_metrics):
                if (ns is None or key[0] == ns) and (pod_name is None or key[1] == pod_name):
                    del self.pod_metrics[key]

    def set_pods_metric(self, ns: str, metric: str, values: dict[str, Any], labels: Optional[dict] = None,
                        timestamp: Timestamp = None, window_seconds: Optional[int] = None) -> None:
        """Serve a custom pods metric: ``{pod_name: "20"}`` replaces the values of ``metric`` in ``ns``.

        ``labels`` are the metric's own labels (matched by ``metricLabelSelector``).
        """
        with self.lock:
            self.pods[(ns, metric)] = Series(dict(values), dict(labels or {}), timestamp_str(timestamp),
                                             window_seconds)

    def set_object_metric(self, ns: Optional[str], resource: str, name: str, metric: str, value: Any,
                          labels: Optional[dict] = None, timestamp: Timestamp = None,
                          window_seconds: Optional[int] = None) -> None:
        """Serve a custom object metric, e.g. ``("default", "deployments.apps", "web", "requests", "15")``."""
        with self.lock:
            self.objects[(ns, resource, name, metric)] = Series(value, dict(labels or {}), timestamp_str(timestamp),
                                                                window_seconds)

    def set_external_metric(self, ns: str, metric: str, series: list[tuple[dict, Any]],
                            timestamp: Timestamp = None, window_seconds: Optional[int] = None) -> None:
        """Serve an external metric: ``[({"queue": "a"}, "30"), ...]`` (labels filtered by ``labelSelector``)."""
        with self.lock:
            self.external[(ns, metric)] = Series([(dict(lb), v) for lb, v in series], {}, timestamp_str(timestamp),
                                                 window_seconds)

    def clear(self) -> None:
        """Forget every resource, custom and external metric."""
        with self.lock:
            for table in (self.pod_metrics, self.pods, self.objects, self.external):
                table.clear()

    def remove(self, kind: str, *key: Any) -> None:
        """Forget one metric: ``("pods", ns, metric)``, ``("object", ns, resource, name, metric)`` or
        ``("external", ns, metric)`` (a removed metric answers 404)."""
        table = {"pods": self.pods, "object": self.objects, "external": self.external}[kind]
        with self.lock:
            table.pop(tuple(key), None)

    # ----- resource metrics (metrics.k8s.io) ----------------------------------------------------------
    def _pod_metrics_item(self, pod: dict, entry: dict) -> dict:
        meta = pod["metadata"]
        return {"metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                             # the sample's time, not the request's: the same answer for the same sample
                             "labels": meta.get("labels") or {}, "creationTimestamp": entry["timestamp"]},
                "timestamp": entry["timestamp"], "window": entry["window"],
                "containers": [{"name": c, "usage": dict(u)} for c, u in entry["containers"].items()]}

    def pod_metrics_list(self, ns: Optional[str], query: dict) -> dict:
        """PodMetricsList for stored pods that match ``labelSelector`` and have metrics set."""
        reqs = parse_label_selector(query.get("labelSelector"))
        pods = self.pod_lookup(ns)
        with self.lock:  # the namespace's entries only (a copy of every pod's entry cost ms per call at 100,000 pods)
            table = self.pod_metrics
            found = [(p, table[key]) for p in pods
                     if (key := (p["metadata"].get("namespace"), p["metadata"]["name"])) in table]
        items = [self._pod_metrics_item(p, entry) for p, entry in found
                 if labels_match(reqs, p["metadata"].get("labels"))]
        return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}

    def pod_metrics_one(self, ns: str, name: str) -> dict:
        """One PodMetrics, 404 when the pod is not stored or has no metrics."""
        with self.lock:
            entry = self.pod_metrics.get((ns, name))
        pod = next((p for p in self.pod_lookup(ns) if p["metadata"]["name"] == name), None)
        if entry is None or pod is None:
            raise KubeError(404, f'podmetrics.metrics.k8s.io "{name}" not found',
                            details={"name": name, "group": METRICS_GROUP, "kind": "pods"})
        return {"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1", **self._pod_metrics_item(pod, entry)}

    # ----- custom metrics (custom.metrics.k8s.io/v1beta2) ---------------------------------------------
    @staticmethod
    def _value_item(obj: dict, metric: str, series: Series, value: Any, metric_sel: Optional[dict]) -> dict:
        item = {"describedObject": obj, "metric": {"name": metric}, "timestamp": series.timestamp,
                "value": quantity(value)}
        if metric_sel:
            item["metric"]["selector"] = metric_sel
        if series.window_seconds is not None:
            item["windowSeconds"] = series.window_seconds
        return item

    @staticmethod
    def _value_list(items: list[dict]) -> dict:
        return {"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2", "metadata": {},
                "items": items}

    def _metric_selector(self, series: Series, query: dict) -> tuple[bool, Optional[dict]]:
        reqs = parse_label_selector(query.get("metricLabelSelector"))
        return labels_match(reqs, series.labels), (selector_object(reqs) if reqs else None)

    def pods_metric(self, ns: str, metric: str, query: dict, only: Optional[str] = None) -> dict:
        """MetricValueList of a pods metric for stored pods matching ``labelSelector`` (or just pod ``only``)."""
        with self.lock:
            series = self.pods.get((ns, metric))
        if series is None:
            raise _metric_missing(metric)
        ok, sel = self._metric_selector(series, query)
        reqs = parse_label_selector(query.get("labelSelector"))
        pods = [p for p in self.pod_lookup(ns) if p["metadata"]["name"] in series.values
                and (only is None or p["metadata"]["name"] == only)
                and labels_match(reqs, p["metadata"].get("labels"))]
        if only is not None and not pods:
            raise _metric_missing(metric)
        items = [self._value_item(described("pods", ns, p["metadata"]["name"]), metric, series,
                                  series.values[p["metadata"]["name"]], sel) for p in pods] if ok else []
        return self._value_list(items)

    def object_metric(self, ns: Optional[str], resource: str, name: str, metric: str, query: dict) -> dict:
        """MetricValueList with the one value set for ``resource/name``; 404 when not set."""
        if resource == "pods":
            return self.pods_metric(ns or "", metric, query, only=name)
        with self.lock:
            series = self.objects.get((ns, resource, name, metric))
        if series is None:
            raise _metric_missing(metric)
        ok, sel = self._metric_selector(series, query)
        items = [self._value_item(described(resource, ns, name), metric, series, series.values, sel)] if ok else []
        return self._value_list(items)

    # ----- external metrics (external.metrics.k8s.io/v1beta1) -----------------------------------------
    def external_metric(self, ns: str, metric: str, query: dict) -> dict:
        """ExternalMetricValueList filtered by ``labelSelector`` over metric labels; 404 when not set."""
        with self.lock:
            series = self.external.get((ns, metric))
        if series is None:
            raise _metric_missing(metric)
        reqs = parse_label_selector(query.get("labelSelector"))
        items = [{"metricName": metric, "metricLabels": dict(labels), "timestamp": series.timestamp,
                  "value": quantity(value)} for labels, value in series.values if labels_match(reqs, labels)]
        if series.window_seconds is not None:
            for item in items:
                item["windowSeconds"] = series.window_seconds
        return {"kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1",
                "metadata": {}, "items": items}

    # ----- discovery ----------------------------------------------------------------------------------
    def discovery(self, group: str) -> list[dict]:
        """APIResourceList entries for one metrics group."""
        if group == METRICS_GROUP:
            return [_res("nodes", "NodeMetrics", False, ["get", "list"]),
                    _res("pods", "PodMetrics", True, ["get", "list"])]
        with self.lock:
            if group == CUSTOM_GROUP:
                names = sorted({f"pods/{m}" for _, m in self.pods} | {f"{r}/{m}" for _, r, _, m in self.objects})
                return [_res(n, "MetricValueList", True, ["get"]) for n in names]
            return [_res(m, "ExternalMetricValueList", True, ["get"]) for m in sorted({m for _, m in self.external})]

    def handle(self, group: str, rest: list[str], query: dict) -> dict:
        """Dispatch a GET below ``/apis/{group}/{version}/`` (``rest`` are the remaining path segments)."""
        ns = rest[1] if len(rest) >= 2 and rest[0] == "namespaces" else None
        tail = rest[2:] if ns is not None else rest
        if group == METRICS_GROUP:
            return self._handle_resource(ns, tail, query)
        if group == EXTERNAL_GROUP and ns is not None and len(tail) == 1:
            return self.external_metric(ns, tail[0], query)
        if group == CUSTOM_GROUP:
            return self._handle_custom(ns, tail, query)
        raise path_not_found()

    def _handle_resource(self, ns: Optional[str], tail: list[str], query: dict) -> dict:
        if tail == ["pods"]:
            return self.pod_metrics_list(ns, query)
        if len(tail) == 2 and tail[0] == "pods" and ns is not None:
            return self.pod_metrics_one(ns, tail[1])
        raise path_not_found()

    def _handle_custom(self, ns: Optional[str], tail: list[str], query: dict) -> dict:
        if len(tail) == 3 and tail[0] == "pods" and tail[1] == "*" and ns is not None:
            return self.pods_metric(ns, tail[2], query)
        if len(tail) == 3:
            return self.object_metric(ns, tail[0], tail[1], tail[2], query)
        if ns is not None and len(tail) == 2 and tail[0] == "metrics":  # namespace object metric
            return self.object_metric(None, "namespaces", ns, tail[1], query)
        raise path_not_found()


def _res(name: str, kind: str, namespaced: bool, verbs: list[str]) -> dict:
    return {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs}


def _metric_missing(metric: str) -> KubeError:
    return KubeError(404, f'the server could not find the metric {metric} for the requested objects',
                     details={"name": metric})
