"""Seconds of ``pyhpa thresholds`` on an HPA with many metrics (issue 37: 1,000 External metrics, 15,001 lines).

Prints ``metrics=1000 max_replicas=10 output=text lines=15001 seconds=...`` and the same for ``-o json`` (the
command as a user runs it, output piped: wall seconds including Python's start-up, which
``startup_seconds=...`` measures alone with ``pyhpa --version``), and ``metrics=1000 max_replicas=10
core_seconds=...``: the decision core's thresholds of every metric, in this process (``pyhpa.core.thresholds``).
Each figure is the best of ``--rounds`` runs (default 3). The HPA: ``minReplicas`` 1, ``maxReplicas`` 10, each
metric an External metric with its own selector and an AverageValue target.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from pyhpa.adapters.autoscaler import find_autoscaler  # noqa: E402
from pyhpa.adapters.snapshot import read_document, read_hpa  # noqa: E402
from pyhpa.core import ControllerConfig, tolerances  # noqa: E402
from pyhpa.core.thresholds import thresholds  # noqa: E402


def hpa(metrics: int, max_replicas: int) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "workers", "namespace": "jobs"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "workers"},
                     "minReplicas": 1, "maxReplicas": max_replicas,
                     "metrics": [{"type": "External", "external": {
                         "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": f"q{i}"}}},
                         "target": {"type": "AverageValue", "averageValue": str(20 + i % 50)}}}
                         for i in range(metrics)]}}


def best(rounds: int, run) -> tuple[float, object]:
    """The shortest of ``rounds`` runs of ``run()`` (seconds) and its last result."""
    seconds, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = run()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, result


def pyhpa(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                       check=True)
    return r.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", type=int, default=1000)
    parser.add_argument("--max-replicas", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    label = f"metrics={a.metrics} max_replicas={a.max_replicas}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hpa.yaml"
        path.write_text(yaml.safe_dump(hpa(a.metrics, a.max_replicas)))
        seconds, _ = best(a.rounds, lambda: pyhpa("--version"))
        print(f"startup_seconds={seconds:.2f}", flush=True)
        seconds, out = best(a.rounds, lambda: pyhpa("thresholds", str(path)))
        print(f"{label} output=text lines={len(out.splitlines())} seconds={seconds:.2f}", flush=True)
        seconds, _ = best(a.rounds, lambda: pyhpa("thresholds", "-o", "json", str(path)))
        print(f"{label} output=json seconds={seconds:.2f}", flush=True)
        parsed, _, _, config = read_hpa(find_autoscaler(read_document(path)), ControllerConfig())
        down, up = tolerances(parsed, config)
        seconds, _ = best(a.rounds, lambda: [thresholds(m, parsed.min_replicas, parsed.max_replicas, down, up)
                                             for m in parsed.metrics])
        print(f"{label} core_seconds={seconds:.3f}", flush=True)


if __name__ == "__main__":
    main()
