"""``pyhpa tune`` as a user would try it: tune on some days, replay the recommendation on the next week.

For each public trace (``benchmarks/data/``, the traces of ``benchmarks/proactive.py``; Guaranteed 1-CPU pods
with about 70 s start-up, ``benchmarks/proactive/``):

1. tune on 7 days (``--tuning-days``) of history (``--start``/``--end``; the rows before ``--start`` are the
   forecaster's history; the last of the days is tune's held-out day) with ``--max-overloaded-fraction 0.005``,
   starting from an upstream HPA at CPU 50 %, on one core (``jobs=1``) within tune's default budget of 170 s,
   counted in CPU seconds of the one process (the machine may be shared: wall time is printed too);
2. replay the written ``recommended.yaml`` through ``pyhpa simulate``'s code path (``run_simulation``) on the
   next 7 days;
3. replay the upstream HPA at the CPU targets from 30 to 90 % in steps of 5 on the same 7 days: the
   *hindsight* target is the cheapest that met 0.005. The overload grows with the target, so the targets are
   bisected (4-5 replays instead of 13; ``-v`` lists those replayed);
4. *by hand*: the upstream target (same grid) a user finds on the days tune had (all of them, the held-out day
   too): the cheapest that met 0.005 there, and what it costs on the next week. It tells a workload that changed
   from one week to the next (the hindsight target out of reach of anything tuned on the days before) from a
   search that fell short.

Prints per trace ``trace=NAME tuned_pod_hours=... tuned_overloaded_fraction=... hindsight_pod_hours=...
hindsight_target=... tune_seconds=... tune_wall_seconds=... candidates=... held_out_overloaded_fraction=...
goal_met=... by_hand_target=... by_hand_pod_hours=... by_hand_overloaded_fraction=... kind=...`` (``tune_seconds``:
the seconds of tune's budget clock spent reading, searching and checking: CPU seconds of one core, or wall
seconds with ``--load``; ``refused="..."`` and nan figures when tune refused), then ``tune_seconds=...`` (the
slowest trace), ``candidates=...`` (the fewest), ``goal_met=K/N``, ``no_hindsight=M`` (traces where no upstream
target met 0.005 on the next week: ``goal_met=n/a``, left out of N) and ``load_average=...`` (the 1-minute load
average of the machine at the end: what else ran). The goal (``goal_met``): on every trace the next week's
overloaded fraction is at most 2 x 0.005 and the pod-hours at most the hindsight target's; tune_seconds <= 300.

``--tuning-days N`` (2-7) tunes on N days instead of 7 (the next week follows them); ``--unseen`` runs the
traces tune was not developed on instead (NASA-HTTP August 1995, WorldCup98 July 1998, the eight Bitbrains VMs:
four daily, four bursty; ``benchmarks/data/README.md``); ``--load`` starts one CPU-bound process per core beside
the run and tunes as ``pyhpa tune`` does by default (one worker process per core, the budget in wall seconds),
one trace at a time. ``--timeout S`` sets tune's search budget (default 170 s, tune's own default); ``--trace
NAME`` (repeatable) runs only some traces; ``--jobs N`` traces in parallel (each tune on one core; 1 with
``--load``); ``--keep DIR`` keeps each trace's tune output (recommended.yaml, frontier.png, ...) in DIR/NAME.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.adapters.errors import InputError  # noqa: E402
from pyhpa.tune.search import DEFAULT_TIMEOUT  # noqa: E402

HERE = ROOT / "benchmarks"
DATA = HERE / "data"
LIMIT = 0.005
TARGETS = tuple(range(30, 95, 5))
PEAK_PODS, RPS_PER_POD_AT_TARGET = 40, 13.8  # as benchmarks/proactive.py scales the crane series

#: tune on [start, start + tuning days), test on the 7 days after; rows before start are history
TRACES = {
    "nasa": dict(file=DATA / "nasa_http_1995-07_per_minute.csv.gz", column="requests_per_second", load_scale=100.0,
                 start="1995-07-08T00:00:00-04:00", max_replicas=60),
    "worldcup98": dict(file=DATA / "worldcup98_1998-05-25_07-26_per_minute.csv.gz", column="requests_per_second",
                       load_scale=1.0, start="1998-06-14T00:00:00+00:00", max_replicas=400),
    "crane_input9": dict(file=DATA / "crane_input9_1min.csv.gz", column="metric_value", load_scale="peak",
                         start="2021-10-09T00:00:00+00:00", max_replicas=400),
    "crane_input14": dict(file=DATA / "crane_input14_1min.csv.gz", column="metric_value", load_scale="peak",
                          start="2021-10-09T00:00:00+00:00", max_replicas=400),
}
#: traces tune was not developed on (``--unseen``): other months of two of the sources, and another source
UNSEEN = {
    "nasa_august": dict(file=DATA / "nasa_http_1995-08_per_minute.csv.gz", column="requests_per_second",
                        load_scale=100.0, start="1995-08-07T00:00:00-04:00", max_replicas=100),
    "worldcup98_july": dict(file=DATA / "worldcup98_1998-05-25_07-26_per_minute.csv.gz", column="requests_per_second",
                            load_scale=1.0, start="1998-07-01T00:00:00+00:00", max_replicas=400),
    **{f"bitbrains_{vm.replace('-', '')}": dict(file=DATA / "bitbrains_rnd_2013-08_cpu.csv.gz", column="cpu_usage_mhz",
                                                 where=(f"vm={vm}",), load_scale="peak",
                                                 start="2013-08-05T00:00:00+00:00", max_replicas=400)
       for vm in ("rnd-411", "rnd-270", "rnd-81", "rnd-58", "rnd-407", "rnd-384", "rnd-94", "rnd-96")},
}
TUNING_DAYS = (2, 7)
TEST_DAYS = 7
HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: web, namespace: bench}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 2
  maxReplicas: {max_replicas}
  metrics:
  - type: Resource
    resource: {{name: cpu, target: {{type: Utilization, averageUtilization: {target}}}}}
"""


