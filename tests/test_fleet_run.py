"""Issue 38: a fleet on one clock (``pyhpa fleet simulate``): consistent with ``pyhpa simulate`` where nodes are
no constraint, and node autoscalers that behave as their documentation says (Cluster Autoscaler's FAQ
"How does scale-up work?" / "How does scale-down work?", Karpenter's "Disruption" and "Scheduling" pages):

- a workload alone on a pool with nodes to spare and no provisioning delay runs exactly as ``pyhpa simulate``;
- Cluster Autoscaler adds a node within one ``scan-interval`` of the first pod that fits no node; removes a node
  only after it was below ``scale-down-utilization-threshold`` for ``scale-down-unneeded-time`` and
  ``scale-down-delay-after-add`` after the last scale-up; never below ``minNodes``;
- Karpenter launches after the batch window closes (``batchIdleDuration`` after the last pending pod), the cheapest
  instance type that holds the batch; removes empty nodes ``consolidateAfter`` after their last pod event; and
  replaces an underutilized expensive node by a cheaper one.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from pyhpa.adapters.autoscaler import find_autoscaler
from pyhpa.adapters.snapshot import read_document
from pyhpa.cli.main import app
from pyhpa.fleet.engine import FleetRun
from pyhpa.fleet.spec import load_fleet
from pyhpa.simulate import (
    BUNDLED,
    Settings,
    bundled_path,
    input_files,
    load_autoscaler,
    read_load,
    read_workload,
    replay,
)

MIN = 60.0


def _write(tmp_path: Path, spec: dict) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "pyhpa.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "t"},
                                    "spec": spec}))
    return path


def _bundled_workload(name: str = "web") -> dict:
    return {"name": name, "autoscaler": str(bundled_path("hpa")), "target": str(bundled_path("target")),
            "profile": str(bundled_path("profile")),
            "trace": {"file": str(bundled_path("trace")), "column": BUNDLED["column"]}}


def test_one_workload_with_nodes_to_spare_runs_exactly_as_pyhpa_simulate(tmp_path):
    """The issue's consistency check: the bundled example as a fleet of one, on a pool of 40 nodes from the start
    (more than it ever needs) with no provisioning delay, gives ``pyhpa simulate``'s timeline, scale events and
    figures to the last bit."""
    fleet = load_fleet(_write(tmp_path, {
        "nodePools": [{"name": "p", "instanceTypes": [{"name": "big", "cpu": "16", "memory": "64Gi",
                                                        "pricePerHour": 1.0}],
                       "minNodes": 40, "maxNodes": 40, "provisioningSeconds": {"median": 0, "p90": 0}}],
        "workloads": [_bundled_workload()]}))
    run = FleetRun(fleet, Settings(seed=5), keep_rows=True).run()
    files = input_files([], None, None, None, None)
    profile, target = read_workload(files)
    hpa_file = str(files.hpa[0])
    settings = Settings(seed=5)
    h = load_autoscaler(find_autoscaler(read_document(hpa_file), hpa_file), hpa_file, target, settings)
    alone = replay(h, "web", target, profile, read_load(files, [h], profile, target), settings).cluster
    fleet_cluster = run.clusters[0]
    assert len(alone.scale_events) > 10 and run.stats[0].pods_bound > 10  # it scaled, through the fleet's scheduler
    assert fleet_cluster.timeline == alone.timeline
    assert fleet_cluster.scale_events == alone.scale_events
    assert asdict(fleet_cluster.stats) == asdict(alone.stats)
    # without keep_rows, each cluster keeps only what its summary reads, and the summary is the same
    lean = FleetRun(fleet, Settings(seed=5)).run()
    from pyhpa.fleet.report import summarize_fleet
    assert summarize_fleet(lean) == summarize_fleet(run)
    assert run.stats[0].node_wait_seconds == 0 and not any(e[1] == "NodeLaunched" and e[0] > run.start
                                                           for e in run.events)


def test_a_predicting_workload_keeps_only_its_forecasters_history_and_runs_exactly_as_pyhpa_simulate(tmp_path):
    """A workload whose autoscaler predicts (``historySeconds`` three days) on 7 days of a daily rise before the
    fleet's span: the fleet keeps of those rows only the three days its forecaster learns from
    (``pyhpa.fleet.spec._replayed``, ``pyhpa.simulate.prediction.history_start``), and runs as ``pyhpa simulate
    --start`` (which reads them all): the same timeline, scale events and figures, the forecaster's every figure
    at every sync the same to the bit."""
    day = 86400
    t0 = 1_000_080_000 - 1_000_080_000 % day  # a UTC midnight
    t = t0 + np.arange(0, 8 * day, 60.0)
    rising = ((t - t0) % day >= 3 * 3600) & ((t - t0) % day < 5 * 3600)  # 1 request/s, 6 from 03:00 to 05:00
    rps = np.where(rising, 6.0, 1.0) * (1 + 0.03 * np.random.default_rng(0).standard_normal(t.size))
    trace = tmp_path / "daily.csv"
    stamps = pd.to_datetime(t, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%SZ")
    pd.DataFrame({"timestamp": stamps, "requests_per_second": np.round(rps, 3)}).to_csv(trace, index=False)
    hpa = yaml.safe_load(bundled_path("hpa").read_text())
    hpa.update(apiVersion="pyhpa.dev/v1alpha1", kind="HorizontalAutoscaler")
    hpa["spec"]["prediction"] = {"historySeconds": 3 * day}
    hpa_file = tmp_path / "predictive.yaml"
    hpa_file.write_text(yaml.safe_dump(hpa))
    start, end = "2001-09-17T00:00:00Z", "2001-09-17T06:00:00Z"  # the eighth day, its rise
    assert t0 + 7 * day == 1000684800  # 2001-09-17T00:00:00Z
    workload = {**_bundled_workload(), "autoscaler": str(hpa_file),
                "trace": {"file": str(trace), "column": "requests_per_second"}}
    fleet = load_fleet(_write(tmp_path, {
        "nodePools": [{"name": "p", "instanceTypes": [{"name": "big", "cpu": "16", "memory": "64Gi",
                                                        "pricePerHour": 1.0}],
                       "minNodes": 40, "maxNodes": 40, "provisioningSeconds": {"median": 0, "p90": 0}}],
        "workloads": [workload]}), start=start, end=end)
    assert fleet.workloads[0].trace.times.size == 3 * 1440 + 1 + 6 * 60  # of 7 days before the span, three (and a row)
    run = FleetRun(fleet, Settings(seed=5), keep_rows=True).run()
    files = input_files([str(hpa_file)], bundled_path("target"), str(trace), "requests_per_second",
                        bundled_path("profile"))
    profile, target = read_workload(files)
    h = load_autoscaler(find_autoscaler(read_document(str(hpa_file)), str(hpa_file)), str(hpa_file), target,
                        Settings(seed=5))
    alone = replay(h, "web", target, profile, read_load(files, [h], profile, target, start=start, end=end),
                   Settings(seed=5)).cluster
    ours, theirs = run.clusters[0], alone
    assert theirs.prediction.decided > 0 and len(theirs.scale_events) > 3  # it predicted, and scaled
    assert theirs.prediction.history_rows == ours.prediction.history_rows == 3 * 1440 + 1
    assert ours.timeline == theirs.timeline and ours.scale_events == theirs.scale_events
    assert asdict(ours.stats) == asdict(theirs.stats)
    assert ours.prediction.summary() == theirs.prediction.summary()
    for series in ("times", "observed", "upper", "point", "low", "high", "provisioned"):
        assert getattr(ours.prediction, series).tobytes() == getattr(theirs.prediction, series).tobytes(), series


def _step_trace(tmp_path: Path, low: float, high: float, minutes=(60, 120, 240)) -> Path:
    """A per-minute trace: ``low`` requests/s, then ``high``, then ``low`` again."""
    rows = ["timestamp,requests_per_second"]
    t = 0
    for value, n in zip((low, high, low), minutes):
        for _ in range(n):
            rows.append(f"2026-01-05T{t // 60:02d}:{t % 60:02d}:00Z,{value}")
            t += 1
    path = tmp_path / "step.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def workloads_on(trace: Path, scales: tuple[float, ...] = (1.0, 1.0)) -> list[dict]:
    """The bundled example's autoscaler, Deployment and profile as workloads w0, w1, ... on ``trace``, one a scale."""
    out = []
    for i, scale in enumerate(scales):
        w = _bundled_workload(f"w{i}")
        w["trace"] = {"file": str(trace), "column": "requests_per_second", "scale": scale}
        out.append(w)
    return out


