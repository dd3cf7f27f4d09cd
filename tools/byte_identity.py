"""Capture what pyhpa outputs for a fixed set of inputs, and compare two captures byte for byte.

A refactor that must not change behaviour runs ``capture`` before (on the base commit) and after, then
``compare``::

    python tools/byte_identity.py capture /tmp/before
    ...change the code...
    python tools/byte_identity.py capture /tmp/after
    python tools/byte_identity.py compare /tmp/before /tmp/after

What is captured (each a file under the capture folder):

- ``decisions/<file>.jsonl``: for every snapshot of the conformance and regression cases
  (``tests/data/conformance/*.json``) and of ``examples/explain/``: the ``explain -o json`` object, the status
  the controller writes for that decision (``status.*`` sections, ``status.prediction`` as the controller
  renders it, ``status.pyhpa`` memory), the events, the rescale reason, and ``rescale_failed``'s decision too;
- ``cli/<name>.txt``: ``pyhpa explain`` (text and ``-o json``) of those files, stdout and exit code;
- ``simulate/<name>/``: ``timeline.csv`` and ``summary.json`` of the simulate benchmark's run
  (``benchmarks/simulate.py``: NASA, one week) and of the documented runs with schedules, fallback, prediction
  and saturation (docs/*.md), the CLI's stdout, and ``syncs.jsonl``: every sync's decision as above;
- ``tune/<name>/`` (``TUNES``): ``pyhpa tune``'s ``recommended.yaml``, ``candidates.csv``, ``frontier.png`` (the
  only plot compared), ``summary.json`` and stdout on the example of docs/tune.md and on one trace of
  ``benchmarks/tune.py`` (``crane_input9``, 4 days, as ``--tuning-days 4`` runs it), each with ``--jobs 1 --trials
  40 --timeout 100000 --seed 0``: a budget of trials, not of time, so that the search is the same from run to run
  (both runs try prediction, saturation and the two together). What is timed is left out (``TUNE_TIMINGS``):
  summary.json's ``search_seconds`` and ``check_seconds``, and the seconds of the line ``... N settings in S s`` of
  stdout. ``tune/robust.jsonl``: the settings the held-out check derives (``robust_variants``) from the user's
  object with and without prediction and saturation, each with its label, candidates.csv columns, summary.json
  setting and manifest (the two runs need not come to derive any).
- ``fleet/<name>/``: ``pyhpa fleet simulate``'s ``summary.json``, ``workloads.csv``, ``timeline.csv`` and
  ``events.csv`` (and ``compare.csv`` of a what-if) with the CLI's stdout, on the fleet examples of docs/fleet.md
  (``FLEETS``: shop.yaml as it is, against Karpenter, and with prediction and saturation) and on the benchmark's
  fleet (``benchmarks/fleet.py``, ``BENCH_FLEETS``: its variants at ``BENCH_SIZE`` workloads for
  ``BENCH_DAYS`` days, run in process as the benchmark runs them).

Nothing here times anything; it runs in a few minutes (``tune`` in 5-10 more). ``capture DIR PART...`` captures
only the parts named (``decisions``, ``cli``, ``simulate``, ``tune``, ``fleet``).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SNAPSHOT_FILES = sorted((ROOT / "tests" / "data" / "conformance").glob("*.json")) + sorted(
    (ROOT / "examples" / "explain").glob("snapshot*.yaml"))

SIMULATIONS = {
    "benchmark-nasa-week": ["--hpa", "{hpa}", "--target", "pyhpa/data/examples/php-apache.yaml",
                            "--profile", "pyhpa/data/examples/php-apache-profile.yaml",
                            "--trace", "examples/traces/nasa_http_1995-07-10_16_per_minute.csv",
                            "--column", "requests_per_second", "--load-scale", "14",
                            "--start", "1995-07-10T00:00:00", "--end", "1995-07-17T00:00:00"],
    "schedules": ["--hpa", "examples/schedules/php-apache-schedules.yaml",
                  "--target", "pyhpa/data/examples/php-apache.yaml",
                  "--profile", "pyhpa/data/examples/php-apache-profile.yaml",
                  "--trace", "pyhpa/data/traces/nasa_http_1995-07-12_13_per_minute.csv",
                  "--column", "requests_per_second"],
    "schedules-dated": ["--hpa", "examples/schedules/php-apache-dated.yaml",
                        "--target", "pyhpa/data/examples/php-apache.yaml",
                        "--profile", "pyhpa/data/examples/php-apache-profile.yaml",
                        "--trace", "pyhpa/data/traces/nasa_http_1995-07-12_13_per_minute.csv",
                        "--column", "requests_per_second"],
    "fallback": ["--hpa", "examples/fallback/without-fallback.yaml", "--hpa", "examples/fallback/with-fallback.yaml",
                 "--target", "examples/fallback/deployment.yaml", "--profile", "examples/fallback/profile.yaml",
                 "--trace", "pyhpa/data/traces/nasa_http_1995-07-12_13_per_minute.csv",
                 "--column", "requests_per_second", "--load-scale", "2", "--start", "1995-07-13T00:00:00",
                 "--end", "1995-07-13T18:00:00", "--metrics-outage", "1995-07-13T06:30:00/1995-07-13T09:30:00"],
    "prediction": ["--hpa", "examples/simulate/prediction/autoscaler.yaml",
                   "--target", "benchmarks/proactive/deployment.yaml", "--profile", "benchmarks/proactive/profile.yaml",
                   "--trace", "benchmarks/data/crane_input14_1min.csv.gz", "--column", "metric_value",
                   "--load-scale", "4.3", "--start", "2021-10-18T15:36:00Z", "--end", "2021-10-18T16:30:00Z"],
    "saturation": ["--hpa", "examples/simulate/saturation/upstream.yaml",
                   "--hpa", "examples/simulate/saturation/saturation.yaml",
                   "--target", "benchmarks/proactive/deployment.yaml", "--profile", "benchmarks/proactive/profile.yaml",
                   "--trace", "benchmarks/data/crane_input9_1min.csv.gz", "--column", "metric_value",
                   "--load-scale", "0.5875", "--start", "2021-10-17T19:30:00Z", "--end", "2021-10-17T20:10:00Z"],
}

#: ``pyhpa tune`` runs (``capture_tune``): the example of docs/tune.md, and ``benchmarks/tune.py``'s ``crane_input9``
#: on 4 days ({hpa}: its starting HPA, {scale}: its load scale), each with a budget of trials (``TUNE_BUDGET``)
TUNES = {
    "docs-example": ["--hpa", "examples/tune/web-hpa.yaml", "--target", "benchmarks/proactive/deployment.yaml",
                     "--profile", "benchmarks/proactive/profile.yaml",
                     "--trace", "benchmarks/data/nasa_http_1995-07_per_minute.csv.gz", "--column", "requests_per_second",
                     "--load-scale", "100", "--start", "1995-07-08", "--end", "1995-07-09T06:00:00", "--held-out", "21600",
                     "--max-overloaded-fraction", "0.01"],
    "benchmark-crane-input9-4d": ["--hpa", "{hpa}", "--target", "benchmarks/proactive/deployment.yaml",
                                  "--profile", "benchmarks/proactive/profile.yaml",
                                  "--trace", "benchmarks/data/crane_input9_1min.csv.gz", "--column", "metric_value",
                                  "--load-scale", "{scale}", "--start", "2021-10-09T00:00:00+00:00",
                                  "--end", "2021-10-13T00:00:00+00:00", "--gaps", "hold",
                                  "--max-overloaded-fraction", "0.005"],
}
#: ``pyhpa fleet simulate`` runs of docs/fleet.md's example (``capture_fleet``)
FLEETS = {
    "shop": ["examples/fleet/shop.yaml"],
    "shop-vs-karpenter": ["examples/fleet/shop.yaml", "--what-if", "nodeAutoscaler=karpenter"],
    "shop-predictive": ["examples/fleet/shop.yaml", "--what-if", "prediction=on", "--what-if", "saturation=on"],
}
#: the benchmark's fleet (``benchmarks/fleet.py`` ``make_fleet``): variant -> (model, predictive, instant nodes)
BENCH_FLEETS = {
    "bench-reactive-ca": ("cluster-autoscaler", False, False),
    "bench-reactive-karpenter": ("karpenter", False, False),
    "bench-predictive-ca": ("cluster-autoscaler", True, False),
    "bench-predictive-karpenter": ("karpenter", True, False),
    "bench-reactive-instant": ("cluster-autoscaler", False, True),
}
BENCH_SIZE, BENCH_DAYS = 24, 2
#: what a fleet run writes that is compared (its plots and report.html are not)
FLEET_FILES = ("summary.json", "workloads.csv", "timeline.csv", "events.csv", "compare.csv")
TUNE_BUDGET = ["--jobs", "1", "--trials", "40", "--timeout", "100000", "--seed", "0", "--no-progress"]
#: what differs from run to run because it is timed: left out of the comparison (summary.json keys, and the
#: seconds of stdout's ``N settings (...) in S s``)
TUNE_TIMINGS = ("search_seconds", "check_seconds")


def _benchmark(name: str):
    spec = importlib.util.spec_from_file_location(f"_{name}_benchmark", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _benchmark_hpa() -> str:
    """The autoscaler of the simulate benchmark (``benchmarks/simulate.py``'s ``HPA``), read from there."""
    return _benchmark("simulate").HPA


def _status_written(d, hpa) -> dict:
    """The status the controller writes for decision ``d`` of ``hpa`` (as ``Reconciler._act`` builds it, without a
    prediction fit) and the memory section it persists."""
    from pyhpa.controller.outputs.status import status_from_decision
    from pyhpa.controller.sync.memory import memory_to_status

    return {"status": status_from_decision(d, 7, hpa), "memory": memory_to_status(d.memory)}


def _decision_record(name: str, d, hpa, now) -> dict:
    from pyhpa.adapters.snapshot import decision_json

    return {"explain": decision_json(name, d, hpa, now), **_status_written(d, hpa),
            "events": [[e.type, e.reason, e.message] for e in d.events], "rescale_reason": d.rescale_reason,
            "desired": d.desired_replicas, "current": d.current_replicas, "error": d.error,
            "prenormalized": d.prenormalized,
            "steps": [[s.stage, s.before, s.after, s.reason, s.message] for s in d.steps]}


def _dump(path: Path, records) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True, default=repr) + "\n")


