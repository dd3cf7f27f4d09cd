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
  Resource AverageValue targets), on the same grouping;
- ``decide_upstream``: ``pyhpa.core.reconcile.decide`` for an autoscaling/v2 HPA without pyhpa's extensions
  whose metrics are Resource, ContainerResource (Utilization of requests, or AverageValue) and Pods metrics (the
  early branches, every metric's proposal, upstream's rule over them, normalization, the scale event remembered):
  the desired replicas, the memory after and each metric's proposal, without the conditions, events and status.

- in the compiled workload only: the Prediction and Saturation sources (``pyhpa.core.prediction.prediction_proposal``,
  ``pyhpa.core.saturation.saturation_proposal``, their place in ``pyhpa.core.combine.recommend`` and
  ``decided_by``) and the forecaster between its fits (``pyhpa.forecast.predictor.Predictor``'s ``observe`` and
  ``forecast``: ``native/src/forecast.rs``; ``rustcore.Forecaster`` for the tests).

On a simulation's path they run inside the compiled workload (``pyhpa.simulate.compiled``: a simulated workload's
instants and its decision in one compiled actor on the simulation's clock); called part by part from Python they
are no faster than the core (``benchmarks/native.py``), and the shadow mode
(``pyhpa.simulate.cluster.Cluster(shadow=True)``, in the tests) decides each covered sync by both and compares.
"""

from __future__ import annotations

from ..core.calculator import MetricError, pod_requests
from ..core.model import (
    AVERAGE_VALUE,
    CONTAINER_RESOURCE,
    PODS,
    REQUEST,
    RESOURCE,
    UTILIZATION,
    Behavior,
    ControllerConfig,
    Memory,
    Pod,
    PodSample,
    ScalingRules,
    SyncInputs,
)
from ..core.reconcile import tolerances
from ..core.selector import SelectorError, matches, parse_selector

try:
    from . import rustcore
except ImportError:  # installed without a Rust compiler
    rustcore = None


def available() -> bool:
    """The compiled path was built with this install."""
    return rustcore is not None


def rules(r: ScalingRules) -> tuple:
    """One direction's ``ScalingRules`` as the compiled code takes them: (window or None, selectPolicy,
    [(type, value, periodSeconds)])."""
    return (r.stabilization_window_seconds, r.select_policy,
            [(p.type, p.value, p.period_seconds) for p in r.policies])


def normalize(current: int, prenormalized: int, min_replicas: int, max_replicas: int, behavior: Behavior | None,
              memory: Memory, now: float, config: ControllerConfig) -> tuple[int, list[tuple[float, int]], str, str]:
    """``pyhpa.core.normalize.normalize`` compiled: (desired replicas, the new recommendations (epoch s, replicas),
    the AbleToScale reason, the ScalingLimited reason). ``memory.recommendations`` must not be None. Raises
    RuntimeError when the compiled path is not built (``available``), ValueError for a selectPolicy or policy type
    the API has not."""
    b = None if behavior is None else (rules(behavior.scale_up), rules(behavior.scale_down))
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


def metric_args(hpa, requests: list[list[int]]) -> list[tuple]:
    """Each of ``hpa``'s metrics as the compiled decision takes it: (``Resource`` or ``Pods``, is CPU, the target's
    kind (``Utilization``, ``AverageValue`` or "" for none), its value (percent or milli), ``requests``' per-pod
    requests of it). An averageValue wins over a utilization whatever the declared type, as upstream's
    computeStatusForResourceMetricGeneric has it."""
    metrics = []
    for m, per_pod in zip(hpa.metrics, requests):
        if m.type == PODS:
            target = (AVERAGE_VALUE, m.target_average_milli) if m.target_average_milli is not None else ("", 0)
        elif m.target_average_milli is not None:
            target = (AVERAGE_VALUE, m.target_average_milli)
        elif m.target_utilization is not None:
            target = (UTILIZATION, m.target_utilization)
        else:
            target = ("", 0)
        metrics.append(("Pods" if m.type == PODS else "Resource", m.name == "cpu", *target, per_pod))
    return metrics


def _compiled():
    if rustcore is None:
        raise RuntimeError("pyhpa.simulate.rustcore is not built (pip install with a Rust compiler)")
    return rustcore


def _pods_and_samples(pods: list[Pod], samples: dict[str, PodSample], requests: dict[str, int]) -> tuple[list, list]:
    return ([(p.name, p.phase, p.deleted, p.start_time, p.ready, p.ready_unknown, p.ready_transition_time,
              requests.get(p.name, 0)) for p in pods],
            [(name, s.value, s.timestamp, s.window) for name, s in samples.items()])


def covers(inputs: SyncInputs) -> bool:
    """``decide_upstream`` decides ``inputs`` as the core does: an HPA without schedules, prediction, fallback,
    saturation or pause, whose metrics are Resource and ContainerResource (Utilization of the pods' requests, or
    AverageValue) and Pods metrics, not scaled to zero (no ScaledToZero=True condition), no recommendation given, no
    other HPA's selector to check, a selector that parses and selects every pod, and every pod's request known
    for each Utilization metric."""
    return _covered(inputs) is not None


def _covered(inputs: SyncInputs) -> list[list[int]] | None:
    """``covers``' answer as each metric's per-pod requests (``_requests``) when it covers ``inputs``, else None."""
    if inputs.prenormalized is not None or inputs.other_selectors or inputs.forecast is not None:
        return None
    if not hpa_covered(inputs.hpa) or not selects_all(inputs.scale.selector, [p.labels for p in inputs.pods]):
        return None
    try:
        return _requests(inputs)
    except MetricError:
        return None


def hpa_covered(hpa, sources: bool = False) -> bool:
    """``hpa`` is one the compiled decision decides: no schedules, prediction, fallback, saturation or pause (with
    ``sources``: prediction and saturation allowed, as the compiled workload decides them), not scaled to zero (no
    ScaledToZero=True condition), every metric one it computes (``metrics_covered``)."""
    if hpa.schedules or hpa.fallback or hpa.pause or (not sources and (hpa.prediction or hpa.saturation)):
        return False
    if any(c.type == "ScaledToZero" and c.status == "True" for c in hpa.conditions):
        return False
    return metrics_covered(hpa)


def selects_all(selector: str, labels: list[dict[str, str]]) -> bool:
    """``selector`` (a Scale's) parses, is not empty and selects a pod of each of ``labels``."""
    try:
        reqs = parse_selector(selector) if selector else None
    except SelectorError:
        return False
    return bool(reqs) and all(matches(reqs, pod) for pod in labels)


def _requests(inputs: SyncInputs) -> list[list[int]]:
    """Each metric's per-pod requests (milli) for a Utilization target (``metric_requests``); [] for the others."""
    return metric_requests(inputs.hpa, inputs.pods, inputs.config)


def metrics_covered(hpa) -> bool:
    """Every metric of ``hpa`` is one the compiled decision computes: Resource, ContainerResource (of the request) or
    Pods, without a fallback."""
    return all(m.type in (RESOURCE, CONTAINER_RESOURCE, PODS) and m.fallback is None and m.utilization_basis == REQUEST
               for m in hpa.metrics)


def metric_requests(hpa, pods: list[Pod], config: ControllerConfig) -> list[list[int]]:
    """Each of ``hpa``'s metrics' per-pod requests of ``pods`` (milli, ``pod_requests``) for a Utilization target;
    [] for the others. Raises MetricError where a pod's request is not known, as the core does."""
    out = []
    for m in hpa.metrics:
        if m.type == PODS or m.target_average_milli is not None or m.target_utilization is None:
            out.append([])
            continue
        container = m.container if m.type == CONTAINER_RESOURCE else ""
        by_pod = pod_requests(pods, m.name, container, False, config.pod_level_resources)
        out.append([by_pod[p.name] for p in pods])
    return out


def decide_upstream(inputs: SyncInputs) -> tuple:
    """``pyhpa.core.reconcile.decide`` compiled, for inputs it ``covers``: (desired replicas, the recommendations,
    scale-up and scale-down events after the sync, whether the metrics stopped it, each metric's proposal (None: it
    failed; [] when the sync stopped before the metrics), the kind of what set the final number (``Decision.decided_by``'s
    ``SourceKind`` value; "" where nothing did)). Raises ValueError for inputs it does not cover,
    RuntimeError when the compiled path is not built."""
    requests = _covered(inputs)
    if requests is None:
        raise ValueError("not an autoscaling/v2 HPA of Resource, ContainerResource and Pods metrics that the compiled "
                         "decision covers (pyhpa.simulate.native.covers)")
    hpa, config, mem = inputs.hpa, inputs.config, inputs.memory
    metrics = metric_args(hpa, requests)
    samples = [None if (x := inputs.samples[i] if i < len(inputs.samples) else None) is None or x.error is not None
               else [(n, v.value, v.timestamp, v.window) for n, v in (x.pods or {}).items()]
               for i in range(len(hpa.metrics))]
    down, up = tolerances(hpa, config)
    b = hpa.behavior
    return _compiled().decide_upstream(
        inputs.scale.spec_replicas, hpa.min_replicas, hpa.max_replicas,
        None if b is None else (rules(b.scale_up), rules(b.scale_down)), metrics,
        [(p.name, p.phase, p.deleted, p.start_time, p.ready, p.ready_unknown, p.ready_transition_time)
         for p in inputs.pods], samples, None if mem.recommendations is None else list(mem.recommendations),
        list(mem.scale_up_events), list(mem.scale_down_events), inputs.now,
        (config.downscale_stabilization_window_seconds, config.scale_up_limit_factor, config.scale_up_limit_minimum,
         down, up, config.cpu_initialization_period_seconds, config.initial_readiness_delay_seconds))