def _step_fleet(tmp_path: Path, model: str, pool: dict, settings: dict | None = None) -> FleetRun:
    trace = _step_trace(tmp_path, 0.5, 70, minutes=(60, 120, 300))
    spec = {"nodeAutoscaler": {"model": model, model: settings or {}}, "nodePools": [pool],
            "workloads": workloads_on(trace)}
    return FleetRun(load_fleet(_write(tmp_path, spec)), Settings(seed=1)).run()


def _events(run: FleetRun, kind: str) -> list[tuple]:
    return [e for e in run.events if e.kind == kind]


SMALL = {"name": "m5.large", "cpu": "1", "memory": "4Gi", "pricePerHour": 0.1}


def test_cluster_autoscaler_scales_up_within_a_scan_and_down_only_after_the_unneeded_time(tmp_path):
    pool = {"name": "p", "instanceTypes": [SMALL], "daemonSetOverhead": {"cpu": "100m", "memory": "256Mi"},
            "minNodes": 2, "maxNodes": 30, "provisioningSeconds": {"median": 60, "p90": 60}}
    run = _step_fleet(tmp_path, "cluster-autoscaler", pool)
    launched = [e for e in _events(run, "NodeLaunched") if e[0] > run.start]
    unschedulable = [e[0] for e in _events(run, "PodUnschedulable")]
    deleted = _events(run, "NodeDeleted")
    assert len(launched) >= 3 and len(deleted) >= 3 and unschedulable
    # a scale-up comes within one scan interval (10 s) of a pod that found no node, never before it
    first = min(unschedulable)
    assert 0 <= min(e[0] for e in launched) - first <= 10
    for t, *_ in launched:
        assert any(0 <= t - u <= 10 for u in unschedulable)
    # the new nodes are Ready after the provisioning delay, and the pods that waited for them were bound
    ready = {e[3]: e[0] for e in _events(run, "NodeReady")}
    assert all(ready[name] == t + 60 for t, _, _, name, *_ in launched)
    assert sum(s.pods_waited_for_node for s in run.stats) > 0
    # removals: only after scale-down-unneeded-time (10 min) below the threshold, and 10 min after the last scale-up
    for t, _, _, name, *_ in deleted:
        assert t - run.autoscaler.unneeded_since[name] >= 600  # the model's mark: first found unneeded
        assert t - max(lt for lt, *_ in launched if lt <= t) >= 600
    # never below minNodes
    assert min(r.nodes + r.nodes_launching for r in run.samples) >= 2
    assert run.samples[-1].nodes == 2  # back to minNodes once the load is low again


