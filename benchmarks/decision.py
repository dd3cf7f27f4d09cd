"""Decisions per second of the pure decision core for a CPU-utilization HPA.

Prints one line per pod count: ``pods=100 decisions_per_second=12345``, then the same HPA with two
``spec.schedules`` windows in America/New_York (a weekday floor and a night cap), each decision 15 s
after the previous one as one autoscaler's syncs are, so the core's per-minute memo of cron look-ups
(``pyhpa.core.schedules``) is hit as in a controller: ``pods=10 schedules=2 decisions_per_second=...``. Inputs are
parsed once (as the controller's informer cache holds them); each decision is a full
``pyhpa.core.decide`` call: selector, pod grouping, utilization, normalization,
conditions and status. Runs on one core (a single Python thread).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dataclasses import replace  # noqa: E402
from zoneinfo import ZoneInfo  # noqa: E402

from pyhpa.core import (  # noqa: E402
    HPA,
    ControllerConfig,
    Memory,
    MetricSamples,
    MetricSpec,
    Pod,
    PodSample,
    Scale,
    SyncInputs,
    WindowSpec,
    decide,
)

WINDOWS = (
    WindowSpec(name="business-hours", start="0 8 * * 1-5", end="0 18 * * 1-5",
                   time_zone=ZoneInfo("America/New_York"), time_zone_name="America/New_York", min_replicas=4),
    WindowSpec(name="night", start="0 0 * * *", duration_seconds=21600, time_zone=ZoneInfo("America/New_York"),
                   time_zone_name="America/New_York", max_replicas=2),
)

NOW = 1_800_000_000.0


def inputs(n: int):
    pods, samples = [], {}
    for i in range(n):
        name = f"web-{i}"
        pods.append(Pod(name, "Running", {"app": "web", "pod-template-hash": "abc"}, False, NOW - 3600, True,
                        NOW - 3500, {("cpu", ""): 200, ("cpu", "app"): 200}, {}))
        samples[name] = PodSample(120 + (i % 7) * 10, NOW - 15, 15.0)
    hpa = HPA("default", "web", 1, 2000, (MetricSpec("Resource", "cpu", "Utilization", 50),))
    return hpa, Scale(n, n, "app=web"), pods, [MetricSamples(pods=samples, timestamp=NOW - 15)]


def rate(n: int, seconds: float = 2.0, windows: tuple = (), step: float = 0.0) -> float:
    """Decisions per second; ``step``: seconds of simulated time between decisions (0: all at NOW)."""
    hpa, scale, pods, samples = inputs(n)
    hpa = replace(hpa, schedules=windows)
    config = ControllerConfig()
    memory = Memory([(NOW - 60, n)])
    count, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for i in range(20):
            decide(SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory,
                              now=NOW + (count + i) * step, config=config))
        count += 20
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


if __name__ == "__main__":
    for pods in (10, 100, 1000):
        print(f"pods={pods} decisions_per_second={rate(pods):.0f}", flush=True)
    print(f"pods=10 schedules={len(WINDOWS)} decisions_per_second={rate(10, windows=WINDOWS, step=15.0):.0f}", flush=True)
