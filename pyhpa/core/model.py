"""Plain input and output types of the decision core.

Everything here is already parsed: quantities are integer milli-units (millicores for CPU,
milli-bytes for memory, milli-units for custom metrics, as upstream's ``MilliValue()``),
times are float seconds since the Unix epoch (UTC; the Kubernetes zero time
``0001-01-01T00:00:00Z`` is ``ZERO_TIME``), durations are float seconds. Adapters
(``pyhpa.adapters``) build these from Kubernetes objects; the core never parses text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, tzinfo
from enum import StrEnum
from functools import lru_cache

#: ``0001-01-01T00:00:00Z`` in epoch seconds: a real time, long ago (not "unset").
ZERO_TIME = -62135596800.0
#: Largest int32: upstream saturates replica counts here.
MAX_INT32 = 2**31 - 1
#: Largest int64: upstream saturates metric sums here.
MAX_INT64 = 2**63 - 1


class ConditionType(StrEnum):
    """The conditions a sync sets: upstream's four and the HorizontalAutoscaler's (one per source that has one)."""

    ABLE_TO_SCALE = "AbleToScale"
    SCALING_ACTIVE = "ScalingActive"
    SCALING_LIMITED = "ScalingLimited"
    SCALED_TO_ZERO = "ScaledToZero"
    SCHEDULE_ACTIVE = "ScheduleActive"
    PREDICTION_ACTIVE = "PredictionActive"
    SATURATION_ACTIVE = "SaturationActive"
    FALLBACK = "Fallback"
    PAUSED = "Paused"


class Reason(StrEnum):
    """Upstream's condition reasons (pkg/controller/podautoscaler), the ``ScheduleActive`` ones and the
    controller's ``InvalidSpec`` (a spec the API server took that the controller cannot read)."""

    SUCCEEDED_GET_SCALE = "SucceededGetScale"
    FAILED_GET_SCALE = "FailedGetScale"
    SUCCEEDED_RESCALE = "SucceededRescale"
    FAILED_UPDATE_SCALE = "FailedUpdateScale"
    READY_FOR_NEW_SCALE = "ReadyForNewScale"
    SCALE_DOWN_STABILIZED = "ScaleDownStabilized"
    SCALE_UP_STABILIZED = "ScaleUpStabilized"
    VALID_METRIC_FOUND = "ValidMetricFound"
    FALLBACK_REPLICAS = "FallbackReplicas"
    INVALID_SELECTOR = "InvalidSelector"
    AMBIGUOUS_SELECTOR = "AmbiguousSelector"
    SCALING_DISABLED = "ScalingDisabled"
    DESIRED_WITHIN_RANGE = "DesiredWithinRange"
    TOO_FEW_REPLICAS = "TooFewReplicas"
    TOO_MANY_REPLICAS = "TooManyReplicas"
    SCALE_UP_LIMIT = "ScaleUpLimit"
    SCALE_DOWN_LIMIT = "ScaleDownLimit"
    SCALED_TO_ZERO = "ScaledToZero"
    NOT_SCALED_TO_ZERO = "NotScaledToZero"
    WINDOW_ACTIVE = "WindowActive"
    NO_ACTIVE_WINDOW = "NoActiveWindow"
    FLOOR_AND_CAP_CONFLICT = "FloorAndCapConflict"
    INVALID_SPEC = "InvalidSpec"


class SourceKind(StrEnum):
    """What can set a decision's number (``SourceRef.kind``): the sources (``Metric``, ``Fallback``,
    ``Prediction``, ``Saturation``, ``Schedule``, ``Pause``, ``Recommendation``: a given one) and the steps of
    normalization (``Spec``: the spec's bounds, ``Stabilization``, ``Policy``)."""

    METRIC = "Metric"
    FALLBACK = "Fallback"
    PREDICTION = "Prediction"
    SATURATION = "Saturation"
    SCHEDULE = "Schedule"
    PAUSE = "Pause"
    RECOMMENDATION = "Recommendation"
    SPEC = "Spec"
    STABILIZATION = "Stabilization"
    POLICY = "Policy"


@dataclass(slots=True, frozen=True, eq=False)
class SourceRef:
    """Who set a number: a ``kind`` and its ``name`` (the metric as upstream names it, the window, the bound,
    the direction). ``str()`` is ``Kind/name`` (``Metric/cpu resource utilization (percentage of request)``,
    ``Schedule/business-hours``, ``Spec/minReplicas``, ``Stabilization/scaleDown``), as messages and the
    ``decided_by`` label print it; nothing reads that text back."""

    kind: SourceKind
    name: str

    def __str__(self) -> str:
        return self.kind + "/" + self.name  # str's own +: a StrEnum's ``.value`` is a slow property

    # equality and hash by value, written out: the dataclass's generated ones build tuples, and decide compares
    # references at every sync
    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not SourceRef:
            return NotImplemented
        return self.kind == other.kind and self.name == other.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.kind, self.name))