def capture_decisions(out: Path) -> None:
    from pyhpa.adapters.snapshot import load_snapshots, run_snapshot
    from pyhpa.core import rescale_failed

    for path in SNAPSHOT_FILES:
        records = []
        for s in load_snapshots(path, lenient=True):
            d = run_snapshot(s)
            records.append(_decision_record(s.name, d, s.inputs.hpa, s.inputs.now))
            if d.rescale:
                f = rescale_failed(d, s.inputs.hpa, "boom", s.inputs.now)
                records.append({"rescale_failed": _decision_record(s.name, f, s.inputs.hpa, s.inputs.now)})
        _dump(out / "decisions" / f"{path.name}.jsonl", records)


def _pyhpa(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="120", NO_COLOR="1", MPLBACKEND="Agg", TERM="dumb")
    return subprocess.run([sys.executable, "-m", "pyhpa.cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)


def capture_cli(out: Path) -> None:
    (out / "cli").mkdir(parents=True, exist_ok=True)
    for path in SNAPSHOT_FILES:
        rel = str(path.relative_to(ROOT))
        for fmt in ("text", "json"):
            lenient = ["--lenient"] if "conformance" in rel else []
            r = _pyhpa("explain", "-o", fmt, *lenient, rel)
            (out / "cli" / f"explain-{path.name}.{fmt}.txt").write_text(f"exit {r.returncode}\n{r.stdout}{r.stderr}")


def capture_simulations(out: Path) -> None:
    import pyhpa.simulate.cluster as cluster_mod

    real = cluster_mod.decide
    for name, args in SIMULATIONS.items():
        where = out / "simulate" / name
        where.mkdir(parents=True, exist_ok=True)
        hpa = where / "benchmark-hpa.yaml"
        hpa.write_text(_benchmark_hpa())
        args = [a.format(hpa=hpa) for a in args]
        r = _pyhpa("simulate", *args, "--output-dir", str(where / "out"), "--no-plot", "--no-progress")
        (where / "stdout.txt").write_text(f"exit {r.returncode}\n{r.stdout.replace(str(where), '<out>')}{r.stderr}")
        # every sync's decision, in process (the same inputs as the CLI's run)
        records = []

        def recording(inputs):
            d = real(inputs)
            records.append(_decision_record("sync", d, inputs.hpa, inputs.now))
            return d

        cluster_mod.decide = recording
        compiled = os.environ.get("PYHPA_COMPILED")
        os.environ["PYHPA_COMPILED"] = "0"  # the Python cluster, whose every sync calls the core (the same figures)
        try:
            from typer.testing import CliRunner

            from pyhpa.cli.main import app

            CliRunner().invoke(app, ["simulate", *args, "--output-dir", str(where / "in-process"), "--no-plot",
                                     "--no-progress"], catch_exceptions=False)
        finally:
            cluster_mod.decide = real
            if compiled is None:
                del os.environ["PYHPA_COMPILED"]
            else:
                os.environ["PYHPA_COMPILED"] = compiled
        _dump(where / "syncs.jsonl", records)


def capture_tune(out: Path) -> None:
    """``TUNES`` through the CLI (timings left out: ``TUNE_TIMINGS``), and ``capture_robust``."""
    bench = _benchmark("tune")
    cfg = bench.TRACES["crane_input9"]
    end = bench._shift(cfg["start"], 4)
    for name, args in TUNES.items():
        where = out / "tune" / name
        where.mkdir(parents=True, exist_ok=True)
        hpa = where / "benchmark-hpa.yaml"
        if "{hpa}" in args:
            hpa.write_text(bench.HPA.format(target=50, max_replicas=cfg["max_replicas"]))
            args = [a.format(hpa=hpa, scale=repr(bench._scale(cfg, end))) for a in args]
        r = _pyhpa("tune", *args, *TUNE_BUDGET, "--output-dir", str(where / "out"))
        stdout = re.sub(r"(settings|check\)) in \d+ s", r"\1 in <seconds> s", r.stdout.replace(str(where), "<out>"))
        (where / "stdout.txt").write_text(f"exit {r.returncode}\n{stdout}{r.stderr}")
        summary = where / "out" / "summary.json"
        if summary.exists():
            doc = json.loads(summary.read_text())
            summary.write_text(json.dumps({k: v for k, v in doc.items() if k not in TUNE_TIMINGS}, indent=2) + "\n")
    capture_robust(out)


def capture_robust(out: Path) -> None:
    """``tune/robust.jsonl``: what the held-out check derives (``robust_variants``) from the user's object as it is
    and with prediction and/or saturation (each setting's label, candidates.csv columns, summary.json setting and
    manifest), on the inputs of docs/tune.md's example."""
    import copy

    import yaml

    from pyhpa.simulate import input_files, load_autoscaler
    from pyhpa.tune import Evaluation, Figures, prepare, space
    from pyhpa.tune.search import robust_variants

    files = input_files([ROOT / "examples/tune/web-hpa.yaml"], ROOT / "benchmarks/proactive/deployment.yaml",
                        ROOT / "benchmarks/data/nasa_http_1995-07_per_minute.csv.gz", "requests_per_second",
                        ROOT / "benchmarks/proactive/profile.yaml")
    p = prepare(files, start="1995-07-08", end="1995-07-09T06:00:00", load_scale=100, held_out_seconds=21600)
    figures = Figures(1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0, 1.0)
    records = []
    extensions = {"plain": {}, "prediction": {"prediction": {"quantile": 0.8, "leadSeconds": 240}},
                  "prediction-top": {"prediction": {"quantile": 0.95}}, "saturation": {"saturation": {"demandFactor": 2.5}},
                  "saturation-top": {"saturation": {"demandFactor": 3}},
                  "both": {"prediction": {}, "saturation": {}, "behavior": {"scaleUp": {"policies": [
                      {"type": "Percent", "value": 900, "periodSeconds": 15}]}}}}
    for name, extra in extensions.items():
        doc = copy.deepcopy(p.base)
        if extra:
            doc["apiVersion"], doc["kind"] = "pyhpa.dev/v1alpha1", "HorizontalAutoscaler"
            doc["spec"].update(extra)
        setting = space.current_setting(load_autoscaler(doc, p.file, p.target, p.settings).hpa, p.kind)
        for number in (-1, 7):
            for s, how in [(setting, "base")] + robust_variants(p, Evaluation(number, setting, figures)):
                records.append({"base": name, "how": how, "label": s.label(p.kind), "columns": s.columns(),
                                "setting": s.as_dict(), "extended": s.extended, "manifest": yaml.safe_dump(
                                    p.manifest(s), sort_keys=False)})
    _dump(out / "tune" / "robust.jsonl", records)


def _keep_fleet_files(where: Path) -> None:
    """Only ``FLEET_FILES`` of a fleet run's folder (the plots, report.html and the what-if's input/ go)."""
    for p in sorted(where.rglob("*"), reverse=True):
        if p.is_file() and p.name not in FLEET_FILES:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


def capture_fleet(out: Path) -> None:
    """``FLEETS`` through the CLI, and ``BENCH_FLEETS`` in process as ``benchmarks/fleet.py`` runs them (its
    ``make_fleet``, ``load_fleet``, ``FleetRun``, ``write_fleet`` without plots)."""
    import tempfile
    import time

    from pyhpa.fleet.engine import FleetRun
    from pyhpa.fleet.report import write_fleet
    from pyhpa.fleet.spec import load_fleet
    from pyhpa.simulate import Settings

    for name, args in FLEETS.items():
        where = out / "fleet" / name
        where.mkdir(parents=True, exist_ok=True)
        r = _pyhpa("fleet", "simulate", *args, "--output-dir", str(where / "out"), "--no-plot", "--no-progress")
        (where / "stdout.txt").write_text(f"exit {r.returncode}\n{r.stdout.replace(str(where), '<out>')}{r.stderr}")
        _keep_fleet_files(where / "out")
    bench = _benchmark("fleet")
    end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(bench.START_EPOCH + BENCH_DAYS * 86400.0))
    for name, (model, predictive, instant) in BENCH_FLEETS.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = bench.make_fleet(BENCH_SIZE, Path(tmp), 0, model, predictive, instant)
            fleet = load_fleet(path, Settings(seed=0), bench.START, end)
            write_fleet(FleetRun(fleet, Settings(seed=0)).run(), out / "fleet" / name / "out")
            summary = out / "fleet" / name / "out" / "summary.json"
            summary.write_text(summary.read_text().replace(tmp, "<fleet>"))


PARTS = {"decisions": capture_decisions, "cli": capture_cli, "simulate": capture_simulations, "tune": capture_tune,
         "fleet": capture_fleet}


def capture(out: Path, parts: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in parts or PARTS:
        PARTS[name](out)
    _without_folder(out)
    print(f"captured into {out}")


def _without_folder(out: Path) -> None:
    """The capture folder's own path (in summary.json's file names, tune's recommended.yaml) as ``<capture>``, and
    the checkout's (the fleets' file names) as ``<repo>``: captures of two checkouts compare anywhere."""
    for path in [*out.rglob("*.json"), *out.rglob("*.jsonl"), *out.rglob("*.yaml"), *out.rglob("*.txt")]:
        text = path.read_text()
        if str(out) in text or str(ROOT) in text:
            path.write_text(text.replace(str(out), "<capture>").replace(str(ROOT), "<repo>"))


def _files(root: Path) -> dict[str, Path]:
    """The captured files; plots only of tune (its frontier.png is the same from run to run)."""
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "benchmark-hpa.yaml" and (p.suffix != ".png" or p.parts[len(root.parts)] == "tune")}


def compare(a: Path, b: Path) -> int:
    fa, fb = _files(a), _files(b)
    bad = 0
    for key in sorted(set(fa) | set(fb)):
        if key not in fa or key not in fb:
            print(f"only in {'after' if key in fb else 'before'}: {key}")
            bad += 1
            continue
        da, db = fa[key].read_bytes(), fb[key].read_bytes()
        if da == db:
            continue
        bad += 1
        print(f"DIFFERS: {key}")
        lines = difflib.unified_diff(da.decode().splitlines(), db.decode().splitlines(), "before", "after", n=0,
                                     lineterm="")
        for i, line in enumerate(lines):
            if i >= 20:
                print("  ...")
                break
            print("  " + line[:300])
    total = hashlib.sha256(b"".join(fa[k].read_bytes() for k in sorted(fa))).hexdigest()[:16]
    print(f"files={len(set(fa) | set(fb))} differing={bad} before_sha256={total}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "capture" and set(sys.argv[3:]) <= set(PARTS):
        capture(Path(sys.argv[2]), sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