def _shift(text: str, days: int) -> str:
    return (datetime.fromisoformat(text) + timedelta(days=days)).isoformat()


def _scale(cfg: dict, end: str) -> float:
    """crane, bitbrains: the peak of the tuning days needs 40 pods at 70 % (what a user knows when tuning)."""
    if cfg["load_scale"] != "peak":
        return float(cfg["load_scale"])
    from pyhpa.simulate.trace import load_trace

    tr = load_trace(cfg["file"], cfg["column"], start=cfg["start"], end=end, gaps="hold", where=cfg.get("where", ()))
    return PEAK_PODS * RPS_PER_POD_AT_TARGET / float(tr.values[cfg["column"]].max())


def run_trace(name: str, cfg: dict, timeout: float, keep: Path | None, reuse: bool = False, tuning_days: int = 7,
              load: bool = False) -> dict:
    """Tune ``name`` on ``tuning_days`` and replay on the next week; ``load``: tune as ``pyhpa tune`` does by
    default (a worker process per core, the budget in wall seconds)."""
    from pyhpa.simulate import Settings, run_simulation

    tune_end, test_end = _shift(cfg["start"], tuning_days), _shift(cfg["start"], tuning_days + TEST_DAYS)
    where = tuple(cfg.get("where", ()))
    scale = _scale(cfg, tune_end)
    deployment, profile = HERE / "proactive" / "deployment.yaml", HERE / "proactive" / "profile.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out = keep / name if keep else tmp / "tune"
        if reuse and (out / "summary.json").exists():
            tuned_run = _reused(out)
        else:
            tuned_run = _tune_once(name, cfg, tmp, out, tune_end, scale, where, timeout, load)
        refused = tuned_run["refused"]

        def week(hpa: Path) -> dict:
            return run_simulation([hpa], deployment, cfg["file"], cfg["column"], profile=profile, start=tune_end,
                                  end=test_end, load_scale=scale, gaps="hold", where=where,
                                  settings=Settings()).runs[0].summary

        nothing = {"pod_hours": math.nan, "overloaded_fraction": math.nan}
        tuned = nothing if refused else week(out / "recommended.yaml")
        upstream: dict[int, dict] = {}

        def at(t: int) -> dict:
            if t not in upstream:
                upstream[t] = week(_write(tmp / f"upstream-{t}.yaml", t, cfg))
            return upstream[t]

        hindsight, target = _cheapest(at, upstream)
        # by hand: the target a user finds on the same days tune had (all of them, the held-out day too)
        known: dict[int, dict] = {}

        def before(t: int) -> dict:
            if t not in known:
                known[t] = run_simulation([_write(tmp / f"upstream-{t}.yaml", t, cfg)], deployment, cfg["file"],
                                          cfg["column"], profile=profile, start=cfg["start"], end=tune_end,
                                          load_scale=scale, gaps="hold", where=where, settings=Settings()).runs[0].summary
            return known[t]

        _, by_hand = _cheapest(before, known)
        by_hand_week = at(by_hand) if by_hand is not None else nothing
    return {"name": name, "tuned_pod_hours": tuned["pod_hours"], "tuned_overloaded_fraction": tuned["overloaded_fraction"],
            "hindsight_pod_hours": hindsight, "hindsight_target": target, "tune_seconds": tuned_run["tune_seconds"],
            "tune_wall": tuned_run["tune_wall"], "candidates": tuned_run["candidates"], "kind": tuned_run["kind"],
            "setting": tuned_run["label"], "held_out_overloaded_fraction": tuned_run["held_out"],
            # no upstream target met the limit on the next week: nothing to compare with (None)
            "goal_met": None if target is None else (tuned["overloaded_fraction"] <= 2 * LIMIT
                                                     and tuned["pod_hours"] <= hindsight),
            "refused": refused,
            "by_hand_target": by_hand, "by_hand_pod_hours": by_hand_week["pod_hours"],
            "by_hand_overloaded_fraction": by_hand_week["overloaded_fraction"],
            "upstream": sorted((t, s["pod_hours"], s["overloaded_fraction"]) for t, s in upstream.items())}