@lru_cache(maxsize=4096)
def source_ref(kind: SourceKind, name: str) -> SourceRef:
    """The ``SourceRef`` of ``kind`` and ``name``, one object per pair (it is immutable): what every sync names
    again costs no new object."""
    return SourceRef(kind, name)


# Metric source types (autoscaling/v2 MetricSourceType).
RESOURCE = "Resource"
CONTAINER_RESOURCE = "ContainerResource"
PODS = "Pods"
OBJECT = "Object"
EXTERNAL = "External"
METRIC_SOURCE_TYPES = (RESOURCE, CONTAINER_RESOURCE, PODS, OBJECT, EXTERNAL)

# What a Utilization target is a percentage of (HorizontalAutoscaler ``utilizationBasis``).
REQUEST = "Request"
LIMIT = "Limit"
UTILIZATION_BASES = (REQUEST, LIMIT)

# Target types (autoscaling/v2 MetricTargetType) and the ones each source allows.
UTILIZATION = "Utilization"
AVERAGE_VALUE = "AverageValue"
VALUE = "Value"
ALLOWED_TARGETS = {
    RESOURCE: (UTILIZATION, AVERAGE_VALUE),
    CONTAINER_RESOURCE: (UTILIZATION, AVERAGE_VALUE),
    PODS: (AVERAGE_VALUE,),
    OBJECT: (VALUE, AVERAGE_VALUE),
    EXTERNAL: (VALUE, AVERAGE_VALUE),
}


@dataclass(slots=True, frozen=True)
class ControllerConfig:
    """kube-controller-manager flags of the HPA controller, upstream defaults.

    ``tolerance`` is a fraction (0.1 = 10 %), periods and windows are seconds,
    ``scale_up_limit_factor``/``scale_up_limit_minimum`` cap scale-up without
    ``spec.behavior`` at ``max(factor * current, minimum)`` replicas. The feature gates the controller
    reads take their Kubernetes v1.37.2 defaults (``tools/upstream/hpa-decide --gates`` prints upstream's
    table; tests/test_upstream_decide.py checks these against it): ``scale_to_zero`` (HPAScaleToZero,
    beta, on), ``configurable_tolerance`` (HPAConfigurableTolerance, GA and locked on in v1.37; off only
    models an older or emulated version), ``pod_level_resources`` (PodLevelResources, beta, on).
    """

    tolerance: float = 0.1
    cpu_initialization_period_seconds: float = 300.0
    initial_readiness_delay_seconds: float = 30.0
    downscale_stabilization_window_seconds: float = 300.0
    scale_up_limit_factor: float = 2.0
    scale_up_limit_minimum: float = 4.0
    scale_to_zero: bool = True  # feature gate HPAScaleToZero
    configurable_tolerance: bool = True  # feature gate HPAConfigurableTolerance
    pod_level_resources: bool = True  # feature gate PodLevelResources


@dataclass(slots=True, frozen=True)
class ScalingPolicy:
    """One ``HPAScalingPolicy``: ``type`` "Pods" or "Percent", ``value`` pods or percent."""

    type: str
    value: int
    period_seconds: int


@dataclass(slots=True, frozen=True)
class ScalingRules:
    """``HPAScalingRules`` after API defaulting.

    ``stabilization_window_seconds`` None means "controller default" (only scale-down
    leaves it unset); ``select_policy`` is "Max", "Min" or "Disabled"; ``tolerance`` is a
    fraction or None (controller-wide tolerance applies).
    """

    stabilization_window_seconds: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]
    tolerance: float | None = None


@dataclass(slots=True, frozen=True)
class Behavior:
    """``spec.behavior`` with both directions defaulted (SetDefaults_HorizontalPodAutoscalerBehavior)."""

    scale_up: ScalingRules
    scale_down: ScalingRules


@dataclass(slots=True, frozen=True)
class MetricSpec:
    """One ``spec.metrics[]`` item.

    ``type`` is the source type (an unknown string is kept: upstream reports
    InvalidMetricSourceType). ``name`` is the resource name (cpu, memory) or the metric
    name. ``target_type`` is the declared target type; ``target_utilization`` is percent of
    request, ``target_milli`` the AverageValue/Value in milli-units. ``selector`` is the
    metric label selector as text (for messages), ``described_object`` (kind, name) for
    Object metrics, ``container`` for ContainerResource. ``utilization_basis`` (a
    HorizontalAutoscaler extension) is what a Utilization target is a percentage of:
    ``REQUEST`` (upstream) or ``LIMIT`` (the pods' limits, pod-level when set). ``fallback`` (a
    HorizontalAutoscaler extension) is the metric's own fallback, over ``HPA.fallback`` field by field.
    ``selector_go`` is the metric selector as upstream prints it in messages and errors (Go's ``%+v`` of a
    ``*metav1.LabelSelector``: ``nil``, or ``&LabelSelector{MatchLabels:map[string]string{a: b,},...}``);
    None: ``selector`` is printed (pyhpa's own metrics). ``selector_json`` is the metric selector as the API's
    JSON text (None: no selector), which ``status.currentMetrics`` copies (computeStatusFor{Pods,Object,External}
    Metric); ``described_api_version`` the Object metric's ``describedObject.apiVersion`` ("" when not given).
    """

    type: str
    name: str = ""
    target_type: str = ""
    target_utilization: int | None = None
    target_average_milli: int | None = None
    target_value_milli: int | None = None
    container: str = ""
    selector: str = ""
    described_object: tuple[str, str] | None = None
    utilization_basis: str = "Request"
    fallback: FallbackSpec | None = None
    selector_go: str | None = None
    selector_json: str | None = None
    described_api_version: str = ""


