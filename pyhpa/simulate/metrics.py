"""Which simulated signal answers each ``spec.metrics[]`` item of the HPA, and how its
value and target appear in the timeline (units: percent of request, millicores, MiB, or
the metric's own unit)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..adapters.errors import InputError
from ..adapters.metric_types import REGISTRY, RESOURCE_TYPES, MetricType
from ..core import HPA, MetricSpec, Proposal
from ..core.model import UTILIZATION, VALUE
from .profile import SERVED_SOURCE, Profile
from .target import Target

MIB_MILLI = 1000.0 * 1024 * 1024  # milli-bytes per MiB


@dataclass(slots=True, frozen=True)
class MetricView:
    """One HPA metric in the simulator.

    ``kind``: ``cpu``/``memory`` (the serving container's modelled use), ``idle`` (a
    ContainerResource of another container: 0), ``served`` (each pod's served
    requests/s), ``pods_column`` (a trace column total split over Ready pods),
    ``column`` (a trace column as an Object/External value). ``label`` names the
    timeline column; ``factor`` turns core milli-units into ``unit``.
    """

    spec: MetricSpec
    kind: str
    label: str
    unit: str
    factor: float
    target: float
    column: str = ""
    scale: float = 1.0

    @property
    def utilization(self) -> bool:
        return self.spec.target_type == UTILIZATION and self.spec.type in RESOURCE_TYPES

    def value(self, p: Proposal) -> float | None:
        """The metric's current value as the HPA computed it (None when it failed)."""
        if p.replicas is None:
            return None
        if self.utilization:
            return float(p.utilization) if p.utilization is not None else None
        return None if p.raw_milli is None else p.raw_milli * self.factor


def metric_views(hpa: HPA, target: Target, profile: Profile) -> list[MetricView]:
    """A MetricView per HPA metric; InputError (field ``spec.metrics[i]``) when the
    simulator cannot produce it."""
    views, seen = [], set()
    for i, spec in enumerate(hpa.metrics):
        view = _view(spec, target, profile, f"spec.metrics[{i}]")
        label = view.label
        n = 2
        while label in seen:
            label, n = f"{view.label}_{n}", n + 1
        seen.add(label)
        views.append(MetricView(spec, view.kind, label, view.unit, view.factor, view.target, view.column, view.scale))
    return views


def _view(spec: MetricSpec, target: Target, profile: Profile, field: str) -> MetricView:
    """How the simulator answers ``spec``, as its type is (``pyhpa.adapters.metric_types``): a resource of the pods
    is modelled (``_resource_view``); a per-pod metric is the served requests or a trace column split over the
    pods; a metric of one value is a trace column."""
    t = REGISTRY.get(spec.type)
    if t is not None and t.resource:
        return _resource_view(spec, t, target, field)
    per_pod = t is not None and t.per_pod
    source = profile.metrics.get(spec.name)
    if source is None:
        raise InputError(
            f"{spec.type} metric {spec.name!r} has no simulated source: add --metric-column {spec.name}=COLUMN, or "
            f"'metrics: {{{spec.name}: {{column: COLUMN}}}}' to the profile"
            + (f" (or source: {SERVED_SOURCE})" if per_pod else ""), field=field)
    label = f"{_slug(spec.name)}_{'value' if spec.target_type == VALUE else 'average'}"
    milli = spec.target_value_milli if spec.target_type == VALUE else spec.target_average_milli
    target_value = (milli or 0) / 1000.0
    if per_pod:
        kind = "served" if source.source == SERVED_SOURCE else "pods_column"
        return MetricView(spec, kind, label, "", 0.001, target_value, source.column, source.scale)
    if t is not None and t.extension is None:
        if source.source == SERVED_SOURCE:
            raise InputError(f"{spec.type} metric {spec.name!r}: source {SERVED_SOURCE} is per pod; give a trace column",
                             field=field)
        return MetricView(spec, "column", label, "", 0.001, target_value, source.column, source.scale)
    raise InputError(f"metric type {spec.type!r} cannot be simulated", field=field)


def _resource_view(spec: MetricSpec, t: MetricType, target: Target, field: str) -> MetricView:
    if spec.name not in ("cpu", "memory"):
        raise InputError(f"the simulator models cpu and memory, not {spec.name!r}", field=field)
    prefix = ""
    kind = spec.name
    if t.container:
        if spec.container not in target.containers:
            raise InputError(f"container {spec.container!r} is not in the pod template of {target.label} "
                             f"(containers: {', '.join(target.containers)})", field=field)
        prefix = f"{_slug(spec.container)}_"
        if spec.container != target.container:
            kind = "idle"
    cpu = spec.name == "cpu"
    if spec.target_type == UTILIZATION:
        return MetricView(spec, kind, f"{prefix}{spec.name}_utilization_percent", "% of request", 1.0,
                          float(spec.target_utilization or 0))
    factor = 1.0 if cpu else 1.0 / MIB_MILLI
    unit = "millicores" if cpu else "MiB"
    label = f"{prefix}{spec.name}_average_{'millicores' if cpu else 'mebibytes'}"
    return MetricView(spec, kind, label, unit, factor, (spec.target_average_milli or 0) * factor)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "metric"


def columns_needed(views: list[MetricView]) -> tuple[str, ...]:
    """Trace columns the metric sources read."""
    return tuple(dict.fromkeys(v.column for v in views if v.column))
