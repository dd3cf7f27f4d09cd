"""The pure HPA decision core: no I/O, no wall clock, no global state.

``decide`` runs one sync of one HPA exactly as upstream Kubernetes'
HorizontalController does (replica calculator, normalization, conditions, events);
``explain``, ``simulate`` and the live controller all call it. Inputs and outputs are the
plain types of ``pyhpa.core.model``; ``pyhpa.adapters`` builds them from Kubernetes
objects.

The public surface: the names below (``__all__``), the plain types of ``pyhpa.core.model``, and the
names listed in the ``__all__`` of ``calculator``, ``metrics``, ``thresholds``, ``selector`` and
``quantity``. Nothing outside the core imports anything else of it (tests/test_core_surface.py).
"""

from .model import (
    Behavior,
    Condition,
    ControllerConfig,
    Decision,
    Event,
    HPA,
    Memory,
    MetricSamples,
    MetricSpec,
    Pod,
    PodSample,
    Proposal,
    Scale,
    ScalingPolicy,
    ScalingRules,
    Step,
)
from .calculator import MetricError, ReplicaCalculator
from .normalize import MemoryHorizons, memory_horizons, relevant_memory, stabilization_windows, store_scale_event
from .reconcile import decide, rescale_failed, tolerances

__all__ = [
    "Behavior", "Condition", "ControllerConfig", "Decision", "Event", "HPA", "Memory", "MetricSamples",
    "MetricSpec", "Pod", "PodSample", "Proposal", "Scale", "ScalingPolicy", "ScalingRules", "Step",
    "decide", "rescale_failed", "tolerances",
    "MemoryHorizons", "memory_horizons", "relevant_memory", "stabilization_windows", "store_scale_event",
    "MetricError", "ReplicaCalculator",
]