#: ``fallback.behavior`` values (KEDA's names): what a metric in fallback proposes
FALLBACK_STATIC = "static"
FALLBACK_CURRENT = "currentReplicas"
FALLBACK_CURRENT_IF_HIGHER = "currentReplicasIfHigher"
FALLBACK_CURRENT_IF_LOWER = "currentReplicasIfLower"
FALLBACK_BEHAVIORS = (FALLBACK_STATIC, FALLBACK_CURRENT, FALLBACK_CURRENT_IF_HIGHER, FALLBACK_CURRENT_IF_LOWER)
#: ``failureThreshold`` when a fallback gives neither it nor ``failureDurationSeconds``
DEFAULT_FAILURE_THRESHOLD = 3


@dataclass(slots=True, frozen=True, kw_only=True)
class FallbackSpec:
    """``spec.fallback`` of a HorizontalAutoscaler, or one metric's own ``fallback`` (KEDA's names).

    Every field may be None: a metric's own fallback inherits what it leaves unset from the
    spec-wide one (``pyhpa.core.fallback.effective_fallback``). ``replicas`` is the fallback replica
    count; ``behavior`` one of ``FALLBACK_BEHAVIORS`` (default "static"); ``failure_threshold`` the
    consecutive failed syncs of a metric after which its fallback applies, ``failure_duration_seconds``
    the seconds since its first failure after which it applies (both given: both must hold).
    """

    replicas: int | None = None
    behavior: str | None = None
    failure_threshold: int | None = None
    failure_duration_seconds: float | None = None


@dataclass(slots=True, frozen=True)
class Condition:
    """An HPA status condition; ``last_transition_time`` in epoch seconds or None."""

    type: str
    status: str
    reason: str
    message: str = ""
    last_transition_time: float | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class WindowSpec:
    """One ``spec.schedules[]`` window of a HorizontalAutoscaler (pyhpa.dev/v1alpha1) as the core reads it: the
    API's ``ScheduleWindow`` with its zone resolved and its dates parsed (``pyhpa.adapters.autoscaler``).

    A cron window: ``start``/``end`` are 5-field cron expressions read in ``time_zone`` (a resolved
    IANA zone); exactly one of ``end`` and ``duration_seconds`` (elapsed seconds) is set;
    ``exclude_dates`` are local dates on which the window does not start.

    A dated window (``dated``): ``start_time`` and ``end_time`` are the instants (epoch s) its
    ``start`` and ``end`` date-times stand for, as the adapter parsed them (``start``/``end`` keep
    the text the user gave); it is active once, from ``start_time`` up to ``end_time``, then expired.

    ``min_replicas`` is a floor and ``max_replicas`` a cap while the window is active.
    Semantics: ``pyhpa.core.schedules``.
    """

    name: str
    start: str
    time_zone: tzinfo
    end: str | None = None
    duration_seconds: int | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    exclude_dates: frozenset[date] = frozenset()
    time_zone_name: str = "UTC"
    start_time: float | None = None
    end_time: float | None = None
    #: the hash, computed once: the memoized cron look-ups (``pyhpa.core.schedules``) hash the window several
    #: times a sync, and the generated hash would hash every field each time
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.name, self.start, self.time_zone, self.end, self.duration_seconds,
                                                self.min_replicas, self.max_replicas, self.exclude_dates,
                                                self.time_zone_name, self.start_time, self.end_time)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def dated(self) -> bool:
        """True for a window given by a start and an end date-time (one occurrence), not by crons."""
        return self.start_time is not None


@dataclass(slots=True, frozen=True, kw_only=True)
class ActiveWindow:
    """One window active at ``now``: the occurrence's ``start`` and ``end`` (epoch s) and its bounds."""

    name: str
    start: float
    end: float
    min_replicas: int | None
    max_replicas: int | None


#: ``spec.prediction.mode``
ENFORCE = "Enforce"
OBSERVE = "Observe"
PREDICTION_MODES = (ENFORCE, OBSERVE)

#: The condition a HorizontalAutoscaler with ``spec.prediction`` reports, and its reasons: True with
#: ``PREDICTING`` (the forecast is applied); False with ``OBSERVING`` (``mode: Observe``) or why the prediction
#: stepped aside (too little history, no usable cycle, no history source, recent forecasts too bad).
PREDICTION_ACTIVE = ConditionType.PREDICTION_ACTIVE


