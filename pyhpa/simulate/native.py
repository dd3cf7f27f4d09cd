"""The simulators' compiled path: ``pyhpa.simulate.rustcore``, built from ``native/`` (Rust, PyO3) by ``pip install``
when a Rust compiler is there (``pyproject.toml``: setuptools-rust, optional). Without it everything runs on the
Python core alone, with the same results.

The Python core (``pyhpa.core``) stays the one reference for every HPA rule: each compiled function follows a core
function by name and ``tests/test_native.py`` runs both on random inputs and compares them on every test run
(issue 55: "the shadow mode that runs both and compares"). What is compiled so far:

- ``normalize``: ``pyhpa.core.normalize.normalize`` (stabilization, the scaling policies and the bounds; upstream's
  normalizeDesiredReplicas and normalizeDesiredReplicasWithBehaviors) without its steps' texts;
- ``resource_utilization_replicas``: ``pyhpa.core.calculator.resource_utilization_replicas`` with ``group_pods``
  (upstream's GetResourceReplicas and groupPods: unready and missing pods, the CPU initialization period, the
  tolerance) for pods whose request of the resource is known, as a simulated workload's always is;
- ``plain_replicas``: ``pyhpa.core.calculator.plain_replicas`` (upstream's calcPlainMetricReplicas: Pods metrics and
  Resource AverageValue targets), on the same grouping.

Nothing here is on a simulation's path yet: the compiled workload (a simulated workload's instants and its
decision in one compiled actor on the simulation's clock) is what these parts are for.
"""

from __future__ import annotations

from ..core.model import Behavior, ControllerConfig, Memory, Pod, PodSample, ScalingRules

try:
    from . import rustcore
except ImportError:  # installed without a Rust compiler
    rustcore = None


def available() -> bool:
    """The compiled path was built with this install."""
    return rustcore is not None


def _rules(r: ScalingRules) -> tuple:
    return (r.stabilization_window_seconds, r.select_policy,
            [(p.type, p.value, p.period_seconds) for p in r.policies])


def normalize(current: int, prenormalized: int, min_replicas: int, max_replicas: int, behavior: Behavior | None,
              memory: Memory, now: float, config: ControllerConfig) -> tuple[int, list[tuple[float, int]], str, str]:
    """``pyhpa.core.normalize.normalize`` compiled: (desired replicas, the new recommendations (epoch s, replicas),
    the AbleToScale reason, the ScalingLimited reason). ``memory.recommendations`` must not be None. Raises
    RuntimeError when the compiled path is not built (``available``), ValueError for a selectPolicy or policy type
    the API has not."""
    b = None if behavior is None else (_rules(behavior.scale_up), _rules(behavior.scale_down))
    return _compiled().normalize(current, prenormalized, min_replicas, max_replicas, b, memory.recommendations or [],
                             memory.scale_up_events, memory.scale_down_events, now,
                             (config.downscale_stabilization_window_seconds, config.scale_up_limit_factor,
                              config.scale_up_limit_minimum))


def resource_utilization_replicas(pods: list[Pod], samples: dict[str, PodSample], requests: dict[str, int],
                                  current: int, down: float, up: float, now: float, config: ControllerConfig,
                                  target: int, is_cpu: bool) -> tuple:
    """``pyhpa.core.calculator.resource_utilization_replicas`` compiled, for ``pods`` whose request is in
    ``requests`` (name: milli-units): (replicas, utilization %, raw average milli, ratio, new ratio or None, the
    filled values {name: milli}, the ready count, and the unready, missing and ignored pods' names). ``down``/``up``:
    the tolerances; ``target``: the utilization target (percent). Raises ValueError with the core's MetricError text
    where the core raises it, RuntimeError when the compiled path is not built."""
    out = _compiled().resource_utilization_replicas(
        *_pods_and_samples(pods, samples, requests), current, down, up, now,
        config.cpu_initialization_period_seconds, config.initial_readiness_delay_seconds, target, is_cpu)
    return (*out[:5], dict(out[5]), *out[6:])


def plain_replicas(pods: list[Pod], samples: dict[str, PodSample], current: int, down: float, up: float, now: float,
                   config: ControllerConfig, target_milli: int, is_cpu: bool) -> tuple:
    """``pyhpa.core.calculator.plain_replicas`` compiled: (replicas, average milli, ratio, new ratio or None, the
    filled values {name: milli}, the ready count, and the unready, missing and ignored pods' names). Raises
    ValueError with the core's MetricError text where the core raises it, RuntimeError when not built."""
    out = _compiled().plain_replicas(
        *_pods_and_samples(pods, samples, {}), current, down, up, now, config.cpu_initialization_period_seconds,
        config.initial_readiness_delay_seconds, target_milli, is_cpu)
    return (*out[:4], dict(out[4]), *out[5:])


def _compiled():
    if rustcore is None:
        raise RuntimeError("pyhpa.simulate.rustcore is not built (pip install with a Rust compiler)")
    return rustcore


def _pods_and_samples(pods: list[Pod], samples: dict[str, PodSample], requests: dict[str, int]) -> tuple[list, list]:
    return ([(p.name, p.phase, p.deleted, p.start_time, p.ready, p.ready_unknown, p.ready_transition_time,
              requests.get(p.name, 0)) for p in pods],
            [(name, s.value, s.timestamp, s.window) for name, s in samples.items()])
