"""One reader for both autoscaler kinds: an autoscaling/v2 HorizontalPodAutoscaler or a pyhpa.dev/v1alpha1
HorizontalAutoscaler, into the decision core's ``HPA``.

A HorizontalAutoscaler's spec is the autoscaling/v2 spec (``V2_SPEC_FIELDS``, read by
``pyhpa.adapters.objects.hpa_from_dict`` exactly as for an HPA; the metric extensions, ``fallback``, ``type:
Prometheus`` and ``utilizationBasis``, taken out in one pass and put back in one by
``pyhpa.adapters.metric_extensions``) plus

- per-object settings (``SETTING_FIELDS``: what upstream only has as controller flags), returned as
  ``ObjectSettings`` for the caller to apply over its flags (``effective_config``);
- extension fields (``EXTENSIONS``: ``schedules``, ...), each read by its own function into the core HPA.

A spec field that is none of these is an error naming it (``spec.foo: unknown field``), never dropped; so
is an extension field on an autoscaling/v2 HPA. Errors are ``InputError`` naming the object
(``HorizontalAutoscaler ns/name``) and the field (``spec.schedules[1].timeZone``).

Adding an extension field: declare it in ``pyhpa.api.v1alpha1.Extensions`` (the CRD's schema is generated from
it); a flat section of a source whose fields are its core spec type's goes to ``SOURCE_SECTIONS`` and is read
here without more code; any other: write ``def read_x(value, field: str, hpa: HPA) -> HPA`` (``field`` is
``spec.x``; return ``hpa`` with the core field set, raise InputError naming the sub-field) and add it to
``EXTENSIONS``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from functools import lru_cache
from typing import Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import msgspec

from ..api import v1alpha1 as api
from ..api.sections import SOURCE_SECTIONS
from ..api.v1alpha1 import (  # noqa: F401
    API_VERSION,
    DATE_TIME_PATTERN,
    DATED_PREFIX,
    KIND,
    MAX_SCHEDULES,
    MEMORY_KEY,
    OFFSET_SUFFIX,
    STATUS_EXTENSIONS,
)
from ..core import HPA, ControllerConfig, WindowSpec, check_window, check_windows
from .errors import InputError
from .fallback import read_metric_fallbacks, read_spec_fallback
from .metric_extensions import apply_metric_extensions, split_metric_extensions
from .objects import hpa_from_dict, object_label
from .parse import MIN_INT32, int32_value, refuse_first, source_section
from .pause import pause_annotations, pause_from_annotations

GROUP_VERSION = API_VERSION
V2_API_VERSION = "autoscaling/v2"
V2_KIND = "HorizontalPodAutoscaler"
#: fields of the autoscaling/v2 HorizontalPodAutoscalerSpec (Kubernetes 1.37)
V2_SPEC_FIELDS = ("scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior")
#: spec fields of a HorizontalAutoscaler that stand for upstream's controller flags (``pyhpa.api.v1alpha1.Settings``)
SETTING_FIELDS = tuple(f.encode_name for f in api.SETTING_FIELDS)


# ------------------------------------------------------------------------------------------ settings
@dataclass(frozen=True, slots=True)
class ObjectSettings:
    """What one autoscaler's spec overrides (seconds; ``tolerance`` a fraction): None keeps the flag."""

    sync_period_seconds: float | None = None
    tolerance: float | None = None
    cpu_initialization_period_seconds: float | None = None
    initial_readiness_delay_seconds: float | None = None


def object_settings(spec: dict) -> ObjectSettings:
    """The per-object settings of a HorizontalAutoscaler spec, as the CRD types them: ``tolerance`` a finite number
    >= 0, the ``*Seconds`` fields int32 integers (``syncPeriodSeconds`` at least 1); raises InputError naming the
    field."""
    values: list[float | None] = []
    for key in SETTING_FIELDS:
        value, field = spec.get(key), f"spec.{key}"
        if value is None:
            values.append(None)
        elif key == "tolerance":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise InputError(f"must be a finite number >= 0, got {value!r}", field=field)
            values.append(float(value))
        else:
            values.append(float(int32_value(value, field, 1 if key == "syncPeriodSeconds" else 0)))
    return ObjectSettings(*values)


