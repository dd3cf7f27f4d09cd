"""Issue 60: a gap in a fleet's trace was held silently, where ``pyhpa simulate`` refuses one by default. A fleet
now has simulate's rule: a gap in the span a workload replays is refused (one line: the fleet file, the workload,
the field ``trace.gaps``, the trace's line and the gap) unless its ``trace.gaps`` is ``hold`` or ``fleet simulate
--gaps hold`` says so for every workload; holding gives what the fleet gave before."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from test_fleet_run import SMALL, _write, workloads_on
from typer.testing import CliRunner

from pyhpa.cli.main import app
from pyhpa.fleet.engine import FleetRun
from pyhpa.fleet.spec import TraceGaps, load_fleet


def _gap_trace(tmp_path: Path) -> Path:
    """Three hours a minute apart with the rows of 01:00 to 01:19 missing (a 20-minute gap: line 62 is after it)."""
    rows = ["timestamp,requests_per_second"]
    for m in range(180):
        if not 60 <= m < 80:
            rows.append(f"2026-01-05T{m // 60:02d}:{m % 60:02d}:00Z,{2 if m < 90 else 40}")
    path = tmp_path / "gap.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _fleet(tmp_path: Path, gaps: str | None) -> Path:
    workloads = workloads_on(_gap_trace(tmp_path), (1.0, 0.5))
    if gaps is not None:
        workloads[1]["trace"]["gaps"] = gaps
    workloads[0]["trace"]["gaps"] = "hold"
    return _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 4}],
                             "workloads": workloads})


def _simulate(path: Path, out: Path, *flags: str):
    return CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(out), "--no-progress",
                                    "--no-plot", *flags])


def test_a_gap_in_the_span_is_refused_by_default_naming_the_workload_the_field_and_the_line(tmp_path):
    path = _fleet(tmp_path, None)
    r = _simulate(path, tmp_path / "out")
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "fleet.yaml" in line and "workload w1" in line and "spec.workloads[1].trace.gaps" in line
    assert "line 62 of" in line and "gap of 1200 s" in line and "trace.gaps: hold" in line
    assert not (tmp_path / "out" / "summary.json").exists()


def test_held_by_the_file_or_by_the_flag_the_fleet_runs_as_it_did_and_the_summary_says_hold(tmp_path):
    held = _simulate(_fleet(tmp_path, "hold"), tmp_path / "held")
    assert held.exit_code == 0, held.output
    flag = _simulate(_fleet(tmp_path, None), tmp_path / "flag", "--gaps", "hold")
    assert flag.exit_code == 0, flag.output
    a, b = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("held", "flag"))
    assert a["fleet"]["cost"] == b["fleet"]["cost"] and a["fleet"]["unserved_requests"] == b["fleet"]["unserved_requests"]
    for w in a["workloads"]:
        assert w["trace"]["gap_policy"] == "hold" and w["trace"]["gaps"] == 1
    # the flag's error is the flag's: --gaps error refuses even the workload whose file says hold
    r = _simulate(_fleet(tmp_path, "hold"), tmp_path / "e", "--gaps", "error")
    assert r.exit_code == 2 and "--gaps" in r.output and "workload w0" in r.output, r.output


def test_a_gap_outside_the_span_replayed_is_no_error_and_policies_a_fleet_has_not_are_refused(tmp_path):
    path = _fleet(tmp_path, None)
    fleet = load_fleet(path, start="2026-01-05T01:30:00Z")  # after the gap: nothing to refuse
    assert fleet.workloads[1].spec.trace.gaps is TraceGaps.ERROR and not fleet.workloads[1].trace.report.gaps
    assert FleetRun(fleet).run().stats
    for bad in ("zero", "skip", "interpolate"):
        r = _simulate(path, tmp_path / "out", "--gaps", bad)
        assert r.exit_code == 2 and "--gaps" in r.output and "'error', 'hold'" in r.output, r.output
    doc = yaml.safe_load(path.read_text())
    doc["spec"]["workloads"][1]["trace"]["gaps"] = "zero"
    path.write_text(yaml.safe_dump(doc))
    r = _simulate(path, tmp_path / "out")
    assert r.exit_code == 2 and "spec.workloads[1].trace.gaps" in r.output and "Traceback" not in r.output, r.output
