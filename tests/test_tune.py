"""``pyhpa tune``: the search reads only the tuning part, the recommendation replays as tuned, refusals.

The workloads are synthetic 1-minute traces (a daily cycle, a step, spikes) served by Guaranteed 1-CPU
pods with about 70 s start-up (the profile of ``benchmarks/proactive/``); the HPA syncs every 60 s and the
searches are a few settings long, so that each test replays a few simulated days only.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import shutil
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import yaml
from lightkube import codecs
from typer.testing import CliRunner

from controlplane.prometheus import prometheus_binary
from pyhpa.cli.main import app
from pyhpa.controller import Settings as ControllerSettings
from pyhpa.controller.cache.autoscaler import parse_autoscaler
from pyhpa.simulate import Settings, input_files
from pyhpa.tune import Objective, check_held_out, prepare, search

needs_prometheus = pytest.mark.skipif(
    prometheus_binary() is None or shutil.which("promtool") is None,
    reason="prometheus/promtool are not installed here (.ci/run installs Debian's package)",
)

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "benchmarks" / "proactive" / "profile.yaml"
DEPLOYMENT = ROOT / "benchmarks" / "proactive" / "deployment.yaml"
T0 = datetime(2024, 3, 4, tzinfo=timezone.utc).timestamp()
HOUR = 3600
SETTINGS = Settings(sync_period_seconds=60.0)
HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: web, namespace: bench}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 2
  maxReplicas: {max_replicas}
  metrics:
  - type: {metric}
"""
CPU = "    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}\n"


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def daily(hours: float, low: float = 20.0, high: float = 150.0, seed: int = 1) -> np.ndarray:
    """Requests/s per minute: a daily cycle from ``low`` to ``high`` with a little noise."""
    t = np.arange(int(hours * 60)) * 60.0
    rng = np.random.default_rng(seed)
    base = low + (high - low) * 0.5 * (1 - np.cos(2 * math.pi * t / 86400))
    return base * (1 + 0.05 * rng.standard_normal(t.size)).clip(0.5)


