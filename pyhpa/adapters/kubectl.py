"""A snapshot from what ``kubectl`` prints, so nobody has to write one by hand.

Inputs: ``kubectl get hpa NAME -o yaml``, ``kubectl get pods -l SELECTOR -o yaml`` (a
List, a PodList or one Pod) and ``kubectl get --raw
/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods`` (a PodMetricsList). Only the resource
metrics API is read this way; Pods/Object/External metrics show as not available.
"""

from __future__ import annotations

from pathlib import Path

from ..core import ControllerConfig, Memory, MetricSamples, Scale
from ..core.selector import SelectorError, parse_selector
from .errors import InputError
from .metrics_api import resource_samples
from .autoscaler import autoscaler_from_dict
from .snapshot import forecast_from_dict
from .objects import pod_from_dict
from .snapshot import Snapshot, read_document

IGNORED_LABELS = ("pod-template-hash", "controller-revision-hash", "pod-template-generation",
                  "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index")


def _pod_items(doc, path: Path) -> list[dict]:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return doc["items"]
    if isinstance(doc, dict) and doc.get("kind") == "Pod":
        return [doc]
    if isinstance(doc, list):
        return doc
    raise InputError("expected a List/PodList of pods or a Pod", file=str(path), field="items")


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
    """Build a Snapshot (controller memory empty, upstream default flags unless ``config``)."""
    config = config or ControllerConfig()
    try:
        doc = read_document(hpa_path)
        hpa, model = autoscaler_from_dict(doc, lenient=lenient, scale_to_zero=config.scale_to_zero)
        forecast = status_forecast(doc) if hpa.prediction is not None else None
    except InputError as err:
        raise err.at(file=str(hpa_path)) from None
    pods = []
    if pods_path is not None:
        for i, item in enumerate(_pod_items(read_document(pods_path), pods_path)):
            try:
                pods.append(pod_from_dict(item))
            except InputError as err:
                raise InputError(err.message, str(pods_path), err.obj, f"items[{i}].{err.field}".rstrip(".")) from None
    if replicas is None:
        replicas = model.status.currentReplicas if model.status is not None else None
        if replicas is None:
            raise InputError("the HPA has no status.currentReplicas: give --replicas", file=str(hpa_path),
                             field="status.currentReplicas")
    sel = selector if selector is not None else _shared_labels(pods)
    try:
        parse_selector(sel)
    except SelectorError as err:
        raise InputError(str(err), field="--selector") from None
    samples = _samples(hpa, metrics_path)
    return Snapshot(
        f"{hpa.namespace}/{hpa.name}", str(hpa_path), "controller", now, config, hpa,
        Scale(replicas, replicas, sel), pods, samples, Memory(), None, None, model, forecast,
    )


def status_forecast(doc: dict):
    """The forecast the controller last wrote to a HorizontalAutoscaler's ``status.prediction``
    (``forecast``, ``reason``, ``message``), as the snapshot's ``forecast``; None when there is none."""
    section = (doc.get("status") or {}).get("prediction") if isinstance(doc.get("status"), dict) else None
    if not isinstance(section, dict) or "reason" not in section:
        return None
    d = {"total": section.get("forecast"), "reason": section["reason"], "message": section.get("message", "")}
    try:
        return forecast_from_dict(d)
    except InputError as err:
        raise InputError(err.message, field="status.prediction." + err.field.removeprefix("forecast.")) from None


def _samples(hpa, metrics_path: Path | None) -> list[MetricSamples]:
    answer = None
    if metrics_path is not None:
        answer = read_document(metrics_path)
    out = []
    for spec in hpa.metrics:
        if spec.type not in ("Resource", "ContainerResource"):
            out.append(MetricSamples(error=f"{spec.type} metrics are not read from kubectl output"))
        elif answer is None:
            out.append(MetricSamples(error="no --pod-metrics given"))
        else:
            container = spec.container if spec.type == "ContainerResource" else ""
            try:
                out.append(resource_samples(answer, spec.name, container, where="items"))
            except InputError as err:
                raise err.at(file=str(metrics_path), obj="PodMetricsList") from None
    return out
