"""Kubernetes objects (lightkube models) to the core's plain types.

``hpa_from_dict`` reads an autoscaling/v2 HorizontalPodAutoscaler the way the API server
would store it (API defaults applied: minReplicas 1, a CPU 80 % metric when there are no
metrics, behavior defaults per SetDefaults_HorizontalPodAutoscalerBehavior);
``pod_from_dict`` reads a v1 Pod. Validation follows the API server's rules; with
``lenient=True`` objects the API server would refuse but a controller can still meet
(unknown metric types, a target type the source does not allow, minReplicas 0 without
the HPAScaleToZero gate, a name that is no DNS-1123 subdomain) are passed on, and the core reports them as upstream does.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import replace
from decimal import Decimal
from functools import lru_cache
from typing import Any

import msgspec
import msgspec.inspect
from lightkube.codecs import resource_registry
from lightkube.core.exceptions import LoadResourceError
from lightkube.models.autoscaling_v2 import HorizontalPodAutoscaler as _HPAModel  # noqa: F401 (type reference)
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler as HorizontalPodAutoscalerResource
from lightkube.resources.core_v1 import Pod as PodResource

from ..core.calculator import wrap_int64
from ..core.model import (
    ALLOWED_TARGETS,
    AVERAGE_VALUE,
    HPA,
    LIMIT,
    METRIC_SOURCE_TYPES,
    UTILIZATION,
    UTILIZATION_BASES,
    VALUE,
    Behavior,
    Condition,
    MetricSpec,
    Pod,
    ScalingPolicy,
    ScalingRules,
)
from .errors import InputError
from .metric_types import REGISTRY, MetricType, metric_type
from .parse import int32_value, milli, number_text, object_meta, positive_milli, quantity, timestamp, tolerance_float

DEFAULT_CPU_METRIC = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}


def decode(d: dict, kind_label: str = "") -> Any:
    """A lightkube resource object from a dict; schema errors become InputError with the field path.

    Quantity fields (``resource.Quantity`` in the models: ``averageValue``, ``value``, ``tolerance``,
    ``sizeLimit``, ...) accept what the API server accepts: a string or a JSON/YAML number, which the
    API server reads as the quantity written with those digits (``100`` is ``"100"``, ``0.05`` is
    ``"0.05"``). The numbers are handed to the model as that text; ``d`` itself is not changed.
    """
    label = kind_label or object_label(d)
    try:
        model = resource_class(d)
    except (LoadResourceError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"not a Kubernetes object: {err}", obj=label) from None
    try:
        d = quantities_as_text(d, model, "")
    except InputError as err:
        raise err.at(obj=label) from None
    try:
        return model.from_dict(d)
    except msgspec.ValidationError as err:
        message, field = schema_error(str(err))
        raise InputError(message, obj=label, field=field) from None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise InputError(f"not a Kubernetes object: {err}", obj=label) from None


def resource_class(d: Any) -> type:
    """The lightkube model class of an object dict (by ``apiVersion`` and ``kind``)."""
    if not isinstance(d, dict):
        raise TypeError(f"expected a mapping, got {_json_type(d)}")
    for key in ("apiVersion", "kind"):
        if not d.get(key):
            raise KeyError(f"{key} is missing")
    return resource_registry.load(d["apiVersion"], d["kind"])


_TYPE_WORDS = {"int": "an integer", "str": "a string", "float": "a number", "bool": "true or false",
               "array": "a list", "object": "a mapping", "null": "null"}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__


def _type_words(text: str) -> str:
    words = [_TYPE_WORDS.get(t.strip(), t.strip()) for t in text.split("|") if t.strip() != "null"]
    return " or ".join(words) or "null"


def schema_error(text: str) -> tuple[str, str]:
    """(message, field path) of a msgspec validation error, in the API server's terms:
    ``Object missing required field `maxReplicas` - at `$.spec` `` -> ("required field is missing",
    "spec.maxReplicas"); ``Expected `int`, got `str` - at `$.spec.minReplicas` `` -> ("expected an integer,
    got a string", "spec.minReplicas")."""
    msg, _, path = text.partition(" - at `")
    field = path.rstrip("`").removeprefix("$").removeprefix(".")
    missing = re.fullmatch(r"Object missing required field `(.+)`", msg)
    if missing:
        return "required field is missing", f"{field}.{missing.group(1)}" if field else missing.group(1)
    expected = re.fullmatch(r"Expected `(.+)`, got `(.+)`", msg)
    if expected:
        return f"expected {_type_words(expected.group(1))}, got {_type_words(expected.group(2))}", field
    return msg[:1].lower() + msg[1:], field


def _struct_class(tp: Any) -> tuple[str, type] | None:
    """("struct", cls) or ("list", cls) when the (resolved) field type holds a model class."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is typing.Union:
        for a in args:
            found = _struct_class(a)
            if found is not None:
                return found
        return None
    if typing.get_origin(tp) in (list, typing.List) and args:
        inner = _struct_class(args[0])
        return ("list", inner[1]) if inner is not None and inner[0] == "struct" else None
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return ("struct", tp)
    return None


@lru_cache(maxsize=None)
def _quantity_plan(cls: type, _visiting: frozenset = frozenset()) -> tuple[tuple[str, str, type | None], ...]:
    """The fields of model ``cls`` that are quantities (``"q"``) or lead to one (``"struct"``/``"list"``),
    by their JSON names. Quantities are found by the models' own annotation ``resource.Quantity``."""
    plan = []
    hints = typing.get_type_hints(cls)
    for f in msgspec.structs.fields(cls):
        raw = str(cls.__annotations__.get(f.name, ""))
        if "Quantity" in raw:
            plan.append((f.encode_name, "q", None))
            continue
        found = _struct_class(hints.get(f.name))
        if found is None or found[1] in _visiting or found[1] is cls:
            continue
        if _quantity_plan(found[1], _visiting | {cls}):
            plan.append((f.encode_name, found[0], found[1]))
    return tuple(plan)


def quantity_text(value: Any, field: str) -> str:
    """A quantity the user wrote as a number, as the text the API server reads for it (``parse.number_text``);
    raises InputError for anything but a string or number."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a quantity (a number, or a string such as 500m or 1Gi), got {_json_type(value)}",
                         field=field)
    return number_text(value, field)


def quantities_as_text(d: Any, cls: type, path: str) -> Any:
    """``d`` with every number in a quantity field of model ``cls`` replaced by its text (a copy where
    something changed; ``d`` is never modified). ``path`` is the field path of ``d`` for errors."""
    if not isinstance(d, dict):
        return d
    out = d
    for name, kind, sub in _quantity_plan(cls):
        value = d.get(name)
        if value is None:
            continue
        field = f"{path}.{name}" if path else name
        if kind == "q":
            new = quantity_text(value, field)
        elif kind == "struct":
            new = quantities_as_text(value, sub, field)
        elif isinstance(value, list):
            new = [quantities_as_text(v, sub, f"{field}[{i}]") for i, v in enumerate(value)]
            new = value if all(a is b for a, b in zip(new, value)) else new
        else:
            continue
        if new is not value:
            if out is d:
                out = dict(d)
            out[name] = new
    return out


def object_label(d: Any) -> str:
    """``Kind namespace/name`` of a dict-shaped object, for error messages (``HorizontalPodAutoscaler
    default/web``; ``HorizontalPodAutoscaler without metadata.name``; "" for what is no object at all)."""
    if not isinstance(d, dict):
        return ""  # the error itself says what was found instead
    meta = d.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind, ns, name = d.get("kind"), meta.get("namespace"), meta.get("name")
    if not kind and not name:
        return ""
    if not name:
        return str(kind) if str(kind).endswith("List") else f"{kind} without metadata.name"
    ns, name = (_one_line(x) for x in (ns, name))
    return f"{kind or 'object'} {ns + '/' if ns else ''}{name}"


def _one_line(value: Any) -> str:
    """``value`` as text on one line: as written, or its repr when it holds a line break or other unprintable
    character (a name the API server refuses, ``'web\\n'``, still makes one error line)."""
    text = "" if value is None else str(value)
    return text if text.isprintable() else repr(text)


def _target(t: Any, field: str, lenient: bool) -> tuple[str, int | None, int | None, int | None]:
    """(type, utilization %, averageValue milli, value milli) of a MetricTarget. As the API server validates
    it, ``averageValue`` and ``value`` must be positive and ``averageUtilization`` greater than 0 and an int32
    (``lenient``: any value, as a Go struct holds it)."""
    if t is None:
        raise InputError("a metric target is required", field=field)
    read = milli if lenient else positive_milli
    avg = read(t.averageValue, f"{field}.averageValue") if t.averageValue is not None else None
    val = read(t.value, f"{field}.value") if t.value is not None else None
    util = t.averageUtilization
    if util is not None and not lenient:
        int32_value(util, f"{field}.averageUtilization", 1)
    return t.type, util, avg, val


def _metric(m: Any, i: int, lenient: bool) -> MetricSpec:
    field = f"spec.metrics[{i}]"
    mtype = m.type
    if mtype not in METRIC_SOURCE_TYPES:
        if lenient:
            return MetricSpec(type=mtype)
        raise InputError(
            f"unknown metric type {mtype!r} (want one of {', '.join(METRIC_SOURCE_TYPES)})", field=f"{field}.type"
        )
    t = metric_type(mtype)
    key = t.field
    src = getattr(m, key)
    if src is None:
        raise InputError(f"metric type {mtype} needs the {key!r} field", field=f"{field}.{key}")
    ttype, util, avg, val = _target(src.target, f"{field}.{key}.target", lenient)
    _check_target(t, ttype, util, avg, val, f"{field}.{key}.target", lenient)
    return t.spec(src, ttype, util, avg, val)


def _check_target(t: MetricType, ttype, util, avg, val, field, lenient) -> None:
    mtype = t.name
    allowed = ALLOWED_TARGETS[mtype]
    if lenient:
        return
    if ttype not in allowed:
        raise InputError(
            f"target type {ttype!r} is not allowed for {mtype} metrics (allowed: {', '.join(allowed)})",
            field=f"{field}.type",
        )
    need = {UTILIZATION: ("averageUtilization", util), AVERAGE_VALUE: ("averageValue", avg), VALUE: ("value", val)}
    name, value = need[ttype]
    if value is None:
        raise InputError(f"target type {ttype} needs {name}", field=f"{field}.{name}")
    if t.resource and util is not None and avg is not None:
        raise InputError("may not set both a target raw value and a target utilization", field=f"{field}.averageValue")


#: the API server's upper bounds of ``behavior.*.stabilizationWindowSeconds`` and ``policies[].periodSeconds``
MAX_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800


def _rules(r: Any, up: bool, field: str, lenient: bool) -> ScalingRules:
    """HPAScalingRules with the API defaults (GenerateHPAScaleUpRules / GenerateHPAScaleDownRules)."""
    if up:
        window, policies = 0, (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))
    else:
        window, policies = None, (ScalingPolicy("Percent", 100, 15),)
    select, tol = "Max", None
    if r is not None:
        if r.selectPolicy is not None:
            select = r.selectPolicy
            if select not in ("Max", "Min", "Disabled"):
                raise InputError(f"selectPolicy {select!r} is not Max, Min or Disabled", field=f"{field}.selectPolicy")
        if r.stabilizationWindowSeconds is not None:
            window = r.stabilizationWindowSeconds
            if not lenient:
                int32_value(window, f"{field}.stabilizationWindowSeconds", 0, MAX_WINDOW_SECONDS)
        if r.policies is not None:
            policies = tuple(_policy(p, f"{field}.policies[{i}]", lenient) for i, p in enumerate(r.policies))
        if r.tolerance is not None:
            tol = tolerance_float(r.tolerance, f"{field}.tolerance")
            if tol < 0 and not lenient:  # the API server: "must be greater than or equal to 0"
                raise InputError(f"must be 0 or more, got {r.tolerance!r}", field=f"{field}.tolerance")
    return ScalingRules(window, select, policies, tol)


def _policy(p: Any, field: str, lenient: bool) -> ScalingPolicy:
    if p.type not in ("Pods", "Percent"):
        raise InputError(f"policy type {p.type!r} is not Pods or Percent", field=f"{field}.type")
    if not lenient:  # the API server's bounds (validateScalingPolicy)
        int32_value(p.value, f"{field}.value", 1)
        int32_value(p.periodSeconds, f"{field}.periodSeconds", 1, MAX_PERIOD_SECONDS)
    return ScalingPolicy(p.type, p.value, p.periodSeconds)


def _conditions(status: Any) -> tuple[Condition, ...]:
    if status is None or not status.conditions:
        return ()
    out = []
    for c in status.conditions:
        t = timestamp(c.lastTransitionTime) if c.lastTransitionTime is not None else None
        out.append(Condition(c.type, c.status, c.reason or "", c.message or "", t))
    return tuple(out)


def _per_object(m: MetricSpec) -> bool:
    """Whether ``m`` has one value for the whole target (an Object or External metric: what scales from zero)."""
    t = REGISTRY.get(m.type)
    return t is not None and not t.per_pod and t.extension is None


def hpa_from_model(h: Any, lenient: bool = False, scale_to_zero: bool = False, go_structs: bool = False) -> HPA:
    """A core HPA from a lightkube autoscaling/v2 HorizontalPodAutoscaler; raises InputError.

    ``lenient``: metric and target types the API server refuses are passed on (the core reports them
    as upstream does). ``go_structs`` (implies lenient): also minReplicas/maxReplicas the API server
    refuses, as upstream's unit tests build them."""
    lenient = lenient or go_structs
    spec = h.spec
    label = f"HorizontalPodAutoscaler {h.metadata.namespace or 'default'}/{h.metadata.name}"
    try:
        min_r = 1 if spec.minReplicas is None else spec.minReplicas
        _check_bounds(min_r, spec.maxReplicas, lenient, scale_to_zero, go_structs)
        metrics_raw = spec.metrics or []
        metrics = tuple(_metric(m, i, lenient) for i, m in enumerate(metrics_raw))
        if not metrics:
            metrics = (MetricSpec("Resource", "cpu", UTILIZATION, 80),)
        if min_r == 0 and not lenient and not any(_per_object(m) for m in metrics):
            raise InputError("minReplicas 0 needs at least one Object or External metric", field="spec.minReplicas")
        behavior = None
        if spec.behavior is not None:
            b = spec.behavior
            behavior = Behavior(_rules(b.scaleUp, True, "spec.behavior.scaleUp", lenient),
                                _rules(b.scaleDown, False, "spec.behavior.scaleDown", lenient))
        status = h.status
        last = timestamp(status.lastScaleTime) if status is not None and status.lastScaleTime else None
        desired = status.desiredReplicas if status is not None else None
        return HPA(h.metadata.namespace or "default", h.metadata.name, min_r, spec.maxReplicas, metrics,
                   behavior, _conditions(status), last, desired)
    except InputError as err:
        raise err.at(obj=label) from None


def _check_bounds(min_r: int, max_r: int, lenient: bool, scale_to_zero: bool, go_structs: bool = False) -> None:
    if go_structs:  # a Go struct holds any numbers; upstream's controller clamps them
        return
    if max_r < 1:
        raise InputError("maxReplicas must be at least 1", field="spec.maxReplicas")
    if min_r < 0:
        raise InputError("minReplicas must not be negative", field="spec.minReplicas")
    int32_value(max_r, "spec.maxReplicas")
    int32_value(min_r, "spec.minReplicas")
    if min_r > max_r:
        raise InputError(f"minReplicas ({min_r}) is greater than maxReplicas ({max_r})", field="spec.minReplicas")
    if min_r == 0 and not (lenient or scale_to_zero):
        raise InputError("minReplicas 0 needs the HPAScaleToZero feature gate", field="spec.minReplicas")


def go_zero_fill(d: Any, cls: type) -> Any:
    """``d`` with every field the lightkube model ``cls`` requires but ``d`` leaves out set to Go's zero
    value ("" for strings, 0 for numbers, an empty object or list), recursively; ``d`` is not changed.

    Upstream's unit tests build objects as Go structs, where an unset field is its zero value (a
    ``MetricTarget`` without ``Type``, a reference without ``Kind``); ``--lenient`` reads them the same
    way, so the decision core sees what upstream's controller sees. Nothing the user wrote is changed.
    """
    return _fill(d, _type_info(cls))


@lru_cache(maxsize=None)
def _type_info(cls: type) -> Any:
    """msgspec's description of a model class, once per class (building it walks every nested model: ~0.1 s)."""
    return msgspec.inspect.type_info(cls)


def _fill(d: Any, info: Any) -> Any:
    mi = msgspec.inspect
    if isinstance(info, mi.UnionType):
        structs = [t for t in info.types if isinstance(t, (mi.StructType, mi.ListType))]
        return _fill(d, structs[0]) if len(structs) == 1 else d
    if isinstance(info, mi.ListType) and isinstance(d, list):
        return [_fill(x, info.item_type) for x in d]
    if not isinstance(info, mi.StructType) or not isinstance(d, dict):
        return d
    out = dict(d)
    for f in info.fields:
        if f.encode_name in out:
            out[f.encode_name] = _fill(out[f.encode_name], f.type)
        elif f.required:
            out[f.encode_name] = _fill(_go_zero(f.type), f.type)
    return out


def _go_zero(info: Any) -> Any:
    mi = msgspec.inspect
    if isinstance(info, mi.StrType):
        return ""
    if isinstance(info, (mi.IntType, mi.FloatType)):
        return 0
    if isinstance(info, mi.BoolType):
        return False
    if isinstance(info, mi.ListType):
        return []
    return {}


#: ``spec.metrics[]`` sources that take ``utilizationBasis`` (a HorizontalAutoscaler extension), by metric type: the
#: types of a resource of the pods (``pyhpa.adapters.metric_types``)
BASIS_SOURCES = {name: t.field for name, t in REGISTRY.items() if t.resource}


def _split_bases(d: dict, extensions: bool) -> tuple[dict, dict[int, str]]:
    """``d`` without the ``utilizationBasis`` fields of its metrics, and {metric index: basis}.

    Without ``extensions`` (a plain autoscaling/v2 object) the field is an error, not silently dropped."""
    spec = d.get("spec")
    metrics = spec.get("metrics") if isinstance(spec, dict) else None
    if not isinstance(metrics, list):
        return d, {}
    bases: dict[int, str] = {}
    out = list(metrics)
    for i, m in enumerate(metrics):
        out[i] = split_basis(i, m, extensions, bases)
    if not bases and out == metrics:
        return d, {}
    return dict(d, spec=dict(spec, metrics=out)), bases


def split_basis(i: int, m: Any, extensions: bool, bases: dict[int, str]) -> Any:
    """``spec.metrics[i]`` (``m``) without its source's ``utilizationBasis``, the basis recorded in ``bases[i]`` when
    it is the metric's own source. Without ``extensions`` (a plain autoscaling/v2 object) the field is an error naming
    it; a value other than ``Request``/``Limit`` too."""
    if not isinstance(m, dict):
        return m
    out = m
    for key in BASIS_SOURCES.values():
        src = m.get(key)
        if not isinstance(src, dict) or "utilizationBasis" not in src:
            continue
        field = f"spec.metrics[{i}].{key}.utilizationBasis"
        if not extensions:
            raise InputError("utilizationBasis is a field of a HorizontalAutoscaler (pyhpa.dev/v1alpha1), "
                             "not of an autoscaling/v2 HorizontalPodAutoscaler", field=field)
        basis = src["utilizationBasis"]
        if basis not in UTILIZATION_BASES:
            raise InputError(f"must be {' or '.join(UTILIZATION_BASES)}, got {basis!r}", field=field)
        if BASIS_SOURCES.get(m.get("type")) == key:
            bases[i] = basis
        out = dict(out, **{key: {k: v for k, v in src.items() if k != "utilizationBasis"}})
    return out


def with_bases(hpa: HPA, bases: dict[int, str], lenient: bool) -> HPA:
    """``hpa`` with each metric's ``utilizationBasis`` (``bases``: index -> basis; ``Limit`` needs a Utilization
    target unless ``lenient``). Raises InputError naming the field."""
    if not bases:
        return hpa
    metrics = list(hpa.metrics)
    for i, basis in bases.items():
        m = metrics[i]
        if basis == LIMIT and m.target_type != UTILIZATION and not lenient:
            key = BASIS_SOURCES[m.type]
            raise InputError(f"utilizationBasis Limit needs a Utilization target, not {m.target_type!r}",
                             obj=f"HorizontalAutoscaler {hpa.namespace}/{hpa.name}",
                             field=f"spec.metrics[{i}].{key}.utilizationBasis")
        metrics[i] = replace(m, utilization_basis=basis)
    return replace(hpa, metrics=tuple(metrics))


def hpa_from_dict(d: dict, lenient: bool = False, scale_to_zero: bool = False,
                  go_structs: bool = False, extensions: bool = False) -> tuple[HPA, Any]:
    """(core HPA, lightkube model) from an autoscaling/v2 HorizontalPodAutoscaler dict.

    ``go_structs``: read the object as upstream's unit tests build it (``go_zero_fill``, bounds unchecked);
    what ``pyhpa explain --lenient`` does. ``lenient`` alone (the controller) keeps the object's schema.
    ``extensions``: the spec may carry a HorizontalAutoscaler's metric extensions (``utilizationBasis``:
    ``Request`` or ``Limit`` on Resource/ContainerResource metrics); otherwise they are an error."""
    if not isinstance(d, dict):
        raise InputError(f"expected an autoscaling/v2 HorizontalPodAutoscaler, got {_json_type(d)}")
    if d.get("kind") != "HorizontalPodAutoscaler" or d.get("apiVersion") != "autoscaling/v2":
        got = " ".join(str(d[k]) for k in ("apiVersion", "kind") if d.get(k)) or "no apiVersion and kind"
        raise InputError(f"expected an autoscaling/v2 HorizontalPodAutoscaler, got {got}", obj=object_label(d),
                         field="kind")
    try:
        d, bases = _split_bases(d, extensions)
    except InputError as err:
        raise err.at(obj=object_label(d)) from None
    if go_structs:
        d = go_zero_fill(d, HorizontalPodAutoscalerResource)
    else:
        meta = d.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise InputError("required field is missing", obj=object_label(d), field="metadata.name")
    model = decode(d)
    if not (lenient or go_structs):  # lenient: the controller's objects, which the API server took
        try:
            object_meta(model.kind, model.metadata.name, model.metadata.namespace)
        except InputError as err:
            raise err.at(obj=object_label(d)) from None
    hpa = hpa_from_model(model, lenient, scale_to_zero, go_structs)
    return with_bases(hpa, bases, lenient or go_structs), model


def pod_from_model(p: Any) -> Pod:
    """A core Pod from a lightkube v1 Pod, read as upstream's pod helpers read it.

    Phase, deletion, start time; the FIRST Ready condition of ``status.conditions`` (what
    ``podutil.GetPodCondition`` returns; status ``Unknown`` is kept apart from ``False``);
    requests and limits of regular and restartable init (sidecar) containers, and the pod's
    denominator per resource (``pod_denominators``). Raises InputError naming the field.
    """
    meta, spec, status = p.metadata, p.spec, p.status
    label = f"Pod {meta.namespace or 'default'}/{meta.name}"
    try:
        containers, requests, missing, pod_level_requests = _amounts(spec, "requests")
        _, limits, _, pod_level_limits = _amounts(spec, "limits")
    except InputError as err:
        raise err.at(obj=label) from None
    ready, ready_t, unknown = None, None, False
    phase, start = "", None
    if status is not None:
        phase = status.phase or ""
        start = timestamp(status.startTime) if status.startTime is not None else None
        for c in status.conditions or []:
            if c.type == "Ready":  # the first one counts
                ready = c.status == "True"
                unknown = c.status != "True" and c.status != "False"
                ready_t = timestamp(c.lastTransitionTime) if c.lastTransitionTime is not None else None
                break
    return Pod(
        meta.name, phase, dict(meta.labels or {}), meta.deletionTimestamp is not None, start, ready,
        ready_t if ready_t is not None else -62135596800.0, requests, missing,
        containers=containers, pod_level_requests=pod_level_requests, limits=limits,
        pod_level_limits=pod_level_limits, ready_unknown=unknown,
    )


#: resources PodLevelResources applies at the pod level (IsSupportedPodLevelResource)
POD_LEVEL_RESOURCES = ("cpu", "memory")


def _pod_level_supported(name: str) -> bool:
    return name in POD_LEVEL_RESOURCES or name.startswith("hugepages-")


def _quantities(res: Any, kind: str, field: str) -> dict[str, Decimal]:
    values = (getattr(res, kind) if res is not None else None) or {}
    return {r: quantity(q, f"{field}.{r}") for r, q in values.items()}


def _amounts(spec: Any, kind: str) -> tuple[tuple[str, ...], dict, dict, bool]:
    """(counted containers, amounts, missing_request, pod-level set) for ``kind`` requests or limits.

    ``amounts[(r, c)]`` is container c's amount (milli, rounded up as MilliValue); ``amounts[(r, "")]``
    the pod's denominator: with pod-level amounts set for a supported resource (cpu, memory,
    hugepages-*), upstream's PodRequests — the pod-level value where set, else the containers'
    aggregate (init containers included), plus ``spec.overhead``; otherwise the plain sum over regular
    and restartable init containers when every one of them has ``r`` (else no entry: the core
    raises upstream's "missing request" error).
    """
    if spec is None:
        return (), {}, {}, False
    regular = list(spec.containers or [])
    init = list(spec.initContainers or [])
    counted = regular + [c for c in init if c.restartPolicy == "Always"]
    names = tuple(c.name for c in counted)
    per: list[tuple[str, dict[str, Decimal]]] = []
    for i, c in enumerate(regular):
        per.append((c.name, _quantities(c.resources, kind, f"spec.containers[{i}].resources.{kind}")))
    init_q = [_quantities(c.resources, kind, f"spec.initContainers[{i}].resources.{kind}") for i, c in enumerate(init)]
    for c, q in zip(init, init_q):
        if c.restartPolicy == "Always":
            per.append((c.name, q))
    amounts: dict[tuple[str, str], int | None] = {}
    missing: dict[tuple[str, str], str] = {}
    resources: set[str] = set()
    for name, values in per:
        resources.update(values)
        for r, q in values.items():
            amounts[(r, name)] = _ceil_milli(q)
    pod_level = _quantities(spec.resources, kind, f"spec.resources.{kind}")
    pod_level_set = any(_pod_level_supported(r) for r in pod_level)
    if pod_level_set:
        totals = _aggregate(regular, init, init_q, per)
        for r, q in pod_level.items():
            if _pod_level_supported(r):
                totals[r] = q
        if kind == "requests":
            overhead = spec.overhead or {}
            for r, q in overhead.items():
                totals[r] = totals.get(r, Decimal(0)) + quantity(q, f"spec.overhead.{r}")
        for r, q in totals.items():
            amounts[(r, "")] = _ceil_milli(q)
    else:
        for r in resources:
            if all(r in values for _, values in per):
                amounts[(r, "")] = wrap_int64(sum(amounts[(r, name)] for name, _ in per))  # an int64 sum
            else:
                missing[(r, "")] = next(name for name, values in per if r not in values)
        for name, values in per:
            for r in resources - values.keys():
                missing[(r, name)] = name
        if per:
            missing[("*", "")] = per[0][0]
    return names, amounts, missing, pod_level_set


def _aggregate(regular: list, init: list, init_q: list, per: list) -> dict[str, Decimal]:
    """Containers' aggregate (upstream AggregateContainerRequests): regular containers and sidecars
    summed; each init container needs its own amount plus the sidecars started before it; the pod
    needs the larger of the two."""
    total: dict[str, Decimal] = {}
    for _, values in per[: len(regular)]:
        for r, q in values.items():
            total[r] = total.get(r, Decimal(0)) + q
    sidecars: dict[str, Decimal] = {}
    init_need: dict[str, Decimal] = {}
    for c, q in zip(init, init_q):
        if c.restartPolicy == "Always":
            for r, v in q.items():
                total[r] = total.get(r, Decimal(0)) + v
                sidecars[r] = sidecars.get(r, Decimal(0)) + v
            need = dict(sidecars)
        else:
            need = dict(q)
            for r, v in sidecars.items():
                need[r] = need.get(r, Decimal(0)) + v
        for r, v in need.items():
            if v > init_need.get(r, Decimal(-1)):
                init_need[r] = v
    for r, v in init_need.items():
        if v > total.get(r, Decimal(-1)):
            total[r] = v
    return total


def _ceil_milli(q: Decimal) -> int:
    return math.ceil(q * 1000)


def pod_from_dict(d: dict, lenient: bool = False) -> Pod:
    """A core Pod from a v1 Pod dict; raises InputError. ``lenient``: missing required fields read
    as Go's zero values (``go_zero_fill``), as upstream's tests build pods."""
    if not isinstance(d, dict):
        raise InputError(f"expected a v1 Pod, got {_json_type(d)}")
    if d.get("kind") not in (None, "Pod"):
        raise InputError(f"expected a v1 Pod, got kind {d.get('kind')}", obj=object_label(d), field="kind")
    meta = d.get("metadata")
    if not lenient and (not isinstance(meta, dict) or not meta.get("name")):
        raise InputError("required field is missing", obj=object_label(d) or "Pod", field="metadata.name")
    d = dict(d)
    d.setdefault("apiVersion", "v1")
    d.setdefault("kind", "Pod")
    if lenient:
        d = go_zero_fill(d, PodResource)
    return pod_from_model(decode(d))