def _reused(out: Path) -> dict:
    """What an earlier run kept in ``out`` (``--keep`` with ``--reuse``): the keys of ``_tune_once``."""
    summary = json.loads((out / "summary.json").read_text())
    return {"tune_seconds": summary["search_seconds"] + summary["check_seconds"], "tune_wall": math.nan,
            "candidates": summary["candidates"], "kind": summary["kind"], "label": summary["recommended"]["label"],
            "held_out": summary["recommended"]["held_out"]["overloaded_fraction"], "refused": ""}


def _tune_once(name: str, cfg: dict, tmp: Path, out: Path, tune_end: str, scale: float, where: tuple,
               timeout: float, load: bool) -> dict:
    """``pyhpa tune`` of ``name`` from its start to ``tune_end``, its outputs written to ``out``: ``tune_seconds``
    (CPU seconds; wall seconds with ``load``), ``tune_wall``, ``candidates``, ``kind``, ``label`` (the recommended
    setting), ``held_out`` (its overloaded fraction on the held-out day) and ``refused`` (tune's refusal, or "")."""
    from pyhpa.simulate import Settings, input_files
    from pyhpa.tune import Objective, prepare, tune
    from pyhpa.tune.report import write_outputs

    deployment, profile = HERE / "proactive" / "deployment.yaml", HERE / "proactive" / "profile.yaml"
    base = tmp / "current-hpa.yaml"
    base.write_text(HPA.format(target=50, max_replicas=cfg["max_replicas"]))
    out.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    files = input_files([base], deployment, cfg["file"], cfg["column"], profile)
    prepared = prepare(files, start=cfg["start"], end=tune_end, load_scale=scale, gaps="hold", where=where,
                       settings=Settings())
    jobs, clock = (os.cpu_count() or 1, time.monotonic) if load else (1, time.process_time)
    done = {"candidates": 0, "kind": "", "label": "", "held_out": math.nan, "refused": ""}
    try:
        result = tune(prepared, Objective("overloaded_fraction", LIMIT), timeout=timeout, jobs=jobs, clock=clock)
    except InputError as err:  # a refusal (no setting met the objective, or none held out): a result too
        done["refused"] = str(err)
    tune_wall = time.perf_counter() - t0
    done["tune_seconds"], done["tune_wall"] = tune_wall if load else time.process_time() - c0, tune_wall
    if not done["refused"]:
        inputs = {"hpa": str(base.name), "target": str(deployment), "profile": str(profile),
                  "trace": str(cfg["file"]), "column": cfg["column"],
                  "tuning": f"{cfg['start']} to {tune_end} (last day held out)", "held_out": "the last day"}
        write_outputs(result, prepared, inputs, out, f"pyhpa tune on {name}: {cfg['start']} to {tune_end}")
        done.update(candidates=len(result.evaluations), kind=result.manifest["kind"],
                    label=result.recommended.setting.label(prepared.kind),
                    held_out=result.recommended.held_out.overloaded_fraction)
    return done


def _write(path: Path, target: int, cfg: dict) -> Path:
    path.write_text(HPA.format(target=target, max_replicas=cfg["max_replicas"]))
    return path


def _cheapest(at, replayed: dict[int, dict]) -> tuple[float, int | None]:
    """The pod-hours and target of the cheapest upstream target (``TARGETS``) whose overloaded fraction met
    ``LIMIT`` (``at(t)``: a simulate summary, kept in ``replayed``): the overload grows with the target, so the
    targets are bisected for the highest that met it. (nan, None) when none did."""
    lo, hi = 0, len(TARGETS) - 1
    if at(TARGETS[lo])["overloaded_fraction"] <= LIMIT and at(TARGETS[hi])["overloaded_fraction"] > LIMIT:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if at(TARGETS[mid])["overloaded_fraction"] <= LIMIT else (lo, mid)
    met = [(s["pod_hours"], t) for t, s in replayed.items() if s["overloaded_fraction"] <= LIMIT]
    return min(met) if met else (math.nan, None)