@lru_cache(maxsize=1024)
def effective_config(base: ControllerConfig, own: ObjectSettings) -> ControllerConfig:
    """``base`` (the controller flags) with the object's overrides; memoized: thousands of autoscalers
    share a few configs."""
    changes = {}
    if own.tolerance is not None:
        changes["tolerance"] = own.tolerance
    if own.cpu_initialization_period_seconds is not None:
        changes["cpu_initialization_period_seconds"] = own.cpu_initialization_period_seconds
    if own.initial_readiness_delay_seconds is not None:
        changes["initial_readiness_delay_seconds"] = own.initial_readiness_delay_seconds
    return replace(base, **changes) if changes else base


# ------------------------------------------------------------------------------------------ schedules
WINDOW_FIELDS = tuple(f.encode_name for f in msgspec.structs.fields(api.ScheduleWindow))
_DATED = re.compile(DATED_PREFIX)
_DATE_TIME = re.compile(DATE_TIME_PATTERN)
_OFFSET = re.compile(OFFSET_SUFFIX)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


@lru_cache(maxsize=512)
def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``Europe/Berlin``, ``UTC``); ValueError when there is no such zone."""
    if name not in _zone_names():
        raise ValueError(name)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:  # pragma: no cover - listed but unreadable
        raise ValueError(name) from err


def _int(w: dict, key: str, f: str) -> int | None:
    value = w.get(key)
    if value is None:
        return None
    return int32_value(value, f"{f}.{key}", MIN_INT32)  # an int32 as the API stores it; the core checks the range


def _text(w: dict, key: str, f: str, required: bool = False) -> str | None:
    value = w.get(key)
    if value is None:
        if required:
            raise InputError("is required", field=f"{f}.{key}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be a non-empty string, got {value!r}", field=f"{f}.{key}")
    return value.strip()


def _dates(value: Any, f: str) -> frozenset[date]:
    if value is None:
        return frozenset()
    if not isinstance(value, list):
        raise InputError(f"must be a list of ISO dates (YYYY-MM-DD), got {value!r}", field=f)
    out = set()
    for k, d in enumerate(value):
        if isinstance(d, date) and not isinstance(d, datetime):  # YAML reads 2026-12-25 as a date
            out.add(d)
            continue
        try:
            if not isinstance(d, str) or len(d.strip()) != 10:
                raise ValueError
            out.add(date.fromisoformat(d.strip()))
        except ValueError:
            raise InputError(f"must be an ISO date (YYYY-MM-DD), got {d!r}", field=f"{f}[{k}]") from None
    return frozenset(out)


def _time_text(w: dict, key: str, f: str) -> str | None:
    """``w[key]`` as ``_text`` reads it, and a date-time YAML read as a ``datetime`` (an unquoted
    ``2026-11-27T09:00:00Z``) as RFC 3339 text; a date alone is refused (a dated window needs a time)."""
    value = w.get(key)
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")
    if isinstance(value, date):
        raise InputError(f"a dated window needs a date and a time (e.g. {value.isoformat()}T00:00:00), "
                         f"got the date {value.isoformat()}", field=f"{f}.{key}")
    return _text(w, key, f, required=key == "start")


def is_dated(text: str) -> bool:
    """Whether a window's ``start`` or ``end`` text is a date-time (it begins with a year), not a cron."""
    return bool(_DATED.match(text))


