"""Simulated seconds per wall second of ``pyhpa simulate`` (the simulation, not the file output).

One HPA (the walkthrough's php-apache, CPU 50 %, max 40 replicas) on one week of the NASA
1995 trace (1995-07-10 to 1995-07-17, the slice shipped in ``examples/traces/``, load x 14),
sync every 15 s. The last line is ``simulated_seconds_per_wall_second=N``. ``--no-compiled`` runs it in Python
(``PYHPA_COMPILED=0``: ``pyhpa.simulate.compiled``), as on a machine without a Rust compiler.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.simulate import Settings, bundled_path, run_simulation  # noqa: E402

TRACE = ROOT / "examples" / "traces" / "nasa_http_1995-07-10_16_per_minute.csv"
START, END = "1995-07-10T00:00:00", "1995-07-17T00:00:00"
HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: php-apache}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  minReplicas: 1
  maxReplicas: 40
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
"""


def main() -> None:
    if "--no-compiled" in sys.argv[1:]:
        os.environ["PYHPA_COMPILED"] = "0"
    with tempfile.TemporaryDirectory() as tmp:
        hpa = Path(tmp) / "hpa.yaml"
        hpa.write_text(HPA)
        t0 = time.perf_counter()
        sim = run_simulation([hpa], bundled_path("target"), TRACE, "requests_per_second", start=START, end=END,
                             load_scale=14, profile=bundled_path("profile"), settings=Settings())
        wall = time.perf_counter() - t0
    s = sim.runs[0].summary
    print(f"trace: {TRACE.relative_to(ROOT)}, {START} to {END}")
    print(f"simulated {s['simulated_seconds']:.0f} s ({s['syncs']} syncs), mean pods {s['mean_replicas']:.1f}, "
          f"max {s['max_replicas_seen']}, wall {wall:.2f} s (including parsing the inputs)")
    print(f"simulated_seconds_per_wall_second={s['simulated_seconds'] / wall:.0f}")


if __name__ == "__main__":
    main()
