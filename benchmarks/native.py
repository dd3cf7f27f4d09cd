"""How much faster the compiled path's parts are than the Python core's, called from Python (issue 55).

Each part (``pyhpa.simulate.native``) runs on the same inputs as its core function, many times over, in this
process, alternating, and the script prints, per part, microseconds a call of each and their ratio:

    python benchmarks/native.py                 # normalize, resource_utilization_replicas, plain_replicas
    python benchmarks/native.py --calls 20000

    normalize_core_us=... normalize_compiled_us=... normalize_speedup=... normalize_inside_us=... normalize_inside_speedup=...

A compiled call from Python pays for turning the core's objects into the compiled code's arguments; ``_compiled_us``
includes that. ``_inside_us`` is the same part on the same inputs timed inside the compiled code
(``rustcore.time_parts``: no conversion), the floor a compiled actor that runs a simulated workload whole (its
instants and its decisions, with nothing crossing into Python at a sync) would pay. CPU time (``time.process_time``), the best
of five rounds; the other core's load moves the figures, the ratio less.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.core import normalize  # noqa: E402
from pyhpa.core.calculator import ReplicaCalculator, plain_replicas, resource_utilization_replicas  # noqa: E402
from pyhpa.core.model import (  # noqa: E402
    Behavior,
    ControllerConfig,
    Memory,
    Pod,
    PodSample,
    ScalingPolicy,
    ScalingRules,
)
from pyhpa.simulate import native  # noqa: E402

NOW = 1_700_000_000.0


def _inputs():
    """A sync of a workload of 12 pods at 15 s: a behavior like the WorldCup98 example's, ten minutes of
    recommendations, two recent scale-ups; the pods Ready, two of them inside the CPU initialization period."""
    up = ScalingRules(0, "Max", (ScalingPolicy("Percent", 100, 15), ScalingPolicy("Pods", 8, 15)))
    down = ScalingRules(300, "Max", (ScalingPolicy("Percent", 10, 60),))
    behavior = Behavior(up, down)
    memory = Memory(recommendations=[(NOW - 15.0 * k, 10 + k % 3) for k in range(40)],
                    scale_up_events=[(NOW - 30.0, 2), (NOW - 200.0, 3)])
    pods = [Pod(f"web-{i}", "Running", {}, start_time=NOW - (100.0 if i < 2 else 3600.0), ready=True,
                ready_transition_time=NOW - (70.0 if i < 2 else 3500.0), requests={("cpu", ""): 1000})
            for i in range(12)]
    samples = {p.name: PodSample(600 + 17 * i, NOW - 5.0, 30.0) for i, p in enumerate(pods)}
    return behavior, memory, pods, samples, {p.name: 1000 for p in pods}


def _best(fn, calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, time.process_time() - t0)
    return best / calls * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5000, help="calls a round (1 to 1,000,000)")
    a = ap.parse_args()
    if not 1 <= a.calls <= 1_000_000:
        print(f"error: --calls: must be from 1 to 1,000,000, got {a.calls}", file=sys.stderr)
        return 2
    if not native.available():
        print("error: pyhpa.simulate.rustcore is not built: pip install -e . with a Rust compiler", file=sys.stderr)
        return 2
    behavior, memory, pods, samples, requests = _inputs()
    config = ControllerConfig()
    parts = {
        "normalize": (lambda: normalize(12, 14, 4, 60, behavior, memory, NOW, config),
                      lambda: native.normalize(12, 14, 4, 60, behavior, memory, NOW, config)),
        "resource_utilization_replicas": (
            lambda: resource_utilization_replicas(ReplicaCalculator(pods, samples, 12, 0.1, 0.1, NOW, config), "cpu",
                                                  "", 70),
            lambda: native.resource_utilization_replicas(pods, samples, requests, 12, 0.1, 0.1, NOW, config, 70,
                                                         True)),
        "plain_replicas": (lambda: plain_replicas(ReplicaCalculator(pods, samples, 12, 0.1, 0.1, NOW, config), 800,
                                                  False),
                           lambda: native.plain_replicas(pods, samples, 12, 0.1, 0.1, NOW, config, 800, False)),
    }
    inside = [min(x) * 1e6 for x in zip(*(native.rustcore.time_parts(a.calls * 10) for _ in range(5)))]
    for (name, (core, compiled)), floor in zip(parts.items(), inside):
        c_us, n_us = _best(core, a.calls), _best(compiled, a.calls)
        print(f"{name}_core_us={c_us:.2f} {name}_compiled_us={n_us:.2f} {name}_speedup={c_us / n_us:.2f} "
              f"{name}_inside_us={floor:.3f} {name}_inside_speedup={c_us / floor:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
