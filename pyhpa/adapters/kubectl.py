"""A snapshot from what ``kubectl`` prints, so nobody has to write one by hand.

Inputs: ``kubectl get hpa NAME -o yaml``, ``kubectl get pods -l SELECTOR -o yaml`` (a
List, a PodList or one Pod) and ``kubectl get --raw
/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods`` (a PodMetricsList). Only the resource
metrics API is read this way; Pods/Object/External metrics show as not available.
"""

from __future__ import annotations

from pathlib import Path

from ..core import ControllerConfig, Memory, MetricSamples, Scale, SyncInputs
from ..core.selector import SelectorError, parse_selector
from .autoscaler import effective_config, find_autoscaler, read_autoscaler
from .errors import InputError
from .metric_types import REGISTRY
from .metrics_api import resource_samples
from .parse import int32_value
from .prediction import forecast_from_status
from .promql import OFFLINE_SERVER
from .snapshot import Snapshot, pods_in_namespace, read_document

IGNORED_LABELS = ("pod-template-hash", "controller-revision-hash", "pod-template-generation",
                  "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index")


_METRICS_KINDS = ("PodMetricsList", "PodMetrics")


def pod_items(doc, path: Path) -> list[dict]:
    """The pods of ``kubectl get pods -o yaml`` (a List or PodList) or one Pod; a PodMetricsList (the
    metrics API's answer, which has no pod status) is refused rather than read as pods without status."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind in _METRICS_KINDS or (isinstance(doc, dict) and kind is None and _looks_like_metrics(doc.get("items"))):
        raise InputError(f"this is a {kind or 'PodMetricsList'} (metrics.k8s.io), not pods: give it as --pod-metrics, "
                         "and kubectl get pods -l SELECTOR -o yaml as --pods", file=str(path), field="kind")
    if isinstance(doc, dict) and kind == "Pod":
        return [doc]
    if isinstance(doc, dict) and kind in ("List", "PodList", None) and isinstance(doc.get("items"), list):
        items = doc["items"]
    elif isinstance(doc, list):
        items = doc
    else:
        got = f"kind {kind}" if kind else "no list of items"
        raise InputError(f"expected pods (a List or PodList from kubectl get pods -o yaml, or a Pod), got {got}",
                         file=str(path), field="kind" if kind else "items")
    for i, item in enumerate(items):
        item_kind = item.get("kind") if isinstance(item, dict) else None
        if item_kind in _METRICS_KINDS or (item_kind is None and _looks_like_metrics([item])):
            raise InputError("a PodMetrics item (metrics.k8s.io), not a Pod: give the metrics as --pod-metrics",
                             file=str(path), field=f"items[{i}]")
        if item_kind not in (None, "Pod"):
            raise InputError(f"expected a Pod, got kind {item_kind}", file=str(path), field=f"items[{i}].kind")
    return items


def _looks_like_metrics(items) -> bool:
    """Items shaped like PodMetrics (containers with usage, no spec/status)."""
    if not isinstance(items, list) or not items or not isinstance(items[0], dict):
        return False
    first = items[0]
    return "containers" in first and "spec" not in first and "status" not in first


def _check_metrics_answer(answer, path: Path) -> None:
    """``--pod-metrics`` must be a PodMetricsList (or a List of PodMetrics), not pods or another list."""
    kind = answer.get("kind") if isinstance(answer, dict) else None
    if kind in ("PodMetricsList", None, "List") and isinstance(answer, dict) and isinstance(answer.get("items"), list):
        items = answer["items"]
        if kind is None and not items:
            return
        if kind in ("PodMetricsList", None) and (not items or _looks_like_metrics(items)):
            return
        if kind == "List" and all(isinstance(x, dict) and x.get("kind") == "PodMetrics" for x in items):
            return
        if items and isinstance(items[0], dict) and ("spec" in items[0] or items[0].get("kind") == "Pod"):
            raise InputError("this is a list of Pods, not pod metrics: give it as --pods, and kubectl get --raw "
                             "/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods as --pod-metrics", file=str(path),
                             field="items")
    if kind not in ("PodMetricsList",):
        got = f"kind {kind}" if kind else "no PodMetrics items"
        raise InputError("expected a PodMetricsList (kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods),"
                         f" got {got}", file=str(path), field="kind" if kind else "items")


def _shared_labels(pods: list) -> str:
    """Selector text of the labels every pod shares (template hashes left out)."""
    if not pods:
        return ""
    common = dict(pods[0].labels)
    for p in pods[1:]:
        common = {k: v for k, v in common.items() if p.labels.get(k) == v}
    return ",".join(f"{k}={v}" for k, v in sorted(common.items()) if k not in IGNORED_LABELS)


def snapshot_from_kubectl(
    hpa_path: Path, pods_path: Path | None, metrics_path: Path | None, replicas: int | None,
    selector: str | None, now: float, lenient: bool = False, config: ControllerConfig | None = None,
) -> Snapshot:
    """Build a Snapshot (controller memory empty, upstream default flags unless ``config``, with a
    HorizontalAutoscaler's own settings applied). ``hpa_path`` holds an autoscaling/v2 HPA or a
    HorizontalAutoscaler (its ``schedules`` count at ``now``)."""
    config = config or ControllerConfig()
    try:
        doc = find_autoscaler(read_document(hpa_path))
        parsed = read_autoscaler(doc, lenient=lenient, scale_to_zero=config.scale_to_zero,
                                 prometheus_server=OFFLINE_SERVER, go_structs=lenient)
        forecast = forecast_from_status(doc.get("status")) if parsed.hpa.prediction is not None else None
    except InputError as err:
        raise err.at(file=str(hpa_path)) from None
    hpa, model, config = parsed.hpa, parsed.model, effective_config(config, parsed.settings)
    pods = []
    if pods_path is not None:
        try:  # only the HPA's namespace counts, as upstream's pod lister
            pods = pods_in_namespace(pod_items(read_document(pods_path), pods_path), hpa.namespace, "items", lenient)
        except InputError as err:
            raise err.at(file=str(pods_path)) from None
    if replicas is None:
        replicas = model.status.currentReplicas if model.status is not None else None
        if replicas is None:
            raise InputError("the HPA has no status.currentReplicas: give --replicas", file=str(hpa_path),
                             field="status.currentReplicas")
        try:
            replicas = int32_value(replicas, "status.currentReplicas")
        except InputError as err:
            raise err.at(file=str(hpa_path), obj=f"HorizontalPodAutoscaler {hpa.namespace}/{hpa.name}") from None
    sel = selector if selector is not None else _shared_labels(pods)
    try:
        parse_selector(sel)
    except SelectorError as err:
        raise InputError(str(err), field="--selector") from None
    samples = _samples(hpa, metrics_path)
    inputs = SyncInputs(hpa=hpa, scale=Scale(replicas, replicas, sel), pods=pods, samples=samples, memory=Memory(),
                        now=now, config=config, forecast=forecast)
    return Snapshot(f"{hpa.namespace}/{hpa.name}", str(hpa_path), "controller", inputs, None, model)


def _samples(hpa, metrics_path: Path | None) -> list[MetricSamples]:
    answer = None
    if metrics_path is not None:
        answer = read_document(metrics_path)
        _check_metrics_answer(answer, metrics_path)
    out = []
    for spec in hpa.metrics:
        t = REGISTRY.get(spec.type)
        if t is None or not t.resource:  # kubectl shows pod metrics (metrics.k8s.io) only
            out.append(MetricSamples(error=f"{spec.type} metrics are not read from kubectl output"))
        elif answer is None:
            out.append(MetricSamples(error="no --pod-metrics given"))
        else:
            container = t.container_of(spec)
            try:
                out.append(resource_samples(answer, spec.name, container, where="items"))
            except InputError as err:
                raise err.at(file=str(metrics_path), obj="PodMetricsList") from None
    return out