def test_cluster_autoscaler_removes_no_node_at_or_above_the_utilization_threshold(tmp_path):
    """With ``scale-down-utilization-threshold`` 0.2, a node holding one pod (200m + 100m DaemonSet overhead of
    1 CPU: 30 %) is needed: only nodes with no pod (10 %) are removed."""
    pool = {"name": "p", "instanceTypes": [SMALL], "daemonSetOverhead": {"cpu": "100m", "memory": "256Mi"},
            "minNodes": 1, "maxNodes": 30, "provisioningSeconds": {"median": 60, "p90": 60}}
    run = _step_fleet(tmp_path, "cluster-autoscaler", pool, {"scale-down-utilization-threshold": 0.2})
    deleted = _events(run, "NodeDeleted")
    assert deleted and all(e[4].startswith("0 pods") for e in deleted)
    nodes = {n.name: n for n in run.pools["p"].all}
    assert all(n.deleted_at == float("inf") for n in nodes.values() if n.pod_count > 0)


def test_cluster_autoscaler_gives_up_on_a_node_not_ready_within_max_node_provision_time_and_backs_off(tmp_path):
    """Every node takes 20 minutes to come up, more than ``max-node-provision-time`` (15m): each is deleted 15
    minutes after its launch (a ``ScaleUpTimedOut``, billed until then, never Ready), and the node group is left
    out of scale-ups for ``initial-node-group-backoff-duration`` (5m), then twice as long after each failure that
    follows an ended backoff (10m, 20m; at most 30m), while the pods keep waiting."""
    pool = {"name": "p", "instanceTypes": [SMALL], "daemonSetOverhead": {"cpu": "100m", "memory": "256Mi"},
            "minNodes": 2, "maxNodes": 30, "provisioningSeconds": {"median": 1200, "p90": 1200}}
    run = _step_fleet(tmp_path, "cluster-autoscaler", pool)
    launched = {e[3]: e[0] for e in _events(run, "NodeLaunched") if e[0] > run.start}
    timed_out = {e[3]: e[0] for e in _events(run, "ScaleUpTimedOut")}
    deleted = {e[3]: e[0] for e in _events(run, "NodeDeleted")}
    ready = {e[3] for e in _events(run, "NodeReady") if e[0] > run.start}
    assert launched and not ready
    for name, t in launched.items():  # each given up at the first loop (every 10 s) 15 minutes after its launch
        if name in timed_out:
            assert 900 <= timed_out[name] - t < 910 and deleted[name] == timed_out[name]
        else:  # still launching when the run ended
            assert run.end - t < 910
    nodes = {n.name: n for n in run.pools["p"].all}
    assert all(nodes[name].deleted_at - nodes[name].launched == timed_out[name] - t for name, t in launched.items()
               if name in timed_out)
    # the backoff, as the numbers say: a failure during a backoff (a second scale-up timing out in it)
    # keeps its duration; one after it ended doubles it
    failures = sorted(set(timed_out.values()))
    spans, duration, until = [], 0.0, None
    for f in failures:
        duration = 300.0 if until is None else (min(2 * duration, 1800.0) if until < f else duration)
        until = f + duration
        spans.append((f, until, duration))
    assert [d for _, _, d in spans if d > 300][:2] == [600.0, 1200.0]
    starts = sorted(launched.values())
    for f, end, _ in spans:
        assert not any(f < t < end for t in starts)  # no scale-up of the group while it is backed off
    # while the load is high (minutes 60 to 180) pods wait: the next scale-up comes at the first loop after a backoff
    checked = 0
    for f, end, _ in spans:
        if not any(f < g < end + 10 for g in failures) and end < run.start + 180 * MIN:
            checked += 1
            assert any(end <= t < end + 10 for t in starts), (f, end)
    assert checked >= 2
    assert sum(s.node_wait_seconds for s in run.stats) > 3600