def dated_time(text: str, zone: ZoneInfo, zone_name: str, field: str) -> float:
    """Epoch seconds of a dated window's ``start`` or ``end``: RFC 3339 with an offset (``2026-11-27T09:00:00Z``,
    ``...-05:00``), or without one, a wall-clock time in ``zone`` (``2026-11-27T09:00:00``). Parsed by
    ``datetime.fromisoformat`` after the CRD's pattern (``DATE_TIME_PATTERN``). A wall-clock time repeated when
    clocks fall back is its first occurrence (as a cron start); one skipped when they spring forward does not
    exist and is refused (give an offset). InputError naming ``field`` otherwise."""
    if not _DATE_TIME.match(text):
        raise InputError(f"must be a date-time such as 2026-11-27T09:00:00-05:00 (RFC 3339) or 2026-11-27T09:00:00 "
                         f"(in timeZone), or a 5-field cron; got {text!r}", field=field)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as err:
        raise InputError(f"not a valid date-time {text!r}: {err}", field=field) from None
    if parsed.tzinfo is not None:
        return parsed.timestamp()
    local = parsed.replace(tzinfo=zone)
    if local.astimezone(timezone.utc).astimezone(zone).replace(tzinfo=None) != parsed:
        raise InputError(f"{text} does not exist in {zone_name} (the clocks spring forward over it); "
                         "give another time, or one with a UTC offset", field=field)
    return local.timestamp()


def schedule_window(w: Any, f: str) -> WindowSpec:
    """One ``spec.schedules[]`` item (``f`` is its field path); raises InputError naming the sub-field.

    ``start``/``end`` are 5-field crons (checked by cronsim through ``pyhpa.core.check_window``), or both
    date-times (a dated window, ``dated_time``); ``timeZone`` an IANA name (default ``UTC``), ``excludeDates``
    ISO dates in that zone.
    """
    if not isinstance(w, dict):
        raise InputError(f"must be a mapping (name, start, end or durationSeconds, minReplicas and/or "
                         f"maxReplicas), got {w!r}", field=f)
    for key in w:
        if key not in WINDOW_FIELDS:
            raise InputError(f"unknown field (a window has {', '.join(WINDOW_FIELDS)})", field=f"{f}.{key}")
    name = _text(w, "name", f, required=True)
    start = _time_text(w, "start", f)
    end = _time_text(w, "end", f)
    zone_name = _text(w, "timeZone", f) or "UTC"
    try:
        zone = time_zone(zone_name)
    except ValueError:
        raise InputError(f"unknown time zone {zone_name!r} (want an IANA name such as Europe/Berlin or UTC)",
                         field=f"{f}.timeZone") from None
    start_time = end_time = None
    if is_dated(start) or (end is not None and is_dated(end)):
        for key, text in (("start", start), ("end", end)):
            if text is not None and not is_dated(text):
                raise InputError(f"start and end must both be date-times or both crons, got {text!r}",
                                 field=f"{f}.{key}")
        if end is not None and bool(_OFFSET.search(start)) != bool(_OFFSET.search(end)):
            raise InputError("give start and end both with a UTC offset or both without one (then both are "
                             f"read in timeZone {zone_name})", field=f"{f}.end")
        start_time = dated_time(start, zone, zone_name, f"{f}.start")
        end_time = None if end is None else dated_time(end, zone, zone_name, f"{f}.end")
    window = WindowSpec(
        name=name, start=start, end=end, duration_seconds=_int(w, "durationSeconds", f), time_zone=zone,
        time_zone_name=zone_name, min_replicas=_int(w, "minReplicas", f), max_replicas=_int(w, "maxReplicas", f),
        exclude_dates=_dates(w.get("excludeDates"), f"{f}.excludeDates"), start_time=start_time, end_time=end_time,
    )
    refuse_first(check_window(window), f)
    return window


def read_schedules(value: Any, f: str, hpa: HPA) -> HPA:
    """``spec.schedules``: a list of windows with unique names (``schedule_window``)."""
    if not isinstance(value, list):
        raise InputError(f"must be a list of windows, got {value!r}", field=f)
    if len(value) > MAX_SCHEDULES:
        raise InputError(f"at most {MAX_SCHEDULES} windows (the CRD's maxItems), got {len(value)}", field=f)
    windows: list[WindowSpec] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        w = schedule_window(item, f"{f}[{i}]")
        if w.name in seen:
            raise InputError(f"duplicate window name {w.name!r} (also {f}[{seen[w.name]}].name)",
                             field=f"{f}[{i}].name")
        seen[w.name] = i
        windows.append(w)
    for i, sub, message in check_windows(windows)[:1]:
        raise InputError(message, field=f"{f}[{i}].{sub}")
    return replace(hpa, schedules=tuple(windows))