def write_trace(path: Path, rps: np.ndarray) -> Path:
    lines = ["timestamp,rps"] + [f"{iso(T0 + 60 * i)},{v:.4f}" for i, v in enumerate(rps)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_hpa(path: Path, max_replicas: int = 30, metric: str = "Resource\n" + CPU) -> Path:
    path.write_text(HPA.format(max_replicas=max_replicas, metric=metric))
    return path


def prepared(tmp: Path, trace: Path, end_hours: float = 30, held_out: float = 6 * HOUR, hpa: Path | None = None,
             upstream_only: bool = True):
    files = input_files([hpa or write_hpa(tmp / "hpa.yaml")], DEPLOYMENT, trace, "rps", PROFILE)
    return prepare(files, end=iso(T0 + end_hours * HOUR), settings=SETTINGS, held_out_seconds=held_out,
                   upstream_only=upstream_only)


def tune_cli(tmp: Path, trace: Path, *extra: str, hpa: Path | None = None, end_hours: float = 30):
    out = tmp / "out"
    args = ["tune", "--hpa", str(hpa or write_hpa(tmp / "hpa.yaml")), "--target", str(DEPLOYMENT), "--profile",
            str(PROFILE), "--trace", str(trace), "--column", "rps", "--end", iso(T0 + end_hours * HOUR),
            "--held-out", str(6 * HOUR), "--sync-period", "60", "--output-dir", str(out), "--no-progress", *extra]
    return CliRunner().invoke(app, args), out


def simulate_cli(tmp: Path, hpa: Path, trace: Path, end_hours: float) -> dict:
    """summary.json of ``pyhpa simulate`` on ``hpa`` from the trace's start to ``end_hours``."""
    replay = tmp / "replay"
    done = CliRunner().invoke(app, ["simulate", "--hpa", str(hpa), "--target", str(DEPLOYMENT), "--profile",
                                    str(PROFILE), "--trace", str(trace), "--column", "rps", "--end",
                                    iso(T0 + end_hours * HOUR), "--sync-period", "60", "--output-dir", str(replay),
                                    "--no-plot", "--no-progress"])
    assert done.exit_code == 0, done.output
    return json.loads((replay / "summary.json").read_text())


def test_tuning_reads_neither_the_held_out_rows_nor_rows_after_end(tmp_path):
    """Changing the held-out rows changes no in-sample figure and no choice of the search; changing rows after
    --end changes nothing at all, held-out check included."""
    rps = daily(36)
    split, end = 24 * 60, 30 * 60
    other_held_out = rps.copy()
    other_held_out[split:end] *= 3.0
    other_held_out[end:] *= 5.0
    other_after_end = rps.copy()
    other_after_end[end:] = 0.0
    objective = Objective("overloaded_fraction", 0.02)
    results = []
    for name, series in (("a", rps), ("b", other_held_out), ("c", other_after_end)):
        d = tmp_path / name
        d.mkdir()
        p = prepared(d, write_trace(d / "trace.csv", series))
        assert p.tuning.load.trace.times.max() < T0 + 24 * HOUR <= p.tuning.load.trace.end
        assert p.held_out.load.trace.times.min() == T0 + 24 * HOUR and p.held_out.load.trace.end == T0 + 30 * HOUR
        current, evaluations, _ = search(p, objective, trials=3, jobs=1)
        best, _, _ = check_held_out(p, objective, current, evaluations, jobs=1)
        results.append((current, evaluations, best))
    (ca, ea, ba), (cb, eb, bb), (cc, ec, bc) = results
    in_sample = lambda evs: [(e.setting, e.in_sample) for e in evs]  # noqa: E731
    assert in_sample(ea) == in_sample(eb) == in_sample(ec)
    assert ca.in_sample == cb.in_sample == cc.in_sample
    assert ca.held_out != cb.held_out  # the held-out check does see the held-out rows
    assert (ca.held_out, ba.setting, ba.held_out) == (cc.held_out, bc.setting, bc.held_out)


def test_a_workload_with_a_step_change_yields_a_bigger_max(tmp_path):
    """The load steps from ~2 pods' worth to ~11 at 70 %; the current object caps at 4 replicas."""
    rps = np.where(np.arange(30 * 60) < 12 * 60, 20.0, 150.0) * (1 + 0.03 * np.sin(np.arange(30 * 60)))
    trace = write_trace(tmp_path / "step.csv", rps)
    p = prepared(tmp_path, trace, hpa=write_hpa(tmp_path / "small.yaml", max_replicas=4))
    objective = Objective("overloaded_fraction", 0.01)
    current, evaluations, _ = search(p, objective, trials=4, jobs=1)
    assert current.in_sample.overloaded_fraction > 0.3  # capped at 4 pods for half the day
    best, _, _ = check_held_out(p, objective, current, evaluations, jobs=1)
    needed = math.ceil(150 * 1.03 * 50 / (best.setting.target / 100 * 1000 - 10))
    assert best.setting.max_replicas > 4 and best.setting.max_replicas >= needed


def test_upstream_only_writes_an_hpa_that_simulate_replays_to_the_same_figures(tmp_path):
    """--upstream-only: a HorizontalPodAutoscaler; pyhpa simulate on the tuning part gives the in-sample
    figures tune reported; pyhpa explain and the controller's reader accept it."""
    trace = write_trace(tmp_path / "daily.csv", daily(30))
    result, out = tune_cli(tmp_path, trace, "--upstream-only", "--trials", "4", "--max-overloaded-fraction", "0.02")
    assert result.exit_code == 0, result.output
    assert "current vs recommended" in result.output
    rec = yaml.safe_load((out / "recommended.yaml").read_text())
    assert (rec["apiVersion"], rec["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")
    text = (out / "recommended.yaml").read_text()
    assert "  # target of spec.metrics[0]: 50 % -> " in text and "  # max 30 -> " in text
    summary = json.loads((out / "summary.json").read_text())
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    searched = [r for r in rows if r["origin"] == "search"]
    derived = [r for r in rows if r["origin"] not in ("search", "the current object")]  # by the held-out check
    assert summary["kind"] == "HorizontalPodAutoscaler" and len(searched) == 4
    assert summary["candidates"] == 4 + len(derived) and len(rows) == 1 + summary["candidates"]
    assert list(rows[0])[:4] == ["trial", "target", "min_replicas", "max_replicas"]
    assert (out / "frontier.png").stat().st_size > 10_000
    sim = simulate_cli(tmp_path, out / "recommended.yaml", trace, end_hours=24)
    tuned = summary["recommended"]["in_sample"]
    assert sim["pod_hours"] == tuned["pod_hours"] and sim["overloaded_seconds"] == tuned["overloaded_seconds"]
    # pyhpa explain accepts the object (the API server and the controller: the next test)
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}", "namespace": "bench", "labels": {"app": "web"}},
         "spec": {"containers": [{"name": "web", "image": "web", "resources": {"requests": {"cpu": "1"}}}]},
         "status": {"phase": "Running", "startTime": "2024-03-04T00:00:00Z",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-03-04T00:00:00Z"}]}}
        for i in range(3)]}))
    explained = CliRunner().invoke(app, ["explain", "--hpa", str(out / "recommended.yaml"), "--pods", str(pods),
                                         "--replicas", "3", "--recommendation", "3", "--now", "2024-03-05T00:00:00Z"])
    assert explained.exit_code == 0, explained.output
    assert "bench/web" in explained.output