class PredictionReason(StrEnum):
    PREDICTING = "Predicting"
    OBSERVING = "Observing"
    INSUFFICIENT_HISTORY = "InsufficientHistory"
    NOT_PREDICTABLE = "NotPredictable"
    HISTORY_UNAVAILABLE = "HistoryUnavailable"
    ACCURACY_TOO_LOW = "AccuracyTooLow"


PREDICTING = PredictionReason.PREDICTING
OBSERVING = PredictionReason.OBSERVING
INSUFFICIENT_HISTORY = PredictionReason.INSUFFICIENT_HISTORY
NOT_PREDICTABLE = PredictionReason.NOT_PREDICTABLE
HISTORY_UNAVAILABLE = PredictionReason.HISTORY_UNAVAILABLE
ACCURACY_TOO_LOW = PredictionReason.ACCURACY_TOO_LOW
PREDICTION_REASONS = tuple(PredictionReason)


@dataclass(slots=True, frozen=True, kw_only=True)
class PredictionSpec:
    """``spec.prediction`` of a HorizontalAutoscaler; ``prediction: {}`` gives these defaults.

    ``metric`` indexes ``spec.metrics``; ``history_seconds``, ``lead_seconds`` and
    ``refresh_seconds`` are seconds; ``quantile`` is the forecast quantile provisioned for
    (0..1; for a Utilization target in proportion to its headroom: ``pyhpa.core.provisioned_total``);
    ``mode`` is "Enforce" (the forecast may raise replicas) or "Observe" (computed and reported,
    never applied); ``history_query`` is PromQL overriding the default history query.
    """

    metric: int = 0
    history_seconds: int = 7 * 86400
    lead_seconds: int = 300
    quantile: float = 0.9
    mode: str = ENFORCE
    refresh_seconds: int = 3600
    history_query: str | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class Forecast:
    """The forecaster's answer for one sync, as numbers (fitting lives outside the core).

    ``total_milli`` is the forecast quantile (``spec.prediction.quantile``) of the metric's workload
    total over ``[now, now + leadSeconds]`` in milli-units (summed millicores of the target's pods
    for a CPU Resource metric, the summed per-pod value for Pods metrics, the value for
    Object/External); None when there is no usable forecast, and then ``reason`` says why (a
    ``PredictionActive`` reason: InsufficientHistory, NotPredictable, HistoryUnavailable,
    AccuracyTooLow). ``expected_milli`` is the highest central (median) forecast over the same
    window, same unit; None when the forecaster gives only the quantile (the quantile is then
    provisioned for in full). How much of the band between the two is provisioned for is the
    core's rule (``pyhpa.core.prediction.provisioned_total``).
    """

    total_milli: int | None
    expected_milli: int | None = None
    reason: str = PREDICTING
    message: str = ""


#: The condition a HorizontalAutoscaler with ``spec.saturation`` reports, and its reasons: True with
#: ``PINNED_AT_LIMIT`` (the ready pods use their whole CPU limit and the source asks for more); False with
#: ``OBSERVING`` (``mode: Observe``, pinned, not applied), ``BELOW_LIMIT`` (not pinned), ``NO_CPU_LIMIT`` (a pod
#: has no CPU limit: its usage is never capped, the metric sees the whole demand) or ``NO_CPU_SAMPLES`` (no
#: ready pod with a CPU sample to judge).
SATURATION_ACTIVE = ConditionType.SATURATION_ACTIVE


class SaturationReason(StrEnum):
    PINNED_AT_LIMIT = "PinnedAtLimit"
    OBSERVING = "Observing"
    BELOW_LIMIT = "BelowLimit"
    NO_CPU_LIMIT = "NoCPULimit"
    NO_CPU_SAMPLES = "NoCPUSamples"


PINNED_AT_LIMIT = SaturationReason.PINNED_AT_LIMIT
BELOW_LIMIT = SaturationReason.BELOW_LIMIT
NO_CPU_LIMIT = SaturationReason.NO_CPU_LIMIT
NO_CPU_SAMPLES = SaturationReason.NO_CPU_SAMPLES
SATURATION_REASONS = tuple(SaturationReason)


@dataclass(slots=True, frozen=True, kw_only=True)
class SaturationSpec:
    """``spec.saturation`` of a HorizontalAutoscaler; ``saturation: {}`` gives these defaults
    (rules and limits: ``pyhpa.core.saturation``).

    ``metric`` indexes ``spec.metrics`` (a Resource or ContainerResource ``cpu`` metric; None: the first
    one); ``pinned_percent`` is the ready pods' CPU usage, in percent of their CPU limit, at or above which
    they are *pinned* (their usage no longer shows the demand); ``demand_factor`` is the demand assumed
    while they are pinned, as a multiple of their usage (2.0: the reactive proposal of the ready pods,
    doubled); ``mode`` "Enforce" or "Observe" (computed and reported, never applied).
    """

    metric: int | None = None
    pinned_percent: int = 95
    demand_factor: float = 2.0
    mode: str = ENFORCE


