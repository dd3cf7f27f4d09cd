"""Issue 38: ``pyhpa fleet tune`` tunes every workload as ``pyhpa tune`` tunes one, then checks all the
recommendations together on the node pools over the span after the history; on a local Dask cluster of two worker
processes it recommends exactly what it recommends without Dask (``--serial``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pyhpa.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
NASA = ROOT / "examples" / "simulate" / "nasa"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """Two NASA web workloads (one scaled 4x, one 2x and 3 hours later) on four days of the NASA 1995 trace."""
    tmp = tmp_path_factory.mktemp("fleet")
    rows = (ROOT / "examples" / "traces" / "nasa_http_1995-07-10_16_per_minute.csv").read_text().splitlines()
    (tmp / "nasa4.csv").write_text("\n".join(rows[:1 + 4 * 1440]) + "\n")
    workload = {"autoscaler": str(NASA / "hpa.yaml"), "target": str(NASA / "deployment.yaml"),
                "profile": str(NASA / "profile.yaml")}
    spec = {"nodePools": [{"name": "general", "minNodes": 1, "maxNodes": 20, "instanceTypes": [
                {"name": "m5.large", "cpu": "1930m", "memory": "7Gi", "pricePerHour": 0.096}]}],
            "workloads": [{"name": "web", **workload, "trace": {"file": "nasa4.csv", "column": "requests_per_second",
                                                                "scale": 4}},
                          {"name": "api", **workload, "trace": {"file": "nasa4.csv", "column": "requests_per_second",
                                                                "scale": 2, "shift": "3h"}}]}
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "pyhpa.dev/v1alpha1", "kind": "Fleet", "spec": spec}))
    return path


def _tune(fleet: Path, out: Path, *extra: str):
    r = CliRunner().invoke(app, ["fleet", "tune", str(fleet), "--check", "86400", "--trials", "3", "--output-dir",
                                 str(out), "--no-progress", *extra])
    assert r.exit_code == 0, r.output
    return r


def test_fleet_tune_on_a_local_dask_cluster_recommends_what_it_recommends_without_dask(fleet, tmp_path):
    _tune(fleet, tmp_path / "serial", "--serial")
    r = _tune(fleet, tmp_path / "dask", "--processes", "2")
    serial = json.loads((tmp_path / "serial" / "tune.json").read_text())
    out = tmp_path / "json"
    as_json = CliRunner().invoke(app, ["fleet", "tune", str(fleet), "--check", "86400", "--trials", "3",
                                       "--output-dir", str(out), "--serial", "-o", "json"])
    assert as_json.exit_code == 0 and as_json.output.count("\n") == 1, as_json.output  # -o json: one object, one line
    got = json.loads(as_json.output)
    assert {k: v for k, v in got.items() if k != "compare"} == json.loads((out / "tune.json").read_text())
    assert got["workloads"] == serial["workloads"] and got["compare"]["total"]["cost"]["a"] > 0
    dask = json.loads((tmp_path / "dask" / "tune.json").read_text())
    assert serial["ran_on"] == "serial" and dask["ran_on"] == "local Dask cluster"
    assert [w["name"] for w in dask["workloads"]] == ["web", "api"]
    assert dask["workloads"] == serial["workloads"]  # the same recommendations, figures and manifests
    for name in ("web", "api"):
        text = (tmp_path / "dask" / "recommended" / f"{name}.yaml").read_text()
        assert text == (tmp_path / "serial" / "recommended" / f"{name}.yaml").read_text()
        assert text.startswith("# Recommended by pyhpa tune")
    # tuned on the history (the first three days), checked together on the last day: both checks ran on the pool
    assert dask["history"][1] == dask["check"][0]
    rows = (tmp_path / "dask" / "compare.csv").read_text().splitlines()
    assert rows[0].startswith("workload,cost_a,cost_b") and rows[-1].startswith("total,")
    current = json.loads((tmp_path / "dask" / "current" / "summary.json").read_text())
    recommended = json.loads((tmp_path / "dask" / "recommended" / "run" / "summary.json").read_text())
    assert current["fleet"]["simulated_seconds"] == recommended["fleet"]["simulated_seconds"] == 86400
    assert [w["hpa_file"] for w in recommended["workloads"]] != [w["hpa_file"] for w in current["workloads"]]
    assert "cost $" in r.output
    # what tune changed of each workload, as the manifest names it (issue 60: only the bill was printed)
    assert "what tune changed" in r.output
    from pyhpa.cli.fleet_cmd import changes
    for w in dask["workloads"]:
        done = changes(w["current"]["setting"], w["recommended"]["setting"])
        table = r.output[r.output.index("what tune changed"):r.output.index("a: ")]
        row = next(line for line in table.splitlines() if line.startswith(f"│ {w['name']} "))
        assert all(c in row for c in done) and (done or "kept as it is" in row), (row, done)


@pytest.mark.parametrize("args, line", [
    (["--check", "172800"], "error: --check: the fleet's span"),
    (["--trials", "0"], "error: --trials: must be from 1"),
    (["--serial", "--scheduler", "tcp://127.0.0.1:9"], "error: --serial: runs on the Dask scheduler given"),
    # issue 60: a ValueError traceback from Dask (a missing port), after the tuning began
    (["--scheduler", "garbage"], "error: --scheduler: want a Dask scheduler's address, tcp|tls|ws|wss|ucx://HOST:PORT"),
    (["--scheduler", "tcp://10.0.0.5"], "error: --scheduler: want a Dask scheduler's address"),
    (["--check", "0"], "error: --check: must be more than 0 seconds"),  # issue 60: it spoke of days of history
    (["--check", "86400", "--min-replicas-floor", "0"],
     "error: --min-replicas-floor: must be from 1 to each workload's maxReplicas: workload web has"),
])
def test_bad_fleet_tune_flags_are_one_line(fleet, tmp_path, args, line):
    r = CliRunner().invoke(app, ["fleet", "tune", str(fleet), "--output-dir", str(tmp_path / "o"), *args])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and r.output.startswith(line), r.output


def test_fleet_tune_refuses_a_gap_before_tuning_and_holds_it_with_gaps_hold(fleet, tmp_path):
    """``fleet tune --gaps`` as ``fleet simulate --gaps`` (issue 60): a 20-minute hole in a workload's trace is
    refused by default before any tuning (one line naming the workload and ``trace.gaps``; nothing written), and
    ``--gaps hold`` tunes and checks through it (the history, both checks)."""
    rows = (fleet.parent / "nasa4.csv").read_text().splitlines()
    holed = fleet.parent / "nasa4-holed.csv"
    holed.write_text("\n".join(rows[:1 + 1500] + rows[1 + 1520:]) + "\n")  # day 2, 01:00 to 01:19 missing
    doc = yaml.safe_load(fleet.read_text())
    doc["spec"]["workloads"][1]["trace"]["file"] = holed.name
    path = fleet.parent / "holed.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "refused"
    r = CliRunner().invoke(app, ["fleet", "tune", str(path), "--check", "86400", "--trials", "1", "--serial",
                                 "--output-dir", str(out), "--no-progress"])
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert "\n" not in line and "Traceback" not in line and "workload api" in line
    assert "spec.workloads[1].trace.gaps" in line and "gap of 1200 s" in line
    assert not out.exists() or not any(out.iterdir())
    held = _tune(path, tmp_path / "held", "--trials", "1", "--serial", "--gaps", "hold")
    assert held.exit_code == 0
    summary = json.loads((tmp_path / "held" / "recommended" / "run" / "summary.json").read_text())
    api = next(w for w in summary["workloads"] if w["label"] == "api")
    assert api["trace"]["gap_policy"] == "hold"


def test_fleet_tune_min_replicas_floor_holds_for_every_workload(fleet, tmp_path):
    """``fleet tune --min-replicas-floor 3`` (``pyhpa tune``'s, for every workload): each recommended manifest keeps
    at least 3 replicas, where the default lets tune go to what the history needs."""
    _tune(fleet, tmp_path / "kept", "--trials", "2", "--serial", "--min-replicas-floor", "3")
    tuned = json.loads((tmp_path / "kept" / "tune.json").read_text())
    assert len(tuned["workloads"]) == 2
    for w in tuned["workloads"]:
        assert w["manifest"]["spec"]["minReplicas"] >= 3, w["manifest"]["spec"]
        assert w["recommended"]["setting"]["min_replicas"] >= 3
    # the comparison's report.html (issue 60): both checks linked, fleet tune's sides named
    page = (tmp_path / "kept" / "report.html").read_text()
    assert re.findall(r'href="([^"]+)"', page) == ["current/report.html", "recommended/run/report.html"]
    assert "fleet tune&#x27;s recommendation against today&#x27;s" in page and "<b>recommended</b>: " in page
