"""``pyhpa simulate --metrics-outage``: rehearse the night the metrics chain broke, with and without fallback.

The example of docs/fallback.md (examples/fallback/, the bundled NASA slice): the load rises during a
3-hour outage; without a fallback the service is overloaded, with one it is not. Also: the outage in the
timeline's error column, in summary.json and shaded in the plot; bad input is one line with exit code 2.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from simulate_util import write_yaml
from typer.testing import CliRunner

from pyhpa.cli.main import app
from pyhpa.simulate import bundled_path

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "fallback"
OUTAGE = "1995-07-13T06:30:00/1995-07-13T09:30:00"
EXAMPLE = ("--hpa", str(EX / "without-fallback.yaml"), "--hpa", str(EX / "with-fallback.yaml"),
           "--target", str(EX / "deployment.yaml"), "--profile", str(EX / "profile.yaml"),
           "--trace", str(bundled_path("trace")), "--column", "requests_per_second", "--load-scale", "2",
           "--start", "1995-07-13T00:00:00", "--end", "1995-07-13T18:00:00")
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["simulate", "--no-progress", *args])


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_the_example_a_load_rising_in_a_three_hour_outage_overloads_without_fallback_only(tmp_path):
    result = invoke(*EXAMPLE, "--metrics-outage", OUTAGE, "--output-dir", str(tmp_path), "--no-plot")
    assert result.exit_code == 0, result.output
    assert "metrics outage: 1995-07-13T06:30:00-04:00 to 1995-07-13T09:30:00-04:00 (10,800 s)" in \
        " ".join(result.output.split())
    without, with_fb = json.loads((tmp_path / "compare.json").read_text())["runs"]
    assert (without["label"], with_fb["label"]) == ("without-fallback", "with-fallback")
    for s in (without, with_fb):
        assert s["outage_syncs"] == s["failed_syncs"] == 3 * 3600 // 15
        assert s["metrics_outages"] == [{"start": "1995-07-13T06:30:00-04:00", "end": "1995-07-13T09:30:00-04:00",
                                         "seconds": 10800.0}]
    assert without["overloaded_seconds"] > 1800 and without["unserved_fraction"] > 0.01
    assert with_fb["overloaded_seconds"] == 0 and with_fb["unserved_fraction"] < 0.001
    assert without["fallback_syncs"] == 0 and with_fb["fallback_syncs"] == 720 - 4  # failureThreshold 4
    timeline = rows(tmp_path / "with-fallback" / "timeline.csv")
    inside = [r for r in timeline if "06:30:00" <= r["time"][11:19] < "09:30:00"]
    assert len(inside) == 720 and all("simulated metrics outage" in r["error"] for r in inside)
    assert all(r["error"] == "" for r in timeline if r not in inside)
    # 4 failed syncs as upstream, then max(current, 8), through upstream's scale-up limit max(2 x 3, 4) = 6
    assert [r["desired_replicas"] for r in inside[:6]] == ["3", "3", "3", "3", "6", "8"]
    assert "Fallback=True/FallbackActive" in inside[4]["conditions_changed"]
    after = next(r for r in timeline if r["time"][11:19] == "09:30:00")
    assert "Fallback=False/MetricsHealthy" in after["conditions_changed"]
    stuck = rows(tmp_path / "without-fallback" / "timeline.csv")
    assert {r["desired_replicas"] for r in stuck if "06:30:00" <= r["time"][11:19] < "09:30:00"} == {"3"}


def test_the_plot_shades_the_outage(tmp_path, monkeypatch):
    from pyhpa.simulate import plot

    seen = []
    finish = plot._finish

    def capture(fig, axes, *rest):
        seen.append([(p.get_label(), p.get_x() if hasattr(p, "get_x") else None) for ax in axes for p in ax.patches])
        return finish(fig, axes, *rest)

    monkeypatch.setattr(plot, "_finish", capture)
    result = invoke("--metrics-outage", "1995-07-12T02:00/PT3H", "--metrics-outage", "1995-07-13T02:00/PT1H",
                    "--start", "1995-07-12T00:00", "--end", "1995-07-13T12:00", "--output-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    [patches] = seen
    labelled = [p for p in patches if p[0] == "metrics outage"]
    assert len(labelled) == 3  # load, replicas and the metric panel, once each (the second band unlabelled)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [o["seconds"] for o in summary["metrics_outages"]] == [10800.0, 3600.0]
    assert summary["outage_syncs"] == (3 + 1) * 3600 // 15


@pytest.mark.parametrize("item,message", [
    ("1995-07-12T02:00", "--metrics-outage: want START/END (ISO 8601"),
    ("1995-07-12T02:00/1995-07-12T01:00", "--metrics-outage: the end must be after the start"),
    ("1995-07-12T02:00/PT3X", "--metrics-outage: malformed ISO 8601 duration 'PT3X'"),
    ("tonight/1995-07-12T03:00", "--metrics-outage: malformed time 'tonight'"),
    ("2001-01-01T00:00/PT1H", "does not overlap the simulated span (1995-07-12T00:00:00-04:00 to "),
])
def test_a_bad_outage_is_one_line_and_exit_2(tmp_path, item, message):
    result = invoke("--metrics-outage", item, "--output-dir", str(tmp_path), "--no-plot")
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_fallback_only_on_a_horizontal_autoscaler_and_unknown_fields_are_named(tmp_path):
    v2 = json.loads(json.dumps(__import__("yaml").safe_load((EX / "without-fallback.yaml").read_text())))
    v2["spec"]["fallback"] = {"replicas": 8}
    bad = write_yaml(tmp_path / "v2.yaml", v2)
    ha = __import__("yaml").safe_load((EX / "with-fallback.yaml").read_text())
    ha["spec"]["fallback"]["behavior"] = "currentReplicasIfBusy"
    odd = write_yaml(tmp_path / "ha.yaml", ha)
    common = ("--target", str(EX / "deployment.yaml"), "--trace", str(bundled_path("trace")), "--column",
              "requests_per_second", "--no-plot", "--output-dir", str(tmp_path / "out"))
    result = invoke("--hpa", str(bad), *common)
    assert result.exit_code == 2 and "v2.yaml: HorizontalPodAutoscaler php-apache: spec.fallback: only a " \
        "HorizontalAutoscaler" in result.output, result.output
    result = invoke("--hpa", str(odd), *common)
    assert result.exit_code == 2 and "ha.yaml: HorizontalAutoscaler php-apache: spec.fallback.behavior: must be " \
        "one of static, currentReplicas" in result.output, result.output