#: The annotations that pause an autoscaler (KEDA's ``autoscaling.keda.sh/paused*``, under ``pyhpa.dev/``)
PAUSED_ANNOTATION = "pyhpa.dev/paused"
PAUSED_REPLICAS_ANNOTATION = "pyhpa.dev/paused-replicas"
PAUSED_SCALE_IN_ANNOTATION = "pyhpa.dev/paused-scale-in"
PAUSED_SCALE_OUT_ANNOTATION = "pyhpa.dev/paused-scale-out"
PAUSE_ANNOTATIONS = (PAUSED_ANNOTATION, PAUSED_REPLICAS_ANNOTATION, PAUSED_SCALE_IN_ANNOTATION,
                     PAUSED_SCALE_OUT_ANNOTATION)
#: The condition a paused (or once paused) autoscaler reports, and its reasons: True with ``PAUSED`` (the replica
#: count is frozen), ``PAUSED_REPLICAS`` (held at paused-replicas), ``PAUSED_SCALE_IN`` / ``PAUSED_SCALE_OUT`` (one
#: direction blocked); False with ``RESUMED`` (no pause annotation any more) or ``INVALID_PAUSE_ANNOTATION``.
PAUSED_CONDITION = ConditionType.PAUSED


class PauseReason(StrEnum):
    PAUSED = "Paused"
    PAUSED_REPLICAS = "PausedReplicas"
    PAUSED_SCALE_IN = "PausedScaleIn"
    PAUSED_SCALE_OUT = "PausedScaleOut"
    RESUMED = "Resumed"
    INVALID_PAUSE_ANNOTATION = "InvalidPauseAnnotation"


PAUSED = PauseReason.PAUSED
PAUSED_REPLICAS = PauseReason.PAUSED_REPLICAS
PAUSED_SCALE_IN = PauseReason.PAUSED_SCALE_IN
PAUSED_SCALE_OUT = PauseReason.PAUSED_SCALE_OUT
RESUMED = PauseReason.RESUMED
INVALID_PAUSE_ANNOTATION = PauseReason.INVALID_PAUSE_ANNOTATION


@dataclass(slots=True, frozen=True, kw_only=True)
class PauseSpec:
    """The pause annotations of an autoscaler, parsed (KEDA's semantics; rules: ``pyhpa.core.pause``).

    ``paused``: ``pyhpa.dev/paused: "true"`` freezes the replica count; ``replicas``: ``pyhpa.dev/paused-replicas:
    "N"`` scales to N and holds it (wins over ``paused``); ``scale_in`` / ``scale_out``:
    ``pyhpa.dev/paused-scale-in`` / ``-scale-out: "true"`` block one direction. ``problems`` are the annotations
    whose value did not parse (``pyhpa.dev/paused-replicas: must be ..., got 'five'``): each is ignored, reported
    by a Warning event and the ``Paused`` condition, never a silent pause.
    """

    paused: bool = False
    replicas: int | None = None
    scale_in: bool = False
    scale_out: bool = False
    problems: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True, kw_only=True)
class PauseStatus:
    """``status.pause``: the ``Paused`` condition's ``reason`` and ``message``, ``since`` (epoch s: when the
    autoscaler was paused, the condition's transition time) and ``replicas`` held (paused-replicas or the frozen
    count; None when only one direction is blocked)."""

    reason: str
    message: str
    since: float | None
    replicas: int | None = None


@dataclass(slots=True, frozen=True)
class HPA:
    """What the core needs of a HorizontalPodAutoscaler (spec and the status it carries).

    ``schedules``, ``prediction``, ``saturation`` and ``fallback`` (spec-wide; a metric may carry its own in
    ``MetricSpec.fallback``) are HorizontalAutoscaler extensions; empty/None for an autoscaling/v2
    HPA, which then decides exactly as upstream. ``pause`` is read from the pause annotations of either kind
    (None without any).
    """

    namespace: str
    name: str
    min_replicas: int
    max_replicas: int
    metrics: tuple[MetricSpec, ...]
    behavior: Behavior | None = None
    conditions: tuple[Condition, ...] = ()
    last_scale_time: float | None = None
    status_desired_replicas: int | None = None
    schedules: tuple[WindowSpec, ...] = ()
    prediction: PredictionSpec | None = None
    fallback: FallbackSpec | None = None
    saturation: SaturationSpec | None = None
    pause: PauseSpec | None = None


@dataclass(slots=True, frozen=True)
class Scale:
    """The target's autoscaling/v1 Scale: ``spec.replicas``, ``status.replicas``, ``status.selector``."""

    spec_replicas: int
    status_replicas: int
    selector: str


