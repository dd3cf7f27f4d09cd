"""Predictive against reactive scaling on real web traces: overloaded seconds at equal pod-hours.

For each trace, the upstream HPA (kind HorizontalPodAutoscaler, CPU Utilization, no behavior) at
targets 40, 50, 60 and 70 % draws the reactive frontier (pod-hours against overloaded seconds);
the same HPA at 70 % as a HorizontalAutoscaler with ``prediction: {}`` (all defaults) is compared
with that frontier, linearly interpolated at the predictive run's own pod-hours (extrapolated
linearly, floored at 0, outside the frontier's range). The target is a Guaranteed 1-CPU pod whose
app needs about 70 s to start (``benchmarks/proactive/``). The trace rows before the start are the
forecaster's history; during the run it learns only from what the simulation observed.

Traces (``benchmarks/data/``, sources and licences in its README.md):

- NASA-HTTP, July 1995: history 1-7 July, simulated 8-28 July, load x 100;
- WorldCup98, June-July 1998: history 25-31 May, simulated 1 June - 26 July, load x 1.

Prints one line per trace, ``trace=NAME proactive_pod_hours=... proactive_overloaded_seconds=...
reactive_overloaded_seconds_at_equal_pod_hours=... ratio=...``, then ``geometric_mean_ratio=...`` (of
the per-trace ratios) and ``overall_ratio=...``: all traces pooled, the predictive runs' overloaded
seconds over the reactive frontier's at equal pod-hours, summed over the traces. Target: overall
ratio <= 0.5, no trace above 1.0.
``--quick`` simulates one week of each trace only.

The same comparison on another trace (e.g. a production one): ``--csv FILE --column NAME --start T
--end T`` (rows before ``--start`` are the history; ``--load-scale``, ``--min-replicas``,
``--max-replicas`` as for the built-in traces; the trace is named by its file stem). With ``--csv``
only that trace runs, unless ``--trace`` names built-in ones too.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.adapters.errors import InputError  # noqa: E402
from pyhpa.simulate import Settings, run_simulation  # noqa: E402

HERE = ROOT / "benchmarks"
DATA = HERE / "data"
TARGETS = (40, 50, 60, 70)
PREDICTIVE_TARGET = 70

TRACES = {
    "nasa": dict(file=DATA / "nasa_http_1995-07_per_minute.csv.gz", column="requests_per_second", load_scale=100.0,
                 start="1995-07-08T00:00:00", end="1995-07-28T00:00:00", quick_end="1995-07-15T00:00:00",
                 min_replicas=2, max_replicas=60),
    "worldcup98": dict(file=DATA / "worldcup98_1998-05-25_07-26_per_minute.csv.gz", column="requests_per_second",
                       load_scale=1.0, start="1998-06-01T00:00:00Z", end="1998-07-26T00:00:00Z",
                       quick_end="1998-06-08T00:00:00Z", min_replicas=2, max_replicas=400),
}

#: The HPA of both sides: upstream's kind for the reactive frontier, and the same spec as a
#: HorizontalAutoscaler with ``prediction`` for the predictive run.
SPEC = """metadata: {{name: web, namespace: bench}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: {min_replicas}
  maxReplicas: {max_replicas}
  metrics:
  - type: Resource
    resource: {{name: cpu, target: {{type: Utilization, averageUtilization: {target}}}}}
"""
REACTIVE = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n" + SPEC
PREDICTIVE = "apiVersion: pyhpa.dev/v1alpha1\nkind: HorizontalAutoscaler\n" + SPEC + "  prediction: {prediction}\n"


def interpolate(points: list[tuple[float, float]], x: float) -> float:
    """Overloaded seconds of the reactive frontier at ``x`` pod-hours (linear; outside: the nearest
    segment extended, floored at 0)."""
    pts = sorted(points)
    if len(pts) == 1:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1 or (x1, y1) == pts[-1]:
            if x < x0 and (x0, y0) != pts[0]:
                continue
            y = y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 != x0 else min(y0, y1)
            return max(y, 0.0)
    return max(pts[-1][1], 0.0)


def run_trace(name: str, cfg: dict, quick: bool, tmp: Path, verbose: bool, prediction: str = "{}") -> dict:
    files = []
    for target in TARGETS:
        f = tmp / f"{name}-reactive-{target}.yaml"
        f.write_text(REACTIVE.format(target=target, **cfg))
        files.append(f)
    f = tmp / f"{name}-predictive-{PREDICTIVE_TARGET}.yaml"
    f.write_text(PREDICTIVE.format(target=PREDICTIVE_TARGET, prediction=prediction, **cfg))
    files.append(f)
    t0 = time.perf_counter()
    sim = run_simulation(files, HERE / "proactive" / "deployment.yaml", cfg["file"], cfg["column"],
                         profile=HERE / "proactive" / "profile.yaml", start=cfg["start"],
                         end=cfg["quick_end"] if quick else cfg["end"], load_scale=cfg["load_scale"],
                         settings=Settings())
    wall = time.perf_counter() - t0
    frontier = []
    for run, target in zip(sim.runs[:-1], TARGETS):
        s = run.summary
        frontier.append((s["pod_hours"], s["overloaded_seconds"]))
        if verbose:
            print(f"  {name} reactive target={target}% pod_hours={s['pod_hours']:.1f} "
                  f"overloaded_seconds={s['overloaded_seconds']:.0f} scale_ups={s['scale_ups']}", file=sys.stderr)
    p = sim.runs[-1].summary
    if verbose:
        pred = p.get("prediction", {})
        print(f"  {name} predictive target={PREDICTIVE_TARGET}% pod_hours={p['pod_hours']:.1f} "
              f"overloaded_seconds={p['overloaded_seconds']:.0f} scale_ups={p['scale_ups']} "
              f"reasons={pred.get('syncs_by_reason')} decided={pred.get('syncs_decided_by_prediction')} "
              f"mape={pred.get('mape')} under={pred.get('under_forecast_share')} wall={wall:.1f}s", file=sys.stderr)
    reactive = interpolate(frontier, p["pod_hours"])
    ratio = p["overloaded_seconds"] / reactive if reactive > 0 else (0.0 if p["overloaded_seconds"] == 0 else math.inf)
    return {"pod_hours": p["pod_hours"], "overloaded": p["overloaded_seconds"], "reactive": reactive, "ratio": ratio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one simulated week per trace")
    ap.add_argument("--trace", choices=sorted(TRACES), action="append", help="only this trace (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every run's figures to stderr")
    ap.add_argument("--prediction", default="{}", help="spec.prediction of the predictive run, YAML flow style "
                    "(default {}: the figures are for the defaults; e.g. '{quantile: 0.95, leadSeconds: 600}')")
    ap.add_argument("--csv", type=Path, help="another trace: a CSV file with a timestamp column")
    ap.add_argument("--column", help="with --csv: the load column (requests per second)")
    ap.add_argument("--start", help="with --csv: start of the simulation (rows before it are the history)")
    ap.add_argument("--end", help="with --csv: end of the simulation")
    ap.add_argument("--load-scale", type=float, default=1.0, help="with --csv: multiply the load (default 1)")
    ap.add_argument("--min-replicas", type=int, default=2, help="with --csv: minReplicas (default 2)")
    ap.add_argument("--max-replicas", type=int, default=400, help="with --csv: maxReplicas (default 400)")
    args = ap.parse_args()
    traces = {name: TRACES[name] for name in (args.trace or ([] if args.csv else list(TRACES)))}
    if args.csv is not None:
        missing = [f"--{k}" for k in ("column", "start", "end") if not getattr(args, k)]
        if missing:
            ap.error(f"--csv needs {', '.join(missing)}")
        traces[args.csv.name.split(".")[0]] = dict(
            file=args.csv, column=args.column, load_scale=args.load_scale, start=args.start, end=args.end,
            quick_end=args.end, min_replicas=args.min_replicas, max_replicas=args.max_replicas)
    ratios, proactive, reactive = [], 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, cfg in traces.items():
            try:
                r = run_trace(name, cfg, args.quick, Path(tmp), args.verbose, args.prediction)
            except InputError as err:
                print(f"proactive.py: {err}", file=sys.stderr)
                sys.exit(2)
            ratios.append(r["ratio"])
            proactive += r["overloaded"]
            reactive += r["reactive"]
            print(f"trace={name} proactive_pod_hours={r['pod_hours']:.1f} "
                  f"proactive_overloaded_seconds={r['overloaded']:.0f} "
                  f"reactive_overloaded_seconds_at_equal_pod_hours={r['reactive']:.0f} ratio={r['ratio']:.3f}",
                  flush=True)
    geometric = math.exp(sum(math.log(max(r, 1e-9)) for r in ratios) / len(ratios)) if ratios else math.nan
    overall = proactive / reactive if reactive > 0 else math.nan
    print(f"geometric_mean_ratio={geometric:.3f}")
    print(f"overall_ratio={overall:.3f}")


if __name__ == "__main__":
    main()