async def test_the_upstream_only_recommendation_is_accepted_by_the_api_server_and_the_controller(kd, tmp_path):
    rec_dir = tmp_path / "r"
    rec_dir.mkdir()
    trace = write_trace(rec_dir / "daily.csv", daily(30))
    p = prepared(rec_dir, trace)
    current, evaluations, _ = search(p, Objective("overloaded_fraction", 0.02), trials=2, jobs=1)
    rec = p.manifest(evaluations[0].setting)
    rec["metadata"]["namespace"] = "default"
    created = await kd.async_client().create(codecs.from_dict(rec))
    assert created.spec.maxReplicas == rec["spec"]["maxReplicas"]
    stored = created.to_dict()
    stored.setdefault("status", {}).setdefault("desiredReplicas", 0)  # Go's zero value, as a real API server writes it
    a = parse_autoscaler(stored, ControllerSettings(health_port=None))  # how `pyhpa run --preview` reads native HPAs
    assert a.error is None and a.hpa is not None
    assert (a.hpa.min_replicas, a.hpa.max_replicas) == (rec["spec"]["minReplicas"], rec["spec"]["maxReplicas"])


def test_an_objective_no_setting_meets_is_refused_naming_the_closest(tmp_path):
    rps = daily(30, low=10, high=40)
    rps[::97] = 400.0  # one-minute spikes of 30 pods' worth: only capacity kept waiting serves them
    trace = write_trace(tmp_path / "spiky.csv", rps)
    result, out = tune_cli(tmp_path, trace, "--upstream-only", "--trials", "3", "--max-overloaded-fraction", "0")
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line
    assert "no setting met --max-overloaded-fraction 0 on the tuning part (4 tried); closest: target " in line
    assert not (out / "recommended.yaml").exists()


@pytest.mark.parametrize("case, message", [
    ("short", "too little history: 20.0 h"),
    ("flat", "flat workload"),
    ("empty", "empty workload"),
    ("external", "spec.metrics[0]"),
    ("both", "error: --max-overloaded-fraction, --max-unserved-fraction: give one of them: tune has one objective"),
    ("history offline", "error: --history: reads that much history from Prometheus in live mode"),  # issue 60
])
def test_refusals_are_one_line_and_exit_2(tmp_path, case, message):
    hours = 20 if case == "short" else 30
    rps = {"flat": np.full(hours * 60, 50.0), "empty": np.zeros(hours * 60)}.get(case, daily(hours))
    trace = write_trace(tmp_path / "t.csv", rps)
    hpa = None
    extra = []
    if case == "external":
        hpa = write_hpa(tmp_path / "ext.yaml", metric="External\n    external: {metric: {name: queue_depth}, "
                                                      "target: {type: AverageValue, averageValue: '30'}}\n")
    if case == "both":
        extra = ["--max-overloaded-fraction", "0.01", "--max-unserved-fraction", "0.01"]
    if case == "history offline":  # a live-mode flag on an offline run: refused, not ignored
        extra = ["--history", "100"]
    result, _ = tune_cli(tmp_path, trace, *extra, hpa=hpa, end_hours=hours)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error: ")
    assert message in result.output


# ------------------------------------------------------------------------------------------------ live mode
def cpu_history(path: Path, now: float, days: float) -> None:
    """``days`` of cAdvisor's CPU counter of the web pods, one sample a minute: a daily cycle from 0.5 to 6
    cores over the pods (the counter of web-0 carries it all)."""
    rng = np.random.default_rng(3)
    counter = 0.0
    lines = ["# TYPE container_cpu_usage_seconds_total counter"]
    for t in range(int(now - days * 86400), int(now) - 60, 60):
        cores = 0.5 + 5.5 * 0.5 * (1 - math.cos(2 * math.pi * (t % 86400) / 86400))
        counter += cores * (1 + 0.05 * rng.standard_normal()) * 60
        lines.append(f'container_cpu_usage_seconds_total{{namespace="default",pod="web-0",container="app"}} '
                     f"{counter:.3f} {t}")
    path.write_text("\n".join(lines) + "\n# EOF\n")


def guaranteed_web() -> dict:
    labels = {"app": "web"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
                                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5}}]}}}}


