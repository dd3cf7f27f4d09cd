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
  and saturation (docs/*.md), the CLI's stdout, and ``syncs.jsonl``: every sync's decision as above.

Nothing here times anything; it runs in a few minutes.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

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

def _benchmark_hpa() -> str:
    """The autoscaler of the simulate benchmark (``benchmarks/simulate.py``'s ``HPA``), read from there."""
    spec = importlib.util.spec_from_file_location("_simulate_benchmark", ROOT / "benchmarks" / "simulate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HPA


def _status_written(d, hpa) -> dict:
    """The status the controller writes for decision ``d`` of ``hpa`` (as ``Reconciler._act`` builds it, without a
    prediction fit) and the memory section it persists."""
    from pyhpa.controller.outputs.status import status_from_decision
    from pyhpa.controller.sync.memory import memory_to_status
    from pyhpa.controller.sync.prediction import LivePredictions

    status = status_from_decision(d, 7, hpa)
    section = LivePredictions(None).status(SimpleNamespace(hpa=hpa, key="ns/name"), d)
    if section is not None:
        status["prediction"] = section
    return {"status": status, "memory": memory_to_status(d.memory)}


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
            records.append(_decision_record(s.name, d, s.hpa, s.now))
            if d.rescale:
                f = rescale_failed(d, s.hpa, "boom", s.now)
                records.append({"rescale_failed": _decision_record(s.name, f, s.hpa, s.now)})
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

        def recording(hpa, scale, pods, samples, memory, now, config, *a, **kw):
            d = real(hpa, scale, pods, samples, memory, now, config, *a, **kw)
            records.append(_decision_record("sync", d, hpa, now))
            return d

        cluster_mod.decide = recording
        try:
            from pyhpa.cli.main import app
            from typer.testing import CliRunner

            CliRunner().invoke(app, ["simulate", *args, "--output-dir", str(where / "in-process"), "--no-plot",
                                     "--no-progress"], catch_exceptions=False)
        finally:
            cluster_mod.decide = real
        _dump(where / "syncs.jsonl", records)


def capture(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    capture_decisions(out)
    capture_cli(out)
    capture_simulations(out)
    _without_folder(out)
    print(f"captured into {out}")


def _without_folder(out: Path) -> None:
    """The capture folder's own path (in summary.json's file names) as ``<capture>``: captures compare anywhere."""
    for path in out.rglob("*.json"):
        text = path.read_text()
        if str(out) in text:
            path.write_text(text.replace(str(out), "<capture>"))


def _files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "benchmark-hpa.yaml" and p.suffix != ".png"}


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
    if len(sys.argv) == 3 and sys.argv[1] == "capture":
        capture(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
