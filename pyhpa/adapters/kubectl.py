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
from .snapshot import Snapshot, pods_in_namespace, read_document, read_hpa

IGNORED_LABELS = ("pod-template-hash", "controller-revision-hash", "pod-template-generation",
                  "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index")


def pod_items(doc, path: Path) -> list[dict]:
    """The pod objects of a kubectl answer (a List/PodList, one Pod, or a list); InputError otherwise."""
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return doc["items"]
    if isinstance(doc, dict) and doc.get("kind") == "Pod":
        return [doc]
    if isinstance(doc, list):
        return doc
    raise InputError("expected a List/PodList of pods or a Pod", file=str(path), field="items")


def shared_labels(pods: list) -> str:
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
    try:  # an autoscaling/v2 HPA, or a HorizontalAutoscaler (its settings and extensions applied)
        hpa, model, _, config = read_hpa(read_document(hpa_path), config, lenient)
    except InputError as err:
        raise err.at(file=str(hpa_path)) from None
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
    sel = selector if selector is not None else shared_labels(pods)
    try:
        parse_selector(sel)
    except SelectorError as err:
        raise InputError(str(err), field="--selector") from None
    samples = _samples(hpa, metrics_path)
    return Snapshot(
        f"{hpa.namespace}/{hpa.name}", str(hpa_path), "controller", now, config, hpa,
        Scale(replicas, replicas, sel), pods, samples, Memory(), None, None, model,
    )


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
