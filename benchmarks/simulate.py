"""Simulated seconds per wall second of ``pyhpa simulate`` (the simulation, not the file output).

One HPA (the walkthrough's php-apache, CPU 50 %, max 40 replicas) on one week of the NASA
1995 trace (1995-07-01 to 1995-07-08, load x 14: about 20 pods on average), sync every 15 s.
Uses the full trace from ``../shared/data/traces/`` (or /work/shared/data/traces/) when it
exists; otherwise the bundled two-day slice repeated to a week, and says so. The last line
is ``simulated_seconds_per_wall_second=N``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.simulate import Settings, bundled_path, run_simulation  # noqa: E402

WEEK = 7 * 86400
CANDIDATES = (ROOT.parent / "shared" / "data" / "traces" / "nasa_http_1995_per_minute.csv",
              Path("/work/shared/data/traces/nasa_http_1995_per_minute.csv"))
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


def week_trace(tmp: Path) -> tuple[Path, str, str, str]:
    """(trace file, start, end, description) of one NASA week."""
    for path in CANDIDATES:
        if path.exists():
            return path, "1995-07-01T00:00:00", "1995-07-08T00:00:00", f"real NASA week from {path}"
    lines = bundled_path("trace").read_text().splitlines()
    header, rows = lines[0], lines[1:]
    out = [header]
    for i in range(WEEK // 60):
        fields = rows[i % len(rows)].split(",")
        out.append(",".join([str(804571200 + 60 * i), *fields[1:]]))
    path = tmp / "nasa_week.csv"
    path.write_text("\n".join(out).replace(header.split(",")[0], "time", 1) + "\n")
    return path, "804571200", str(804571200 + WEEK), "bundled two-day NASA slice repeated to a week (../shared not found)"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        hpa = Path(tmp) / "hpa.yaml"
        hpa.write_text(HPA)
        trace, start, end, what = week_trace(Path(tmp))
        t0 = time.perf_counter()
        sim = run_simulation([hpa], bundled_path("target"), trace, "requests_per_second", start=start, end=end,
                             load_scale=14, profile=bundled_path("profile"), settings=Settings())
        wall = time.perf_counter() - t0
    s = sim.runs[0].summary
    print(f"trace: {what}")
    print(f"simulated {s['simulated_seconds']:.0f} s ({s['syncs']} syncs), mean pods {s['mean_replicas']:.1f}, "
          f"max {s['max_replicas_seen']}, wall {wall:.2f} s (including parsing the inputs)")
    print(f"simulated_seconds_per_wall_second={s['simulated_seconds'] / wall:.0f}")


if __name__ == "__main__":
    main()