class Load:
    """One CPU-bound process per core beside the run (``--load``), stopped at the end (by their own handles)."""

    def __init__(self, on: bool):
        self.procs: list[subprocess.Popen] = []
        self.on = on

    def __enter__(self):
        if self.on:
            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", choices=sorted(TRACES) + sorted(UNSEEN), action="append",
                    help="only this trace (repeatable)")
    ap.add_argument("--unseen", action="store_true", help="the traces tune was not developed on instead of the public ones")
    ap.add_argument("--tuning-days", type=int, default=7, metavar="N",
                    help=f"days tuned on (the last held out), {TUNING_DAYS[0]}-{TUNING_DAYS[1]} (default 7)")
    ap.add_argument("--load", action="store_true", help="one CPU-bound process per core beside the run; tune with a "
                    "worker per core and a wall-clock budget, one trace at a time")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"tune's search budget, seconds (default {DEFAULT_TIMEOUT:g}, tune's own)")
    ap.add_argument("--jobs", type=int, default=len(TRACES), help="traces in parallel (each tune on one core)")
    ap.add_argument("--keep", type=Path, help="keep each trace's tune output in DIR/NAME")
    ap.add_argument("--reuse", action="store_true", help="with --keep: a trace whose DIR/NAME/summary.json exists is "
                    "not tuned again (its recommended.yaml is replayed; tune_seconds from summary.json)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the upstream targets' figures to stderr")
    args = ap.parse_args()
    if not TUNING_DAYS[0] <= args.tuning_days <= TUNING_DAYS[1]:
        ap.error(f"--tuning-days: must be {TUNING_DAYS[0]}-{TUNING_DAYS[1]}, got {args.tuning_days}")
    if not 1 <= args.jobs <= 16:
        ap.error(f"--jobs: must be 1-16, got {args.jobs}")
    known = {**TRACES, **UNSEEN}
    names = args.trace or list(UNSEEN if args.unseen else TRACES)
    slowest, fewest, met, undefined = 0.0, None, 0, 0
    jobs = 1 if args.load else max(1, min(args.jobs, len(names)))
    with Load(args.load), ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_trace, n, known[n], args.timeout, args.keep, args.reuse, args.tuning_days, args.load)
                   for n in names]
        for fut in futures:
            try:
                r = fut.result()
            except InputError as err:
                print(f"tune.py: {err}", file=sys.stderr)
                sys.exit(2)
            if args.verbose:
                for t, ph, of in r["upstream"]:
                    print(f"  {r['name']} upstream target={t}% pod_hours={ph:.1f} overloaded_fraction={of:.5f}",
                          file=sys.stderr)
                print(f"  {r['name']} recommended: {r['setting']}", file=sys.stderr)
            print(f"trace={r['name']} tuned_pod_hours={r['tuned_pod_hours']:.1f} "
                  f"tuned_overloaded_fraction={r['tuned_overloaded_fraction']:.5f} "
                  f"hindsight_pod_hours={r['hindsight_pod_hours']:.1f} hindsight_target={r['hindsight_target']} "
                  f"tune_seconds={r['tune_seconds']:.0f} tune_wall_seconds={r['tune_wall']:.0f} candidates={r['candidates']} "
                  f"held_out_overloaded_fraction={r['held_out_overloaded_fraction']:.5f} "
                  f"goal_met={'n/a' if r['goal_met'] is None else r['goal_met']} "
                  f"by_hand_target={r['by_hand_target']} by_hand_pod_hours={r['by_hand_pod_hours']:.1f} "
                  f"by_hand_overloaded_fraction={r['by_hand_overloaded_fraction']:.5f} kind={r['kind'] or 'none'}"
                  + (f" refused={json.dumps(r['refused'])}" if r["refused"] else ""), flush=True)
            slowest = max(slowest, r["tune_seconds"])
            if not r["refused"]:
                fewest = r["candidates"] if fewest is None else min(fewest, r["candidates"])
            met += bool(r["goal_met"])
            undefined += r["goal_met"] is None
        load_average = os.getloadavg()[0]
    print(f"tune_seconds={slowest:.0f}")
    print(f"candidates={fewest}")
    print(f"goal_met={met}/{len(names) - undefined}")
    if undefined:
        print(f"no_hindsight={undefined}")
    print(f"load_average={load_average:.2f}")


if __name__ == "__main__":
    main()