def test_karpenter_launches_when_the_batch_closes_and_consolidates_onto_cheaper_nodes(tmp_path):
    """Nodes come at a batch's close, each the cheapest type that holds its pods (a 700m node holds three 200m
    pods beside the DaemonSet's 100m: four or more take the 8-CPU type); once the load falls, the expensive nodes
    are removed or replaced by cheaper ones, and none is disrupted within ``consolidateAfter`` of its last pod
    event."""
    small = {**SMALL, "cpu": "700m"}
    big = {"name": "m5.2xlarge", "cpu": "8", "memory": "32Gi", "pricePerHour": 0.8}
    pool = {"name": "p", "instanceTypes": [small, big], "daemonSetOverhead": {"cpu": "100m", "memory": "256Mi"},
            "minNodes": 0, "maxNodes": 30, "provisioningSeconds": {"median": 0, "p90": 0}}
    run = _step_fleet(tmp_path, "karpenter", pool, {"consolidateAfter": "5m"})
    nodes = {n.name: n for n in run.pools["p"].all}
    launched = [e for e in _events(run, "NodeLaunched") if e[0] > run.start]
    unschedulable = sorted(e[0] for e in _events(run, "PodUnschedulable"))
    assert launched and unschedulable
    # a launch for pending pods (not a replacement) is at a batch's close: 1 s (batchIdleDuration) after the last pod
    # that found no node, or 10 s (batchMaxDuration) after the first
    for t, _, _, name, *_ in launched:
        if nodes[name].replaces is None:
            assert any(t - u in (1.0, 10.0) for u in unschedulable), t - run.start
    kinds = [e[4] for e in launched]
    assert "m5.2xlarge" in kinds and "m5.large" in kinds
    deleted = _events(run, "NodeDeleted")
    big_nodes = [n for n in nodes.values() if n.instance_type == "m5.2xlarge"]
    assert big_nodes and all(n.deleted_at < run.end for n in big_nodes)  # consolidated away
    assert any(not e[4].startswith("0 pods") for e in deleted)  # pods moved off a node to cheaper room
    for _, _, _, name, detail, _ in deleted:
        assert float(detail.split("last pod event ")[1].split(" s")[0]) >= 300 or nodes[name].replaced_by is not None
    assert run.samples[-1].cost_per_hour <= 0.2 + 1e-9  # at the end: two small nodes at most