@contextlib.asynccontextmanager
async def live_web(kd, tmp_path: Path):
    """A real Prometheus with 2.2 days of ``default/web-0``'s CPU counter backfilled (``cpu_history``), and in the
    API double ``kd`` the Deployment ``web`` (``guaranteed_web``), its two pods at 500m, and a HorizontalAutoscaler
    ``web`` (CPU, at most 8 replicas): yields the Prometheus (``url``), stopped after the block."""
    import asyncio
    import time

    from controller_util import autoscaler, pod

    from controlplane.prometheus import PrometheusServer
    from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

    cpu_history(tmp_path / "history.om", time.time(), days=2.2)
    prom = PrometheusServer([], backfill=tmp_path / "history.om")
    await asyncio.to_thread(prom.__enter__)
    try:
        client = kd.async_client()
        await client.create(codecs.from_dict(guaranteed_web()))
        for i in range(2):
            kd.put_object(pod(f"web-{i}", "web", cpu="1"))
            kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "500m"}})
        await client.create(HorizontalAutoscaler(autoscaler("web", "web", max_replicas=8)))
        yield prom
    finally:
        await asyncio.to_thread(prom.__exit__, None, None, None)


@needs_prometheus
async def test_live_mode_reads_the_cluster_and_a_backfilled_prometheus(kd, tmp_path):
    import asyncio

    async with live_web(kd, tmp_path) as prom:
        out = tmp_path / "out"
        args = ["tune", "default/web", "--server", kd.url, "--prometheus-url", prom.url, "--history", "172800",
                "--sync-period", "60", "--trials", "3", "--output-dir", str(out), "--no-progress", "-o", "json"]
        result = await asyncio.to_thread(CliRunner().invoke, app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    live = summary["inputs"]["live"]
    assert live.startswith("default/web from the cluster; ")
    assert 'sum(rate(container_cpu_usage_seconds_total{namespace="default",pod=~"web-.*"' in live
    points = int(live.split("; ")[1].split()[0])
    assert 2 * 1440 - 30 <= points <= 2 * 1440 + 2  # two days at one point a minute
    target = yaml.safe_load((out / "live" / "target.yaml").read_text())
    assert target["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1"
    assert yaml.safe_load((out / "live" / "hpa.yaml").read_text())["spec"]["maxReplicas"] == 8
    rec = yaml.safe_load((out / "recommended.yaml").read_text())
    assert rec["metadata"] == {"name": "web", "namespace": "default"}
    # the history's peak is about 6 cores: pods limited to 1 CPU serve it with no fewer than 6
    assert rec["spec"]["maxReplicas"] >= 6
    assert summary["candidates"] == 3 and summary["recommended"]["held_out"] is not None


async def test_live_mode_refuses_an_autoscaler_that_is_not_there(kd, tmp_path):
    import asyncio

    args = ["tune", "default/nothing", "--server", kd.url, "--prometheus-url", "http://127.0.0.1:9", "--output-dir",
            str(tmp_path / "out")]
    result = await asyncio.to_thread(CliRunner().invoke, app, args)
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "HorizontalPodAutoscaler default/nothing" in result.output
    assert "not found" in result.output


def test_an_extended_setting_replays_in_simulate_to_the_figures_tune_saw(tmp_path):
    """A HorizontalAutoscaler with prediction and saturation, as tune writes it, gives in pyhpa simulate (rows
    before --start as the forecaster's history) the in-sample figures tune's search recorded."""
    from dataclasses import replace

    from pyhpa.simulate import run_simulation
    from pyhpa.tune import Setting
    from pyhpa.tune.search import _Runner

    trace = write_trace(tmp_path / "daily.csv", daily(60))
    files = input_files([write_hpa(tmp_path / "hpa.yaml")], DEPLOYMENT, trace, "rps", PROFILE)
    start, end = iso(T0 + 24 * HOUR), iso(T0 + 54 * HOUR)
    p = prepare(files, start=start, end=end, settings=SETTINGS, held_out_seconds=6 * HOUR)
    assert p.sources == ("prediction", "saturation")
    s = (Setting(target=75, min_replicas=2, max_replicas=20, scale_down_window_seconds=120, scale_up_percent=200)
         .with_source("saturation", demand_factor=2.5).with_source("prediction", quantile=0.8, lead_seconds=240))
    assert [source.name for source in s.sources] == ["prediction", "saturation"]  # the API's order, however built
    with _Runner(replace(p, held_out=None), 1) as runner:
        tuned = runner.map([(s, "tuning")])[0].figures
    manifest = tmp_path / "recommended.yaml"
    manifest.write_text(yaml.safe_dump(p.manifest(s)))
    assert yaml.safe_load(manifest.read_text())["kind"] == "HorizontalAutoscaler"
    sim = run_simulation([manifest], DEPLOYMENT, trace, "rps", profile=PROFILE, start=start,
                         end=iso(T0 + 48 * HOUR), settings=SETTINGS).runs[0].summary
    assert sim["prediction"]["history_rows_before_start"] > 0
    assert (sim["pod_hours"], sim["overloaded_seconds"], sim["scale_ups"] + sim["scale_downs"]) == (
        tuned.pod_hours, tuned.overloaded_seconds, tuned.scale_events)


# ------------------------------------------------------------------------------------------------ schedule windows
def step_trace(days: float, seed: int = 1) -> np.ndarray:
    """Requests/s per minute: 20 at night, 150 from 09:00 to 17:00 UTC every day (a step at the same minute)."""
    rng = np.random.default_rng(seed)
    minute = np.arange(int(days * 1440)) % 1440
    return np.where((minute >= 9 * 60) & (minute < 17 * 60), 150.0, 20.0) * (1 + 0.03 * rng.standard_normal(minute.size))


def random_bursts(days: float, seed: int = 1) -> np.ndarray:
    """Requests/s per minute: 40 with bursts to 150 of half an hour at random times (about three a day)."""
    rng = np.random.default_rng(seed)
    rps = 40.0 * (1 + 0.03 * rng.standard_normal(int(days * 1440)))
    for i in rng.choice(rps.size, size=int(days * 3), replace=False):
        rps[i:i + 30] = 150.0
    return rps


def test_a_daily_step_the_forecast_misses_gets_a_schedule_window(tmp_path):
    """A step from 2 to 9 pods' worth at 09:00 every day: upstream's HPA (its pods take ~80 s to start) and the
    prediction (it smooths the step) are late for it each day, more than --max-overloaded-fraction 0.001 allows;
    tune offers a window from 08:55 with a floor sized from the demand after the step, and recommends it; the
    recommendation replays in pyhpa simulate to the figures tune reported."""
    trace = write_trace(tmp_path / "step.csv", step_trace(4))
    result, out = tune_cli(tmp_path, trace, "--trials", "10", "--max-overloaded-fraction", "0.001", "--held-out",
                           str(24 * HOUR), end_hours=96)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert [(w["start"], w["durationSeconds"], w["hits"], w["seen"]) for w in summary["windows"]] == [
        ("55 8 * * *", 600, 3, 3)]
    rec = yaml.safe_load((out / "recommended.yaml").read_text())
    assert rec["kind"] == "HorizontalAutoscaler"
    (window,) = rec["spec"]["schedules"]
    assert (window["name"], window["start"], window["durationSeconds"], window["timeZone"]) == (
        "tune-daily-0855", "55 8 * * *", 600, "UTC")
    # the floor: the pods the demand after the step (~150 requests/s) needs at the recommended target, times the
    # factor the search chose (at most 1.2)
    demand = summary["windows"][0]["demand_rps"]
    assert 150 < demand < 170
    target = rec["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"]
    assert rec["spec"]["minReplicas"] < window["minReplicas"] <= math.ceil(1.2 * demand * 50 / (target * 10 - 10))
    text = (out / "recommended.yaml").read_text()
    assert "# window tune-daily-0855 (55 8 * * *, UTC, 10 min, floor " in text
    assert "every day at 09:00-09:05 UTC the replays of the tuning part were late for a peak" in text
    assert "on 3 of 3 days" in text and "the windows are worth their pod-hours: " in text
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    assert {"schedule_start", "schedule_duration_seconds", "schedule_time_zone", "schedule_min_replicas"} <= set(rows[0])
    # the forecast misses the step: no setting without a window met the objective, prediction on or off
    plain = [r for r in rows if not r["schedule_start"]]
    assert plain and not any(r["in_sample_meets_objective"] == "True" for r in plain)
    assert any(r["prediction"] == "True" for r in plain)
    assert any(r["schedule_start"] == "55 8 * * *" and r["recommended"] == "True" for r in rows)
    columns = list(rows[0])[1:list(rows[0]).index("schedule_min_replicas") + 1]
    assert len({tuple(r[c] for c in columns) for r in rows[1:]}) == len(rows) - 1  # each setting replayed once
    sim = simulate_cli(tmp_path, out / "recommended.yaml", trace, end_hours=72)
    assert sim["pod_hours"] == summary["recommended"]["in_sample"]["pod_hours"]
    assert sim["extensions"]["schedules"]["active_syncs"] == 3 * 10


def test_random_bursts_get_no_schedule_window(tmp_path):
    """Bursts at random times: no time of day recurs, so no window is offered, and the comment says why."""
    trace = write_trace(tmp_path / "random.csv", random_bursts(4))
    result, out = tune_cli(tmp_path, trace, "--trials", "8", "--max-overloaded-fraction", "0.005", "--held-out",
                           str(24 * HOUR), end_hours=96)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["windows"] == [] and summary["extensions_searched"]["schedules"] is True
    text = (out / "recommended.yaml").read_text()
    assert "schedules" not in yaml.safe_load(text)["spec"]
    assert "# no schedule windows: no peak recurred at the same clock time in the replays of the tuning part" in text
    assert all(not r["schedule_start"] for r in csv.DictReader((out / "candidates.csv").open()))


def _episodes(days: int, at: list[tuple[int, float, float]], noise: int = 2, seed: int = 0) -> tuple:
    """Overload episodes over ``days`` days from T0: ``at`` (day, hour, seconds) plus ``noise`` a day at
    random times (one minute each)."""
    rng = np.random.default_rng(seed)
    eps = [(T0 + d * 86400 + h * HOUR, s) for d, h, s in at]
    eps += [(T0 + float(t), 60.0) for t in rng.uniform(0, days * 86400, size=noise * days)]
    return tuple(sorted(eps))


@pytest.mark.parametrize("case", ["morning ramp", "weekly batch", "over midnight", "random", "always"])
def test_recurring_peaks_are_found_where_the_replays_were_late_at_the_same_clock_time(case):
    """windows.detect: a ramp late on 5 of 6 mornings gives a daily window; a batch on each of three Wednesdays
    a weekly one; a peak over midnight one window across it; overload at random times or all the time gives
    none. Floors are sized from the load."""
    from pyhpa.tune import windows

    days = 21 if case == "weekly batch" else 6
    at = {"morning ramp": [(d, 7.5, 700.0) for d in (0, 1, 2, 4, 5)],
          "weekly batch": [(d, 2.0, 600.0) for d in (2, 9, 16)],  # T0 is a Monday: days 2, 9, 16 are Wednesdays
          "over midnight": [(d, 23 + 55 / 60, 1200.0) for d in range(5)],  # 23:55 to 00:15
          "random": [], "always": [(d, h, 1800.0) for d in range(days) for h in range(0, 24, 1)]}[case]
    replay = windows.Replayed("upstream", _episodes(days, at), T0, T0 + days * 86400)
    times = T0 + 60.0 * np.arange(days * 1440)
    rps = np.where((times % 86400) // HOUR == 7, 90.0, 30.0)
    peaks = windows.detect([replay], times, rps, T0 + days * 86400, lead_seconds=95.0)
    if case == "morning ramp":
        (peak,) = peaks
        assert (peak.cron, peak.duration_seconds, peak.hits, peak.seen) == ("25 7 * * *", 20 * 60, 5, 6)
        assert peak.name == "tune-daily-0725" and peak.demand_rps == 90.0
        assert "every day at 07:30-07:45 UTC" in peak.why() and "on 5 of 6 days" in peak.why()
    elif case == "weekly batch":
        (peak,) = peaks
        assert (peak.cron, peak.weekdays, peak.hits, peak.seen) == ("55 1 * * 3", (2,), 3, 3)
        assert peak.name == "tune-weekly-wed-0155" and peak.demand_rps == 30.0
        assert "every Wed at 02:00-02:10 UTC" in peak.why() and "on 3 of 3 weeks" in peak.why()
    elif case == "over midnight":
        (peak,) = peaks
        assert (peak.cron, peak.duration_seconds, peak.late, peak.hits, peak.seen) == (
            "50 23 * * *", 25 * 60, "23:55-00:15", 5, 6)
    else:
        assert peaks == []


def test_a_replay_stopped_early_decided_exactly_as_the_full_one_until_it_stopped(tmp_path):
    """The stops tune gives the simulator end a replay early without changing a decision before: the stopped
    run's timeline is the full run's up to the stop, its overload past the budget, its figures no larger."""

    from pyhpa.simulate import replay
    from pyhpa.tune import Setting
    from pyhpa.tune.search import COSTLIER, OVER_LIMIT, Stop

    p = prepared(tmp_path, write_trace(tmp_path / "daily.csv", daily(30)))
    auto = p.autoscaler_for(Setting(target=85, min_replicas=1, max_replicas=20))
    full = replay(auto, "full", p.target, p.profile, p.tuning.load, p.settings)
    assert full.summary["overloaded_seconds"] > 0 and not full.cluster.stopped
    for stop, why in ((Stop(overloaded_seconds=full.summary["overloaded_seconds"] / 2), OVER_LIMIT),
                      (Stop(pod_seconds=full.summary["pod_hours"] * 3600 / 2), COSTLIER)):
        run = replay(auto, "stopped", p.target, p.profile, p.tuning.load, p.settings, stop=stop)
        assert run.cluster.stopped and stop.reason(run.cluster) == why
        rows = run.cluster.timeline.rows
        assert 0 < len(rows) < len(full.cluster.timeline) and rows == full.cluster.timeline.rows[:len(rows)]
        assert run.summary["simulated_seconds"] == rows[-1][0] - p.tuning.load.trace.start
        assert run.summary["pod_hours"] <= full.summary["pod_hours"]
        assert run.summary["overloaded_seconds"] <= full.summary["overloaded_seconds"]
        if why == OVER_LIMIT:
            assert run.summary["overloaded_seconds"] > stop.overloaded_seconds
        else:
            assert run.cluster.stats.pod_seconds > stop.pod_seconds



def test_a_utilization_target_without_a_request_warns_once_before_the_search(tmp_path):
    """(issue 37) As ``pyhpa simulate`` does: a request of 0 is legal, and every replayed sync then fails with
    upstream's FailedGetResourceMetric; tune says so in one line on stderr before it searches."""
    target = yaml.safe_load(DEPLOYMENT.read_text())
    target["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0", "memory": "1Gi"}}
    tfile = tmp_path / "target.yaml"
    tfile.write_text(yaml.safe_dump(target))
    hfile = write_hpa(tmp_path / "hpa.yaml")
    trace = write_trace(tmp_path / "trace.csv", daily(36))
    expected = (f"{tfile}: Deployment bench/web: spec.template.spec.containers[0].resources.requests.cpu: container "
                f"web requests 0 cpu, so the Utilization target of {hfile} (HorizontalPodAutoscaler bench/web, "
                f"spec.metrics[0]) cannot be computed: every sync will report upstream's FailedGetResourceMetric "
                f"(no metrics returned matched known pods)")
    for deployment, said in ((tfile, [expected]), (DEPLOYMENT, [])):  # DEPLOYMENT requests 1 CPU: nothing to say
        lines: list[str] = []
        prepare(input_files([hfile], deployment, trace, "rps", PROFILE), end=iso(T0 + 30 * HOUR), settings=SETTINGS,
                held_out_seconds=6 * HOUR, upstream_only=True, warn=lines.append)
        assert lines == said
    result = CliRunner().invoke(app, [
        "tune", "--hpa", str(hfile), "--target", str(tfile), "--profile", str(PROFILE), "--trace", str(trace),
        "--column", "rps", "--end", iso(T0 + 30 * HOUR), "--held-out", str(6 * HOUR), "--sync-period", "60",
        "--output-dir", str(tmp_path / "out"), "--no-progress", "--upstream-only", "--trials", "2"])
    assert result.stderr.splitlines()[0] == f"warning: {expected}", result.output


def test_a_prometheus_first_metrics_tuned_target_is_the_one_the_manifest_carries(tmp_path):
    """A HorizontalAutoscaler scaling on a per-pod PromQL metric (the ``Prometheus`` extension, acting as a Pods
    metric): the manifest tune writes for a setting carries that setting's target in ``prometheus.target``, and
    read back it is the autoscaler tune searched (nothing else of the user's metric rewritten)."""
    from pyhpa.adapters.autoscaler import read_autoscaler
    from pyhpa.adapters.promql import OFFLINE_SERVER
    from pyhpa.tune import Setting

    profile = tmp_path / "profile.yaml"
    profile.write_text(PROFILE.read_text() + "metrics:\n  http_rps: {source: served_requests_per_second}\n")
    hpa = tmp_path / "hpa.yaml"
    hpa.write_text(HPA.format(max_replicas=30, metric="Prometheus\n").replace(
        "autoscaling/v2", "pyhpa.dev/v1alpha1").replace("HorizontalPodAutoscaler", "HorizontalAutoscaler")
        + "    prometheus: {name: http_rps, query: 'sum by (pod) (rate(http_requests_total[1m]))', podLabel: pod,\n"
          "                 server: 'http://prometheus:9090', target: {type: AverageValue, averageValue: '10'}}\n")
    trace = write_trace(tmp_path / "daily.csv", daily(30))
    files = input_files([hpa], DEPLOYMENT, trace, "rps", profile)
    p = prepare(files, end=iso(T0 + 30 * HOUR), settings=SETTINGS, held_out_seconds=6 * HOUR, upstream_only=False)
    assert p.kind.type == "AverageValue" and p.kind.current == 10_000  # milli-units of the metric
    s = Setting(target=12_500, min_replicas=3, max_replicas=24, scale_down_window_seconds=120, scale_up_percent=200)
    doc = p.manifest(s)
    metric = doc["spec"]["metrics"][0]
    assert metric["prometheus"]["target"] == {"type": "AverageValue", "averageValue": "12500m"}
    written = yaml.safe_load(hpa.read_text())["spec"]["metrics"][0]["prometheus"]
    assert {k: v for k, v in metric["prometheus"].items() if k != "target"} == \
        {k: v for k, v in written.items() if k != "target"}
    back = read_autoscaler(doc, prometheus_server=OFFLINE_SERVER).hpa
    assert (back.metrics[0].type, back.metrics[0].name, back.metrics[0].target_average_milli) == ("Pods", "http_rps", 12_500)
    assert (back.min_replicas, back.max_replicas) == (3, 24)


# ------------------------------------------------------------------------------------------------ a floor (issue 60)
def test_min_replicas_floor_keeps_every_setting_tried_and_the_recommendation_at_or_above_it(tmp_path):
    """Quiet nights make tune drop the user's ``minReplicas: 2`` to 1 (a few pod-hours saved); a user who keeps two
    replicas for redundancy says ``--min-replicas-floor 2``: no setting tried has fewer (candidates.csv), the
    recommendation keeps two, recommended.yaml's comment and summary.json's inputs say so."""
    trace = write_trace(tmp_path / "quiet-nights.csv", daily(30, low=3, high=60))
    (tmp_path / "free").mkdir()
    free, out = tune_cli(tmp_path / "free", trace, "--upstream-only", "--trials", "8", "--jobs", "1")
    assert free.exit_code == 0, free.output
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    assert min(int(r["min_replicas"]) for r in rows) == 1  # without the floor, tune goes down to 1 ...
    assert json.loads((out / "summary.json").read_text())["recommended"]["setting"]["min_replicas"] == 1
    (tmp_path / "kept").mkdir()
    kept, out = tune_cli(tmp_path / "kept", trace, "--upstream-only", "--trials", "8", "--jobs", "1",
                         "--min-replicas-floor", "2")
    assert kept.exit_code == 0, kept.output
    rows = list(csv.DictReader((out / "candidates.csv").open()))
    assert len(rows) > 3 and min(int(r["min_replicas"]) for r in rows) == 2  # ... with it, never below 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["recommended"]["setting"]["min_replicas"] >= 2
    assert summary["inputs"]["min_replicas_floor"] == 2
    assert "(none below 2 was tried: --min-replicas-floor)" in (out / "recommended.yaml").read_text()
    assert yaml.safe_load((out / "recommended.yaml").read_text())["spec"]["minReplicas"] >= 2


def test_the_users_object_below_the_floor_is_replayed_but_never_recommended(tmp_path):
    """``check_held_out`` with the user's object as the only setting that meets the objective: it is the
    recommendation without a floor, and with a floor above its ``minReplicas`` it is not: nothing else met the
    objective, so tune refuses, naming the objective and why the current object does not count."""
    from dataclasses import replace

    from pyhpa.adapters.errors import InputError
    from pyhpa.tune.search import Evaluation, _Runner, check_held_out, space

    p = prepared(tmp_path, write_trace(tmp_path / "daily.csv", daily(30)))  # the HPA: minReplicas 2, 50 %
    objective = Objective("overloaded_fraction", 0.05)
    with _Runner(p, 1) as runner:
        out = runner.map([(None, "tuning")])[0]

    def current() -> Evaluation:
        return Evaluation(-1, space.current_setting(p.autoscaler.hpa, p.kind), out.figures)

    assert objective.met(out.figures)
    mine = current()
    best, _, _ = check_held_out(p, objective, mine, [], jobs=1, floor_budget=0.0)
    assert best is mine
    below = current()
    with pytest.raises(InputError) as err:
        check_held_out(replace(p, min_replicas_floor=3), objective, below, [], jobs=1, floor_budget=0.0)
    assert "no setting met --max-overloaded-fraction 0.05 on the tuning part (1 tried (the current object's " \
           "minReplicas 2 is below --min-replicas-floor 3)); closest: " in str(err.value)


@pytest.mark.parametrize("floor", ["0", "31", "-1"])
def test_a_floor_out_of_bounds_is_one_line(tmp_path, floor):
    trace = write_trace(tmp_path / "t.csv", daily(30))
    result, out = tune_cli(tmp_path, trace, "--trials", "2", "--min-replicas-floor", floor)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error: --min-replicas-floor: must be from 1 "
                                                                       "to the autoscaler's maxReplicas (30, ")
    assert not (out / "recommended.yaml").exists()