def _source_reader(name: str) -> Callable[[Any, str, HPA], HPA]:
    """The reader of ``spec.<name>``, a source section of the API (a ``SOURCE_SECTIONS`` entry;
    ``{}`` or null: the defaults), read by ``pyhpa.adapters.parse.source_section`` against the HPA's metrics."""
    def read(value: Any, f: str, hpa: HPA) -> HPA:
        return replace(hpa, **{name: source_section(name, value, hpa.metrics, f)})
    return read


#: spec fields a HorizontalAutoscaler adds to autoscaling/v2: field -> reader(value, "spec.<field>", hpa) -> hpa
EXTENSIONS: dict[str, Callable[[Any, str, HPA], HPA]] = {
    "schedules": read_schedules,
    "fallback": read_spec_fallback,  # then read_metric_fallbacks: spec.metrics[].fallback over it
    **{name: _source_reader(name) for name in SOURCE_SECTIONS},
}


# ------------------------------------------------------------------------------------------ the reader
@dataclass(frozen=True, slots=True)
class ParsedAutoscaler:
    """An autoscaler file or object, read: the core ``hpa``; ``model`` the lightkube autoscaling/v2 model of
    its v2 part; ``kind`` ``HorizontalAutoscaler`` or ``HorizontalPodAutoscaler``; ``settings`` its own
    controller settings (empty for an HPA); ``extended`` its metrics of types autoscaling/v2 lacks (PromQL metrics)
    ``{index: (MetricSpec, MetricQuery)}`` (``pyhpa.adapters.metric_types``); ``label`` ``Kind namespace/name`` for
    messages."""

    hpa: HPA
    model: Any
    kind: str
    settings: ObjectSettings = field(default_factory=ObjectSettings)
    extended: dict = field(default_factory=dict)
    label: str = ""


def is_autoscaler(d: Any) -> bool:
    """Whether ``d`` is a HorizontalAutoscaler or an autoscaling/v2 HorizontalPodAutoscaler document."""
    return isinstance(d, dict) and (d.get("apiVersion"), d.get("kind")) in (
        (GROUP_VERSION, KIND), (V2_API_VERSION, V2_KIND))


#: list kinds an autoscaler may come in: ``kubectl get hpa -o yaml`` writes a v1 ``List`` (even of one item);
#: the API's own lists (``kubectl get --raw``) are typed, their items without apiVersion and kind (the list's)
LIST_KINDS = {"List": None, f"{V2_KIND}List": (V2_API_VERSION, V2_KIND), f"{KIND}List": (GROUP_VERSION, KIND)}
#: kubectl's resource name of each autoscaler kind, for the command a message suggests
_RESOURCE = {V2_KIND: "hpa", KIND: "horizontalautoscaler"}


def find_autoscaler(doc: Any, file: str = "") -> dict:
    """The one autoscaler document of a file's content (a document, a list from several YAML documents, or a
    ``LIST_KINDS`` list, as ``kubectl get hpa -o yaml`` writes it); InputError when there is none or more than one,
    saying how to get one."""
    docs = doc if isinstance(doc, list) else [doc]
    if len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") in LIST_KINDS:
        return _one_of_list(docs[0], file)
    found = [d for d in docs if is_autoscaler(d)]
    if len(found) == 1:
        return found[0]
    if not found and len(docs) == 1 and isinstance(docs[0], dict):
        d = docs[0]
        raise InputError(_wrong_kind(d), file=file, obj=object_label(d), field="kind")
    raise InputError(f"expected exactly one {KIND} ({GROUP_VERSION}) or {V2_KIND} ({V2_API_VERSION}), "
                     f"found {len(found)}", file=file)


