"""spec.prediction through `pyhpa simulate`, `pyhpa explain` and `pyhpa forecast`: it learns only from the
past, raises replicas before a daily rise, Observe never changes replicas, and an object without
prediction (or whose prediction stands aside) decides exactly as upstream."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from simulate_util import PROFILE, hpa_doc, target_doc, write_yaml
from typer.testing import CliRunner

from pyhpa.cli.main import app
from pyhpa.simulate import Settings, run_simulation
from pyhpa.simulate.plot import run_figure
from pyhpa.simulate.report import extension_warnings, summary_table

runner = CliRunner()
DAY = 86400
T0 = 1_000_080_000 - (1_000_080_000 % DAY)  # a UTC midnight
RISE = 3 * 3600  # every day the load jumps from 20 to 100 requests/s at 03:00 for two hours


def load_at(t: np.ndarray) -> np.ndarray:
    tod = (t - T0) % DAY
    return np.where((tod >= RISE) & (tod < RISE + 7200), 100.0, 20.0)


def write_trace(path, days=8, load=load_at, seed=0) -> None:
    t = T0 + np.arange(0, days * DAY, 60.0)
    rng = np.random.default_rng(seed)
    rps = load(t) * (1 + 0.03 * rng.standard_normal(t.size))
    pd.DataFrame({"time": t.astype(int), "rps": np.round(rps, 3)}).to_csv(path, index=False)


def autoscaler_doc(prediction: dict | None = None, **kw) -> dict:
    doc = hpa_doc(max_replicas=60, **kw)
    doc["apiVersion"], doc["kind"] = "pyhpa.dev/v1alpha1", "HorizontalAutoscaler"
    if prediction is not None:
        doc["spec"]["prediction"] = prediction
    return doc


def run(tmp, hpas, start=T0 + 7 * DAY, end=T0 + 7 * DAY + 5 * 3600, trace=None):
    files = [write_yaml(tmp / f"hpa{i}.yaml", h) for i, h in enumerate(hpas)]
    tfile = write_yaml(tmp / "target.yaml", target_doc())
    pfile = write_yaml(tmp / "profile.yaml", {**PROFILE, "app_startup_seconds": 60, "pod_capacity_rps": 2})
    if trace is None:
        trace = tmp / "trace.csv"
        write_trace(trace)
    return run_simulation(files, tfile, trace, "rps", profile=pfile, settings=Settings(),
                          start=str(start), end=str(end))


def frame(sim, i=0) -> pd.DataFrame:
    c = sim.runs[i].cluster
    return pd.DataFrame(c.timeline.rows, columns=c.timeline.header)


def test_prediction_scales_up_before_the_daily_rise_and_reports_it(tmp_path):
    sim = run(tmp_path, [hpa_doc(max_replicas=60), autoscaler_doc({})])
    reactive, predictive = frame(sim, 0), frame(sim, 1)
    rise = T0 + 7 * DAY + RISE
    # 100 requests/s at 1 request/s per pod and a 50 % target: 200 pods worth... capped at 60; 20 rps: 40
    ready_at_rise = lambda df: int(df.loc[df["time"] <= rise, "ready_replicas"].iloc[-1])  # noqa: E731
    assert ready_at_rise(predictive) > ready_at_rise(reactive) + 10
    early = predictive[(predictive["time"] < rise) & (predictive["desired_replicas"] > 45)]
    assert not early.empty and early["time"].iloc[0] >= rise - 1800  # ahead of the rise, not hours ahead
    assert set(predictive.columns) >= {"predicted_replicas", "forecast", "provisioned"}
    both = predictive.dropna(subset=["forecast", "provisioned"])
    assert not both.empty and (both["provisioned"] <= both["forecast"] + 1e-3).all()
    assert "predicted_replicas" not in reactive.columns
    p = sim.runs[1].summary["prediction"]
    assert p["history_rows_before_start"] == 7 * DAY // 60
    assert p["periods_seconds"] == [DAY]
    assert p["syncs_by_reason"].get("Predicting", 0) > 0.9 * sim.runs[1].summary["syncs"]
    assert p["syncs_decided_by_prediction"] > 0
    assert sim.runs[1].summary["overloaded_seconds"] < sim.runs[0].summary["overloaded_seconds"]
    assert "PredictionActive=True/Predicting" in predictive["conditions_changed"].iloc[0]
    # what the table and summary.json say about it (issue 20): its share of syncs, and no warning
    ext = sim.runs[1].summary["extensions"]["prediction"]
    assert ext["active_syncs"] == p["syncs_by_reason"]["Predicting"]
    assert ext["decided_syncs"] == p["syncs_decided_by_prediction"] == sim.runs[1].summary["syncs_decided_by"]["Prediction"]
    assert extension_warnings(sim.runs[1].summary) == [] and sim.runs[0].summary["extensions"] == {}
    table = summary_table(sim)
    labels = list(table.columns[0].cells)
    assert "prediction: predicting, share of syncs" in labels
    row = labels.index("prediction: decided the replicas, share of syncs")
    assert list(table.columns[1].cells)[row] == "-"  # the upstream HPA has no prediction
    # the plot's prediction panel: the band drawn above the lines, the two forecast lines in interleaved dashes
    fig = run_figure(sim.runs[1].cluster, sim.trace, "predictive")
    try:
        panel = fig.axes[2]
        band = [c for c in panel.collections if "forecast band" in c.get_label()]
        forecast, provisioned = (next(line for line in panel.get_lines() if line.get_label().startswith(start))
                                 for start in ("forecast:", "provisioned"))
        assert band and band[0].get_zorder() > max(forecast.get_zorder(), provisioned.get_zorder())
        assert forecast._unscaled_dash_pattern[1] == provisioned._unscaled_dash_pattern[1]
        assert forecast._unscaled_dash_pattern[0] != provisioned._unscaled_dash_pattern[0]
    finally:
        plt.close(fig)


def test_no_look_ahead_changing_later_rows_changes_no_earlier_decision(tmp_path):
    cut = T0 + 7 * DAY + 2 * 3600  # an hour before the rise the model expects
    a = frame(run(tmp_path, [autoscaler_doc({})]))
    changed = tmp_path / "changed.csv"
    write_trace(changed, load=lambda t: np.where(t > cut, 500.0, load_at(t)))
    b = frame(run(tmp_path, [autoscaler_doc({})], trace=changed))
    before_a, before_b = a[a["time"] <= cut], b[b["time"] <= cut]
    assert len(before_a) == len(before_b) > 400
    pd.testing.assert_frame_equal(before_a.reset_index(drop=True), before_b.reset_index(drop=True), check_dtype=False)
    assert not a[a["time"] > cut + 600]["desired_replicas"].equals(b[b["time"] > cut + 600]["desired_replicas"])


def test_history_rows_after_start_are_never_history(tmp_path):
    """Only rows before --start are history: a trace whose days before --start are flat gives no prediction
    at first, whatever the rows after --start hold."""
    flat_history = tmp_path / "flat.csv"
    start = T0 + 7 * DAY
    write_trace(flat_history, load=lambda t: np.where(t < start, 20.0, load_at(t)))
    df = frame(run(tmp_path, [autoscaler_doc({})], trace=flat_history))
    first = df["conditions_changed"].iloc[0]
    assert "PredictionActive=False/NotPredictable" in first
    assert df["predicted_replicas"].isna().iloc[:200].all()


def test_observe_mode_never_changes_replicas(tmp_path):
    sim = run(tmp_path, [hpa_doc(max_replicas=60), autoscaler_doc({"mode": "Observe"})])
    reactive, observed = frame(sim, 0), frame(sim, 1)
    for col in ("current_replicas", "ready_replicas", "desired_replicas", "recommended_replicas"):
        assert reactive[col].equals(observed[col]), col
    assert observed["predicted_replicas"].notna().mean() > 0.9
    assert (observed["predicted_replicas"] > observed["desired_replicas"]).any()  # it did ask for more
    assert "PredictionActive=False/Observing" in observed["conditions_changed"].iloc[0]


def test_without_prediction_or_without_history_the_decisions_are_upstreams(tmp_path):
    # a HorizontalAutoscaler without prediction, and one whose prediction has no history (start at the
    # trace's first row: InsufficientHistory), decide exactly as the autoscaling/v2 HPA
    sim = run(tmp_path, [hpa_doc(max_replicas=60), autoscaler_doc(), autoscaler_doc({})],
              start=T0, end=T0 + 5 * 3600)
    upstream, plain, waiting = frame(sim, 0), frame(sim, 1), frame(sim, 2)
    assert upstream.equals(plain)
    for col in ("current_replicas", "desired_replicas", "recommended_replicas"):
        assert upstream[col].equals(waiting[col]), col
    assert "PredictionActive=False/InsufficientHistory" in waiting["conditions_changed"].iloc[0]
    assert waiting["forecast"].isna().all()


@pytest.mark.parametrize("prediction, field", [
    ({"quantile": 1.5}, "spec.prediction.quantile"),
    ({"metric": 2}, "spec.prediction.metric"),
    ({"leadSeconds": "5m"}, "spec.prediction.leadSeconds"),
    ({"mode": "enforce"}, "spec.prediction.mode"),
    ({"historySeconds": 60}, "spec.prediction.historySeconds"),
    ({"lookahead": 300}, "spec.prediction.lookahead"),
    ([], "spec.prediction"),
])
def test_bad_prediction_is_one_line_naming_the_field(tmp_path, prediction, field):
    hpa = write_yaml(tmp_path / "hpa.yaml", autoscaler_doc(prediction))
    tfile = write_yaml(tmp_path / "target.yaml", target_doc())
    write_trace(tmp_path / "trace.csv", days=1)
    result = runner.invoke(app, ["simulate", "--no-progress", "--hpa", str(hpa), "--target", str(tfile), "--trace",
                                 str(tmp_path / "trace.csv"), "--column", "rps", "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / "hpa.yaml") in lines[0] and f"{field}:" in lines[0], result.output


def test_timeline_and_plot_of_a_predictive_run(tmp_path):
    hpa = write_yaml(tmp_path / "hpa.yaml", autoscaler_doc({}))
    tfile = write_yaml(tmp_path / "target.yaml", target_doc())
    pfile = write_yaml(tmp_path / "profile.yaml", PROFILE)
    write_trace(tmp_path / "trace.csv")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--no-progress", "--hpa", str(hpa), "--target", str(tfile), "--trace",
                                 str(tmp_path / "trace.csv"), "--column", "rps", "--profile", str(pfile),
                                 "--start", str(T0 + 7 * DAY), "--end", str(T0 + 7 * DAY + 3600),
                                 "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out / "timeline.csv", dtype=str, keep_default_na=False)
    assert all(v.isdigit() for v in df["predicted_replicas"]), "replica counts are integers"
    assert (df["forecast"].astype(float) > 0).all()
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "summary.json").read_text())["prediction"]["unit"] == "millicores"


# --------------------------------------------------------------------------------------------- explain
SNAPSHOT = "examples/explain/snapshot-prediction.yaml"


def test_explain_shows_what_the_prediction_asked_for_and_whether_it_won():
    text = runner.invoke(app, ["explain", SNAPSHOT])
    assert text.exit_code == 0, text.output
    assert "prediction: metric 1, lead 300 s, quantile 0.9, mode Enforce" in text.output
    assert "forecast: 500m" in text.output and "asks for 5 replicas: it set the number" in text.output
    assert "expected: 400m; provisioned for: 425m" in text.output
    out = json.loads(runner.invoke(app, ["explain", "-o", "json", SNAPSHOT]).output)
    assert out["prediction"] == {"forecast": "500m", "expected": "400m", "provisioned": "425m", "replicas": 5,
                                 "reason": "Predicting", "mode": "Enforce", "applied": True, "won": True}
    assert out["desiredReplicas"] == 5 and out["decidedBy"].startswith("Prediction/")
    assert [p["replicas"] for p in out["proposals"]] == [4]


def test_explain_of_a_prediction_stepping_aside(tmp_path):
    import yaml

    doc = yaml.safe_load(open(SNAPSHOT))
    doc["forecast"] = {"reason": "AccuracyTooLow", "message": "recent forecasts are off by 70 %"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    text = runner.invoke(app, ["explain", str(tmp_path / "s.yaml")]).output
    assert "steps aside [AccuracyTooLow]: recent forecasts are off by 70 %" in text
    out = json.loads(runner.invoke(app, ["explain", "-o", "json", str(tmp_path / "s.yaml")]).output)
    assert out["desiredReplicas"] == 4 and out["decidedBy"].startswith("Metric/")
    doc["forecast"] = {"total": "lots"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    bad = runner.invoke(app, ["explain", str(tmp_path / "s.yaml")])
    assert bad.exit_code == 2 and "forecast.total" in bad.output


# --------------------------------------------------------------------------------------------- pyhpa forecast
def test_forecast_command_prints_accuracy_and_periods_and_plots(tmp_path):
    trace = tmp_path / "t.csv"
    t = T0 + np.arange(0, 9 * DAY, 60.0)
    pd.DataFrame({"time": t.astype(int), "rps": np.round(1000 + 600 * np.sin(2 * np.pi * t / DAY), 2)}).to_csv(
        trace, index=False)
    out = runner.invoke(app, ["forecast", "--trace", str(trace), "--column", "rps", "--start", str(T0 + 7 * DAY),
                              "--plot-file", str(tmp_path / "f.png")])
    assert out.exit_code == 0, out.output
    assert "periods: 1d" in out.output
    mape = float(out.output.split("mape=")[1].split()[0])
    assert mape < 0.03
    assert "under_forecast_share=" in out.output and (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    js = json.loads(runner.invoke(app, ["forecast", "--trace", str(trace), "--column", "rps", "--start",
                                        str(T0 + 8 * DAY), "-o", "json", "--no-plot"]).output)
    assert js["periods_seconds"] == [DAY] and js["rows"] == DAY // 60 and js["forecast_rows"] == js["rows"]


@pytest.mark.parametrize("args, field", [
    (["--lead", "0"], "--lead"),
    (["--quantile", "1"], "--quantile"),
    (["--history", "3600"], "--history"),
    (["--refresh", "30"], "--refresh: must be at least 60"),
    (["--column", "nope"], "--column"),
])
def test_forecast_command_bad_input(tmp_path, args, field):
    trace = tmp_path / "t.csv"
    pd.DataFrame({"time": [0, 60, 120], "rps": [1, 2, 3]}).to_csv(trace, index=False)
    base = ["forecast", "--trace", str(trace), "--column", "rps", "--no-plot"]
    if args[0] == "--column":
        base = base[:3] + base[5:]
    out = runner.invoke(app, base + args)
    assert out.exit_code == 2 and field in out.output, out.output
