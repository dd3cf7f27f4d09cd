"""Scaling ahead of the load against upstream's reactive HPA: overloaded seconds at equal pod-hours.

For each trace, the upstream HPA (kind HorizontalPodAutoscaler, CPU Utilization, no behavior) at targets
40, 50, 60 and 70 % draws the reactive frontier (pod-hours against overloaded seconds); the same HPA at 70 %
as a HorizontalAutoscaler with ``prediction: {}`` and ``saturation: {}`` (all defaults) is compared with
that frontier, linearly interpolated at the autoscaler's own pod-hours (extrapolated linearly, floored at
0, outside the frontier's range). The target is a Guaranteed 1-CPU pod (request = limit) whose app needs
about 70 s to start (``benchmarks/proactive/``). The trace rows before the start are the forecaster's
history; during the run it learns only from what the simulation observed.

Traces (``benchmarks/data/``, sources and licences in its README.md):

- NASA-HTTP, July 1995: history 1-7 July, simulated 8-28 July, load x 100;
- WorldCup98, June-July 1998: history 25-31 May, simulated 1 June - 26 July, load x 1;
- Crane production series ``input9`` (daily cycle, short spikes that do not repeat) and ``input14``
  (daily cycle, steps and spikes at the same clock minutes on most days): history 8-14 October 2021,
  simulated 15-22 October, load scaled so that the peak of the simulated days needs 40 pods at 70 %.

Prints one line per trace, ``trace=NAME pod_hours=... frontier_pod_hours=LO-HI overloaded_seconds=...
reactive_overloaded_seconds_at_equal_pod_hours=... ratio=...`` (``frontier_pod_hours``: the pod-hours of
the 70 % and of the 40 % target), then ``geometric_mean_ratio=...`` (of the per-trace ratios),
``max_ratio=...`` and ``overall_ratio=...``: all traces pooled, the autoscaler's overloaded seconds over
the reactive frontier's at equal pod-hours, summed over the traces. Target: overall ratio <= 0.5, every
trace <= 0.8, and pod-hours no more than the 40 % target's on each trace.
``--quick`` simulates one week of each trace only; the traces run in parallel (``--jobs``, default: one per
core).

The same comparison on another trace (e.g. a production one): ``--csv FILE --column NAME --start T
--end T`` (rows before ``--start`` are the history; ``--load-scale``, ``--min-replicas``,
``--max-replicas`` as for the built-in traces; the trace is named by its file stem). With ``--csv``
only that trace runs, unless ``--trace`` names built-in ones too. ``--prediction`` and ``--saturation``
give the autoscaler's fields (YAML flow style; ``none`` leaves a field out).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.adapters.errors import InputError  # noqa: E402

HERE = ROOT / "benchmarks"
DATA = HERE / "data"
TARGETS = (40, 50, 60, 70)
AUTOSCALER_TARGET = 70
#: The crane series are scaled so that the peak of the simulated days needs this many pods at 70 %
#: (a 1-CPU pod at 70 % of its request serves (700 - 10) / 50 = 13.8 requests/s, profile.yaml).
PEAK_PODS = 40
RPS_PER_POD_AT_TARGET = 13.8

TRACES = {
    "nasa": dict(file=DATA / "nasa_http_1995-07_per_minute.csv.gz", column="requests_per_second", load_scale=100.0,
                 start="1995-07-08T00:00:00", end="1995-07-28T00:00:00", quick_end="1995-07-15T00:00:00",
                 min_replicas=2, max_replicas=60),
    "worldcup98": dict(file=DATA / "worldcup98_1998-05-25_07-26_per_minute.csv.gz", column="requests_per_second",
                       load_scale=1.0, start="1998-06-01T00:00:00Z", end="1998-07-26T00:00:00Z",
                       quick_end="1998-06-08T00:00:00Z", min_replicas=2, max_replicas=400),
    "crane_input9": dict(file=DATA / "crane_input9_1min.csv.gz", column="metric_value", load_scale="peak",
                         start="2021-10-15T00:00:00Z", end="2021-10-23T00:00:00Z", quick_end="2021-10-22T00:00:00Z",
                         min_replicas=2, max_replicas=400),
    "crane_input14": dict(file=DATA / "crane_input14_1min.csv.gz", column="metric_value", load_scale="peak",
                          start="2021-10-15T00:00:00Z", end="2021-10-23T00:00:00Z", quick_end="2021-10-22T00:00:00Z",
                          min_replicas=2, max_replicas=400),
}

#: The HPA of both sides: upstream's kind for the reactive frontier, and the same spec as a
#: HorizontalAutoscaler with the extensions.
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
EXTENDED = "apiVersion: pyhpa.dev/v1alpha1\nkind: HorizontalAutoscaler\n" + SPEC


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


def peak_scale(cfg: dict) -> float:
    """The load scale at which the peak of the simulated span needs ``PEAK_PODS`` pods at 70 %."""
    from pyhpa.simulate.trace import load_trace

    tr = load_trace(cfg["file"], cfg["column"], start=cfg["start"], end=cfg["end"], gaps="hold")
    return PEAK_PODS * RPS_PER_POD_AT_TARGET / float(tr.values[cfg["column"]].max())


def run_trace(name: str, cfg: dict, quick: bool, verbose: bool, extensions: str) -> dict:
    """Simulate the frontier and the autoscaler on one trace (in its own process)."""
    from pyhpa.simulate import Settings, run_simulation

    scale = peak_scale(cfg) if cfg["load_scale"] == "peak" else float(cfg["load_scale"])
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for target in TARGETS:
            f = Path(tmp) / f"{name}-reactive-{target}.yaml"
            f.write_text(REACTIVE.format(target=target, **cfg))
            files.append(f)
        f = Path(tmp) / f"{name}-autoscaler-{AUTOSCALER_TARGET}.yaml"
        f.write_text(EXTENDED.format(target=AUTOSCALER_TARGET, **cfg) + extensions)
        files.append(f)
        t0 = time.perf_counter()
        sim = run_simulation(files, HERE / "proactive" / "deployment.yaml", cfg["file"], cfg["column"],
                             profile=HERE / "proactive" / "profile.yaml", start=cfg["start"],
                             end=cfg["quick_end"] if quick else cfg["end"], load_scale=scale, settings=Settings())
        wall = time.perf_counter() - t0
    frontier = []
    lines = []
    for run, target in zip(sim.runs[:-1], TARGETS):
        s = run.summary
        frontier.append((s["pod_hours"], s["overloaded_seconds"]))
        lines.append(f"  {name} reactive target={target}% pod_hours={s['pod_hours']:.1f} "
                     f"overloaded_seconds={s['overloaded_seconds']:.0f} scale_ups={s['scale_ups']}")
    p = sim.runs[-1].summary
    pred, sat = p.get("prediction", {}), p.get("saturation", {})
    lines.append(f"  {name} autoscaler target={AUTOSCALER_TARGET}% load_scale={scale:.4g} "
                 f"pod_hours={p['pod_hours']:.1f} overloaded_seconds={p['overloaded_seconds']:.0f} "
                 f"scale_ups={p['scale_ups']} prediction_reasons={pred.get('syncs_by_reason')} "
                 f"decided_by_prediction={pred.get('syncs_decided_by_prediction')} "
                 f"pinned_syncs={sat.get('pinned_syncs')} decided_by_saturation={sat.get('syncs_decided_by_saturation')} "
                 f"wall={wall:.1f}s")
    reactive = interpolate(frontier, p["pod_hours"])
    ratio = p["overloaded_seconds"] / reactive if reactive > 0 else (0.0 if p["overloaded_seconds"] == 0 else math.inf)
    return {"name": name, "pod_hours": p["pod_hours"], "overloaded": p["overloaded_seconds"], "reactive": reactive,
            "ratio": ratio, "frontier": sorted(x for x, _ in frontier), "log": lines if verbose else []}


def _extensions(prediction: str, saturation: str) -> str:
    out = ""
    for key, value in (("prediction", prediction), ("saturation", saturation)):
        if value.strip().lower() != "none":
            out += f"  {key}: {value}\n"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one simulated week per trace")
    ap.add_argument("--trace", choices=sorted(TRACES), action="append", help="only this trace (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every run's figures to stderr")
    ap.add_argument("--prediction", default="{}", help="spec.prediction of the autoscaler, YAML flow style "
                    "(default {}: the figures are for the defaults; 'none' leaves it out)")
    ap.add_argument("--saturation", default="{}", help="spec.saturation of the autoscaler, YAML flow style "
                    "(default {}; 'none' leaves it out)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="traces simulated in parallel")
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
    extensions = _extensions(args.prediction, args.saturation)
    ratios, autoscaler, reactive = [], 0.0, 0.0
    with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, len(traces)))) as pool:
        futures = [pool.submit(run_trace, name, cfg, args.quick, args.verbose, extensions)
                   for name, cfg in traces.items()]
        for fut in futures:
            try:
                r = fut.result()
            except InputError as err:
                print(f"proactive.py: {err}", file=sys.stderr)
                sys.exit(2)
            for line in r["log"]:
                print(line, file=sys.stderr)
            ratios.append(r["ratio"])
            autoscaler += r["overloaded"]
            reactive += r["reactive"]
            lo, hi = r["frontier"][0], r["frontier"][-1]
            print(f"trace={r['name']} pod_hours={r['pod_hours']:.1f} frontier_pod_hours={lo:.1f}-{hi:.1f} "
                  f"overloaded_seconds={r['overloaded']:.0f} "
                  f"reactive_overloaded_seconds_at_equal_pod_hours={r['reactive']:.0f} ratio={r['ratio']:.3f}",
                  flush=True)
    geometric = math.exp(sum(math.log(max(r, 1e-9)) for r in ratios) / len(ratios)) if ratios else math.nan
    overall = autoscaler / reactive if reactive > 0 else math.nan
    print(f"geometric_mean_ratio={geometric:.3f}")
    print(f"max_ratio={max(ratios, default=math.nan):.3f}")
    print(f"overall_ratio={overall:.3f}")


if __name__ == "__main__":
    main()
