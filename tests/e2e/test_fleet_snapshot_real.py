"""``pyhpa fleet snapshot`` on the real control plane (kube-apiserver v1.37.2 with KWOK's nodes) and a real
Prometheus with a week of the workload's CPU counter backfilled (promtool): the fleet file it writes names the
cluster's nodes as a pool and the HorizontalAutoscaler with its Deployment and history, and ``pyhpa fleet
simulate`` runs it as it is. (The same against the API double, with prices, DaemonSet overhead and left-out
autoscalers: tests/test_fleet_snapshot.py.)"""

from __future__ import annotations

import json
import time

import yaml
from lightkube.resources.core_v1 import Node
from test_prediction_live import history_file, needs_prometheus
from typer.testing import CliRunner

from controlplane.prometheus import PrometheusServer
from pyhpa.cli.main import app

from .util import apply, autoscaler, cpu_utilization, deployment, running_pods, wait_until


@needs_prometheus
def test_fleet_snapshot_reads_the_real_cluster_and_prometheus(plane, client, ns, tmp_path):
    apply(client, deployment("web", ns, replicas=2, cpu="1"))
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 2, what="2 running pods of web")
    apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10))
    now = time.time()
    history_file(tmp_path / "history.om", now, rise_in=3600.0, namespace=ns)
    out = tmp_path / "snap"
    with PrometheusServer([], backfill=tmp_path / "history.om") as prom:
        r = CliRunner().invoke(app, ["fleet", "snapshot", "--kubeconfig", str(plane.admin_kubeconfig), "-n", ns,
                                     "--prometheus-url", prom.url, "--history", "259200", "--output-dir", str(out)])
    assert r.exit_code == 0, r.output
    fleet = yaml.safe_load((out / "fleet.yaml").read_text())
    pool = fleet["spec"]["nodePools"][0]
    assert pool["minNodes"] == len(list(client.list(Node))) >= 2  # KWOK's nodes, as the API server has them
    [w] = fleet["spec"]["workloads"]
    assert w["name"] == "web" and w["trace"]["column"] == "cpu_millicores"
    target = yaml.safe_load((out / w["target"]).read_text())
    assert target["kind"] == "Deployment" and target["metadata"] == {"name": "web", "namespace": ns}
    history = (out / w["trace"]["file"]).read_text().splitlines()
    assert 3 * 1440 - 30 <= len(history) - 1 <= 3 * 1440 + 2  # three days at a point a minute
    peak = max(float(line.split(",")[1]) for line in history[1:])
    assert 3600 <= peak <= 4400  # the backfilled busy hours: 4 cores
    sim = tmp_path / "sim"
    r = CliRunner().invoke(app, ["fleet", "simulate", str(out / "fleet.yaml"), "--output-dir", str(sim),
                                 "--no-progress", "--no-plot"])
    assert r.exit_code == 0, r.output
    summary = json.loads((sim / "summary.json").read_text())
    assert summary["workloads"][0]["max_replicas_seen"] >= 4  # the busy hours need four 1-CPU pods at 50 % or more