def test_pyhpa_fleet_simulate_writes_its_outputs(tmp_path):
    path = _small_fleet(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fleet"]["workloads"] == 2 and summary["fleet"]["cost"] > 0
    assert [w["label"] for w in summary["workloads"]] == ["w0", "w1"]
    assert (out / "timeline.csv").read_text().splitlines()[0].startswith("time,pool,nodes,nodes_launching")
    assert (out / "workloads.csv").read_text().splitlines()[0].startswith("workload,pool,pod_hours")
    assert "NodeLaunched" in (out / "events.csv").read_text()
    assert "w0" in r.output and "total" in r.output


def test_fleet_simulate_o_json_prints_the_summary_on_one_line(tmp_path):
    """``-o json`` (docs/cli.md, issue 60): one object on one line, summary.json's; comparing, both summaries and the
    comparison; no table, no progress."""
    path = _small_fleet(tmp_path)
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(tmp_path / "one"), "--no-plot",
                                 "-o", "json"])
    assert r.exit_code == 0, r.output
    assert r.output.count("\n") == 1
    assert json.loads(r.output) == json.loads((tmp_path / "one" / "summary.json").read_text())
    out = tmp_path / "two"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--what-if", "nodeAutoscaler=karpenter",
                                 "--output-dir", str(out), "--no-plot", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert r.output.count("\n") == 1
    got = json.loads(r.output)
    assert got["a"] == json.loads((out / "a" / "summary.json").read_text())
    assert got["b"] == json.loads((out / "b" / "summary.json").read_text())
    rows = list(csv.DictReader((out / "compare.csv").read_text().splitlines()))
    assert [w["workload"] for w in got["compare"]["workloads"]] == [row["workload"] for row in rows[:-1]]
    assert got["compare"]["total"]["cost"]["b"] == got["b"]["fleet"]["cost"]


def test_a_bad_fleet_file_is_one_line_and_exit_code_2(tmp_path):
    w = _bundled_workload()
    w["nodePool"] = "gpu"
    path = _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL]}], "workloads": [w]})
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(tmp_path / "o")])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "workload web" in lines[0] and "nodePool" in lines[0]


def _small_fleet(tmp_path: Path) -> Path:
    trace = _step_trace(tmp_path, 2, 40, minutes=(20, 60, 40))
    return _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 4}],
                             "workloads": workloads_on(trace)})


def test_what_if_runs_the_fleet_changed_beside_itself_and_compares(tmp_path):
    """``--what-if`` (the issue's overlays): the fleet with the other node autoscaler, prediction on and every
    target 10 % higher, run beside the fleet as it is; compare.csv and the printed table hold both and the
    change. The second fleet file is written out (absolute paths) and runs alone as well."""
    path = _small_fleet(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--what-if", "nodeAutoscaler=karpenter",
                                 "--what-if", "prediction=on", "--what-if", "targets=+10%", "--output-dir", str(out),
                                 "--no-progress", "--no-plot"])
    assert r.exit_code == 0, r.output
    a = json.loads((out / "a" / "summary.json").read_text())
    b = json.loads((out / "b" / "summary.json").read_text())
    assert a["fleet"]["node_autoscaler"] == "cluster-autoscaler" and b["fleet"]["node_autoscaler"] == "karpenter"
    assert all("prediction" in w for w in b["workloads"]) and not any("prediction" in w for w in a["workloads"])
    changed = yaml.safe_load(next((out / "b" / "input").glob("autoscaler-*.yaml")).read_text())
    assert changed["kind"] == "HorizontalAutoscaler" and changed["spec"]["prediction"] == {}
    assert changed["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 55  # 50 % + 10 %
    rows = (out / "compare.csv").read_text().splitlines()
    assert rows[0].startswith("workload,cost_a,cost_b,cost_change") and rows[-1].startswith("total,")
    total = rows[-1].split(",")
    assert float(total[1]) == a["fleet"]["cost"] and float(total[2]) == b["fleet"]["cost"]
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG" and "cost $" in r.output
    alone = load_fleet(out / "b" / "input" / "fleet.yaml")
    assert alone.spec.node_autoscaler.model.value == "karpenter"


def test_a_fleet_compared_with_itself_changes_nothing(tmp_path):
    path = _small_fleet(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), str(path), "--output-dir", str(out),
                                 "--no-progress", "--no-plot"])
    assert r.exit_code == 0, r.output
    for row in (out / "compare.csv").read_text().splitlines()[1:]:
        cells = row.split(",")
        assert cells[1] == cells[2] and float(cells[3]) == 0 and float(cells[6]) == 0