@dataclass(slots=True, frozen=True)
class Pod:
    """A pod as the HPA sees it.

    ``requests`` maps ``(resource, container)`` to the request in milli-units and
    ``(resource, "")`` to the pod's denominator (upstream calculateRequests: the pod-level
    request when ``spec.resources.requests`` is set, else the sum over regular and
    restartable init containers); a missing key or None means upstream finds no such request
    and the calculator (``pyhpa.core.calculator.pod_amount``) raises upstream's error for it.
    ``containers`` names the counted containers in upstream's order (empty: no container
    information, then ``missing_request`` names the container without a request, the older
    form built by hand); ``pod_level_requests`` tells that pod-level requests are set.
    ``limits``/``pod_level_limits`` are the same for limits (``utilizationBasis: Limit``).
    ``ready`` is the first Ready condition's status being True (None: no Ready condition);
    ``ready_unknown`` marks a status that is neither True nor False (``Unknown``): not ready
    when counting ready pods, yet not "unready" for CPU (upstream tests ``status == False``).
    """

    name: str
    phase: str
    labels: dict[str, str]
    deleted: bool = False
    start_time: float | None = None
    ready: bool | None = None
    ready_transition_time: float = ZERO_TIME
    requests: dict[tuple[str, str], int | None] = field(default_factory=dict)
    missing_request: dict[tuple[str, str], str] = field(default_factory=dict)
    containers: tuple[str, ...] = ()
    pod_level_requests: bool = False
    limits: dict[tuple[str, str], int | None] = field(default_factory=dict)
    pod_level_limits: bool = False
    ready_unknown: bool = False


@dataclass(slots=True, frozen=True)
class PodSample:
    """One pod's metric: ``value`` milli-units, ``timestamp`` epoch s, ``window`` s."""

    value: int
    timestamp: float
    window: float


@dataclass(slots=True)
class MetricSamples:
    """What the metrics API answered for one ``spec.metrics[]`` item.

    Per-pod sources (Resource, ContainerResource, Pods) fill ``pods``; Object fills
    ``values`` with one value; External fills ``values`` with each series' value (milli).
    ``error`` is the API's error message when the call failed. ``containers`` (pod-sum
    Resource metrics, pods with several containers) maps pod -> container -> value (milli):
    not used by the decision, only by ``pyhpa.core.checks``.
    """

    pods: dict[str, PodSample] | None = None
    values: list[int] | None = None
    timestamp: float | None = None
    error: str | None = None
    containers: dict[str, dict[str, int]] | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class MetricFailures:
    """How long one metric has been failing (controller memory, kept only with a fallback configured).

    ``number_of_failures``: consecutive syncs in which the metric could not be computed (KEDA's
    ``numberOfFailures``); ``first_failure_time``: epoch s of the first of them; ``fallback_since``:
    epoch s of the sync from which its fallback applied (None while below its threshold).
    """

    number_of_failures: int
    first_failure_time: float
    fallback_since: float | None = None


@dataclass(slots=True)
class Memory:
    """The controller's memory of one HPA.

    ``recommendations``: (epoch s, replicas) pairs, None when there is no memory yet (the
    controller then seeds it with the current replica count at ``now``);
    ``scale_up_events``/``scale_down_events``: (epoch s, replica change) pairs;
    ``metric_failures``: the failing metrics of an HPA with a fallback, keyed by
    ``pyhpa.core.fallback.metric_key`` (a metric absent here is healthy).
    """

    recommendations: list[tuple[float, int]] | None = None
    scale_up_events: list[tuple[float, int]] = field(default_factory=list)
    scale_down_events: list[tuple[float, int]] = field(default_factory=list)
    metric_failures: dict[str, MetricFailures] = field(default_factory=dict)

    def copy(self) -> Memory:
        recs = None if self.recommendations is None else list(self.recommendations)
        return Memory(recs, list(self.scale_up_events), list(self.scale_down_events), dict(self.metric_failures))


@dataclass(slots=True)
class PodGroups:
    """How the replica calculator grouped the pods of one metric (for ``explain``)."""

    ready: int = 0
    ignored: list[str] = field(default_factory=list)  # deleted or failed
    unready: list[str] = field(default_factory=list)  # pending, unready or CPU initializing
    missing: list[str] = field(default_factory=list)  # no metric sample
    unready_why: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Proposal:
    """One metric's replica proposal (upstream: computeReplicasForMetric).

    ``replicas`` is None when the metric could not be computed (``error`` says why).
    ``utilization`` is percent of request (Utilization targets), ``raw_milli`` the current
    average/value in milli-units as written to ``status.currentMetrics``. ``ratio`` is the
    usage ratio compared with the tolerance band ``band`` = (low, high); ``new_ratio`` is
    the ratio after missing/unready pods were filled in (None when no fill-in happened),
    ``filled`` maps pod name to the value (milli) assumed for it.
    """

    metric: str
    spec: MetricSpec
    replicas: int | None = None
    utilization: int | None = None
    raw_milli: int | None = None
    error: str | None = None
    reason: str = ""
    ratio: float | None = None
    new_ratio: float | None = None
    band: tuple[float, float] | None = None
    groups: PodGroups | None = None
    filled: dict[str, int] | None = None
    note: str = ""
    status: dict | None = None


@dataclass(slots=True, frozen=True)
class Step:
    """A normalization step that may change the number: stabilization, rate limit, bounds."""

    stage: str
    before: int
    after: int
    reason: str
    message: str


@dataclass(slots=True, frozen=True)
class Event:
    """A Kubernetes Event the sync emits: ``type`` Normal/Warning, upstream ``reason``."""

    type: str
    reason: str
    message: str


