"""``pyhpa run --preview`` beside upstream's own HPA controller, ``pyhpa snapshot`` and ``kubectl pyhpa explain``
against the real API server.

The session's kube-controller-manager runs upstream's horizontalpodautoscaling controller (v1.37.2, sync period
1 s) with its metrics clients on the same aggregated metrics APIs: it decides native autoscaling/v2 HPAs and
writes their status; the preview decides the same HPAs with pyhpa's core and must agree, writing nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from lightkube import codecs

from .util import (
    ROOT,
    apply,
    autoscaler,
    cpu_utilization,
    deployment,
    running_pods,
    set_pod_cpu,
    spec_replicas,
    wait_until,
)

LONG_AGO = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}

@pytest.fixture
def plane(real_plane):
    """This module runs on the real metrics pipeline (metrics-server scraping KWOK's nodes)."""
    return real_plane



def native_hpa(name: str, ns: str, percent: int = 50, min_replicas: int = 1, max_replicas: int = 10) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": [cpu_utilization(percent)]}}


def test_preview_over_upstreams_own_hpas_reports_no_difference_and_writes_nothing(plane, client, ns, pyhpa):
    apply(client, deployment("web", ns, replicas=2, annotations=LONG_AGO))
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 2, what="2 running pods")
    set_pod_cpu(plane, ns, "web", 140)
    client.create(codecs.from_dict(native_hpa("web", ns)))
    wait_until(lambda: spec_replicas(client, ns, "web") == 6, what="upstream's HPA controller scaling to 6")
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 6, what="6 running pods")
    set_pod_cpu(plane, ns, "web", 50)  # at target: upstream holds 6
    run = pyhpa("--preview", "--sync-period", "1", "-n", ns)
    since = len(plane.audit_events())

    def agreeing():
        lines = [r for r in run.records() if r.get("msg") == "preview" and r.get("hpa") == f"{ns}/web"]
        return len(lines) >= 3 and all(r["result"] == "agree" for r in lines[-3:]) and lines
    lines = wait_until(agreeing, what="three agreeing preview syncs")
    assert lines[-1]["desired"] == lines[-1]["cluster_desired"] == 6
    assert lines[-1]["conditions"] == lines[-1]["cluster_conditions"]
    writes = [e for e in plane.audit_events()[since:] if e["verb"] not in ("get", "list", "watch")
              and "pyhpa" in e.get("userAgent", "")]
    assert writes == []


def test_snapshot_and_kubectl_pyhpa_explain_read_the_live_autoscaler(plane, client, ns, tmp_path):
    apply(client, deployment("web", ns, replicas=2, annotations=LONG_AGO))
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 2, what="2 running pods")
    set_pod_cpu(plane, ns, "web", 140)
    apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10))
    env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig), PYTHONPATH=str(ROOT), NO_COLOR="1",
               PATH=f"{plane.bin}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    snap = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", "snapshot", f"{ns}/web", "-o", "json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert snap.returncode == 0, snap.stderr
    doc = json.loads(snap.stdout)
    assert len(doc["pods"]) == 2 and {p["metadata"]["name"] for p in doc["pods"]} == {
        p["metadata"]["name"] for p in running_pods(plane, ns, "web")}
    snapshot = tmp_path / "snap.json"
    snapshot.write_text(snap.stdout)
    explained = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", "explain", str(snapshot), "-o", "json"],
                               capture_output=True, text=True, env=env, timeout=120)
    assert explained.returncode == 0, explained.stderr
    # 2 pods at 140 % of 50 %: the metric proposes ceil(5.6) = 6; without spec.behavior upstream's scale-up limit
    # max(2 * 2, 4) = 4 applies (normalizeDesiredReplicas)
    decision = json.loads(explained.stdout)
    assert [p["replicas"] for p in decision["proposals"]] == [6] and decision["desiredReplicas"] == 4

    # kubectl v1.37.2 finds the plugin on PATH (kubectl-pyhpa) and runs it against the same server.
    plugin = subprocess.run([str(plane.kubectl), "pyhpa", "explain", f"{ns}/web", "-o", "json"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert plugin.returncode == 0, plugin.stderr
    live = json.loads(plugin.stdout)
    assert [p["replicas"] for p in live["proposals"]] == [6] and live["desiredReplicas"] == 4
