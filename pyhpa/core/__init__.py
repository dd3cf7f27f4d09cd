"""The pure HPA decision core: no I/O, no wall clock, no global state.

``decide`` runs one sync of one HPA (its one input: ``SyncInputs``) exactly as upstream Kubernetes'
HorizontalController does (replica calculator, normalization, conditions, events), and
combines it with the HorizontalAutoscaler's extra sources (schedules, prediction, fallback) by the one
rule of ``pyhpa.core.combine``; ``explain``, ``simulate`` and the live controller all call it.
Inputs and outputs are the plain types of ``pyhpa.core.model``; ``pyhpa.adapters`` builds
them from Kubernetes objects.

The public surface: the names below (``__all__``), the plain types of ``pyhpa.core.model``, and the
names listed in the ``__all__`` of ``calculator``, ``metrics``, ``thresholds``, ``selector``,
``prediction``, ``pause`` and ``quantity``. Nothing outside the core imports anything else of it (tests/test_core_surface.py).
"""

from .calculator import MetricError, ReplicaCalculator
from .checks import HPAWarning, check_hpa
from .fallback import capped_failures, check_fallback, effective_fallback, fallback_replicas, metric_key
from .model import (
    ENFORCE,
    HPA,
    LIMIT,
    OBSERVE,
    PAUSE_ANNOTATIONS,
    REQUEST,
    ActiveWindow,
    Behavior,
    Condition,
    ControllerConfig,
    Decision,
    Event,
    FallbackSpec,
    Forecast,
    HPAStatus,
    Memory,
    MetricFailures,
    MetricHealth,
    MetricSamples,
    MetricSpec,
    PauseSpec,
    PauseStatus,
    Pod,
    PodSample,
    PredictionSpec,
    PredictionStatus,
    Proposal,
    Scale,
    ScalingPolicy,
    ScalingRules,
    ScheduleStatus,
    SourceProposal,
    Step,
    SyncInputs,
    WindowSpec,
)
from .normalize import (
    MemoryHorizons,
    memory_horizons,
    normalize,
    relevant_memory,
    stabilization_windows,
    store_scale_event,
)
from .prediction import check_prediction, provisioned_total
from .reconcile import decide, rescale_failed, set_condition, tolerances, with_status
from .schedules import (
    END_OF_CALENDAR,
    active_windows,
    check_window,
    check_windows,
    expired_windows,
    next_change,
    occurrences,
)

__all__ = [
    "ENFORCE", "OBSERVE", "ActiveWindow", "Behavior", "Condition", "ControllerConfig", "Decision", "Event",
    "FallbackSpec", "Forecast", "HPA", "HPAStatus", "Memory", "MetricFailures", "MetricHealth", "MetricSamples",
    "MetricSpec", "Pod", "PodSample", "PredictionSpec", "PredictionStatus", "Proposal", "Scale", "ScalingPolicy",
    "ScalingRules", "ScheduleStatus", "WindowSpec", "SourceProposal", "Step", "SyncInputs", "active_windows",
    "check_fallback", "check_prediction", "check_window", "check_windows", "decide", "effective_fallback",
    "expired_windows", "capped_failures", "fallback_replicas", "metric_key",
    "next_change", "occurrences", "provisioned_total", "rescale_failed", "set_condition", "tolerances", "with_status",
    "MemoryHorizons", "memory_horizons", "normalize", "relevant_memory", "stabilization_windows", "store_scale_event",
    "MetricError", "ReplicaCalculator", "HPAWarning", "check_hpa", "LIMIT", "REQUEST",
    "PAUSE_ANNOTATIONS", "PauseSpec", "PauseStatus", "END_OF_CALENDAR",
]