#: ``SourceProposal.source`` values
METRIC_SOURCE = SourceKind.METRIC
SCHEDULE_SOURCE = SourceKind.SCHEDULE
PREDICTION_SOURCE = SourceKind.PREDICTION
SATURATION_SOURCE = SourceKind.SATURATION
FALLBACK_SOURCE = SourceKind.FALLBACK
RECOMMENDATION_SOURCE = SourceKind.RECOMMENDATION
PAUSE_SOURCE = SourceKind.PAUSE


@dataclass(slots=True, frozen=True, kw_only=True)
class SourceProposal:
    """What one source of a decision asked for, and what became of it (see ``pyhpa.core.combine``).

    ``source`` is its kind (``SourceKind``: Metric, Fallback, Prediction, Saturation, Schedule, Pause,
    Recommendation); ``name`` the metric (as upstream names it in messages), the window or the annotation. A
    replica source sets ``replicas`` (None when it could not propose: ``error`` or ``note`` says why); a window
    or a blocked direction sets ``min_replicas`` (floor) and/or ``max_replicas`` (cap). The three states a
    consumer reads: ``active`` (it asks for something at this sync: pods pinned, a forecast, a window open, a
    metric in fallback), ``applied`` (what it asks for counts: False in Observe mode or stepping aside) and
    ``won`` (it set the final number: ``Decision.decided_by`` is its ``ref``).
    """

    source: SourceKind
    name: str
    replicas: int | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    applied: bool = True
    error: str | None = None
    note: str = ""
    won: bool = False

    @property
    def ref(self) -> SourceRef:
        """This source as ``Decision.decided_by`` names it."""
        return source_ref(self.source, self.name)

    @property
    def label(self) -> str:
        """``Source/name`` (``str(self.ref)``), for people."""
        return f"{self.source.value}/{self.name}"

    @property
    def active(self) -> bool:
        """It asks for something at this sync (replicas, a floor or a cap)."""
        return self.replicas is not None or self.min_replicas is not None or self.max_replicas is not None


_METRIC, _RECOMMENDATION = SourceKind.METRIC, SourceKind.RECOMMENDATION  # read at every sync: bound once


def recommendation_text(ref: SourceRef | None) -> str:
    """A recommendation's source as messages name it (``cpu resource utilization (percentage of request) above
    target``): a metric by its name, a given one as ``the given recommendation``, another source as ``Kind/name``;
    "" for None."""
    if ref is None:
        return ""
    if ref.kind == _METRIC:
        return ref.name
    if ref.kind == _RECOMMENDATION:
        return "the given recommendation"
    return str(ref)


@dataclass(slots=True, frozen=True, kw_only=True)
class ScheduleStatus:
    """``status.schedules``: the active windows' names, the next start or end (epoch s), and the dated
    windows that have ended (``expired``: they never apply again)."""

    active: tuple[str, ...]
    next_change: float | None
    expired: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True, kw_only=True)
class PredictionStatus:
    """What the core knows of ``status.prediction``: the forecast it was given (milli-units: the
    quantile ``forecast_milli`` and the central ``expected_milli``), the total it provisioned for
    (``provisioned_milli``, see ``pyhpa.core.prediction.provisioned_total``) and the replicas it
    proposed (None when it stepped aside: ``reason``)."""

    forecast_milli: int | None
    replicas: int | None
    reason: str
    mode: str
    expected_milli: int | None = None
    provisioned_milli: int | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class SaturationStatus:
    """What the core knows of ``status.saturation``: the ``SaturationActive`` ``reason`` and ``message``,
    ``usage_percent`` (the ready pods' CPU usage in percent of their CPU limit, integer-truncated; None when
    it could not be judged), ``pinned`` (at or above ``pinned_percent``), ``ready_pods`` it was judged on and
    ``replicas`` the source proposed (None when not pinned)."""

    reason: str
    message: str
    mode: str
    pinned: bool = False
    usage_percent: int | None = None
    ready_pods: int = 0
    replicas: int | None = None

    @property
    def active(self) -> bool:
        """The source asks for replicas: the pods are pinned (``pyhpa.core.sources.ExplainedStatus``)."""
        return self.pinned


#: ``MetricHealth.status`` values (KEDA's)
HAPPY = "Happy"
FAILING = "Failing"


@dataclass(slots=True, frozen=True, kw_only=True)
class MetricHealth:
    """One metric's entry of ``status.metricHealth`` (only for an HPA with a fallback configured).

    ``metric`` is the metric's key (``pyhpa.core.fallback.metric_key``), ``name`` its name as upstream
    writes it in messages; ``status`` "Happy" or "Failing"; ``fallback_replicas`` what its fallback
    proposed at this sync (None when not in fallback, or when the sync did not evaluate metrics).
    """

    metric: str
    name: str
    number_of_failures: int
    status: str
    first_failure_time: float | None = None
    fallback_since: float | None = None
    fallback_replicas: int | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class HPAStatus:
    """The autoscaling/v2 status a sync writes (plus the HorizontalAutoscaler sections).

    ``current_metrics`` are ``MetricStatus`` objects in the API's JSON shape, one per ``spec.metrics`` item (a failed
    metric's ``{"type": ""}``), None when the sync computed no metric; times are epoch s.
    """

    current_replicas: int
    desired_replicas: int
    current_metrics: tuple[dict, ...] | None
    conditions: tuple[Condition, ...]
    last_scale_time: float | None
    schedules: ScheduleStatus | None = None
    prediction: PredictionStatus | None = None
    metric_health: tuple[MetricHealth, ...] | None = None
    saturation: SaturationStatus | None = None
    pause: PauseStatus | None = None