@pytest.mark.parametrize("args, line", [
    (["--what-if", "model=karpenter"], "--what-if: want KEY=VALUE with KEY one of nodeAutoscaler"),
    (["--what-if", "targets=10%"], "--what-if: targets takes a signed percent below 100"),
    (["--what-if", "prediction=yes"], "--what-if: prediction takes on"),
])
def test_a_bad_what_if_is_one_line(tmp_path, args, line):
    path = _small_fleet(tmp_path)
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), *args, "--output-dir", str(tmp_path / "o")])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and line in r.output, r.output


def test_a_bad_second_fleet_is_refused_before_the_first_runs(tmp_path):
    """``fleet simulate A.yaml B.yaml`` reads and checks both before either runs: B's error is one line naming B's
    file, workload and field, and A was not simulated (nothing written)."""
    path = _small_fleet(tmp_path)
    bad = yaml.safe_load(path.read_text())
    bad["spec"]["workloads"][0]["nodePool"] = "nowhere"
    (tmp_path / "b").mkdir()
    second = tmp_path / "b" / "fleet.yaml"
    second.write_text(yaml.safe_dump(bad))
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), str(second), "--output-dir", str(out),
                                 "--no-progress", "--no-plot"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {second}: workload w0: spec.workloads[0].nodePool"), r.output
    assert not (out / "a").exists()


def test_a_bad_node_pools_file_of_a_what_if_names_that_file_and_pool_before_anything_runs(tmp_path):
    """``--what-if nodePools=FILE`` is checked when the what-if is made, in memory: a bad pool is one line naming FILE,
    the pool and its field (not a generated fleet file), and nothing is simulated; pools that fit no workload name
    the fleet file with the overlay."""
    path = _small_fleet(tmp_path)
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump([{"name": "cheap", "instanceTypes": [{**SMALL, "pricePerHour": -1}]}]))
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--what-if", f"nodePools={pools}",
                                 "--output-dir", str(out), "--no-progress", "--no-plot"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {pools}: node pool cheap: [0].instanceTypes[0].pricePerHour: "), r.output
    assert not out.exists()
    pools.write_text(yaml.safe_dump([{"name": "tiny", "instanceTypes": [{**SMALL, "cpu": "100m"}]}]))
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--what-if", f"nodePools={pools}",
                                 "--output-dir", str(out), "--no-progress", "--no-plot"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {path} with --what-if nodePools={pools}: workload w0: "), r.output
    assert not (out / "a").exists()


def test_a_fleet_past_its_pod_bound_is_one_line_naming_the_workload(tmp_path, monkeypatch):
    """Every count has a bound: a fleet whose autoscalers scale past ``MAX_FLEET_PODS`` pods at once stops with one
    line naming the fleet file, the workload that crossed it, and when (here the bound is lowered to 5)."""
    import pyhpa.fleet.engine as engine

    monkeypatch.setattr(engine, "MAX_FLEET_PODS", 5)
    path = _small_fleet(tmp_path)
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--output-dir", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {path}: workload w") and "past 5 pods at 2026-01-05T" in r.output


def test_karpenters_batch_closes_idle_after_its_last_pod_however_many_come():
    """Karpenter's batcher (``Batcher.Wait``): each pending pod restarts the idle timer, the window closes
    ``batchIdleDuration`` after the last or ``batchMaxDuration`` after the first; the model's ``next_time`` moves
    each time, later too (the fleet's clock queues its loop whenever it moves, and runs one only at the latest)."""
    from pyhpa.fleet.nodeautoscalers import KarpenterModel
    from pyhpa.fleet.spec import Karpenter

    model = KarpenterModel(Karpenter(), 0.0, None)
    model.next_disruption = model.next_time = 1000.0  # no disruption poll in the way
    loops = []
    for t in (100.0, 100.4, 100.9, 101.5):  # each within a second of the one before
        model.unschedulable(None, t)
        loops.append(model.next_time)
    assert loops == [101.0, 101.4, 101.9, 102.5]  # the window moves later with each pod
    for t in range(102, 115):  # a pod every second: the window would never be idle; it closes at first + 10 s
        model.unschedulable(None, t + 0.5)
    assert model.next_time == 110.0


