"""Generate ``crd.yaml``: the HorizontalAutoscaler CRD (group pyhpa.dev, version v1alpha1).

Its spec schema is the autoscaling/v2 HorizontalPodAutoscalerSpec and its status schema the
autoscaling/v2 HorizontalPodAutoscalerStatus, both taken from the official OpenAPI definitions that
``kubernetes-validate`` ships (Kubernetes 1.37) and rewritten as a structural schema (``$ref`` inlined,
nullable types folded; quantities in ``spec`` accept a string, an integer or a number as the API server
does for native HPAs, quantities in ``status`` are ``x-kubernetes-int-or-string``), plus the per-object settings
upstream only has as kube-controller-manager flags, scheduled windows (``spec.schedules``, their state in
``status.schedules``), ``utilizationBasis`` on Resource and ContainerResource metrics, and the controller
memory in ``status.pyhpa``.

Run from the repository root: ``python deploy/generate_crd.py`` (writes ``deploy/crd.yaml`` and the
package copy ``pyhpa/data/deploy/crd.yaml``).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout: the package next to it
    sys.path.insert(0, str(ROOT))

from pyhpa.adapters.autoscaler import DATE_TIME_PATTERN, DATED_PREFIX, MAX_SCHEDULES, OFFSET_SUFFIX  # noqa: E402
from pyhpa.core.model import (  # noqa: E402
    PREDICTION_ACTIVE,
    PREDICTION_MODES,
    PREDICTION_REASONS,
    SATURATION_ACTIVE,
    SATURATION_REASONS,
    PredictionSpec,
    SaturationSpec,
)
from pyhpa.core.prediction import (  # noqa: E402
    MAX_QUANTILE,
    MIN_HISTORY_SECONDS,
    MIN_LEAD_SECONDS,
    MIN_QUANTILE,
    MIN_REFRESH_SECONDS,
)
from pyhpa.core.saturation import (  # noqa: E402
    MAX_DEMAND_FACTOR,
    MAX_PINNED_PERCENT,
    MIN_DEMAND_FACTOR,
    MIN_PINNED_PERCENT,
)
SCHEMA_DIR = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.37.0-local-strict"
PREFIX = "#/$defs/"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
KEEP = ("format", "required", "enum", "minimum", "maximum", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type")


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    head, dot, _ = text.partition(". ")
    return head + ("." if dot else "")


def structural(node: dict, defs: dict, quantity=None) -> dict:
    """One JSON-schema node of the official definitions as a structural OpenAPI v3 node; ``quantity()``
    gives the node of each ``resource.Quantity`` (default: ``int_or_string_quantity``)."""
    quantity = quantity or int_or_string_quantity
    desc = node.get("description")
    if "$ref" in node:
        name = node["$ref"].removeprefix(PREFIX)
        out = quantity() if name == QUANTITY else structural(defs[name], defs, quantity)
        if desc:
            out["description"] = _first_sentence(desc)
        return out
    out: dict = {}
    types = node.get("type")
    if isinstance(types, list):
        types = [t for t in types if t != "null"]
        types = types[0] if len(types) == 1 else types
    if types:
        out["type"] = types
    if desc:
        out["description"] = _first_sentence(desc)
    for key in KEEP:
        if key in node:
            out[key] = node[key]
    if "properties" in node:
        out["properties"] = {k: structural(v, defs, quantity) for k, v in sorted(node["properties"].items())}
    if "items" in node:
        out["items"] = structural(node["items"], defs, quantity)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = structural(node["additionalProperties"], defs, quantity)
    return out


QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"


def int_or_string_quantity() -> dict:
    """A quantity as CRD generators write it (controller-gen): an integer or a string matching the quantity
    syntax. Used where the controller writes the value (``status``): it always writes strings."""
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
            "pattern": QUANTITY_PATTERN}


def number_or_string_quantity() -> dict:
    """A quantity the user writes (``spec``): whatever the API server accepts for a native HPA, i.e. a string
    matching the quantity syntax, an integer (``averageValue: 100``) or a number with a fraction
    (``tolerance: 0.05``); the API server reads a number as the quantity with those digits.

    ``x-kubernetes-int-or-string`` cannot say this: the apiextensions server gives such a node the types
    integer and string only and refuses 0.05, and a structural schema may not list types in ``anyOf``
    otherwise. A node without a type that keeps unknown fields may hold any value, so the ``pattern`` (which
    applies to strings only) checks quantity strings, and the controller reports any other value (a list,
    a mapping, true) as ``InvalidSpec`` naming the field."""
    return {"x-kubernetes-preserve-unknown-fields": True, "pattern": QUANTITY_PATTERN}


SETTINGS = {
    "syncPeriodSeconds": {
        "type": "integer", "format": "int32", "minimum": 1, "maximum": 2**31 - 1,
        "description": "How often this autoscaler is synced, in seconds (upstream: the controller-wide "
                       "--horizontal-pod-autoscaler-sync-period; default: the controller's --sync-period)."},
    "tolerance": {
        "type": "number", "minimum": 0,  # JSON has no infinity; YAML's .inf is refused by the adapter
        "description": "Default tolerance as a fraction (0.1 = 10 %) where behavior.scaleUp/scaleDown.tolerance "
                       "is unset (upstream: --horizontal-pod-autoscaler-tolerance; default: the controller's "
                       "--tolerance)."},
    "cpuInitializationPeriodSeconds": {
        "type": "integer", "format": "int32", "minimum": 0, "maximum": 2**31 - 1,
        "description": "Seconds after pod start during which CPU samples of not-yet-ready pods are not trusted "
                       "(upstream: --horizontal-pod-autoscaler-cpu-initialization-period, default 300)."},
    "initialReadinessDelaySeconds": {
        "type": "integer", "format": "int32", "minimum": 0, "maximum": 2**31 - 1,
        "description": "Seconds after pod start during which readiness flaps count as not yet ready "
                       "(upstream: --horizontal-pod-autoscaler-initial-readiness-delay, default 30)."},
}


def prometheus_metric(target: dict) -> dict:
    """``spec.metrics[].prometheus``: a metric defined by an instant PromQL query (``type: Prometheus``), the
    fields ``pyhpa.adapters.promql.metric_from_dict`` reads; ``target`` is the autoscaling/v2 MetricTarget."""
    return {
        "type": "object",
        "description": "pyhpa: a metric defined by an instant PromQL query, for type Prometheus. Per pod (podLabel "
                       "set) it acts as a Pods metric, else as an External metric, also in status.currentMetrics.",
        "required": ["query", "target"],
        "properties": {
            "name": {"type": "string", "description": "Metric name in status.currentMetrics, conditions and events "
                                                      "(default: the query)."},
            "query": {"type": "string", "minLength": 1,
                      "description": "Instant PromQL query (GET /api/v1/query): one series per pod with podLabel, "
                                     "else one series or a scalar."},
            "server": {"type": "string", "description": "Prometheus base URL, e.g. http://prometheus:9090 "
                                                        "(default: the controller's --prometheus-url)."},
            "podLabel": {"type": "string", "description": "Label holding the pod name: one value per pod, "
                                                          "AverageValue target (like a Pods metric)."},
            "timeoutSeconds": {"type": "number", "minimum": 0, "exclusiveMinimum": True,
                               "description": "Seconds the query may take in all (default 5); then the metric "
                                              "fails for this sync."},
            "target": target,
        },
    }


#: the limits and defaults of spec.prediction are the core's (pyhpa.core.prediction, PredictionSpec)
_DEFAULT = PredictionSpec()

PREDICTION = {
    "type": "object",
    "description": "pyhpa: predictive scaling (docs/prediction.md). {} turns it on with defaults for a web service "
                   "with a daily cycle. The forecast quantile of the metric's workload total over the lead window "
                   "becomes one more replica proposal, combined with the metrics' (the largest wins) before "
                   "upstream's stabilization, policies and bounds.",
    "properties": {
        "metric": {"type": "integer", "minimum": 0, "default": _DEFAULT.metric,
                   "description": "Which entry of spec.metrics to forecast (index, default 0)."},
        "historySeconds": {"type": "integer", "minimum": MIN_HISTORY_SECONDS, "default": _DEFAULT.history_seconds,
                           "description": "Seconds of history a fit uses (default 7 days; 14 or more to find a weekly "
                                          "cycle)."},
        "leadSeconds": {"type": "integer", "minimum": MIN_LEAD_SECONDS, "default": _DEFAULT.lead_seconds,
                        "description": "How far ahead the forecast must cover: pod scheduling + start-up + a sync "
                                       "(default 300)."},
        "quantile": {"type": "number", "minimum": MIN_QUANTILE, "maximum": MAX_QUANTILE, "exclusiveMaximum": True,
                     "default": _DEFAULT.quantile,
                     "description": "The forecast quantile provisioned for (default 0.9); for a Utilization "
                                    "target the band above the central forecast counts in proportion to the "
                                    "share of the target's headroom it would use."},
        "mode": {"type": "string", "enum": list(PREDICTION_MODES), "default": _DEFAULT.mode,
                 "description": "Enforce: the forecast may raise replicas. Observe: computed and reported, never "
                                "applied."},
        "refreshSeconds": {"type": "integer", "minimum": MIN_REFRESH_SECONDS, "default": _DEFAULT.refresh_seconds,
                           "description": "Seconds between refits of the model (default 3600)."},
        "historyQuery": {"type": "string", "minLength": 1,
                         "description": "PromQL (range query) for the metric's workload total, overriding the "
                                        "default query for the metric type."},
    },
}

PREDICTION_STATUS = {
    "type": "object",
    "description": "pyhpa: the state of spec.prediction at the last sync.",
    "properties": {
        "reason": {"type": "string", "description": f"The {PREDICTION_ACTIVE} reason "
                                                    f"({', '.join(PREDICTION_REASONS)})."},
        "message": {"type": "string", "description": "Why, in one sentence."},
        "model": {"type": "string", "description": "The fitted model (e.g. robust-seasonal/log)."},
        "periodsSeconds": {"type": "array", "items": {"type": "integer"},
                           "description": "Seasonal periods detected in the history, seconds."},
        "lastFitTime": {"type": "string", "format": "date-time", "description": "When the model was last fitted."},
        "forecastTime": {"type": "string", "format": "date-time",
                         "description": "Start of the forecast window (the sync's time)."},
        "leadSeconds": {"type": "integer", "description": "Length of the forecast window, seconds."},
        "forecast": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
                     "description": "The quantile of the metric's workload total over the forecast window "
                                    "(the metric's unit: cores for CPU, bytes for memory)."},
        "expected": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
                     "description": "The highest central (median) forecast over the forecast window (same unit)."},
        "provisioned": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
                        "description": "The total the replicas are sized for: the expected value plus the band up "
                                       "to the quantile, in proportion to the share of a Utilization target's "
                                       "headroom the band would use (same unit)."},
        "replicas": {"type": "integer", "format": "int32", "description": "Replicas the forecast asks for."},
        "accuracy": {"type": "object", "description": "Recent forecasts against what happened.", "properties": {
            "mape": {"type": "number", "description": "Mean absolute percentage error (fraction)."},
            "wape": {"type": "number", "description": "Sum of absolute errors over sum of actual values."},
            "underForecastShare": {"type": "number", "description": "Share of actual values above the "
                                                                    "forecast quantile."}}},
    },
}


#: the limits and defaults of spec.saturation are the core's (pyhpa.core.saturation, SaturationSpec)
_SATURATION = SaturationSpec()

SATURATION = {
    "type": "object",
    "description": "pyhpa: scale-up when the pods are pinned at their CPU limit (docs/saturation.md). {} turns it "
                   "on with defaults for a web service. While the ready pods use pinnedPercent of their CPU limit, "
                   "their utilization is a lower bound of the demand: demandFactor times their usage becomes one "
                   "more replica proposal (the largest wins), never below the current replicas, before upstream's "
                   "stabilization, policies and bounds.",
    "properties": {
        "metric": {"type": "integer", "minimum": 0,
                   "description": "Which entry of spec.metrics to watch: a Resource or ContainerResource cpu metric "
                                  "(index; default the first such metric)."},
        "pinnedPercent": {"type": "integer", "minimum": MIN_PINNED_PERCENT, "maximum": MAX_PINNED_PERCENT,
                          "default": _SATURATION.pinned_percent,
                          "description": "CPU usage of the ready pods, in percent of their CPU limit, at or above "
                                         "which they are pinned (default 95)."},
        "demandFactor": {"type": "number", "minimum": MIN_DEMAND_FACTOR, "exclusiveMinimum": True,
                         "maximum": MAX_DEMAND_FACTOR, "default": _SATURATION.demand_factor,
                         "description": "The demand assumed while pinned, as a multiple of the ready pods' usage "
                                        "(default 2: the reactive proposal of the ready pods, doubled)."},
        "mode": {"type": "string", "enum": list(PREDICTION_MODES), "default": _SATURATION.mode,
                 "description": "Enforce: it may raise replicas. Observe: computed and reported, never applied."},
    },
}

SATURATION_STATUS = {
    "type": "object",
    "description": "pyhpa: the state of spec.saturation at the last sync.",
    "properties": {
        "reason": {"type": "string", "description": f"The {SATURATION_ACTIVE} reason "
                                                    f"({', '.join(SATURATION_REASONS)})."},
        "message": {"type": "string", "description": "Why, in one sentence."},
        "mode": {"type": "string", "description": "spec.saturation.mode."},
        "pinned": {"type": "boolean", "description": "The ready pods use pinnedPercent or more of their CPU limit."},
        "usagePercentOfLimit": {"type": "integer",
                                "description": "While pinned: the ready pods' CPU usage in percent of their limit."},
        "readyPods": {"type": "integer", "description": "While pinned: the ready pods it was judged on."},
        "replicas": {"type": "integer", "format": "int32", "description": "While pinned: replicas it asks for."},
    },
}


def fallback_schema(where: str) -> dict:
    """``spec.fallback`` / ``spec.metrics[].fallback``: KEDA's fields plus KEP-5679's duration
    (``pyhpa.core.fallback``); which fields are required depends on the spec-wide and the metric's own
    fallback together, so the controller checks that (InvalidSpec naming the field)."""
    return {
        "type": "object",
        "description": f"pyhpa: {where}",
        "properties": {
            "failureThreshold": {"type": "integer", "format": "int32", "minimum": 0,
                                 "description": "Consecutive failed syncs of a metric after which its fallback "
                                                "applies (it applies once the count passes it; default 3 when "
                                                "failureDurationSeconds is not given either)."},
            "failureDurationSeconds": {"type": "number", "minimum": 0,
                                       "description": "Seconds since a metric's first failure after which its "
                                                      "fallback applies (with failureThreshold: both must hold)."},
            "replicas": {"type": "integer", "format": "int32", "minimum": 0,
                         "description": "Fallback replica count (required unless behavior is currentReplicas)."},
            "behavior": {"type": "string", "enum": ["static", "currentReplicas", "currentReplicasIfHigher",
                                                    "currentReplicasIfLower"],
                         "description": "What a metric in fallback proposes: static (replicas, default), "
                                        "currentReplicas, currentReplicasIfHigher (max of current and replicas), "
                                        "currentReplicasIfLower (min of current and replicas)."},
        },
    }


METRIC_HEALTH = {
    "type": "array",
    "description": "pyhpa: each metric's health (only with a fallback): consecutive failed syncs and whether its "
                   "fallback applies.",
    "items": {"type": "object", "required": ["metric", "numberOfFailures", "status"], "properties": {
        "metric": {"type": "string", "description": "What is queried: Resource/cpu, Pods/<name>, External/<name>, ..."},
        "numberOfFailures": {"type": "integer", "format": "int32",
                             "description": "Consecutive failed syncs, counted up to one past the fallback's "
                                            "failureThreshold (1 without one): from there on more failures change "
                                            "nothing, and a metric that stays down writes no status."},
        "status": {"type": "string", "enum": ["Happy", "Failing"]},
        "firstFailureTime": {"type": "string", "format": "date-time"},
        "fallbackSince": {"type": "string", "format": "date-time"},
        "fallbackReplicas": {"type": "integer", "format": "int32",
                             "description": "What its fallback proposed at the last sync."},
    }},
}


WARNINGS = {
    "type": "array",
    "description": "pyhpa: the Warning events sent about this autoscaler whose cause lasts (a failing metric, "
                   "ScaleStarvation, PodSumHidesContainer, ...). An event listed here is not sent again while its cause "
                   "is unchanged: not at the next sync, not by another replica, not after a restart.",
    "x-kubernetes-list-type": "atomic",
    "items": {"type": "object", "required": ["reason"], "properties": {
        "reason": {"type": "string", "description": "The event's reason."},
        "message": {"type": "string", "description": "The event's note, as sent."},
        "metric": {"type": "integer", "format": "int32",
                   "description": "The spec.metrics index a check's warning is about (then its cause is the reason, "
                                  "metric and container, whatever the figures of the message)."},
        "container": {"type": "string", "description": "The container a check's warning is about."},
    }},
}



#: status.pause (pyhpa.controller.outputs.status.pause_status; the annotations: pyhpa.core.pause)
PAUSE_STATUS = {
    "type": "object",
    "description": "pyhpa: present while a pause annotation (pyhpa.dev/paused, paused-replicas, paused-scale-in, "
                   "paused-scale-out) holds the autoscaler (docs/operations.md).",
    "properties": {
        "reason": {"type": "string", "enum": ["Paused", "PausedReplicas", "PausedScaleIn", "PausedScaleOut"],
                   "description": "The Paused condition's reason."},
        "since": {"type": "string", "format": "date-time", "description": "When the autoscaler was paused."},
        "replicas": {"type": "integer", "format": "int32",
                     "description": "The replicas held (paused-replicas, or the count paused froze)."},
    },
}


CRON_PATTERN = r"^\s*\S+(\s+\S+){4}\s*$"
#: a window's start or end: a 5-field cron, or a date-time (a dated window)
CRON = {"type": "string", "minLength": 9, "maxLength": 128,
        "pattern": f"^({CRON_PATTERN[1:-1]}|{DATE_TIME_PATTERN[1:-1]})$"}


def _dated(x: str) -> str:
    """CEL: the start or end ``x`` is a date-time (``pyhpa.adapters.autoscaler.is_dated``)."""
    return f"{x}.matches('{DATED_PREFIX}')"


def _offset(x: str) -> str:
    """CEL: the date-time ``x`` carries a UTC offset."""
    return f"{x}.matches('{OFFSET_SUFFIX}')"


def _instant(x: str) -> str:
    """CEL: the instant of the date-time ``x``; one without an offset read as UTC, which orders wall-clock
    times of one zone as the instants they stand for (a skipped time is refused by the controller)."""
    return f"timestamp({_offset(x)} ? {x} : {x} + 'Z')"


def _comparable_dated(x: str) -> str:
    """CEL: window ``x`` is dated with start and end given the same way (both with an offset or both without)."""
    return (f"has({x}.end) && {_dated(x + '.start')} && {_dated(x + '.end')} && "
            f"{_offset(x + '.start')} == {_offset(x + '.end')}")


def _zone(x: str) -> str:
    return f"(has({x}.timeZone) ? {x}.timeZone : 'UTC')"


#: CEL on spec.schedules: two dated windows of the same kind (two floors or two caps) do not overlap. Windows whose
#: date-times CEL cannot put on one time line (local times in different zones) are checked by the controller.
NO_OVERLAP = (
    f"self.all(a, self.all(b, a.name == b.name || !({_comparable_dated('a')}) || !({_comparable_dated('b')}) || "
    f"!((has(a.minReplicas) && has(b.minReplicas)) || (has(a.maxReplicas) && has(b.maxReplicas))) || "
    f"!({_offset('a.start')} ? {_offset('b.start')} : (!{_offset('b.start')} && {_zone('a')} == {_zone('b')})) || "
    f"!({_instant('a.start')} < {_instant('b.end')} && {_instant('b.start')} < {_instant('a.end')})))"
)


def schedules() -> dict:
    """``spec.schedules``: cron or dated windows with a floor (``minReplicas``) and/or a cap (``maxReplicas``), the
    fields ``pyhpa.adapters.autoscaler.schedule_window`` reads. The schema rejects what it can (shape, unique names,
    neither bound, end and duration, start == end, floor above cap; for dated windows an end before the start and
    two floors or two caps that overlap); cron syntax, time zone names and what CEL cannot compare are checked by
    the controller (``InvalidSpec``) and every pyhpa command."""
    window = {
        "type": "object",
        "description": "A window active from each occurrence of start to the next occurrence of end (or "
                       "durationSeconds later), in timeZone; while active, minReplicas is a floor and maxReplicas "
                       "a cap on the autoscaler's bounds.",
        "required": ["name", "start"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 63, "description": "Unique in spec.schedules."},
            "start": dict(CRON, description="5-field cron (minute hour day-of-month month day-of-week) of the starts; "
                                            "or a date-time (RFC 3339 with seconds, with an offset, or without one: in "
                                            "timeZone) for a dated window, active once from start to end."),
            "end": dict(CRON, description="5-field cron: the window ends at its first occurrence after a start; for a "
                                          "dated window, its end date-time (given the same way as start)."),
            "durationSeconds": {"type": "integer", "format": "int64", "minimum": 1,
                                "description": "Instead of end: the window lasts this many seconds (elapsed time)."},
            "timeZone": {"type": "string", "default": "UTC", "minLength": 1, "maxLength": 64,
                         "description": "IANA time zone of start, end and excludeDates (default UTC)."},
            "minReplicas": {"type": "integer", "format": "int32", "minimum": 0,
                            "description": "Floor while active: effective minReplicas = max(spec.minReplicas, floors)."},
            "maxReplicas": {"type": "integer", "format": "int32", "minimum": 1,
                            "description": "Cap while active: effective maxReplicas = min(spec.maxReplicas, caps); "
                                           "a floor above a cap wins."},
            "excludeDates": {"type": "array", "maxItems": 366, "x-kubernetes-list-type": "set",
                             "description": "Dates (YYYY-MM-DD, in timeZone) on which the window does not start.",
                             "items": {"type": "string", "format": "date"}},
        },
        "x-kubernetes-validations": [
            {"rule": "has(self.minReplicas) || has(self.maxReplicas)", "fieldPath": ".minReplicas",
             "message": "a window needs minReplicas (a floor), maxReplicas (a cap) or both"},
            {"rule": "has(self.end) != has(self.durationSeconds)", "fieldPath": ".end",
             "message": "give exactly one of end and durationSeconds"},
            {"rule": "!has(self.end) || self.end != self.start", "fieldPath": ".end",
             "message": "end must differ from start"},
            {"rule": "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
             "fieldPath": ".minReplicas", "message": "minReplicas must not be greater than maxReplicas"},
            {"rule": f"!has(self.end) || {_dated('self.start')} == {_dated('self.end')}", "fieldPath": ".end",
             "message": "start and end must both be date-times (a dated window) or both crons"},
            {"rule": f"!{_dated('self.start')} || !has(self.durationSeconds)", "fieldPath": ".durationSeconds",
             "message": "a dated window takes an end date-time, not durationSeconds"},
            {"rule": f"!{_dated('self.start')} || !has(self.excludeDates)", "fieldPath": ".excludeDates",
             "message": "excludeDates applies to cron windows only (a dated window has one occurrence)"},
            {"rule": f"!has(self.end) || !{_dated('self.start')} || !{_dated('self.end')} || "
                     f"{_offset('self.start')} == {_offset('self.end')}", "fieldPath": ".end",
             "message": "give start and end both with a UTC offset or both without one (then both are read in timeZone)"},
            {"rule": f"!({_comparable_dated('self')}) || {_instant('self.end')} > {_instant('self.start')}",
             "fieldPath": ".end", "message": "end must be after start"},
        ],
    }
    return {"type": "array", "maxItems": MAX_SCHEDULES, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "description": "pyhpa: scheduled scaling. Cron or dated windows that raise minReplicas (a floor) and/or "
                           "lower maxReplicas (a cap) while active; see docs/schedules.md.",
            "x-kubernetes-validations": [
                {"rule": NO_OVERLAP,
                 "message": "dated windows of the same kind (two floors or two caps) must not overlap"}],
            "items": window}


SCHEDULE_STATUS = {
    "type": "object",
    "description": "The windows of spec.schedules active at the last sync, the next start or end of any window, "
                   "and the dated windows that have expired.",
    "properties": {
        "active": {"type": "array", "items": {"type": "string"}, "description": "Names of the active windows."},
        "nextChangeTime": {"type": "string", "format": "date-time",
                           "description": "The next start or end of a window (the controller syncs then)."},
        "expired": {"type": "array", "items": {"type": "string"},
                    "description": "Names of the dated windows that have ended: they never apply again."},
    },
}

UTILIZATION_BASIS = {
    "type": "string", "enum": ["Request", "Limit"],
    "description": "pyhpa: what a Utilization target is a percentage of: Request (default, upstream) or Limit "
                   "(the pods' limits, pod-level limits when set; a pod without a limit for the resource fails "
                   "the metric, as a missing request does).",
}


def _pairs(value_key: str, what: str) -> dict:
    return {"type": "array", "description": what, "items": {
        "type": "object", "required": ["timestamp", value_key], "properties": {
            "timestamp": {"type": "string", "format": "date-time"},
            value_key: {"type": "integer", "format": "int32"}}}}


MEMORY = {
    "type": "object",
    "description": "Controller memory of this autoscaler (optional; kept so another controller replica can "
                   "continue): the recommendations of the stabilization window and the scale events of the "
                   "scaling policies' periods.",
    "properties": {
        "recommendations": _pairs("replicas", "Recent replica recommendations (stabilization window)."),
        "scaleUpEvents": _pairs("replicaChange", "Recent scale-ups (scaling policy periods)."),
        "scaleDownEvents": _pairs("replicaChange", "Recent scale-downs (scaling policy periods)."),
        "metricFailures": {"type": "array", "description": "Failing metrics (with a fallback): consecutive failed "
                                                           "syncs, first failure, fallback start.",
                           "items": {"type": "object", "required": ["metric", "numberOfFailures", "firstFailureTime"],
                                     "properties": {
                                         "metric": {"type": "string"},
                                         "numberOfFailures": {"type": "integer", "format": "int32", "minimum": 1},
                                         "firstFailureTime": {"type": "string", "format": "date-time"},
                                         "fallbackSince": {"type": "string", "format": "date-time"}}}},
    },
}


def crd() -> dict:
    """The CustomResourceDefinition manifest."""
    defs = json.loads((SCHEMA_DIR / "_definitions.json").read_text())["$defs"]
    spec = structural(defs["io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"], defs, number_or_string_quantity)
    spec["description"] = ("The autoscaling/v2 HorizontalPodAutoscaler spec plus the per-object settings that "
                           "upstream only has as controller flags, scheduled windows (schedules), predictive scaling (prediction), "
                           "scale-up at the CPU limit (saturation) and fallback replicas (fallback).")
    spec["properties"]["minReplicas"]["default"] = 1  # the API server's default for autoscaling/v2
    spec["properties"].update(SETTINGS)
    spec["properties"]["prediction"] = PREDICTION
    spec["properties"]["saturation"] = SATURATION
    spec["properties"]["schedules"] = schedules()
    item = spec["properties"]["metrics"]["items"]["properties"]
    item["prometheus"] = prometheus_metric(copy.deepcopy(item["external"]["properties"]["target"]))
    for source in ("resource", "containerResource"):
        item[source]["properties"]["utilizationBasis"] = copy.deepcopy(UTILIZATION_BASIS)
    item["type"]["description"] += " pyhpa adds Prometheus (the prometheus field)."
    item["fallback"] = fallback_schema("this metric's own fallback when it fails, over spec.fallback field by field.")
    spec["properties"]["fallback"] = fallback_schema(
        "replicas a metric proposes once it has failed failureThreshold syncs (and/or failureDurationSeconds), "
        "maxed with the healthy metrics.")
    status = structural(defs["io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus"], defs)
    status["description"] = ("The autoscaling/v2 HorizontalPodAutoscaler status, plus the controller memory, the "
                             "active schedule windows and the state of the prediction and of the saturation source.")
    status["properties"]["pyhpa"] = MEMORY
    status["properties"]["prediction"] = PREDICTION_STATUS
    status["properties"]["saturation"] = SATURATION_STATUS
    status["properties"]["metricHealth"] = METRIC_HEALTH
    status["properties"]["warnings"] = WARNINGS
    status["properties"]["schedules"] = SCHEDULE_STATUS
    status["properties"]["pause"] = PAUSE_STATUS
    columns = [
        {"name": "Reference", "type": "string", "jsonPath": ".spec.scaleTargetRef.name"},
        {"name": "MinPods", "type": "integer", "jsonPath": ".spec.minReplicas"},
        {"name": "MaxPods", "type": "integer", "jsonPath": ".spec.maxReplicas"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
        {"name": "Windows", "type": "string", "jsonPath": ".status.schedules.active", "priority": 1},
        {"name": "Paused", "type": "string", "jsonPath": ".status.pause.reason", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "horizontalautoscalers.pyhpa.dev"},
        "spec": {
            "group": "pyhpa.dev",
            "scope": "Namespaced",
            "names": {"plural": "horizontalautoscalers", "singular": "horizontalautoscaler",
                      "kind": "HorizontalAutoscaler", "listKind": "HorizontalAutoscalerList",
                      "shortNames": ["hza"]},
            "versions": [{
                "name": "v1alpha1", "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "HorizontalAutoscaler: an autoscaling/v2 HorizontalPodAutoscaler served by pyhpa, "
                                   "with per-object controller settings and scheduled windows.",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                        "metadata": {"type": "object"}, "spec": spec, "status": status}}},
            }],
        },
    }


def main() -> None:
    text = "# Generated by deploy/generate_crd.py from the Kubernetes 1.37 OpenAPI definitions; do not edit.\n"
    text += yaml.safe_dump(crd(), sort_keys=False, width=120)
    for path in (ROOT / "deploy" / "crd.yaml", ROOT / "deploy" / "base" / "crd.yaml",
                 ROOT / "pyhpa" / "data" / "deploy" / "crd.yaml"):
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
