"""The HorizontalAutoscaler (``pyhpa.dev/v1alpha1``), defined once: its names, and what it adds to the
autoscaling/v2 HorizontalPodAutoscaler as typed structs.

The spec of a HorizontalAutoscaler is the autoscaling/v2 ``HorizontalPodAutoscalerSpec`` (Kubernetes' own
definition, read by lightkube's model) plus the fields below, each a ``msgspec.Struct`` whose attributes are the
wire's camelCase names in snake_case (``rename="camel"``):

- ``Settings``: per-object settings that upstream only has as controller flags (flat in ``spec``);
- ``Extensions``: ``spec.schedules`` (``ScheduleWindow``), ``spec.fallback`` (``Fallback``), ``spec.prediction``
  (``Prediction``), ``spec.saturation`` (``Saturation``);
- ``MetricExtensions``: on each ``spec.metrics[]`` item, ``fallback`` and ``prometheus`` (``PrometheusMetric``);
  on its ``resource``/``containerResource``, ``utilizationBasis`` (``UTILIZATION_BASIS``);
- ``StatusExtensions``: the status sections pyhpa writes beside the autoscaling/v2 status.

Defaults and limits are declared here once, as each field's default and ``msgspec.Meta`` (from the decision
core's own constants where the core has the rule: ``pyhpa.core.prediction``, ``pyhpa.core.saturation``); the CRD's
OpenAPI schema, its CEL rules and printer columns are generated from these types (``pyhpa.api.crd``,
``deploy/generate_crd.py``), the adapters read the fields into the core's spec types, and ``pyhpa tune`` writes its
recommendations through them (``manifest``). What the API's consumers do with a source section is declared with
``pyhpa.api.sections`` (``SOURCE_SECTIONS``): what reads and shows each source section; what ``pyhpa tune`` searches
(``pyhpa.tune.space.TUNING``), how ``pyhpa simulate`` shows it (``pyhpa.simulate.sections``). ``pyhpa.api.status``
turns the core's status into the status sections declared here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from ..core.model import (
    FALLBACK_BEHAVIORS,
    PREDICTION_MODES,
    UTILIZATION_BASES,
    PredictionSpec,
    SaturationSpec,
)
from ..core.prediction import (
    MAX_QUANTILE,
    MIN_HISTORY_SECONDS,
    MIN_LEAD_SECONDS,
    MIN_QUANTILE,
    MIN_REFRESH_SECONDS,
)
from ..core.saturation import (
    MAX_DEMAND_FACTOR,
    MAX_PINNED_PERCENT,
    MIN_DEMAND_FACTOR,
    MIN_PINNED_PERCENT,
)

GROUP = "pyhpa.dev"
VERSION = "v1alpha1"
KIND = "HorizontalAutoscaler"
LIST_KIND = "HorizontalAutoscalerList"
PLURAL = "horizontalautoscalers"
SINGULAR = "horizontalautoscaler"
SHORT_NAMES = ("hza",)
API_VERSION = f"{GROUP}/{VERSION}"

MAX_INT32 = 2**31 - 1
#: at most this many windows in ``spec.schedules`` (the CRD's ``maxItems``): kube-apiserver's CEL cost estimate of
#: the rule that no two dated floors or caps overlap (every pair of windows) must stay within its budget, which
#: 32 windows do and 48 do not (measured against kube-apiserver v1.37.2: "estimated rule cost exceeds budget")
MAX_SCHEDULES = 32
#: a window's ``start`` or ``end`` that begins with a year is a date-time (a dated window), else a cron
#: (the CRD's CEL rules use the same test)
DATED_PREFIX = r"^[0-9]{4}-"
#: the date-times a dated window takes: RFC 3339 with ``T`` and seconds, with an offset (``Z``, ``-05:00``) or
#: without one (then a wall-clock time in the window's ``timeZone``); the CRD's schema has the same pattern
DATE_TIME_PATTERN = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                     r"(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?$")
#: a date-time that ends with a UTC offset
OFFSET_SUFFIX = r"(Z|[+-][0-9]{2}:[0-9]{2})$"
#: a 5-field cron, as the schema checks it (cronsim checks the fields)
CRON_PATTERN = r"^\s*\S+(\s+\S+){4}\s*$"
#: ``status`` key of the controller memory of a HorizontalAutoscaler
MEMORY_KEY = "pyhpa"

_PREDICTION = PredictionSpec()
_SATURATION = SaturationSpec()



class Time(str):
    """A metav1.Time as the API writes it: RFC 3339 text, whole seconds, UTC (``2026-11-28T09:00:00Z``). Its
    schema is a ``date-time`` string (``SCHEMAS``); the status sections are converted from the core's epoch seconds
    (``pyhpa.api.status``)."""

    __slots__ = ()


class Quantity(str):
    """A resource.Quantity as the controller writes it: quantity text (``900m``, ``12Mi``). Its schema is
    ``x-kubernetes-int-or-string`` (``SCHEMAS``); the status sections are converted from the core's milli-units
    (``pyhpa.api.status``)."""

    __slots__ = ()


#: the JSON schema of each of the API's own scalar types (``pyhpa.api.crd``'s ``schema_hook``)
SCHEMAS: dict[type, dict] = {
    Time: {"type": "string", "format": "date-time"},
    Quantity: {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
}


def _enum(name: str, values: tuple[str, ...]) -> type[StrEnum]:
    """A StrEnum of ``values`` (the core's tuple of them), in their order (a schema lists them so)."""
    return StrEnum(name, {v: v for v in values})


Mode = _enum("Mode", PREDICTION_MODES)
FallbackBehavior = _enum("FallbackBehavior", FALLBACK_BEHAVIORS)
UtilizationBasis = _enum("UtilizationBasis", UTILIZATION_BASES)
HealthStatus = _enum("HealthStatus", ("Happy", "Failing"))
PauseReason = _enum("PauseReason", ("Paused", "PausedReplicas", "PausedScaleIn", "PausedScaleOut"))
#: the API's enums, each in its own order (``pyhpa.api.crd`` lists their values so)
ENUMS = (Mode, FallbackBehavior, UtilizationBasis, HealthStatus, PauseReason)


def _int32(description: str | None = None, **limits: int) -> Any:
    return Annotated[int, Meta(description=description, extra_json_schema={"format": "int32"}, **limits)]


def _quantity(description: str) -> Any:
    """A quantity pyhpa writes (``status``): an integer or a string (``x-kubernetes-int-or-string``)."""
    return Annotated[Quantity, Meta(description=description)]


# ----- per-object settings -------------------------------------------------------------------------------------
class Settings(Struct, rename="camel", omit_defaults=True):
    """What one autoscaler's spec overrides of the controller's flags (None: the flag's value)."""

    sync_period_seconds: Annotated[int, Meta(
        ge=1, le=MAX_INT32, extra_json_schema={"format": "int32"},
        description="How often this autoscaler is synced, in seconds (upstream: the controller-wide "
                    "--horizontal-pod-autoscaler-sync-period; default: the controller's --sync-period).")] | None = None
    tolerance: Annotated[float, Meta(  # JSON has no infinity; YAML's .inf is refused by the adapter
        ge=0, description="Default tolerance as a fraction (0.1 = 10 %) where behavior.scaleUp/scaleDown.tolerance "
                          "is unset (upstream: --horizontal-pod-autoscaler-tolerance; default: the controller's "
                          "--tolerance).")] | None = None
    cpu_initialization_period_seconds: Annotated[int, Meta(
        ge=0, le=MAX_INT32, extra_json_schema={"format": "int32"},
        description="Seconds after pod start during which CPU samples of not-yet-ready pods are not trusted "
                    "(upstream: --horizontal-pod-autoscaler-cpu-initialization-period, default 300).")] | None = None
    initial_readiness_delay_seconds: Annotated[int, Meta(
        ge=0, le=MAX_INT32, extra_json_schema={"format": "int32"},
        description="Seconds after pod start during which readiness flaps count as not yet ready "
                    "(upstream: --horizontal-pod-autoscaler-initial-readiness-delay, default 30).")] | None = None


SETTING_FIELDS = msgspec.structs.fields(Settings)


# ----- spec.prediction -----------------------------------------------------------------------------------------
class Prediction(Struct, rename="camel", omit_defaults=True):
    """pyhpa: predictive scaling (docs/prediction.md). {} turns it on with defaults for a web service with a daily
    cycle. The forecast quantile of the metric's workload total over the lead window becomes one more replica
    proposal, combined with the metrics' (the largest wins) before upstream's stabilization, policies and
    bounds."""

    metric: Annotated[int, Meta(ge=0, description="Which entry of spec.metrics to forecast (index, default 0).")] = \
        _PREDICTION.metric
    history_seconds: Annotated[int, Meta(ge=MIN_HISTORY_SECONDS, description=(
        "Seconds of history a fit uses (default 7 days; 14 or more to find a weekly cycle)."))] = \
        _PREDICTION.history_seconds
    lead_seconds: Annotated[int, Meta(ge=MIN_LEAD_SECONDS, description=(
        "How far ahead the forecast must cover: pod scheduling + start-up + a sync (default 300)."))] = \
        _PREDICTION.lead_seconds
    quantile: Annotated[float, Meta(ge=MIN_QUANTILE, lt=MAX_QUANTILE, description=(
        "The forecast quantile provisioned for (default 0.9); for a Utilization target the band above the central "
        "forecast counts in proportion to the share of the target's headroom it would use."))] = _PREDICTION.quantile
    mode: Annotated[Mode, Meta(description=(
        "Enforce: the forecast may raise replicas. Observe: computed and reported, never applied."))] = \
        _PREDICTION.mode
    refresh_seconds: Annotated[int, Meta(ge=MIN_REFRESH_SECONDS, description=(
        "Seconds between refits of the model (default 3600)."))] = _PREDICTION.refresh_seconds
    history_query: Annotated[str, Meta(min_length=1, description=(
        "PromQL (range query) for the metric's workload total, overriding the default query for the metric "
        "type."))] | None = None


# ----- spec.saturation -----------------------------------------------------------------------------------------
class Saturation(Struct, rename="camel", omit_defaults=True):
    """pyhpa: scale-up when the pods are pinned at their CPU limit (docs/saturation.md). {} turns it on with
    defaults for a web service. While the ready pods use pinnedPercent of their CPU limit, their utilization is a
    lower bound of the demand: demandFactor times their usage becomes one more replica proposal (the largest wins),
    never below the current replicas, before upstream's stabilization, policies and bounds."""

    metric: Annotated[int, Meta(ge=0, description=(
        "Which entry of spec.metrics to watch: a Resource or ContainerResource cpu metric (index; default the first "
        "such metric)."))] | None = None
    pinned_percent: Annotated[int, Meta(ge=MIN_PINNED_PERCENT, le=MAX_PINNED_PERCENT, description=(
        "CPU usage of the ready pods, in percent of their CPU limit, at or above which they are pinned (default "
        "95)."))] = _SATURATION.pinned_percent
    demand_factor: Annotated[float, Meta(gt=MIN_DEMAND_FACTOR, le=MAX_DEMAND_FACTOR, description=(
        "The demand assumed while pinned, as a multiple of the ready pods' usage (default 2: the reactive proposal "
        "of the ready pods, doubled)."))] = _SATURATION.demand_factor
    mode: Annotated[Mode, Meta(description=(
        "Enforce: it may raise replicas. Observe: computed and reported, never applied."))] = _SATURATION.mode


# ----- spec.fallback, spec.metrics[].fallback ------------------------------------------------------------------
class Fallback(Struct, rename="camel", omit_defaults=True):
    # KEDA's fields plus KEP-5679's duration (``pyhpa.core.fallback``); which fields are required depends on the
    # spec-wide and the metric's own fallback together, so the controller checks that (InvalidSpec naming the
    # field). Described where it is used: SPEC_FALLBACK, METRIC_FALLBACK.

    failure_threshold: _int32(  # type: ignore[valid-type]
        "Consecutive failed syncs of a metric after which its fallback applies (it applies once the count passes "
        "it; default 3 when failureDurationSeconds is not given either).", ge=0) | None = None
    failure_duration_seconds: Annotated[float, Meta(ge=0, description=(
        "Seconds since a metric's first failure after which its fallback applies (with failureThreshold: both must "
        "hold)."))] | None = None
    replicas: _int32(  # type: ignore[valid-type]
        "Fallback replica count (required unless behavior is currentReplicas).", ge=0) | None = None
    behavior: Annotated[FallbackBehavior, Meta(description=(  # type: ignore[valid-type]
        "What a metric in fallback proposes: static (replicas, default), currentReplicas, currentReplicasIfHigher "
        "(max of current and replicas), currentReplicasIfLower (min of current and replicas)."))] | None = None


#: the descriptions of the two fallbacks (``spec.fallback``, ``spec.metrics[].fallback``)
SPEC_FALLBACK = ("pyhpa: replicas a metric proposes once it has failed failureThreshold syncs (and/or "
                 "failureDurationSeconds), maxed with the healthy metrics.")
METRIC_FALLBACK = "pyhpa: this metric's own fallback when it fails, over spec.fallback field by field."


# ----- spec.schedules ------------------------------------------------------------------------------------------
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

#: CEL on each window: what the schema can reject of one window (the rest is the controller's: cron syntax, zones)
WINDOW_RULES = [
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
]

#: a window's start or end: a 5-field cron, or a date-time (a dated window)
_CRON_OR_DATE = {"min_length": 9, "max_length": 128, "pattern": f"^({CRON_PATTERN[1:-1]}|{DATE_TIME_PATTERN[1:-1]})$"}


class ScheduleWindow(Struct, rename="camel", omit_defaults=True):
    """A window active from each occurrence of start to the next occurrence of end (or durationSeconds later), in
    timeZone; while active, minReplicas is a floor and maxReplicas a cap on the autoscaler's bounds."""

    name: Annotated[str, Meta(min_length=1, max_length=63, description="Unique in spec.schedules.")]
    start: Annotated[str, Meta(**_CRON_OR_DATE, description=(
        "5-field cron (minute hour day-of-month month day-of-week) of the starts; or a date-time (RFC 3339 with "
        "seconds, with an offset, or without one: in timeZone) for a dated window, active once from start to "
        "end."))]
    end: Annotated[str, Meta(**_CRON_OR_DATE, description=(
        "5-field cron: the window ends at its first occurrence after a start; for a dated window, its end "
        "date-time (given the same way as start)."))] | None = None
    duration_seconds: Annotated[int, Meta(ge=1, extra_json_schema={"format": "int64"}, description=(
        "Instead of end: the window lasts this many seconds (elapsed time)."))] | None = None
    time_zone: Annotated[str, Meta(min_length=1, max_length=64, description=(
        "IANA time zone of start, end and excludeDates (default UTC)."))] = "UTC"
    min_replicas: _int32(  # type: ignore[valid-type]
        "Floor while active: effective minReplicas = max(spec.minReplicas, floors).", ge=0) | None = None
    max_replicas: _int32(  # type: ignore[valid-type]
        "Cap while active: effective maxReplicas = min(spec.maxReplicas, caps); a floor above a cap wins.",
        ge=1) | None = None
    exclude_dates: Annotated[list[Annotated[str, Meta(extra_json_schema={"format": "date"})]], Meta(
        max_length=366, extra_json_schema={"x-kubernetes-list-type": "set"},
        description="Dates (YYYY-MM-DD, in timeZone) on which the window does not start.")] | None = None


Window = Annotated[ScheduleWindow, Meta(extra_json_schema={"x-kubernetes-validations": WINDOW_RULES})]
Schedules = Annotated[list[Window], Meta(max_length=MAX_SCHEDULES, extra_json_schema={
    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
    "x-kubernetes-validations": [{"rule": NO_OVERLAP, "message": "dated windows of the same kind (two floors or two "
                                                                 "caps) must not overlap"}]},
    description="pyhpa: scheduled scaling. Cron or dated windows that raise minReplicas (a floor) and/or lower "
                "maxReplicas (a cap) while active; see docs/schedules.md.")]


# ----- the spec's extension fields -----------------------------------------------------------------------------
class Extensions(Struct, rename="camel", omit_defaults=True):
    """The fields a HorizontalAutoscaler's spec adds to autoscaling/v2 (besides ``Settings``)."""

    prediction: Prediction | None = None
    saturation: Saturation | None = None
    schedules: Schedules | None = None
    # (not ``| None``: msgspec keeps a use site's schema of a struct only outside a union; None is the default)
    fallback: Annotated[Fallback, Meta(extra_json_schema={"description": SPEC_FALLBACK})] = None  # type: ignore[assignment]


EXTENSION_FIELDS = msgspec.structs.fields(Extensions)

#: ``utilizationBasis`` on a Resource or ContainerResource metric source
UTILIZATION_BASIS = Annotated[UtilizationBasis, Meta(description=(  # type: ignore[valid-type]
    "pyhpa: what a Utilization target is a percentage of: Request (default, upstream) or Limit (the pods' limits, "
    "pod-level limits when set; a pod without a limit for the resource fails the metric, as a missing request "
    "does)."))]


class PrometheusMetric(Struct, rename="camel", omit_defaults=True):
    """pyhpa: a metric defined by an instant PromQL query, for type Prometheus. Per pod (podLabel set) it acts as a
    Pods metric, else as an External metric, also in status.currentMetrics."""

    query: Annotated[str, Meta(min_length=1, description=(
        "Instant PromQL query (GET /api/v1/query): one series per pod with podLabel, else one series or a "
        "scalar."))]
    target: Annotated[Any, Meta(description="The autoscaling/v2 MetricTarget (as an External metric's).")]
    name: Annotated[str, Meta(description=(
        "Metric name in status.currentMetrics, conditions and events (default: the query)."))] | None = None
    server: Annotated[str, Meta(description=(
        "Prometheus base URL, e.g. http://prometheus:9090 (default: the controller's --prometheus-url)."))] | None = None
    pod_label: Annotated[str, Meta(description=(
        "Label holding the pod name: one value per pod, AverageValue target (like a Pods metric)."))] | None = None
    timeout_seconds: Annotated[float, Meta(gt=0, description=(
        "Seconds the query may take in all (default 5); then the metric fails for this sync."))] | None = None


class MetricExtensions(Struct, rename="camel", omit_defaults=True):
    """The fields a HorizontalAutoscaler's ``spec.metrics[]`` item adds to autoscaling/v2's MetricSpec."""

    prometheus: PrometheusMetric | None = None
    fallback: Annotated[Fallback, Meta(extra_json_schema={"description": METRIC_FALLBACK})] = None  # type: ignore[assignment]


# ----- status --------------------------------------------------------------------------------------------------
class _Recommendation(Struct):
    timestamp: Time
    replicas: _int32()  # type: ignore[valid-type]


class _ScaleEvent(Struct, rename="camel"):
    timestamp: Time
    replica_change: _int32()  # type: ignore[valid-type]


class _MetricFailures(Struct, rename="camel", omit_defaults=True):
    metric: str
    number_of_failures: _int32(ge=1)  # type: ignore[valid-type]
    first_failure_time: Time
    fallback_since: Time | None = None


class MemorySection(Struct, rename="camel", omit_defaults=True):
    """Controller memory of this autoscaler (optional; kept so another controller replica can continue): the
    recommendations of the stabilization window and the scale events of the scaling policies' periods."""

    recommendations: Annotated[list[_Recommendation], Meta(description=(
        "Recent replica recommendations (stabilization window)."))] | None = None
    scale_up_events: Annotated[list[_ScaleEvent], Meta(description=(
        "Recent scale-ups (scaling policy periods)."))] | None = None
    scale_down_events: Annotated[list[_ScaleEvent], Meta(description=(
        "Recent scale-downs (scaling policy periods)."))] | None = None
    metric_failures: Annotated[list[_MetricFailures], Meta(description=(
        "Failing metrics (with a fallback): consecutive failed syncs, first failure, fallback start."))] | None = None


class PredictionAccuracy(Struct, rename="camel", omit_defaults=True):
    """Recent forecasts against what happened."""

    mape: Annotated[float, Meta(description="Mean absolute percentage error (fraction).")] | None = None
    wape: Annotated[float, Meta(description="Sum of absolute errors over sum of actual values.")] | None = None
    under_forecast_share: Annotated[float, Meta(description=(
        "Share of actual values above the forecast quantile."))] | None = None


class PredictionSection(Struct, rename="camel", omit_defaults=True):
    """pyhpa: the state of spec.prediction at the last sync."""

    reason: Annotated[str, Meta(description=(
        "The PredictionActive reason (Predicting, Observing, InsufficientHistory, NotPredictable, "
        "HistoryUnavailable, AccuracyTooLow)."))] | None = None
    message: Annotated[str, Meta(description="Why, in one sentence.")] | None = None
    model: Annotated[str, Meta(description="The fitted model (e.g. robust-seasonal/log).")] | None = None
    periods_seconds: Annotated[list[int], Meta(description=(
        "Seasonal periods detected in the history, seconds."))] | None = None
    last_fit_time: Annotated[Time, Meta(description="When the model was last fitted.")] | None = None
    lead_seconds: Annotated[int, Meta(description="Length of the forecast window, seconds.")] | None = None
    forecast_milli: _quantity("The quantile of the metric's workload total over the forecast window (the "  # type: ignore[valid-type]
                              "metric's unit: cores for CPU, bytes for memory).") | None = msgspec.field(
        default=None, name="forecast")
    expected_milli: _quantity(  # type: ignore[valid-type]
        "The highest central (median) forecast over the forecast window (same unit).") | None = msgspec.field(
        default=None, name="expected")
    provisioned_milli: _quantity(  # type: ignore[valid-type]
        "The total the replicas are sized for: the expected value plus the band up to the quantile, in proportion "
        "to the share of a Utilization target's headroom the band would use (same unit).") | None = msgspec.field(
        default=None, name="provisioned")
    replicas: _int32("Replicas the forecast asks for.") | None = None  # type: ignore[valid-type]
    accuracy: PredictionAccuracy | None = None


class SaturationSection(Struct, rename="camel", omit_defaults=True):
    """pyhpa: the state of spec.saturation at the last sync."""

    reason: Annotated[str, Meta(description=(
        "The SaturationActive reason (PinnedAtLimit, Observing, BelowLimit, NoCPULimit, NoCPUSamples)."))] | None = None
    message: Annotated[str, Meta(description="Why, in one sentence.")] | None = None
    mode: Annotated[str, Meta(description="spec.saturation.mode.")] | None = None
    pinned: Annotated[bool, Meta(description=(
        "The ready pods use pinnedPercent or more of their CPU limit."))] | None = None
    usage_percent: Annotated[int, Meta(description=(
        "While pinned: the ready pods' CPU usage in percent of their limit."))] | None = msgspec.field(
        default=None, name="usagePercentOfLimit")
    ready_pods: Annotated[int, Meta(description="While pinned: the ready pods it was judged on.")] | None = None
    replicas: _int32("While pinned: replicas it asks for.") | None = None  # type: ignore[valid-type]


class MetricHealthEntry(Struct, rename="camel", omit_defaults=True):
    metric: Annotated[str, Meta(description=(
        "What is queried: Resource/cpu, Pods/<name>, External/<name>, ..."))]
    number_of_failures: _int32(  # type: ignore[valid-type]
        "Consecutive failed syncs, counted up to one past the fallback's failureThreshold (1 without one): from "
        "there on more failures change nothing, and a metric that stays down writes no status.")
    status: HealthStatus
    first_failure_time: Time | None = None
    fallback_since: Time | None = None
    fallback_replicas: _int32("What its fallback proposed at the last sync.") | None = None  # type: ignore[valid-type]


class StatusWarning(Struct, omit_defaults=True):
    reason: Annotated[str, Meta(description="The event's reason.")]
    message: Annotated[str, Meta(description="The event's note, as sent.")] | None = None
    metric: _int32(  # type: ignore[valid-type]
        "The spec.metrics index a check's warning is about (then its cause is the reason, metric and container, "
        "whatever the figures of the message).") | None = None
    container: Annotated[str, Meta(description="The container a check's warning is about.")] | None = None


class ScheduleSection(Struct, rename="camel", omit_defaults=True):
    """The windows of spec.schedules active at the last sync, the next start or end of any window, and the dated
    windows that have expired."""

    active: Annotated[list[str], Meta(description="Names of the active windows.")] | None = None
    next_change: Annotated[Time, Meta(description=(
        "The next start or end of a window (the controller syncs then)."))] | None = msgspec.field(
        default=None, name="nextChangeTime")
    expired: Annotated[list[str], Meta(description=(
        "Names of the dated windows that have ended: they never apply again."))] = \
        msgspec.field(default_factory=list)


class PauseSection(Struct, omit_defaults=True):
    """pyhpa: present while a pause annotation (pyhpa.dev/paused, paused-replicas, paused-scale-in,
    paused-scale-out) holds the autoscaler (docs/operations.md)."""

    reason: Annotated[PauseReason, Meta(description=(  # type: ignore[valid-type]
        "The Paused condition's reason."))] | None = None
    since: Annotated[Time, Meta(description="When the autoscaler was paused.")] | None = None
    replicas: _int32("The replicas held (paused-replicas, or the count paused froze).") | None = None  # type: ignore[valid-type]


class StatusExtensions(Struct, rename="camel", omit_defaults=True):
    """The sections a HorizontalAutoscaler's status adds to autoscaling/v2's (``MEMORY_KEY`` is ``pyhpa``)."""

    pyhpa: MemorySection | None = None
    prediction: PredictionSection | None = None
    saturation: SaturationSection | None = None
    metric_health: Annotated[list[MetricHealthEntry], Meta(description=(
        "pyhpa: each metric's health (only with a fallback): consecutive failed syncs and whether its fallback "
        "applies."))] | None = None
    warnings: Annotated[list[StatusWarning], Meta(extra_json_schema={"x-kubernetes-list-type": "atomic"}, description=(
        "pyhpa: the Warning events sent about this autoscaler whose cause lasts (a failing metric, ScaleStarvation, "
        "PodSumHidesContainer, ...). An event listed here is not sent again while its cause is unchanged: not at "
        "the next sync, not by another replica, not after a restart."))] | None = None
    schedules: ScheduleSection | None = None
    pause: PauseSection | None = None
    reference: Annotated[str, Meta(description=(
        "pyhpa: spec.scaleTargetRef as kind/name (Deployment/web), the REFERENCE column of kubectl get hpa; written "
        "by the controller."))] | None = None
    targets: Annotated[str, Meta(description=(
        "pyhpa: each metric's current value over its target as the TARGETS column of kubectl get hpa shows them "
        "(cpu: 45%/50%, <unknown>/100m (avg); the first two metrics, then + N more...); written by the controller "
        "with the status, so it changes only with status.currentMetrics or the spec."))] | None = None


#: ``status`` sections of a HorizontalAutoscaler that autoscaling/v2 does not have (``warnings`` aside: the
#: controller's own record of what it said), and the texts of its printer columns (a snapshot leaves them out)
STATUS_EXTENSIONS = (MEMORY_KEY, "prediction", "schedules", "saturation", "reference", "targets")

#: ``kubectl get hza`` columns: those of ``kubectl get hpa`` (REFERENCE and TARGETS are texts the controller writes
#: into the status, ``pyhpa.adapters.printers``: a printer column is one JSONPath), then pyhpa's
PRINTER_COLUMNS = [
    {"name": "Reference", "type": "string", "jsonPath": ".status.reference"},
    {"name": "Targets", "type": "string", "jsonPath": ".status.targets"},
    {"name": "MinPods", "type": "integer", "jsonPath": ".spec.minReplicas"},
    {"name": "MaxPods", "type": "integer", "jsonPath": ".spec.maxReplicas"},
    {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
    {"name": "Windows", "type": "string", "jsonPath": ".status.schedules.active", "priority": 1},
    {"name": "Paused", "type": "string", "jsonPath": ".status.pause.reason", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def manifest(section: Struct, *names: str) -> dict:
    """``section`` as the API writes it: its wire (camelCase) fields, those named in ``names`` (snake_case) always,
    the others when they differ from their defaults."""
    out = msgspec.to_builtins(section)
    for f in msgspec.structs.fields(section):
        if f.name in names:
            out[f.encode_name] = msgspec.to_builtins(getattr(section, f.name))
    order = [f.encode_name for f in msgspec.structs.fields(section)]
    return {k: out[k] for k in sorted(out, key=order.index)}