def test_a_workloads_trace_in_summary_json_describes_the_span_replayed(tmp_path):
    """summary.json's ``trace`` of a workload counts the rows of the span the fleet replays (not the whole file) and
    lists only the gaps inside it, at their shifted times: here a 7-hour file with a gap in its first hour, shifted
    1 h later, replayed from 02:00 to 05:00."""
    from pyhpa.fleet.report import summarize_fleet

    rows = ["timestamp,requests_per_second"] + [f"2026-01-05T{m // 60:02d}:{m % 60:02d}:00Z,1" for m in range(420)
                                                 if not 10 <= m < 20]  # no rows from 00:10 to 00:20
    (tmp_path / "gappy.csv").write_text("\n".join(rows) + "\n")
    other = _step_trace(tmp_path, 1, 1, minutes=(200, 200, 100))
    w0, w1 = workloads_on(other, (1.0, 1.0))
    w1["trace"] = {"file": str(tmp_path / "gappy.csv"), "column": "requests_per_second", "shift": "1h",
                   "gaps": "hold"}  # its gap is held (issue 60: refused by default)
    path = _write(tmp_path, {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 5}],
                             "workloads": [w0, w1]})
    run = FleetRun(load_fleet(path, Settings(), "2026-01-05T02:00:00Z", "2026-01-05T05:00:00Z"), Settings()).run()
    traces = [w["trace"] for w in summarize_fleet(run)["workloads"]]
    assert [t["rows_used"] for t in traces] == [180, 180]
    assert traces[1]["rows_in_file"] == 410 and traces[1]["rows_outside_slice"] == 230
    assert traces[1]["gaps"] == 0 and traces[1]["gap_list"] == []  # its gap (01:10 to 01:20 shifted) is before
    whole = FleetRun(load_fleet(path, Settings(), "2026-01-05T01:00:00Z", "2026-01-05T05:00:00Z"), Settings()).run()
    gap = summarize_fleet(whole)["workloads"][1]["trace"]["gap_list"]
    assert [(g["start"][11:16], g["end"][11:16]) for g in gap] == [("01:10", "01:20")]


