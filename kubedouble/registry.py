"""The resource types the double serves: built-ins plus CRDs registered at runtime."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .errors import KubeError

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]
META_FIELDS = ("metadata.name", "metadata.namespace")
POD_FIELDS = META_FIELDS + ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName")
EVENT_FIELDS = META_FIELDS + tuple(f"involvedObject.{f}" for f in (
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")) + (
    "reason", "reportingComponent", "source", "type")
EVENTS_V1_FIELDS = META_FIELDS + tuple(f"regarding.{f}" for f in (
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")) + (
    "reason", "reportingController", "type")


@dataclass
class ScalePaths:
    """Where a resource keeps the numbers the ``/scale`` subresource exposes (CRD ``subresources.scale``)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: Optional[str] = None  # None → build from .spec.selector (built-in workloads)


@dataclass
class ResourceType:
    """One served resource: ``group``/``versions``/``plural``/``kind`` and its subresources."""

    group: str
    versions: list[str]
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: list[str] = field(default_factory=list)
    status: bool = False
    scale: Optional[ScalePaths] = None
    schemas: Optional[dict[str, dict]] = None  # CRD: version → openAPIV3Schema; None → built-in
    field_selectors: tuple[str, ...] = META_FIELDS
    initial_status: Optional[Callable[[], Any]] = None  # status on create; None → drop status
    defaults: Optional[Callable[[dict], None]] = None  # built-in defaulting applied before validation
    crd_name: Optional[str] = None

    @property
    def key(self) -> tuple[str, str]:
        """Storage key ``(group, plural)``."""
        return self.group, self.plural

    def api_version(self, version: Optional[str] = None) -> str:
        """``group/version`` (``v1`` for core)."""
        version = version or self.versions[0]
        return f"{self.group}/{version}" if self.group else version


def _replicas_default(obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and "replicas" not in spec:
        spec["replicas"] = 1


def _hpa_default(obj: dict) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and "minReplicas" not in spec:
        spec["minReplicas"] = 1


def _workload(plural: str, kind: str, singular: str, short: str, initial: Callable[[], Any]) -> ResourceType:
    return ResourceType("apps", ["v1"], plural, kind, True, singular, [short], status=True, scale=ScalePaths(),
                        initial_status=initial, defaults=_replicas_default)


def builtin_types() -> list[ResourceType]:
    """The resources every double serves from the start."""
    return [
        ResourceType("", ["v1"], "pods", "Pod", True, "pod", ["po"], status=True, field_selectors=POD_FIELDS,
                     initial_status=lambda: {"phase": "Pending"}),
        ResourceType("", ["v1"], "namespaces", "Namespace", False, "namespace", ["ns"], status=True,
                     initial_status=lambda: {"phase": "Active"}),
        ResourceType("", ["v1"], "nodes", "Node", False, "node", ["no"], status=True),
        ResourceType("", ["v1"], "events", "Event", True, "event", ["ev"], field_selectors=EVENT_FIELDS),
        ResourceType("events.k8s.io", ["v1"], "events", "Event", True, "event", ["ev"],
                     field_selectors=EVENTS_V1_FIELDS),
        ResourceType("coordination.k8s.io", ["v1"], "leases", "Lease", True, "lease"),
        # initial statuses carry the Go fields that are not omitempty (the schemas require them)
        _workload("deployments", "Deployment", "deployment", "deploy", dict),
        _workload("statefulsets", "StatefulSet", "statefulset", "sts", lambda: {"replicas": 0}),
        _workload("replicasets", "ReplicaSet", "replicaset", "rs", lambda: {"replicas": 0}),
        ResourceType("autoscaling", ["v2"], "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
                     "horizontalpodautoscaler", ["hpa"], status=True, defaults=_hpa_default,
                     initial_status=lambda: {"desiredReplicas": 0}),  # Go's non-omitempty zero value
        ResourceType("apiextensions.k8s.io", ["v1"], "customresourcedefinitions", "CustomResourceDefinition",
                     False, "customresourcedefinition", ["crd", "crds"], status=True),
    ]


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple:
    """Kubernetes version ordering key: GA > beta > alpha, then higher numbers (largest sorts first)."""
    m = _VERSION_RE.match(version)
    if not m:
        return (0, 0, 0)
    rank = {None: 3, "beta": 2, "alpha": 1}[m.group(2)]
    return (rank, int(m.group(1)), int(m.group(3) or 0))


def _crd_invalid(name: str, message: str) -> KubeError:
    from .errors import invalid
    return invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, "spec", message)


def _scale_paths(sub: dict) -> Optional[ScalePaths]:
    scale = (sub or {}).get("scale")
    if scale is None:
        return None
    return ScalePaths(scale.get("specReplicasPath", ".spec.replicas"),
                      scale.get("statusReplicasPath", ".status.replicas"),
                      scale.get("labelSelectorPath"))


def resource_from_crd(crd: dict) -> ResourceType:
    """Build a ``ResourceType`` from an ``apiextensions.k8s.io/v1`` CRD manifest (422 when malformed)."""
    name = (crd.get("metadata") or {}).get("name", "")
    spec = crd.get("spec") or {}
    names, group = spec.get("names") or {}, spec.get("group", "")
    served = [v for v in spec.get("versions") or [] if v.get("served", True)]
    if not (group and names.get("plural") and names.get("kind") and served):
        raise _crd_invalid(name, "group, names.plural, names.kind and at least one served version are required")
    if name != f"{names['plural']}.{group}":
        raise _crd_invalid(name, f'metadata.name must be spec.names.plural+"."+spec.group: "{names["plural"]}.{group}"')
    ordered = sorted(served, key=lambda v: version_priority(v["name"]), reverse=True)
    first = ordered[0].get("subresources") or {}
    return ResourceType(
        group, [v["name"] for v in ordered], names["plural"], names["kind"], spec.get("scope") != "Cluster",
        names.get("singular", names["kind"].lower()), list(names.get("shortNames") or []),
        status="status" in first, scale=_scale_paths(first),
        schemas={v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {} for v in ordered},
        crd_name=name)


class Registry:
    """Thread-safe lookup of resource types by group/version/plural and by group/kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str], ResourceType] = {}
        for rt in builtin_types():
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Register (or replace) a resource type."""
        with self._lock:
            self._types[rt.key] = rt

    def remove_crd(self, crd_name: str) -> Optional[ResourceType]:
        """Unregister the resource type created from CRD ``crd_name``."""
        with self._lock:
            for key, rt in list(self._types.items()):
                if rt.crd_name == crd_name:
                    return self._types.pop(key)
        return None

    def lookup(self, group: str, version: str, plural: str) -> Optional[ResourceType]:
        """The type served at ``group/version/plural``, or None."""
        rt = self._types.get((group, plural))
        return rt if rt and version in rt.versions else None

    def by_kind(self, group: str, kind: str) -> Optional[ResourceType]:
        """The type of kind ``kind`` in ``group``, or None."""
        with self._lock:
            return next((rt for rt in self._types.values() if rt.group == group and rt.kind == kind), None)

    def all(self) -> list[ResourceType]:
        """Every registered type."""
        with self._lock:
            return list(self._types.values())

    def group_versions(self) -> dict[str, list[str]]:
        """group → served versions, preferred first (core group is "")."""
        out: dict[str, list[str]] = {}
        for rt in self.all():
            versions = out.setdefault(rt.group, [])
            versions.extend(v for v in rt.versions if v not in versions)
        return {g: sorted(vs, key=version_priority, reverse=True) for g, vs in out.items()}
