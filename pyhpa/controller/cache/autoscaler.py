"""The HorizontalAutoscaler resource (``pyhpa.dev/v1alpha1``) and its parsed form.

An informer event is parsed once into an ``Autoscaler``: the decision core's ``HPA`` (through
``pyhpa.adapters.autoscaler.read_autoscaler``, the same reading ``explain`` and ``simulate`` use), the target
reference, how to query each metric, the per-object settings and the status as stored. The sync
hot path then works on these plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
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


#: JSON bytes of what an ``Autoscaler`` keeps as it is stored (``msgspec``: compact, fast both ways)
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_EMPTY = _encode({})


@dataclass(slots=True)
class Autoscaler:
    """One HorizontalAutoscaler as the controller keeps it (parsed once per informer event).

    ``hpa`` is None when the spec is invalid (``error`` says why, as ``InputError`` text);
    ``sync_period_seconds`` the effective period (own setting or the controller flag); ``pause`` the pause
    annotations (``pyhpa.adapters.pause.pause_annotations``: a change of them is synced at once).

    What is kept as stored — ``status`` (``.status`` without the memory), ``memory_status`` (``status.pyhpa``,
    None when absent) and ``spec`` (``pyhpa snapshot`` writes it; the rest of the object is not kept) — is held
    as JSON bytes (``status_json``, ``memory_json``, ``spec_json``) and decoded when read: a status of four
    conditions is about 1 KB as JSON and 4.5 KB as dicts and strings, and a sync reads it only to compare it
    with the status it decided (``pyhpa.controller.outputs.status``). The properties decode a fresh copy
    each time (changing it changes nothing stored); assigning one stores its JSON.
    ``writing``: the (status, memory) JSON of a status write in flight, so that the informer's echo of it is
    not taken for a change made by someone else (``same_status``).
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
    status_json: bytes = _EMPTY
    memory_json: bytes | None = None
    spec_json: bytes = b"null"
    pause: tuple = ()
    writing: tuple[bytes, bytes | None] | None = None

    @property
    def status(self) -> dict:
        """``.status`` as stored, without ``status.pyhpa`` (a fresh dict)."""
        return _decode(self.status_json)

    @status.setter
    def status(self, value: dict) -> None:
        self.status_json = _encode(value)

    @property
    def memory_status(self) -> dict | None:
        """``status.pyhpa`` as stored (a fresh dict), None when absent."""
        return None if self.memory_json is None else _decode(self.memory_json)

    @memory_status.setter
    def memory_status(self, value: dict | None) -> None:
        self.memory_json = None if value is None else _encode(value)

    @property
    def spec(self) -> Any:
        """``.spec`` as stored (a fresh copy)."""
        return _decode(self.spec_json)

    def same_status(self, status: dict, memory: dict | None, in_flight: bool = False) -> bool:
        """Whether ``status`` (without the memory) and ``memory`` (``status.pyhpa``) are what is stored (with
        ``in_flight``: or what a status write in flight is writing). Compared as values (``1 == 1.0``: an API
        server may write a float back as an integer)."""
        stored = (self.status_json, self.memory_json)
        both = in_flight and self.writing is not None
        for status_json, memory_json in (stored, self.writing) if both else (stored,):
            if (memory is None) != (memory_json is None):
                continue
            if _decode(status_json) == status and (memory is None or _decode(memory_json) == memory):
                return True
        return False


def json_bytes(value: Any) -> bytes:
    """``value`` as the JSON an ``Autoscaler`` keeps (``status_json``, ``memory_json``)."""
    return _encode(value)


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


def _json_or(value: Any, default: bytes) -> bytes:
    """``value`` as JSON; ``default`` for what JSON cannot hold (a malformed object is reported, not kept)."""
    try:
        return _encode(value)
    except (TypeError, msgspec.EncodeError):
        return default


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
        key=object_key(ns, name), namespace=ns, name=name, uid=meta.get("uid", ""),
        generation=int(meta.get("generation") or 0), resource_version=meta.get("resourceVersion", ""), hpa=None,
        error=None, scale_target_ref=None, queries=(), settings=ObjectSettings(), config=base,
        sync_period_seconds=settings.sync_period_seconds, status_json=_json_or(status, _EMPTY),
        memory_json=None if memory_status is None else _json_or(memory_status, b"null"),
        spec_json=_json_or(spec, b"null"),
        pause=pause_annotations(meta),
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