def _one_of_list(d: dict, file: str) -> dict:
    """The one autoscaler among the items of list ``d`` (``find_autoscaler``)."""
    items = d.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise InputError(f"must be a list of objects, got {items!r}", file=file, obj=str(d["kind"]), field="items")
    own = LIST_KINDS[d["kind"]]
    if own is not None:  # a typed list's items are its kind, and need not say so
        items = [{"apiVersion": own[0], "kind": own[1], **x} if isinstance(x, dict) else x for x in items]
    found = [x for x in items if is_autoscaler(x)]
    if len(found) == 1:
        return found[0]
    get = "give one autoscaler, e.g. kubectl get hpa NAME -n NAMESPACE -o yaml"
    if not items:
        raise InputError(f"the {d['kind']} is empty (kubectl get found no autoscaler); {get}", file=file,
                         obj=str(d["kind"]), field="items")
    if not found:
        kinds = ", ".join(dict.fromkeys(str(x.get("kind")) for x in items if isinstance(x, dict))) or "no objects"
        raise InputError(f"no {KIND} or {V2_KIND} among its {len(items)} items (kinds: {kinds}); {get}", file=file,
                         obj=str(d["kind"]), field="items")
    names = [object_label(x).partition(" ")[2] for x in found]
    first = found[0].get("metadata") or {}
    one = f"kubectl get {_RESOURCE[found[0]['kind']]} {first.get('name')} -n {first.get('namespace') or 'default'} -o yaml"
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise InputError(f"holds {len(found)} autoscalers ({shown}); pyhpa reads one at a time: pick one with {one}",
                     file=file, obj=str(d["kind"]), field="items")


def v2_document(meta: dict, spec: dict, status: dict) -> dict:
    """The autoscaling/v2 HorizontalPodAutoscaler a HorizontalAutoscaler stands for: name, namespace and pause
    annotations (``pyhpa.adapters.pause``), the v2 fields of the spec, the status (without the controller memory) when it has desiredReplicas."""
    doc = {
        "apiVersion": V2_API_VERSION,
        "kind": V2_KIND,
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": {k: v for k, v in spec.items() if k in V2_SPEC_FIELDS},
    }
    pause = dict(pause_annotations(meta))
    if pause:  # they decide too: a snapshot keeps them
        doc["metadata"]["annotations"] = pause
    if isinstance(status, dict) and status.get("desiredReplicas") is not None:
        doc["status"] = {k: v for k, v in status.items() if k not in STATUS_EXTENSIONS}
    return doc


def autoscaler_document(meta: dict, spec: dict, status: dict) -> dict:
    """A HorizontalAutoscaler as a snapshot keeps it, without its settings (a snapshot has them in
    ``controller``) and memory (``history``): an autoscaling/v2 HPA when it has nothing else, else a
    HorizontalAutoscaler that keeps its extension fields (``schedules``, ...)."""
    doc = v2_document(meta, spec, status)
    extensions = {k: v for k, v in spec.items() if k not in V2_SPEC_FIELDS and k not in SETTING_FIELDS}
    if extensions:
        doc["apiVersion"], doc["kind"] = GROUP_VERSION, KIND
        doc["spec"].update(extensions)
    return doc


def _wrong_kind(d: dict) -> str:
    got = " ".join(str(d[k]) for k in ("apiVersion", "kind") if d.get(k)) or "no apiVersion and kind"
    return f"expected a {GROUP_VERSION} {KIND} or an {V2_API_VERSION} {V2_KIND}, got {got}"


def _label(kind: str, meta: Any) -> str:
    """``Kind namespace/name`` as the user wrote it (``adapters.objects.object_label``)."""
    return object_label({"kind": kind, "metadata": meta})


