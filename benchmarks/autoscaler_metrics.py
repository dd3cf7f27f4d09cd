"""Cost of the per-autoscaler Prometheus series (``pyhpa.controller.outputs.autoscaler_metrics``) per sync, next to the
decision itself.

Prints ``autoscalers=2000 autoscaler_metrics_us_per_sync=...`` (recording one steady sync's decision into the
series, the reconciler's hook after every sync) and ``pods=10 decide_us_per_sync=...`` (``pyhpa.core.decide`` of
the same 10-pod CPU autoscaler, as ``benchmarks/decision.py``), both microseconds on one core.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry  # noqa: E402

from benchmarks.decision import NOW, inputs  # noqa: E402
from pyhpa.controller.outputs.autoscaler_metrics import AutoscalerMetrics  # noqa: E402
from pyhpa.core import ControllerConfig, Memory, SyncInputs, decide  # noqa: E402

AUTOSCALERS = 2000
ROUNDS = 10


def main() -> None:
    hpa, scale, pods, samples = inputs(10)
    config = ControllerConfig()
    memory = Memory([(NOW - 60, 10)])
    decision = decide(SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory, now=NOW,
                                 config=config))
    metrics = AutoscalerMetrics(CollectorRegistry())
    syncs = [(SimpleNamespace(namespace=f"ns-{i // 10}", name=f"web-{i}", key=f"ns-{i // 10}/web-{i}", hpa=hpa,
                              sync_period_seconds=15.0), SimpleNamespace(decision=decision, error="none", reason=""))
             for i in range(AUTOSCALERS)]
    for a, result in syncs:  # the first sync creates the series
        metrics.synced(a, result, NOW)
    start = time.perf_counter()
    for r in range(ROUNDS):
        for a, result in syncs:
            metrics.synced(a, result, NOW + 15 * (r + 1))
    per_sync = (time.perf_counter() - start) / (ROUNDS * AUTOSCALERS)
    print(f"autoscalers={AUTOSCALERS} autoscaler_metrics_us_per_sync={per_sync * 1e6:.1f}", flush=True)
    start = time.perf_counter()
    for _ in range(2000):
        decide(SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory, now=NOW, config=config))
    print(f"pods=10 decide_us_per_sync={(time.perf_counter() - start) / 2000 * 1e6:.1f}", flush=True)


if __name__ == "__main__":
    main()