@dataclass(slots=True, kw_only=True)
class SyncInputs:
    """Everything one sync of one HPA decides on: the one input of ``pyhpa.core.decide``, built by keyword.

    ``hpa`` the HPA (spec and the status it carries); ``scale`` the target's Scale (``spec_replicas`` is the
    current replica count, ``selector`` picks the pods); ``pods`` the pods of the HPA's namespace (the core
    applies ``scale.selector``); ``samples[i]`` what the metrics API answered for ``hpa.metrics[i]`` (milli-units,
    ``MetricSamples.error`` when the call failed); ``memory`` the controller memory before the sync (not changed:
    the memory after is ``Decision.memory``); ``now`` epoch s of the sync; ``config`` the controller flags and
    feature gates. Optional: ``prenormalized`` a recommendation (replicas) given instead of the metrics' (their
    evaluation is skipped and it is normalized: ``explain --recommendation``); ``other_selectors`` (``namespace/
    name``, selector text) of the other HPAs that may select the same pods (any that does stops the sync with
    AmbiguousSelector, as upstream); ``forecast`` the forecaster's answer when ``hpa.prediction`` is set (None:
    none: the prediction source reports HistoryUnavailable).

    ``decide`` reads it and changes nothing of it. Built by the controller (``Reconciler.gather``), the snapshot
    reader (``pyhpa.adapters.snapshot``, ``pyhpa.adapters.kubectl``) and simulate (``pyhpa.simulate.cluster``).
    """

    hpa: HPA
    scale: Scale
    pods: list[Pod]
    samples: list[MetricSamples]
    memory: Memory
    now: float
    config: ControllerConfig
    prenormalized: int | None = None
    other_selectors: Sequence[tuple[str, str]] = ()
    forecast: Forecast | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class Decision:
    """Everything one sync decides (upstream: reconcileAutoscaler), built by keyword.

    ``desired_replicas`` is what the target should be scaled to (equal to ``current_replicas`` when
    there is no rescale: ``rescale``); ``status`` the status to write (its ``conditions`` are the sync's:
    ``conditions``); ``memory`` the controller memory after the sync, assuming the rescale succeeds
    (``memory_without_event``: if it fails, see ``pyhpa.core.rescale_failed``). ``sources`` lists what every
    source asked for and whether it was active, applied and won; ``decided_by`` names the one that set the final
    number (a ``SourceRef``: ``Metric/cpu resource utilization (percentage of request)``,
    ``Schedule/business-hours``, ``Spec/minReplicas``, ``Stabilization/scaleDown``, ``Policy/scaleUp``), None when
    the sync stopped before a decision (metrics failed, bad selector, scaling disabled); ``recommended_by`` the
    source of the recommendation before normalization (``prenormalized``). ``min_replicas_effective`` and
    ``max_replicas_effective`` are the bounds after active windows.
    """

    desired_replicas: int
    rescale_reason: str
    proposals: list[Proposal]
    prenormalized: int | None
    steps: list[Step]
    events: list[Event]
    memory: Memory
    status: HPAStatus
    error: str | None = None
    memory_without_event: Memory | None = None
    sources: tuple[SourceProposal, ...] = ()
    decided_by: SourceRef | None = None
    recommended_by: SourceRef | None = None
    min_replicas_effective: int = 0
    max_replicas_effective: int = 0

    @property
    def current_replicas(self) -> int:
        """The target's replicas at the sync (its Scale's ``spec.replicas``: ``status.current_replicas``)."""
        return self.status.current_replicas

    @property
    def rescale(self) -> bool:
        """The target is to be scaled (``desired_replicas`` differs from ``current_replicas``)."""
        return self.desired_replicas != self.current_replicas

    @property
    def conditions(self) -> list[Condition]:
        """The conditions after the sync (``status.conditions``, as a new list)."""
        return list(self.status.conditions)

    @property
    def active_schedules(self) -> tuple[str, ...]:
        """Names of the schedule windows active at the sync (``status.schedules.active``)."""
        return () if self.status.schedules is None else self.status.schedules.active

    @property
    def metric_name(self) -> str:
        """What the recommendation came from, as messages name it (``recommendation_text``)."""
        return recommendation_text(self.recommended_by)

    def source(self, kind: SourceKind) -> SourceProposal | None:
        """The first source of ``kind`` among ``sources`` (None when there is none)."""
        for s in self.sources:
            if s.source == kind:
                return s
        return None
