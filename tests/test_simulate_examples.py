"""End to end over real traces: the slices in tests/data/traces/ with the configs in
examples/simulate/ (the same configs run the full traces, see docs/simulate.md)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pyhpa.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "simulate"
DATA = Path(__file__).parent / "data" / "traces"
runner = CliRunner()


def run(out: Path, *args: str) -> dict:
    result = runner.invoke(app, ["simulate", "--no-progress", "--output-dir", str(out), *args])
    assert result.exit_code == 0, result.output
    return result


def test_nasa_with_its_real_gap_and_outage(tmp_path):
    result = run(tmp_path, "--hpa", str(EX / "nasa/hpa.yaml"), "--target", str(EX / "nasa/deployment.yaml"),
                 "--profile", str(EX / "nasa/profile.yaml"), "--trace", str(DATA / "nasa_http_1995-07-28_08-03_per_minute.csv"),
                 "--column", "requests_per_second", "--load-scale", "30", "--gaps", "zero", "--no-plot")
    assert "gap at line 815: 296,820 s filled with zero load" in result.output
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["trace"]["gaps"] == 1 and s["trace"]["filled_seconds"] == 296820.0 and s["trace"]["rows_inserted"] == 1
    assert s["simulated_seconds"] == 4413 * 60 + 296820 and s["syncs"] == s["simulated_seconds"] / 15
    assert s["min_replicas_seen"] == 2 and s["max_replicas_seen"] <= 20  # the gap and the outage: min replicas
    assert s["scale_ups"] > 0 and s["scale_downs"] > 0 and s["failed_syncs"] == 0


def test_worldcup_compare_two_hpas(tmp_path):
    run(tmp_path, "--hpa", str(EX / "worldcup98/hpa.yaml"), "--hpa", str(EX / "worldcup98/hpa-cpu-only.yaml"),
        "--target", str(EX / "worldcup98/deployment.yaml"), "--profile", str(EX / "worldcup98/profile.yaml"),
        "--trace", str(DATA / "worldcup98_1998-07-07_per_minute.csv"), "--column", "requests_per_second")
    both = json.loads((tmp_path / "compare.json").read_text())["runs"]
    assert [r["label"] for r in both] == ["hpa", "hpa-cpu-only"]
    assert [m["metric"] for m in both[0]["metrics"]] == ["web_cpu_utilization_percent", "http_requests_per_second_average"]
    for s in both:
        assert s["syncs"] == 1440 * 4 and s["max_replicas_seen"] > 20 and s["min_replicas_seen"] == 4
    assert (tmp_path / "compare.png").exists() and (tmp_path / "hpa" / "plot.png").exists()


def test_bitbrains_one_vm_of_a_long_format_trace(tmp_path):
    run(tmp_path, "--hpa", str(EX / "bitbrains/hpa.yaml"), "--target", str(EX / "bitbrains/statefulset.yaml"),
        "--profile", str(EX / "bitbrains/profile.yaml"), "--trace", str(DATA / "bitbrains_rnd_2013-08-01_03_cpu.csv"),
        "--column", "cpu_usage_percent", "--where", "vm=rnd-411", "--gaps", "hold", "--no-plot")
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["target"] == "StatefulSet default/rnd-411" and s["trace"]["where"] == ["vm=rnd-411"]
    assert s["trace"]["gaps"] == 1 and s["trace"]["gap_seconds"] == 2479.0
    # 100 % CPU of the 2-core VM is 2000 millicores: mean load in work units of 10 millicore-seconds
    assert 1 <= s["min_replicas_seen"] <= s["max_replicas_seen"] <= 8
    assert 30 < s["mean_cpu_utilization_percent"] < 90
