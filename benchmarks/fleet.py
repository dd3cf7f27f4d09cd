"""A fleet of real workloads on one node pool for a week: how long ``pyhpa fleet simulate`` takes, how much memory,
and the bill (issue 38).

    python benchmarks/fleet.py                          # 200 workloads, 7 days, Cluster Autoscaler
    python benchmarks/fleet.py --workloads 50,200       # each size in its own process, one line each
    python benchmarks/fleet.py --model karpenter --predictive --out out/fleet-bench
    python benchmarks/fleet.py --workloads 50 --instant-nodes    # the same workloads with no node to wait for
    python benchmarks/fleet.py --workloads 50 --days 2 --headline    # the docs' table: six variants, two at a time
    python benchmarks/fleet.py --headline --results benchmarks/results/fleet-200x7 --variants reactive-ca,reactive-karpenter
    python benchmarks/fleet.py --workloads 50 --days 2 --headline --processes 6    # each variant a Dask worker
    python benchmarks/fleet.py --headline --scheduler tcp://10.0.0.5:8786          # your Dask cluster

Prints, per size, ``workloads=N seconds=S rss_mb=M node_hours=H cost=C compiled=K`` (wall seconds of the
simulation, the process's peak resident memory, the pool's node-hours and dollars, and how many workloads ran
compiled: ``pyhpa.simulate.compiled``; ``--no-compiled`` runs every one in Python, as without a Rust compiler).

The fleet, made from the real traces in benchmarks/data (copies of the project's trace collection; sources and
licences in benchmarks/data/README.md), over the week 2013-08-05T00:00Z to 2013-08-12T00:00Z:

- the 8 Bitbrains VMs (``bitbrains_rnd_2013-08_cpu.csv.gz``, rnd-58 to rnd-411, as they ran: one co-located
  group, not shifted), each a StatefulSet scaled on CPU (examples/simulate/bitbrains);
- the others, alternately, a NASA-HTTP web workload (examples/simulate/nasa, July or August 1995) and a WorldCup98
  one (examples/simulate/worldcup98, May to July 1998): each a week of its trace starting on a day drawn from the
  weeks the trace covers whole, shifted to the fleet's week (whole weeks, so weekdays stay weekdays, plus 0 to 6
  hours drawn, so the peaks do not all coincide) and scaled by a factor drawn log-uniformly (NASA 1.5 to 12:
  about 1 to 10 pods; WorldCup 0.05 to 0.4: 4 to 15 pods). Seeded (``--seed``): the same fleet every run.

One pool, ``general``: m5.xlarge (3920m, 14Gi allocatable, $0.192/h) and m5.2xlarge (7910m, 29Gi, $0.384/h),
DaemonSet overhead 200m and 512Mi, 3 to 2,000 nodes, provisioning 90 s median and 150 s p90. ``--predictive`` adds
prediction and saturation to every autoscaler (``prediction: {}`` and ``saturation: {}``, their defaults, as
examples/simulate/prediction and examples/simulate/saturation have them); ``--model`` picks the node autoscaler.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
EXAMPLES = ROOT / "examples" / "simulate"
START = "2013-08-05T00:00:00Z"
START_EPOCH = 1375660800.0  # 2013-08-05T00:00:00Z
WEEK = 7 * 86400.0
#: each web source: (trace file, column, example folder, first days of the weeks it covers whole (UTC epoch), scale
#: range)
SOURCES = {
    "nasa": [("nasa_http_1995-07_per_minute.csv.gz", [804643200.0 + k * WEEK for k in range(3)]),  # 1995-07-02Z
             ("nasa_http_1995-08_per_minute.csv.gz", [807926400.0 + k * WEEK for k in range(3)])],  # 1995-08-09Z
    "worldcup98": [("worldcup98_1998-05-25_07-26_per_minute.csv.gz", [896140800.0 + k * WEEK for k in range(8)])],
}
SCALES = {"nasa": (1.5, 12.0), "worldcup98": (0.05, 0.4)}
POOL = {
    "name": "general",
    "instanceTypes": [{"name": "m5.xlarge", "cpu": "3920m", "memory": "14Gi", "pricePerHour": 0.192},
                      {"name": "m5.2xlarge", "cpu": "7910m", "memory": "29Gi", "pricePerHour": 0.384}],
    "daemonSetOverhead": {"cpu": "200m", "memory": "512Mi"},
    "minNodes": 3, "maxNodes": 2000,
    "provisioningSeconds": {"median": 90, "p90": 150},
}


#: ``--instant-nodes``: nodes no workload waits for (all there from the start, with room to spare: 64 CPUs each,
#: one for every four workloads and ten more), so each workload runs as ``pyhpa simulate`` runs it alone; the
#: difference from the fleet's run is what waiting for nodes costs
INSTANT = {"name": "general", "instanceTypes": [{"name": "instant", "cpu": "64", "memory": "256Gi", "pricePerHour": 0}],
           "daemonSetOverhead": {"cpu": "200m", "memory": "512Mi"}, "provisioningSeconds": {"median": 0, "p90": 0}}


def _vms() -> tuple[str, ...]:
    """The Bitbrains VM names of the trace (its ``vm`` column), in order."""
    import pandas as pd

    return tuple(sorted(pd.read_csv(DATA / "bitbrains_rnd_2013-08_cpu.csv.gz", usecols=["vm"])["vm"].unique()))


def make_fleet(n: int, folder: Path, seed: int, model: str, predictive: bool, instant: bool = False) -> Path:
    """Write the fleet file of ``n`` workloads into ``folder`` (with the predictive autoscalers, when asked; on
    ``INSTANT`` nodes, when ``instant``); returns its path."""
    rng = random.Random(seed)
    workloads = []
    vms = _vms()
    bitbrains = EXAMPLES / "bitbrains"
    for vm in vms[:min(n, len(vms))]:
        workloads.append({"name": f"bitbrains-{vm}", "autoscaler": str(_autoscaler(folder, bitbrains, predictive)),
                          "target": str(bitbrains / "statefulset.yaml"), "profile": str(bitbrains / "profile.yaml"),
                          "trace": {"file": str(DATA / "bitbrains_rnd_2013-08_cpu.csv.gz"),
                                    "column": "cpu_usage_percent", "where": [f"vm={vm}"],
                                    "gaps": "hold"}})  # rnd-94 misses a 5-minute row (2013-08-13): held, as ever
    for j in range(n - len(workloads)):
        kind = ("nasa", "worldcup98")[j % 2]
        file, weeks = rng.choice(SOURCES[kind])
        offset = rng.uniform(0, 6) * 3600.0
        source_start = rng.choice(weeks) - offset
        shift = START_EPOCH - source_start
        lo, hi = SCALES[kind]
        scale = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        example = EXAMPLES / kind
        workloads.append({
            "name": f"{kind}-{j:04d}", "autoscaler": str(_autoscaler(folder, example, predictive)),
            "target": str(example / "deployment.yaml"), "profile": str(example / "profile.yaml"),
            "trace": {"file": str(DATA / file), "column": "requests_per_second", "scale": round(scale, 4),
                      "shift": f"{shift:.0f}s", "gaps": "hold"}})
    pool = dict(POOL)
    if instant:
        pool = {**INSTANT, "minNodes": 10 + n // 4, "maxNodes": 10 + n // 4}
    spec = {"nodeAutoscaler": {"model": model}, "nodePools": [pool], "workloads": workloads}
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "pyhpa.dev/v1alpha1", "kind": "Fleet",
                                    "metadata": {"name": f"bench-{n}"}, "spec": spec}, sort_keys=False))
    return path


def _autoscaler(folder: Path, example: Path, predictive: bool) -> Path:
    """The example's HPA, or (``predictive``) it as a HorizontalAutoscaler with prediction and saturation at their
    defaults."""
    hpa = example / "hpa.yaml"
    if not predictive:
        return hpa
    out = folder / f"{example.name}-predictive.yaml"
    if not out.exists():
        doc = yaml.safe_load(hpa.read_text())
        doc["apiVersion"], doc["kind"] = "pyhpa.dev/v1alpha1", "HorizontalAutoscaler"
        doc["spec"]["prediction"] = {}
        doc["spec"]["saturation"] = {}
        out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def run_one(n: int, days: float, seed: int, model: str, predictive: bool, out: str | None,
            instant: bool = False, label: str = "") -> dict:
    """Build and simulate the fleet of ``n`` workloads in this process; the figures of its line."""
    from pyhpa.fleet.engine import FleetRun
    from pyhpa.fleet.report import summarize_fleet, write_fleet
    from pyhpa.fleet.spec import load_fleet
    from pyhpa.simulate import Settings

    with tempfile.TemporaryDirectory() as tmp:
        path = make_fleet(n, Path(tmp), seed, model, predictive, instant)
        end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START_EPOCH + days * 86400.0))
        t0 = time.perf_counter()
        fleet = load_fleet(path, Settings(seed=seed), START, end)
        run = FleetRun(fleet, Settings(seed=seed)).run(_progress(label))
        seconds = time.perf_counter() - t0
        summary = write_fleet(run, out, plot=True) if out else summarize_fleet(run)
    f = summary["fleet"]
    return {"workloads": n, "seconds": round(seconds, 1),
            "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
            "node_hours": f["node_hours"], "cost": f["cost"], "unserved_fraction": f["unserved_fraction"],
            "pending_pod_seconds": f["pending_pod_seconds"], "node_wait_seconds": f["node_wait_seconds"],
            "overloaded_seconds": f["overloaded_seconds"], "compiled": sum(c.compiled for c in run.clusters),
            "modules": loaded_modules()}


def _progress(label: str = ""):
    """A line on stderr every tenth of the simulated span (when stderr is a terminal or a log), ``label:`` first."""
    shown = [-1]
    prefix = f"{label}:" if label else ""

    def report(done: float, total: float) -> None:
        tenth = int(10 * done / total) if total else 10
        if tenth != shown[0]:
            shown[0] = tenth
            print(f"{prefix}  {10 * tenth}% simulated", file=sys.stderr, flush=True)

    return report


#: ``--headline``'s variants: (name, autoscalers, node autoscaler, the child's flags); the instant ones are the
#: same workloads with no node to wait for, against which the overload from waiting for nodes is measured
HEADLINE = (
    ("reactive-ca", "reactive (upstream's)", "Cluster Autoscaler", ["--model", "cluster-autoscaler"]),
    ("reactive-karpenter", "reactive (upstream's)", "Karpenter", ["--model", "karpenter"]),
    ("predictive-ca", "prediction + saturation", "Cluster Autoscaler", ["--model", "cluster-autoscaler",
                                                                        "--predictive"]),
    ("predictive-karpenter", "prediction + saturation", "Karpenter", ["--model", "karpenter", "--predictive"]),
    ("reactive-instant", "reactive, no node to wait for", "(none)", ["--instant-nodes"]),
    ("predictive-instant", "prediction + saturation, no node to wait for", "(none)",
     ["--instant-nodes", "--predictive"]),
)


def _child(n: int, a: argparse.Namespace, flags: list[str], out: str | None, label: str = "") -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--one", str(n), "--days", str(a.days), "--seed",
            str(a.seed), *flags] + (["--out", out] if out else []) + (["--label", label] if label else [])


def source_digest(modules: list[str]) -> str:
    """A digest of everything a variant's figures depend on: the pyhpa modules its run loaded (``modules``: paths
    from the repository's root, ``loaded_modules``), this script, the example autoscalers, targets and profiles, and
    the trace files (their contents); a saved result whose files now give another digest is stale."""
    import hashlib

    h = hashlib.sha256()
    files = [*(ROOT / m for m in sorted(modules)), Path(__file__).resolve(), *sorted(EXAMPLES.rglob("*.yaml")),
             *sorted(DATA.glob("*.csv.gz"))]
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + (f.read_bytes() if f.exists() else b"") + b"\0")
    return h.hexdigest()[:16]


def loaded_modules() -> list[str]:
    """The pyhpa modules this process has loaded (paths from the repository's root)."""
    package = ROOT / "pyhpa"
    return sorted(str(Path(f).resolve().relative_to(ROOT)) for m in list(sys.modules.values())
                  if (f := getattr(m, "__file__", None)) and Path(f).resolve().is_relative_to(package))


def variant_figures(job: dict) -> dict:
    """One variant of the headline (``job``: its ``name``, the child's ``command``), run in a process of its own so
    that its peak memory is its own: the figures of the child's last line. A Dask task (``headline``); its progress
    lines go to the worker's standard error, prefixed with the variant."""
    proc = subprocess.run(job["command"], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{job['name']}: the run failed (exit code {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def headline(n: int, a: argparse.Namespace) -> None:
    """The docs' headline table: every ``HEADLINE`` variant of the ``n``-workload fleet, each a task on a Dask
    cluster (``variant_figures``: a local one of ``a.processes`` worker processes, the one at ``a.scheduler``, or
    one after another with ``a.serial``), a ``variant=... seconds=... cost=...`` line each, then the table in
    Markdown, the share of the overload that comes from waiting for nodes and ``headline_seconds=S`` (the command's
    wall time: the slowest variant's when every variant has a worker). With ``a.results``, each variant's figures
    are saved there (``<variant>.json``, with the fleet's size, days, seed, the pyhpa modules the run loaded and
    ``source_digest``) and a saved one of the same fleet and digest is used instead of running it again, so a table
    of many hours can be made over several sittings; ``a.variants`` runs only those (the table is printed when all
    six are there)."""
    sys.path.insert(0, str(ROOT))
    from pyhpa.adapters.errors import InputError
    from pyhpa.fleet.tasks import run_tasks

    began = time.perf_counter()
    key = {"workloads": n, "days": a.days, "seed": a.seed}
    folder = Path(a.results) if a.results else None

    def saved(name: str) -> dict | None:
        f = folder / f"{name}.json" if folder else None
        if f is None or not f.exists():
            return None
        r = json.loads(f.read_text())
        fleet = r.get("fleet", {})
        same = all(fleet.get(k) == v for k, v in key.items())
        return r if same and fleet.get("source") == source_digest(r.get("modules", [])) else None

    def show(name: str, r: dict, note: str = "") -> None:
        print(f"variant={name} workloads={r['workloads']} seconds={r['seconds']} rss_mb={r['rss_mb']} "
              f"node_hours={r['node_hours']} cost={r['cost']} unserved_fraction={r['unserved_fraction']} "
              f"overloaded_seconds={r['overloaded_seconds']} pending_pod_seconds={r['pending_pod_seconds']} "
              f"node_wait_seconds={r['node_wait_seconds']}{note}", flush=True)

    chosen = [v for v in HEADLINE if not a.variants or v[0] in a.variants]
    results: dict[str, dict] = {}
    jobs = []
    for name, _, _, flags in chosen:
        r = saved(name)
        if r is not None:
            results[name] = r
            show(name, r, f" saved={folder / (name + '.json')}")
        else:
            jobs.append({"name": name, "command": _child(n, a, flags, f"{a.out}/{name}" if a.out else None, name)})

    def done(k: int, total: int) -> None:
        print(f"  {k} of {total} variants run", file=sys.stderr, flush=True)

    try:
        figures = run_tasks(variant_figures, jobs, scheduler=a.scheduler, processes=a.processes, serial=a.serial,
                            progress=done, what="a variant's run")
    except InputError as err:
        raise SystemExit(f"error: {err}") from None
    for job, r in zip(jobs, figures):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            r["fleet"] = {**key, "source": source_digest(r["modules"])}
            (folder / f"{job['name']}.json").write_text(json.dumps(r, indent=1) + "\n")
        results[job["name"]] = r
        show(job["name"], r)
    for name, *_ in HEADLINE:
        if name not in results and (r := saved(name)) is not None:
            results[name] = r
    missing = [v[0] for v in HEADLINE if v[0] not in results]
    if missing:
        print(f"\nthe table needs {', '.join(missing)} too (--results {a.results or 'DIR'} keeps each variant's figures)")
        print(f"headline_seconds={time.perf_counter() - began:.1f}")
        return
    print(f"\n{n} workloads, {a.days:g} days from {START[:10]}:\n")
    print("| autoscalers | node autoscaler | cost | node-hours | unserved requests | overloaded s | Pending pod-s | "
          "of which waiting for a node |")
    print("|---|---|---|---|---|---|---|---|")
    for name, autoscalers, model, _ in HEADLINE:
        r = results[name]
        instant = name.endswith("instant")
        cost = "-" if instant else f"${r['cost']:,.2f}"
        hours = "-" if instant else f"{r['node_hours']:,.0f}"
        print(f"| {autoscalers} | {model} | {cost} | {hours} | {100 * r['unserved_fraction']:.4f} % | "
              f"{r['overloaded_seconds']:,.0f} | {r['pending_pod_seconds']:,.0f} | {r['node_wait_seconds']:,.0f} |")
    print("\nOverload from waiting for nodes (overloaded seconds less those with no node to wait for):")
    for kind in ("reactive", "predictive"):
        base = results[f"{kind}-instant"]["overloaded_seconds"]
        for model in ("ca", "karpenter"):
            total = results[f"{kind}-{model}"]["overloaded_seconds"]
            share = (total - base) / total if total else 0.0
            print(f"  {kind}, {model}: {total - base:,.0f} s of {total:,.0f} ({100 * share:.0f} %)")
    print(f"headline_seconds={time.perf_counter() - began:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="200", help="sizes, comma-separated (each in its own process)")
    ap.add_argument("--days", type=float, default=7.0, help="simulated days (at most 7)")
    ap.add_argument("--model", default="cluster-autoscaler", choices=("cluster-autoscaler", "karpenter"))
    ap.add_argument("--predictive", action="store_true", help="prediction and saturation on every autoscaler")
    ap.add_argument("--instant-nodes", action="store_true",
                    help="nodes no workload waits for (INSTANT): each workload as pyhpa simulate runs it alone")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write summary.json, workloads.csv, timeline.csv, events.csv, the plots and report.html here")
    ap.add_argument("--json", action="store_true", help="print each result as a JSON line too")
    ap.add_argument("--headline", action="store_true",
                    help="the docs' headline table: the six variants (HEADLINE) of one size, --processes at a time")
    ap.add_argument("--processes", type=int, default=2,
                    help="--headline: variants run at once, the worker processes of a local Dask cluster (1 to 8)")
    ap.add_argument("--scheduler", help="--headline: a Dask scheduler (tcp://host:port) whose workers have this "
                    "repository at the same path and pyhpa installed, instead of a local cluster")
    ap.add_argument("--serial", action="store_true", help="--headline: the variants one after another, no Dask")
    ap.add_argument("--variants", help="--headline: only these variants, comma-separated (names as HEADLINE has them)")
    ap.add_argument("--results", help="--headline: keep each variant's figures in this folder, and use those saved "
                    "there for the same fleet and code instead of running them again")
    ap.add_argument("--no-compiled", action="store_true",
                    help="every workload in Python (PYHPA_COMPILED=0: pyhpa.simulate.compiled), as on a machine "
                    "without a Rust compiler; the same figures, slower")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a size run in this process (the child)
    ap.add_argument("--label", default="", help=argparse.SUPPRESS)  # the child's progress lines start with it
    a = ap.parse_args()
    if a.no_compiled:
        os.environ["PYHPA_COMPILED"] = "0"  # the children (and Dask's workers) inherit it
    if not 0 < a.days <= 7:
        ap.error("--days: from 0 (excluded) to 7")
    if not 1 <= a.processes <= 8:
        ap.error("--processes: from 1 to 8")
    if a.one is not None:
        print(json.dumps(run_one(a.one, a.days, a.seed, a.model, a.predictive, a.out, a.instant_nodes, a.label)))
        return
    try:
        sizes = [int(x) for x in a.workloads.split(",")]
    except ValueError:
        ap.error(f"--workloads: want sizes such as 50,200, got {a.workloads!r}")
    if any(not 1 <= n <= 10_000 for n in sizes):
        ap.error("--workloads: each size from 1 to 10,000")
    if a.variants is not None:
        a.variants = [v.strip() for v in a.variants.split(",") if v.strip()]
        unknown = sorted(set(a.variants) - {v[0] for v in HEADLINE})
        if unknown or not a.variants:
            ap.error(f"--variants: want names from {', '.join(v[0] for v in HEADLINE)}, got {', '.join(unknown) or 'none'}")
    if a.headline:
        if len(sizes) != 1:
            ap.error("--headline: one size (--workloads N)")
        headline(sizes[0], a)
        return
    for n in sizes:
        flags = ["--model", a.model] + (["--predictive"] if a.predictive else []) + \
            (["--instant-nodes"] if a.instant_nodes else [])
        cmd = _child(n, a, flags, f"{a.out}/{n}" if a.out else None)
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if res.returncode != 0:
            sys.exit(res.returncode)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"workloads={r['workloads']} seconds={r['seconds']} rss_mb={r['rss_mb']} "
              f"node_hours={r['node_hours']} cost={r['cost']} compiled={r['compiled']}", flush=True)
        if a.json:
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