def read_autoscaler(d: Any, *, lenient: bool = False, scale_to_zero: bool = False,
                    prometheus_server: str | None = None, go_structs: bool = False,
                    extensions: bool = False) -> ParsedAutoscaler:
    """Read a HorizontalAutoscaler (pyhpa.dev/v1alpha1) or an autoscaling/v2 HorizontalPodAutoscaler.

    ``lenient``/``scale_to_zero``/``go_structs`` as ``hpa_from_dict``; ``prometheus_server`` is the default server of
    ``type: Prometheus`` metrics (the controller's ``--prometheus-url``; offline readers pass a placeholder).
    A HorizontalAutoscaler's metrics may carry pyhpa's metric extensions (``utilizationBasis``); an
    autoscaling/v2 document only with ``extensions`` (a snapshot written by ``pyhpa snapshot``).
    Raises InputError naming the object and the field.
    """
    if not isinstance(d, dict):
        raise InputError(f"expected a {KIND} or {V2_KIND} object (a mapping)")
    if not is_autoscaler(d):
        raise InputError(_wrong_kind(d), obj=object_label(d), field="kind")
    kind, meta = d["kind"], d.get("metadata") or {}
    label = _label(kind, meta)
    try:
        spec = d.get("spec")
        if not isinstance(spec, dict):
            raise InputError(f"must be a mapping, got {spec!r}", field="spec")
        _check_fields(kind, spec)
        own = object_settings(spec) if kind == KIND else ObjectSettings()
        if kind == V2_KIND:
            doc = dict(d, spec=dict(spec))
        else:
            status = d.get("status") or {}
            doc = v2_document(meta if isinstance(meta, dict) else {}, spec, status if isinstance(status, dict) else {})
        doc["spec"]["metrics"], extras = split_metric_extensions(spec.get("metrics"), extensions or kind == KIND,
                                                                 prometheus_server)
        if doc["spec"]["metrics"] is None:
            del doc["spec"]["metrics"]
        hpa, model = hpa_from_dict(doc, lenient=lenient, scale_to_zero=scale_to_zero, go_structs=go_structs)
        hpa = apply_metric_extensions(hpa, extras, lenient or go_structs)
        for key, read in EXTENSIONS.items():
            if key in spec:
                hpa = read(spec[key], f"spec.{key}", hpa)
        if extras.fallback or "fallback" in spec:
            _only_on_autoscaler(kind, extensions, spec.get("metrics"))
            hpa = read_metric_fallbacks(spec.get("metrics"), hpa)
        pause = pause_from_annotations(meta.get("annotations") if isinstance(meta, dict) else None)
        if pause is not None:
            hpa = replace(hpa, pause=pause)
    except InputError as err:
        raise InputError(err.message, err.file, label, err.field, err.line) from None
    return ParsedAutoscaler(hpa=hpa, model=model, kind=kind, settings=own, extended=extras.extended, label=label)


def _only_on_autoscaler(kind: str, extensions: bool, metrics: Any) -> None:
    """A metric's ``fallback`` is a HorizontalAutoscaler field (an autoscaling/v2 document: only a snapshot's)."""
    if kind == KIND or extensions:
        return
    i = next(i for i, m in enumerate(metrics) if isinstance(m, dict) and "fallback" in m)
    raise InputError(f"only a {KIND} ({GROUP_VERSION}) has this field, not an {V2_API_VERSION} {V2_KIND}",
                     field=f"spec.metrics[{i}].fallback")


def _check_fields(kind: str, spec: dict) -> None:
    for key in spec:
        if key in V2_SPEC_FIELDS:
            continue
        if kind == KIND and (key in SETTING_FIELDS or key in EXTENSIONS):
            continue
        if key in SETTING_FIELDS or key in EXTENSIONS:
            raise InputError(f"only a {KIND} ({GROUP_VERSION}) has this field, not an {V2_API_VERSION} {V2_KIND}",
                             field=f"spec.{key}")
        known = V2_SPEC_FIELDS + ((*SETTING_FIELDS, *EXTENSIONS) if kind == KIND else ())
        raise InputError(f"unknown field (a {kind} spec has {', '.join(known)})", field=f"spec.{key}")
