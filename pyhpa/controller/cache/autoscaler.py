"""The HorizontalAutoscaler resource (``pyhpa.dev/v1alpha1``) and its parsed form.

An informer event is parsed once into an ``Autoscaler``: the decision core's ``HPA`` (through
``pyhpa.adapters.autoscaler.read_autoscaler``, the same reading ``explain`` and ``simulate`` use), the target
reference, how to query each metric, the per-object settings and the status as stored. The sync
hot path then works on these plain values only.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import msgspec

from ...adapters.autoscaler import MEMORY_KEY, ObjectSettings, effective_config, read_autoscaler
from ...adapters.errors import InputError
from ...adapters.metric_types import REGISTRY, MetricQuery
from ...adapters.objects import DEFAULT_CPU_METRIC
from ...adapters.pause import pause_annotations
from ...adapters.printers import Targets
from ...api.v1alpha1 import StatusExtensions
from ...core import HPA, ControllerConfig
from ...core.model import RESOURCE
from ..kube.resources import API_VERSION, GROUP, KIND, PLURAL, VERSION, HorizontalAutoscaler, TargetRef  # noqa: F401 (re-exported)
from ..settings import Settings

# ----- what an Autoscaler keeps as stored: packed JSON ----------------------------------------------------------
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def _status_keys(struct: type, skip: tuple[str, ...] = ()) -> bytes:
    """``"key":`` for every wire field of ``struct`` (an API struct; fields named in ``skip`` left out) and, in
    the same walk, of the structs of its fields, each key once in the order first met: the status sections pyhpa
    writes, named by its API types (``pyhpa.api.v1alpha1.StatusExtensions``), so a new section is in the words."""
    keys: dict[str, None] = {}

    def walk(t: Any) -> None:
        if isinstance(t, msgspec.inspect.UnionType):
            for u in t.types:
                walk(u)
        elif isinstance(t, msgspec.inspect.Metadata):
            walk(t.type)
        elif isinstance(t, msgspec.inspect.ListType):
            walk(t.item_type)
        elif isinstance(t, msgspec.inspect.StructType):
            for f in t.fields:
                if f.name not in skip:
                    keys[f.encode_name] = None
                    walk(f.type)

    walk(msgspec.inspect.type_info(struct))
    return "".join(f'"{k}":' for k in keys).encode()


#: zlib's preset dictionary for the packed status, memory and spec: the words an autoscaling/v2 status (with
#: pyhpa's sections), ``status.pyhpa`` and a spec repeat; the most frequent last (zlib reaches back least far
#: for those). A status of four conditions packs 1,007 bytes of JSON into about 220.
_ZDICT = (
    b'"behavior":"scaleUp":"scaleDown":"stabilizationWindowSeconds":"selectPolicy":"policies":"periodSeconds":'
    b'"Percent""Pods""External""Object""ContainerResource""container":"selector":"matchLabels":'
    + _status_keys(StatusExtensions, skip=(MEMORY_KEY,)) +  # pyhpa's status sections (status.pyhpa: below)
    b'"scaleUpEvents":"scaleDownEvents":"metricFailures":"firstFailureTime":"fallbackSince":"fallbackReplicas":'
    b'"fallback":"failureThreshold":"replicas":"recommendations":"timestamp":'
    b'"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"minReplicas":"maxReplicas":'
    b'"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":'
    b'"AverageValue","averageValue":"memory"Failing"'
    b'failing metrics not in fallback: the HPA was unable to compute the replica count: '
    b"FailedGetResourceMetricMetricsFailingSucceededGetScalethe HPA controller was able to get the target's "
    b'current scale"ScaleDownStabilizedrecent recommendations were higher than current one, applying the highest '
    b'recent recommendation'
    b'{"observedGeneration":1,"desiredReplicas":"currentReplicas":"currentMetrics":[{"type":"Resource",'
    b'"resource":{"name":"cpu","current":{"averageUtilization":"averageValue":"'
    b'"conditions":[{"type":"AbleToScale","status":"True","lastTransitionTime":"'
    b'"reason":"ReadyForNewScale","message":"recommended size matches current size"},'
    b'{"type":"Fallback","status":"False","lastTransitionTime":"","reason":"MetricsHealthy",'
    b'"message":"every metric is available"},'
    b'{"type":"ScalingActive","status":"True","lastTransitionTime":"","reason":"ValidMetricFound",'
    b'"message":"the HPA was able to successfully calculate a replica count from cpu resource utilization '
    b'(percentage of request)"},'
    b'{"type":"ScalingLimited","status":"False","lastTransitionTime":"","reason":"DesiredWithinRange",'
    b'"message":"the desired count is within the acceptable range"}],'
    b'"metricHealth":[{"metric":"Resource/cpu","numberOfFailures":0,"status":"Happy"}]}'
)
#: a 4 KiB window (the preset dictionary and a status fit), a small deflate state (about 20 KB while packing)
_WBITS, _MEM_LEVEL = 12, 2
#: a deflate state primed with the preset dictionary: each ``packed`` works on a copy (faster than priming anew)
_PACKER = zlib.compressobj(1, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, _ZDICT)


def packed(value: Any) -> bytes:
    """``value`` as an ``Autoscaler`` keeps it: its JSON, deflated with the preset dictionary."""
    z = _PACKER.copy()
    return z.compress(_encode(value)) + z.flush()


def unpacked(data: bytes) -> Any:
    """What ``packed`` packed (a fresh copy)."""
    z = zlib.decompressobj(_WBITS, _ZDICT)
    return _decode(z.decompress(data) + z.flush())


def _packed_or(value: Any, default: Any) -> bytes:
    """``packed(value)``; ``packed(default)`` for what JSON cannot hold (a malformed object is reported, not kept)."""
    try:
        return packed(value)
    except (TypeError, msgspec.EncodeError):
        return packed(default)


_EMPTY = packed({})
_NULL = packed(None)


@dataclass(slots=True)
class Autoscaler:
    """One HorizontalAutoscaler as the controller keeps it (parsed once per informer event).

    ``hpa`` is None when the spec is invalid (``error`` says why, as ``InputError`` text);
    ``sync_period_seconds`` the effective period (own setting or the controller flag); ``pause`` the pause
    annotations (``pyhpa.adapters.pause.pause_annotations``: a change of them is synced at once).

    What is kept as stored — ``status`` (``.status`` without the memory), ``memory_status`` (``status.pyhpa``,
    None when absent) and ``spec`` (``pyhpa snapshot`` writes it; the rest of the object is not kept) — is held
    packed (``status_packed``, ``memory_packed``, ``spec_packed``: JSON deflated with a preset dictionary of
    the words statuses repeat, ``packed``) and unpacked when read: a status of four conditions is about 4.5 KB
    as dicts and strings, 1 KB as JSON and 220 bytes packed, and a sync reads it only to compare it with the
    status it decided (``pyhpa.controller.outputs.status``). The properties unpack a fresh copy each time
    (changing it changes nothing stored); assigning one packs it.
    ``writing``: the packed (status, memory) of a status write in flight, so that the informer's echo of it is
    not taken for a change made by someone else (``same_status``).
    ``targets``: how the status shows the metrics in ``kubectl get``'s TARGETS column (``pyhpa.adapters.printers``),
    worked out from the spec once (None for a spec that cannot be read; shared by autoscalers of the same metrics).
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
    status_packed: bytes = _EMPTY
    memory_packed: bytes | None = None
    spec_packed: bytes = _NULL
    pause: tuple = ()
    writing: tuple[bytes, bytes | None] | None = None
    targets: Targets | None = None

    @property
    def status(self) -> dict:
        """``.status`` as stored, without ``status.pyhpa`` (a fresh dict)."""
        return unpacked(self.status_packed)

    @status.setter
    def status(self, value: dict) -> None:
        self.status_packed = packed(value)

    @property
    def memory_status(self) -> dict | None:
        """``status.pyhpa`` as stored (a fresh dict), None when absent."""
        return None if self.memory_packed is None else unpacked(self.memory_packed)

    @memory_status.setter
    def memory_status(self, value: dict | None) -> None:
        self.memory_packed = None if value is None else packed(value)

    @property
    def spec(self) -> Any:
        """``.spec`` as stored (a fresh copy)."""
        return unpacked(self.spec_packed)

    def same_status(self, status: dict, memory: dict | None, in_flight: bool = False,
                    stored: dict | None = None) -> bool:
        """Whether ``status`` (without the memory) and ``memory`` (``status.pyhpa``) are what is stored (with
        ``in_flight``: or what a status write in flight is writing). Compared as values (``1 == 1.0``: an API
        server may write a float back as an integer). ``stored``: ``self.status`` when the caller has it."""
        kept = (self.status_packed, self.memory_packed)
        both = in_flight and self.writing is not None
        for i, (status_packed, memory_packed) in enumerate((kept, self.writing) if both else (kept,)):
            if (memory is None) != (memory_packed is None):
                continue
            current = stored if i == 0 and stored is not None else unpacked(status_packed)
            if current == status and (memory is None or unpacked(memory_packed) == memory):
                return True
        return False


