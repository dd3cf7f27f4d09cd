"""The scale target (apps/v1 Deployment or StatefulSet), parsed once with lightkube.

From the manifest the simulator needs: the replicas it starts with, the pod selector and
template labels, each pod's requests (exactly as the core reads them), the serving
container's CPU limit and its readiness and startup probes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..adapters.errors import InputError
from ..adapters.objects import decode, object_label, pod_from_dict
from ..adapters.parse import int32_value, milli, object_meta
from ..adapters.selectors import selector_text
from ..adapters.snapshot import read_document
from ..core import Pod
from ..core.selector import SelectorError, matches, parse_selector

KINDS = ("Deployment", "StatefulSet")


@dataclass(slots=True, frozen=True)
class Probe:
    """A probe's timing: seconds after the container starts, every ``period_seconds``."""

    initial_delay_seconds: float
    period_seconds: float
    success_threshold: int

    def first_pass(self, container_start: float, able_at: float) -> float:
        """Epoch s at which the probe has passed ``success_threshold`` times, the app
        answering from ``able_at`` on (probes at start + delay + k * period)."""
        first = container_start + self.initial_delay_seconds
        k = 0
        if able_at > first:
            k = -int(-(able_at - first) // self.period_seconds)  # ceil
        return first + (k + self.success_threshold - 1) * self.period_seconds


@dataclass(slots=True, frozen=True)
class Target:
    """What the simulator needs of the scale target.

    ``requests``/``missing_request`` are in the core's ``Pod`` form (milli-units);
    ``cpu_limit_millicores`` is the serving container's CPU limit (None: no limit); ``fields`` the manifest path of
    each container the core counts (``spec.template.spec.containers[0]``) and, under "", of the pod (its
    pod-level resources); ``node_selector`` the pod template's ``nodeSelector`` (which node pool of a fleet runs it).
    """

    kind: str
    name: str
    namespace: str
    replicas: int
    selector: str
    labels: dict[str, str]
    requests: dict[tuple[str, str], int | None]
    missing_request: dict[tuple[str, str], str]
    containers: tuple[str, ...]
    container: str
    cpu_limit_millicores: float | None
    readiness: Probe | None
    startup: Probe | None
    ordered_ready: bool
    pod: Pod | None = None  # the pod template as the core reads it (requests, limits, containers)
    fields: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


#: the most pods the simulator keeps (each is simulated one by one): bounds its time and memory when an HPA
#: with a huge maxReplicas meets a huge load
MAX_SIMULATED_PODS = 10_000


def load_target(path: str | Path, container: str = "") -> Target:
    """Read the target manifest (one Deployment or StatefulSet; other kinds in the file
    are skipped). ``container`` names the serving container ("" = the first)."""
    file = str(path)
    doc = read_document(path)
    docs = doc if isinstance(doc, list) else [doc]
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") in KINDS]
    if len(found) != 1:
        kinds = ", ".join(str(d.get("kind")) for d in docs if isinstance(d, dict)) or "nothing"
        raise InputError(f"expected exactly one apps/v1 Deployment or StatefulSet, found {len(found)} (kinds: {kinds})",
                         file=file)
    try:
        return target_from_dict(found[0], container)
    except InputError as err:
        raise err.at(file=file, obj=object_label(found[0])) from None


def target_from_dict(d: dict, container: str = "") -> Target:
    """A Target from a Deployment/StatefulSet dict; raises InputError."""
    if d.get("apiVersion") != "apps/v1":
        raise InputError(f"expected apiVersion apps/v1, got {d.get('apiVersion')!r}", field="apiVersion")
    model = decode(d)
    object_meta(model.kind, model.metadata.name if model.metadata else None,
                model.metadata.namespace if model.metadata else None)
    spec = model.spec
    if spec is None or spec.template is None or spec.template.spec is None:
        raise InputError("a pod template is required", field="spec.template")
    selector = selector_text(spec.selector)
    labels = dict((spec.template.metadata.labels if spec.template.metadata else None) or {})
    _check_selector(selector, labels)
    containers = tuple(c.name for c in spec.template.spec.containers or [])
    if not containers:
        raise InputError("the pod template has no containers", field="spec.template.spec.containers")
    serving = container or containers[0]
    if serving not in containers:
        raise InputError(f"no container {serving!r} in the pod template (containers: {', '.join(containers)})",
                         field="container")
    pod = pod_from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{model.metadata.name}-template"},
                         "spec": d["spec"]["template"]["spec"]})
    c = next(c for c in spec.template.spec.containers if c.name == serving)
    index = containers.index(serving)
    replicas = 1 if spec.replicas is None else int32_value(spec.replicas, "spec.replicas")
    if replicas > MAX_SIMULATED_PODS:
        raise InputError(f"{replicas:,} pods: the simulator runs at most {MAX_SIMULATED_PODS:,} pods", field="spec.replicas")
    ordered = model.kind == "StatefulSet" and (getattr(spec, "podManagementPolicy", None) or "OrderedReady") == "OrderedReady"
    return Target(
        model.kind, model.metadata.name, model.metadata.namespace or "default", replicas, selector, labels,
        pod.requests, pod.missing_request, containers, serving, _cpu_limit(c, index),
        _probe(c.readinessProbe, f"spec.template.spec.containers[{index}].readinessProbe"),
        _probe(c.startupProbe, f"spec.template.spec.containers[{index}].startupProbe"), ordered, pod,
        _container_fields(spec.template.spec), dict(spec.template.spec.nodeSelector or {}),
    )


def _container_fields(spec: Any) -> dict[str, str]:
    """``Target.fields``: each container's path in the manifest (init containers too), "" the pod's."""
    out = {"": "spec.template.spec"}
    for key, items in (("initContainers", spec.initContainers), ("containers", spec.containers)):
        out.update({c.name: f"spec.template.spec.{key}[{i}]" for i, c in enumerate(items or [])})
    return out


def _check_selector(selector: str, labels: dict[str, str]) -> None:
    if not selector:
        raise InputError("a label selector is required", field="spec.selector")
    try:
        reqs = parse_selector(selector)
    except SelectorError as err:
        raise InputError(str(err), field="spec.selector") from None
    if not matches(reqs, labels):
        raise InputError(f"the template labels do not match the selector {selector!r}", field="spec.template.metadata.labels")


def _cpu_limit(c: Any, index: int) -> float | None:
    limits = (c.resources.limits if c.resources is not None else None) or {}
    if "cpu" not in limits:
        return None
    return float(milli(limits["cpu"], f"spec.template.spec.containers[{index}].resources.limits.cpu"))


def _probe(p: Any, field: str) -> Probe | None:
    if p is None:
        return None
    period = 10 if p.periodSeconds is None else p.periodSeconds
    success = 1 if p.successThreshold is None else p.successThreshold
    delay = 0 if p.initialDelaySeconds is None else p.initialDelaySeconds
    if period <= 0 or success <= 0 or delay < 0:
        raise InputError("periodSeconds and successThreshold must be > 0, initialDelaySeconds >= 0", field=field)
    return Probe(float(delay), float(period), int(success))