def test_the_instant_nodes_twin_is_each_workload_alone_and_says_what_the_pool_adds(tmp_path):
    """``--twin``: each workload of the fleet run alone with nodes always there, as ``pyhpa simulate`` runs it (its
    seed ``seed + i``): on a pool too small and slow for the load, the fleet is overloaded longer than its twin, and
    summary.json says by how much (``instant_nodes``), per workload and in total; the printed line says the same."""
    from pyhpa.fleet.engine import instant_twin
    from pyhpa.fleet.report import summarize_fleet

    trace = _step_trace(tmp_path, 0.5, 40, minutes=(60, 120, 120))
    spec = {"nodePools": [{"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 6,
                           "provisioningSeconds": {"median": 180, "p90": 240}}],
            "workloads": workloads_on(trace, (1.0, 0.5))}
    path = _write(tmp_path, spec)
    settings = Settings(seed=3)
    fleet = load_fleet(path, settings)
    run = FleetRun(fleet, settings).run()
    twin = instant_twin(fleet, settings)
    files = input_files([str(bundled_path("hpa"))], bundled_path("target"), str(trace), "requests_per_second",
                        bundled_path("profile"))
    profile, target = read_workload(files)
    for i, (scale, t) in enumerate(zip((1.0, 0.5), twin)):
        alone_settings = Settings(seed=3 + i)
        h = load_autoscaler(find_autoscaler(read_document(files.hpa[0]), str(files.hpa[0])), str(files.hpa[0]),
                            target, alone_settings)
        alone = replay(h, "w", target, profile, read_load(files, [h], profile, target, load_scale=scale),
                       alone_settings).cluster
        assert (t.overloaded_seconds, t.unserved_requests) == (alone.stats.overloaded_seconds,
                                                               alone.stats.unserved_requests)
    over = sum(c.stats.overloaded_seconds for c in run.clusters)
    assert over > sum(t.overloaded_seconds for t in twin) > 0
    f = summarize_fleet(run, twin)["fleet"]["instant_nodes"]
    assert f["overload_from_node_pool_seconds"] == round(over - sum(t.overloaded_seconds for t in twin), 3)
    assert 0 < f["overload_from_node_pool_fraction"] < 1
    assert "instant_nodes" not in summarize_fleet(run)["fleet"]  # only with a twin
    r = CliRunner().invoke(app, ["fleet", "simulate", str(path), "--seed", "3", "--twin", "--no-plot", "--no-progress",
                                 "--output-dir", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    written = json.loads((tmp_path / "out" / "summary.json").read_text())["fleet"]["instant_nodes"]
    assert written == f
    assert f"overload from the node pool (waiting for nodes, evictions): {f['overload_from_node_pool_seconds']:,.0f} s" \
        in " ".join(r.output.split())


@pytest.mark.parametrize("model, launched, deleted", [
    ("cluster-autoscaler", {"ScaleUp"}, {"ScaleDown"}),
    ("karpenter", {"Provisioning"}, {"Empty", "Underutilized"}),
])
def test_events_say_why_the_node_autoscaler_launched_or_removed_each_node(tmp_path, model, launched, deleted):
    """events.csv's ``reason``: each node launched or removed after the start carries its model's action reason (the
    Reason of its Launch, Delete or Replace); the nodes of the start and the other events carry none."""
    pool = {"name": "p", "instanceTypes": [SMALL], "minNodes": 1, "maxNodes": 30,
            "provisioningSeconds": {"median": 60, "p90": 60}}
    run = _step_fleet(tmp_path, model, pool)
    later = [e for e in run.events if e.time > run.start]
    ups = {e.reason for e in later if e.kind == "NodeLaunched"}
    downs = {e.reason for e in later if e.kind == "NodeDeleted"}
    assert ups and ups <= launched and downs and downs <= deleted, (ups, downs)
    assert {e.reason for e in run.events if e.time == run.start} == {""}
    assert {e.reason for e in run.events if e.kind in ("NodeReady", "PodUnschedulable")} == {""}
    out = tmp_path / "out"
    from pyhpa.fleet.report import write_fleet
    write_fleet(run, out)
    rows = list(csv.DictReader((out / "events.csv").open()))
    assert [r["reason"] for r in rows] == [e.reason for e in run.events]


def test_a_large_floor_of_idle_nodes_is_not_visited_at_every_scan(tmp_path):
    """Issue 60: ``minNodes: 100000`` with two workloads took 255 s for three simulated hours, Cluster Autoscaler's
    scale-down reading every unneeded node's mark at every ``scan-interval`` though none may go. Counted, not timed:
    with 2,000 nodes at ``minNodes`` over eight hours (2,880 scans), the marks are not read at all; the samples'
    sums are the pool's as its nodes have them."""

    class Counting(dict):
        reads = 0

        def __getitem__(self, key):
            Counting.reads += 1
            return super().__getitem__(key)

    pool = {"name": "p", "instanceTypes": [SMALL], "daemonSetOverhead": {"cpu": "100m", "memory": "256Mi"},
            "minNodes": 2000, "maxNodes": 2000, "provisioningSeconds": {"median": 60, "p90": 60}}
    trace = _step_trace(tmp_path, 0.5, 70, minutes=(60, 120, 300))
    spec = {"nodeAutoscaler": {"model": "cluster-autoscaler", "cluster-autoscaler": {}}, "nodePools": [pool],
            "workloads": workloads_on(trace)}
    run = FleetRun(load_fleet(_write(tmp_path, spec)), Settings(seed=1))
    run.autoscaler.unneeded_since = Counting()
    run.run()
    assert (run.end - run.start) / 10 >= 2800 and len(run.autoscaler.unneeded_since) >= 1900  # marked, and kept
    assert Counting.reads == 0  # at minNodes nothing may go: no mark is read (it was 2,000 a scan)
    nodes = run.pools["p"].nodes
    last = run.samples[-1]
    assert (last.nodes, last.requested_cpu_millicores, last.allocatable_cpu_millicores) == (
        len(nodes), sum(n.requested_cpu for n in nodes), sum(n.cpu for n in nodes))