def object_key(namespace: str, name: str) -> str:
    """Work-queue key ``namespace/name`` (upstream: cache.MetaNamespaceKeyFunc)."""
    return f"{namespace}/{name}"


def _queries(model: Any, extended: dict | None = None) -> tuple[MetricQuery, ...]:
    """How to ask for each ``spec.metrics[]`` item: built by its type (``pyhpa.adapters.metric_types``) from the v2
    model's item, or the query its type made when reading it (``extended``: {index: (MetricSpec, MetricQuery)} of
    the types autoscaling/v2 lacks); a type no one knows is asked nothing (the core reports it)."""
    out = []
    for i, m in enumerate(model.spec.metrics or []):
        if extended and i in extended:
            out.append(extended[i][1])
            continue
        t = REGISTRY.get(m.type)
        out.append(t.query(m) if t is not None and t.query is not None else MetricQuery(m.type))
    if not out:  # API default: CPU 80 %
        out.append(MetricQuery(RESOURCE, "cpu"))
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
        key=object_key(ns, name), namespace=ns, name=name, uid=meta.get("uid", ""),
        generation=int(meta.get("generation") or 0), resource_version=meta.get("resourceVersion", ""), hpa=None,
        error=None, scale_target_ref=None, queries=(), settings=ObjectSettings(), config=base,
        sync_period_seconds=settings.sync_period_seconds, status_packed=_packed_or(status, {}),
        memory_packed=None if memory_status is None else _packed_or(memory_status, None),
        spec_packed=_packed_or(spec, None),
        pause=pause_annotations(meta),
    )
    try:
        if not isinstance(spec, dict):
            raise InputError(f"must be an object, got {type(spec).__name__}", field="spec")
        doc = {"apiVersion": obj.get("apiVersion") or API_VERSION, "kind": obj.get("kind") or KIND,
               "metadata": meta, "spec": spec, "status": status}
        parsed = read_autoscaler(doc, lenient=True, scale_to_zero=base.scale_to_zero,
                                 prometheus_server=settings.prometheus_url)
        hpa, model, extended, own = parsed.hpa, parsed.model, parsed.extended, parsed.settings
        ref = model.spec.scaleTargetRef
        a.scale_target_ref = TargetRef(ref.apiVersion or "", ref.kind, ref.name)
        a.queries = _queries(model, extended)
    except InputError as err:
        if status and (err.field or "").startswith("status"):  # the controller's own field: rewritten, not an error
            return parse_autoscaler(dict(obj, status={}), settings)
        a.error = str(InputError(err.message, field=err.field))
        return a
    except (AttributeError, TypeError, ValueError, KeyError) as err:  # a shape no reader expected: still a condition
        a.error = f"cannot read the object: {type(err).__name__}: {err}"
        return a
    a.hpa, a.settings = hpa, own
    a.targets = Targets.of(spec.get("metrics") or [DEFAULT_CPU_METRIC])  # the API server's default, as for an HPA
    a.config = effective_config(base, own)
    a.sync_period_seconds = own.sync_period_seconds or settings.sync_period_seconds
    return a
