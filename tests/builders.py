"""Small builders of core inputs for tests (plain types, no parsing)."""

from __future__ import annotations

import pyhpa.core as core
from pyhpa.core import HPA, Memory, MetricSamples, MetricSpec, Pod, PodSample, Scale
from pyhpa.core.model import ZERO_TIME

NOW = 1_800_000_000.0


def cpu_pods(usages_milli: list[int], request_milli: int = 1000, now: float = NOW) -> tuple[list[Pod], MetricSamples]:
    """Ready, long-running pods with one container each, and their CPU samples."""
    pods, samples = [], {}
    for i, u in enumerate(usages_milli):
        name = f"pod-{i}"
        pods.append(Pod(name, "Running", {"app": "x"}, False, ZERO_TIME, True, ZERO_TIME,
                        {("cpu", ""): request_milli, ("cpu", "c"): request_milli}, {}))
        samples[name] = PodSample(u, now - 10, 30.0)
    return pods, MetricSamples(pods=samples, timestamp=now - 10)


def cpu_hpa(target: int = 50, min_r: int = 1, max_r: int = 10, behavior=None) -> HPA:
    return HPA("default", "x", min_r, max_r, (MetricSpec("Resource", "cpu", "Utilization", target),), behavior)


def scale(replicas: int) -> Scale:
    return Scale(replicas, replicas, "app=x")


def old_memory(replicas: int) -> Memory:
    """Memory with one old recommendation, so stabilization does not hold anything."""
    return Memory([(NOW - 3600, replicas)])


def decided(hpa: HPA, replicas: int, pods: list[Pod], samples: MetricSamples, now: float = NOW,
            memory: Memory | None = None, config: core.ControllerConfig | None = None) -> core.Decision:
    """One sync's decision (``pyhpa.core.decide``) of ``hpa`` (one metric) over a target at ``replicas`` with
    ``pods`` and the metric's ``samples`` at epoch ``now``; a fresh memory and the default flags unless given."""
    return core.decide(core.SyncInputs(hpa=hpa, scale=scale(replicas), pods=pods, samples=[samples],
                                       memory=Memory() if memory is None else memory, now=now,
                                       config=core.ControllerConfig() if config is None else config))
