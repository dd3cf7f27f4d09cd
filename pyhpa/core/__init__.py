"""The pure HPA decision core: no I/O, no wall clock, no global state.

``decide`` runs one sync of one HPA exactly as upstream Kubernetes'
HorizontalController does (replica calculator, normalization, conditions, events), and
combines it with the HorizontalAutoscaler's extra sources (schedules, prediction) by the one
rule of ``pyhpa.core.combine``; ``explain``, ``simulate`` and the live controller all call it.
Inputs and outputs are the plain types of ``pyhpa.core.model``; ``pyhpa.adapters`` builds
them from Kubernetes objects. This module is the core's public surface.
"""

from .model import (
    ENFORCE,
    OBSERVE,
    ActiveWindow,
    Behavior,
    Condition,
    ControllerConfig,
    Decision,
    Event,
    Forecast,
    HPA,
    HPAStatus,
    Memory,
    MetricSamples,
    MetricSpec,
    Pod,
    PodSample,
    PredictionSpec,
    PredictionStatus,
    Proposal,
    Scale,
    ScalingPolicy,
    ScalingRules,
    ScheduleStatus,
    ScheduleWindow,
    SourceProposal,
    Step,
)
from .reconcile import decide, rescale_failed, set_condition, tolerances, with_status
from .schedules import active_windows, check_window, next_change, occurrences

__all__ = [
    "ENFORCE", "OBSERVE", "ActiveWindow", "Behavior", "Condition", "ControllerConfig", "Decision", "Event",
    "Forecast", "HPA", "HPAStatus", "Memory", "MetricSamples", "MetricSpec", "Pod", "PodSample", "PredictionSpec",
    "PredictionStatus", "Proposal", "Scale", "ScalingPolicy", "ScalingRules", "ScheduleStatus", "ScheduleWindow",
    "SourceProposal", "Step", "active_windows", "check_window", "decide", "next_change", "occurrences",
    "rescale_failed", "set_condition", "tolerances", "with_status",
]
