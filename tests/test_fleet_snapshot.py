"""Issue 38: ``pyhpa fleet snapshot`` writes a fleet file from a cluster (here the API double) and a Prometheus
with the workloads' CPU history backfilled, which ``pyhpa fleet simulate`` runs as it is: the autoscalers
(HorizontalAutoscalers, and native HPAs whose target none scales) with their targets and histories, the nodes as a
pool (instance types, prices, DaemonSet overhead), and what could not be replayed left out with why. On the real
control plane of the e2e tier: tests/e2e/test_fleet_snapshot_real.py."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml
from test_tune import live_web, needs_prometheus
from typer.testing import CliRunner

from pyhpa.cli.main import app


def _node(name: str, kind: str, cpu: str, memory: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": kind,
                                                  "kubernetes.io/hostname": name, "pool": "general"}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "58"}}}


def _hpa(name: str, target: str, metrics: list[dict]) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": 1, "maxReplicas": 6, "metrics": metrics}}


CPU = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]


@needs_prometheus
async def test_a_cluster_and_its_prometheus_become_a_fleet_that_simulate_runs(kd, tmp_path):
    from controller_util import pod

    async with live_web(kd, tmp_path) as prom:
        # a native HPA on the same Deployment (the HorizontalAutoscaler scales it: left out), and one whose metric
        # is not CPU (left out, with why)
        kd.put_object(_hpa("web-native", "web", CPU))
        kd.put_object(_hpa("queue", "worker", [{"type": "External", "external": {
            "metric": {"name": "queue_depth"}, "target": {"type": "AverageValue", "averageValue": "30"}}}]))
        kd.put_object(_node("n1", "m5.xlarge", "3920m", "14Gi"))
        kd.put_object(_node("n2", "m5.xlarge", "3920m", "14Gi"))
        kd.put_object(_node("n3", "m5.2xlarge", "7910m", "29Gi"))
        ds = pod("agent-n1", "agent", cpu="150m")
        ds["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                              "uid": "u1"}]
        ds["spec"]["nodeName"] = "n1"
        kd.put_object(ds)
        out = tmp_path / "snap"
        args = ["fleet", "snapshot", "--server", kd.url, "--prometheus-url", prom.url, "--history", "172800",
                "--price", "m5.xlarge=0.192", "--output-dir", str(out)]
        result = await asyncio.to_thread(CliRunner().invoke, app, args)
    assert result.exit_code == 0, result.output
    assert "1 workloads on 3 nodes (2 m5.xlarge, 1 m5.2xlarge)" in result.output
    assert "left out default/queue" in result.output and "web-native" not in result.output
    text = (out / "fleet.yaml").read_text()
    fleet = yaml.safe_load(text)
    pool = fleet["spec"]["nodePools"][0]
    assert pool["labels"] == {"pool": "general"}  # what every node has (not its hostname, not its type)
    assert [(t["name"], t["pricePerHour"], t["pods"]) for t in pool["instanceTypes"]] == [
        ("m5.xlarge", 0.192, 58), ("m5.2xlarge", 0.0, 58)]
    assert pool["daemonSetOverhead"]["cpu"] == "150m" and pool["minNodes"] == 3
    assert "# no --price for m5.2xlarge" in text and "# left out: default/queue" in text
    [w] = fleet["spec"]["workloads"]
    assert w["name"] == "default-web" and w["trace"]["column"] == "cpu_millicores"
    history = (out / w["trace"]["file"]).read_text().splitlines()
    assert history[0] == "timestamp,cpu_millicores" and len(history) > 2 * 1440 - 30
    # pyhpa fleet simulate runs it as it is
    sim = out / "sim"
    r = await asyncio.to_thread(CliRunner().invoke, app, ["fleet", "simulate", str(out / "fleet.yaml"),
                                                          "--output-dir", str(sim), "--no-progress", "--no-plot"])
    assert r.exit_code == 0, r.output
    summary = json.loads((sim / "summary.json").read_text())
    assert summary["fleet"]["workloads"] == 1 and summary["workloads"][0]["max_replicas_seen"] >= 2
    assert summary["fleet"]["simulated_seconds"] > 86400


@pytest.mark.parametrize("args, line", [
    (["--price", "m5=abc"], "error: --price: want TYPE=DOLLARS"),
    (["--history", "60"], "error: --history: must be from 172800 s"),
    (["--price", "m5=1", "--price", "m5=2"], "error: --price: m5 is given twice (1 and 2)"),  # issue 60: not the last
])
def test_bad_snapshot_flags_are_one_line(tmp_path, args, line):
    r = CliRunner().invoke(app, ["fleet", "snapshot", "--prometheus-url", "http://127.0.0.1:9", "--server",
                                 "http://127.0.0.1:9", "--output-dir", str(tmp_path / "o"), *args])
    assert r.exit_code == 2 and r.output.strip().count("\n") == 0 and r.output.startswith(line), r.output
