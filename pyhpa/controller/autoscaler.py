"""The HorizontalAutoscaler resource (``pyhpa.dev/v1alpha1``) and its parsed form.

An informer event is parsed once into an ``Autoscaler``: the decision core's ``HPA`` (through
``pyhpa.adapters.objects.hpa_from_dict``, the same reading ``explain`` uses), the target
reference, how to query each metric, the per-object settings and the status as stored. The sync
hot path then works on these plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lightkube.generic_resource import create_namespaced_resource

from ..adapters.autoscaler import EXTENSION_FIELDS
from ..adapters.errors import InputError
from ..adapters.objects import hpa_from_dict, selector_text
from ..adapters.prediction import prediction_from_dict
from ..adapters.promql import PROMETHEUS, PromQuery, split_prometheus, with_prometheus
from ..core import HPA, ControllerConfig
from .settings import SETTING_FIELDS, ObjectSettings, Settings, effective_config, object_settings

GROUP = "pyhpa.dev"
VERSION = "v1alpha1"
KIND = "HorizontalAutoscaler"
PLURAL = "horizontalautoscalers"
API_VERSION = f"{GROUP}/{VERSION}"
#: The lightkube resource class (a generic namespaced resource with ``.Status``).
HorizontalAutoscaler = create_namespaced_resource(GROUP, VERSION, KIND, PLURAL)
#: ``status`` key of the controller memory (``pyhpa.controller.memory``).
MEMORY_KEY = "pyhpa"
#: ``status`` sections of a HorizontalAutoscaler that autoscaling/v2 does not have.
STATUS_EXTENSIONS = ("prediction", "schedules")


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
    ``sync_period_seconds`` the effective period (own setting or the controller flag).
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
    obj: Any = None


def object_key(namespace: str, name: str) -> str:
    """Work-queue key ``namespace/name`` (upstream: cache.MetaNamespaceKeyFunc)."""
    return f"{namespace}/{name}"


def hpa_document(meta: dict, spec: dict, status: dict) -> dict:
    """The autoscaling/v2 HorizontalPodAutoscaler a HorizontalAutoscaler (or a native HPA) stands for:
    name and namespace, the spec without the per-object settings, the status when it has desiredReplicas."""
    doc = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": {k: v for k, v in spec.items() if k not in SETTING_FIELDS + EXTENSION_FIELDS},
    }
    if status.get("desiredReplicas") is not None:
        doc["status"] = {k: v for k, v in status.items() if k not in STATUS_EXTENSIONS}
    return doc


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
        settings.sync_period_seconds, status, memory_status, obj,
    )
    try:
        if not isinstance(spec, dict):
            raise InputError(f"must be an object, got {type(spec).__name__}", field="spec")
        own = object_settings(spec)
        doc = hpa_document(meta, spec, status)
        doc["spec"]["metrics"], prom = split_prometheus(spec.get("metrics"), "spec.metrics", settings.prometheus_url)
        hpa, model = hpa_from_dict(doc, lenient=True, scale_to_zero=base.scale_to_zero)
        hpa = with_prometheus(hpa, prom)
        if "prediction" in spec:
            hpa = replace(hpa, prediction=prediction_from_dict(spec["prediction"], hpa.metrics))
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
