"""The HorizontalAutoscaler resource (``pyhpa.dev/v1alpha1``) and its parsed form.

An informer event is parsed once into an ``Autoscaler``: the decision core's ``HPA`` (through
``pyhpa.adapters.autoscaler.read_autoscaler``, the same reading ``explain`` and ``simulate`` use), the target
reference, how to query each metric, the per-object settings and the status as stored. The sync
hot path then works on these plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lightkube.generic_resource import create_namespaced_resource

from ...adapters.autoscaler import MEMORY_KEY, ObjectSettings, effective_config, read_autoscaler
from ...adapters.errors import InputError
from ...adapters.objects import selector_text
from ...adapters.pause import pause_annotations
from ...adapters.promql import PROMETHEUS, PromQuery
from ...core import HPA, ControllerConfig
from ..settings import Settings

GROUP = "pyhpa.dev"
VERSION = "v1alpha1"
KIND = "HorizontalAutoscaler"
PLURAL = "horizontalautoscalers"
API_VERSION = f"{GROUP}/{VERSION}"
#: The lightkube resource class (a generic namespaced resource with ``.Status``).
HorizontalAutoscaler = create_namespaced_resource(GROUP, VERSION, KIND, PLURAL)


@dataclass(frozen=True, slots=True)
class TargetRef:
    """``spec.scaleTargetRef``: ``api_version`` like "apps/v1" (core: "v1"), ``kind``, ``name``."""

    api_version: str
    kind: str
    name: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


@dataclass(frozen=True, slots=True)
class MetricQuery:
    """How to ask the metrics APIs for one ``spec.metrics[]`` item.

    ``type`` is the source type; ``name`` the resource (cpu, memory) or metric name; ``container``
    for ContainerResource; ``metric_selector`` the metric's label selector as text; ``described``
    (apiVersion, kind, name) of an Object metric's ``describedObject``; ``prom`` the PromQL query of a
    ``Prometheus`` metric (``pyhpa.adapters.promql``).
    """

    type: str
    name: str = ""
    container: str = ""
    metric_selector: str = ""
    described: tuple[str, str, str] | None = None
    prom: PromQuery | None = None


@dataclass(slots=True)
class Autoscaler:
    """One HorizontalAutoscaler as the controller keeps it (parsed once per informer event).

    ``hpa`` is None when the spec is invalid (``error`` says why, as ``InputError`` text);
    ``status`` is ``.status`` as stored, without the memory (``memory_status``);
    ``sync_period_seconds`` the effective period (own setting or the controller flag); ``spec`` the spec as
    stored (``pyhpa snapshot`` writes it; the rest of the object is not kept); ``pause`` the pause annotations
    (``pyhpa.adapters.pause.pause_annotations``: a change of them is synced at once).
    """

    key: str
    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str
    hpa: HPA | None
    error: str | None
    scale_target_ref: TargetRef | None
    queries: tuple[MetricQuery, ...]
    settings: ObjectSettings
    config: ControllerConfig
    sync_period_seconds: float
    status: dict = field(default_factory=dict)
    memory_status: dict | None = None
    spec: Any = None
    pause: tuple = ()


def object_key(namespace: str, name: str) -> str:
    """Work-queue key ``namespace/name`` (upstream: cache.MetaNamespaceKeyFunc)."""
    return f"{namespace}/{name}"


def _queries(model: Any, prom: dict | None = None) -> tuple[MetricQuery, ...]:
    out = []
    for i, m in enumerate(model.spec.metrics or []):
        if prom and i in prom:
            spec, q = prom[i]
            out.append(MetricQuery(PROMETHEUS, spec.name, prom=q))
        elif m.type in ("Resource", "ContainerResource"):
            src = m.resource if m.type == "Resource" else m.containerResource
            out.append(MetricQuery(m.type, src.name, getattr(src, "container", "") or ""))
        elif m.type in ("Pods", "Object", "External"):
            src = {"Pods": m.pods, "Object": m.object, "External": m.external}[m.type]
            sel = selector_text(src.metric.selector)
            described = None
            if m.type == "Object":
                d = src.describedObject
                described = (d.apiVersion or "", d.kind, d.name)
            out.append(MetricQuery(m.type, src.metric.name, "", sel, described))
        else:
            out.append(MetricQuery(m.type))
    if not out:  # API default: CPU 80 %
        out.append(MetricQuery("Resource", "cpu"))
    return tuple(out)


def parse_autoscaler(obj: Any, settings: Settings) -> Autoscaler:
    """An ``Autoscaler`` from a HorizontalAutoscaler object (dict-like); never raises for bad specs."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        meta = meta.to_dict()
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    status = dict(status) if isinstance(status, dict) else {}  # a malformed status is the controller's to rewrite
    memory_status = status.pop(MEMORY_KEY, None)
    ns, name = meta.get("namespace") or "default", meta.get("name", "")
    base = settings.base_config()
    a = Autoscaler(
        object_key(ns, name), ns, name, meta.get("uid", ""), int(meta.get("generation") or 0),
        meta.get("resourceVersion", ""), None, None, None, (), ObjectSettings(), base,
        settings.sync_period_seconds, status, memory_status, spec, pause_annotations(meta),
    )
    try:
        if not isinstance(spec, dict):
            raise InputError(f"must be an object, got {type(spec).__name__}", field="spec")
        doc = {"apiVersion": obj.get("apiVersion") or API_VERSION, "kind": obj.get("kind") or KIND,
               "metadata": meta, "spec": spec, "status": status}
        parsed = read_autoscaler(doc, lenient=True, scale_to_zero=base.scale_to_zero,
                                 prometheus_server=settings.prometheus_url)
        hpa, model, prom, own = parsed.hpa, parsed.model, parsed.prometheus, parsed.settings
        ref = model.spec.scaleTargetRef
        a.scale_target_ref = TargetRef(ref.apiVersion or "", ref.kind, ref.name)
        a.queries = _queries(model, prom)
    except InputError as err:
        if status and (err.field or "").startswith("status"):  # the controller's own field: rewritten, not an error
            return parse_autoscaler(dict(obj, status={}), settings)
        a.error = str(InputError(err.message, field=err.field))
        return a
    except (AttributeError, TypeError, ValueError, KeyError) as err:  # a shape no reader expected: still a condition
        a.error = f"cannot read the object: {type(err).__name__}: {err}"
        return a
    a.hpa, a.settings = hpa, own
    a.config = effective_config(base, own)
    a.sync_period_seconds = own.sync_period_seconds or settings.sync_period_seconds
    return a
