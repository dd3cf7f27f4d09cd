"""``pyhpa run --preview``: native autoscaling/v2 HPAs, decided by the core, reported, and nothing written.

A native HPA whose status (written by "the cluster's" HPA controller, i.e. put into the double directly)
says something else than pyhpa decides: the preview reports the difference in one log line per sync and in
its Prometheus metrics, and the double sees no write at all from it. Then the cluster catches up and the
preview reports agreement.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from controller_util import START, deployment, wait_for, web_of_two
from lightkube import codecs
from prometheus_client import generate_latest
from test_controller_e2e import put_pods, replicas, set_cpu
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.adapters.kubeconfig import load_config
from pyhpa.adapters.parse import format_time
from pyhpa.cli.main import app
from pyhpa.controller import Controller, Settings
from pyhpa.controller.kube.api import HttpMetrics, LightkubeCluster
from pyhpa.controller.preview import PreviewReconciler, logfmt

HPA_GV = "autoscaling/v2"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def native_hpa(name: str, desired: int, current: int, target: str = "") -> dict:
    """An autoscaling/v2 HPA (CPU 50 %) of Deployment ``target`` (default: ``name``) with the status the
    cluster's own HPA controller last wrote."""
    cond = {"lastTransitionTime": START}
    return {
        "apiVersion": HPA_GV, "kind": "HorizontalPodAutoscaler", "metadata": {"name": name, "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target or name},
                 "minReplicas": 1, "maxReplicas": 10,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                     "type": "Utilization", "averageUtilization": 50}}}]},
        "status": {"currentReplicas": current, "desiredReplicas": desired, "conditions": [
            dict(cond, type="AbleToScale", status="True", reason="ReadyForNewScale"),
            dict(cond, type="ScalingActive", status="True", reason="ValidMetricFound"),
            dict(cond, type="ScalingLimited", status="False", reason="DesiredWithinRange")]},
    }


def sample(registry, name: str, **labels) -> float | None:
    return registry.get_sample_value(name, labels)


def preview_lines(caplog) -> list[str]:
    return [f"{r.getMessage()} {logfmt(r.fields)}" for r in caplog.records if r.name == "pyhpa.preview"]


async def test_preview_reports_what_pyhpa_would_decide_and_never_writes(kd, caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="pyhpa.preview")
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", 3)))
    put_pods(kd, "web", 0, 3)
    set_cpu(kd, "web", 3, "200m")  # 100 % of the request against 50 %: pyhpa wants 6
    kd.put_object(native_hpa("web", desired=3, current=3))  # the cluster's controller said 3
    await client.create(codecs.from_dict(deployment("other", 3)))  # its own pods: two HPAs on the same
    put_pods(kd, "other", 0, 3)                                      # pods would be AmbiguousSelector
    set_cpu(kd, "other", 3, "200m")
    fresh = native_hpa("fresh", desired=0, current=0, target="other")
    fresh["status"] = {"desiredReplicas": 0}  # a new HPA, not synced by the cluster yet (Go's zero value)
    kd.put_object(fresh)
    kd.clear_requests()

    settings = Settings(preview=True, sync_period_seconds=1, health_port=None)
    cluster = LightkubeCluster(load_config(server=kd.url), settings.api_timeout_seconds, settings.field_manager,
                               trust_env=False)
    controller = Controller(settings, cluster, HttpMetrics(cluster.raw, cluster.discovery, 5.0))
    assert isinstance(controller.reconciler, PreviewReconciler) and controller.writer.gate() is False
    results, others = [], []
    controller.reconciler.on_synced = lambda r: (results if r.key == "default/web" else others).append(r)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        await wait_for(lambda: len(results) >= 2 and others, what="two preview syncs")
        first = results[0]
        assert first.key == "default/web" and first.decision.rescale
        assert (first.decision.current_replicas, first.decision.desired_replicas) == (3, 6)
        registry = controller.monitor.registry
        assert sample(registry, "pyhpa_preview_desired_replicas", namespace="default", hpa_name="web") == 6
        assert sample(registry, "pyhpa_preview_cluster_desired_replicas", namespace="default", hpa_name="web") == 3
        assert sample(registry, "pyhpa_preview_decisions_total", result="differ") >= 2
        assert sample(registry, "pyhpa_preview_decisions_total", result="agree") is None
        assert "pyhpa_preview_decisions_total" in generate_latest(registry).decode()
        unknown = [line for line in preview_lines(caplog) if "hpa=default/fresh" in line][0]
        assert unknown.startswith("preview hpa=default/fresh result=unknown desired=6 cluster_desired=- ")
        line = [line for line in preview_lines(caplog) if "hpa=default/web" in line][0]
        assert line.startswith("preview hpa=default/web result=differ desired=6 cluster_desired=3 current=3 "
                               "cluster_current=3 ")
        assert 'reason="cpu resource utilization (percentage of request) above target"' in line
        assert (' conditions="AbleToScale=True/SucceededRescale,ScalingActive=True/ValidMetricFound,'
                'ScalingLimited=False/DesiredWithinRange,ScaledToZero=False/NotScaledToZero" ') in line  # v1.37
        assert ' cluster_conditions="AbleToScale=True/ReadyForNewScale,' in line

        # the same sync through `pyhpa snapshot --kind hpa` and `pyhpa explain`: the same decision
        snap = await asyncio.to_thread(CliRunner().invoke, app, [
            "snapshot", "default/web", "--kind", "hpa", "--server", kd.url, "-o", "json",
            "--now", format_time(first.gathered.inputs.now)])
        assert snap.exit_code == 0, snap.output
        assert json.loads(snap.output)["hpa"]["status"]["desiredReplicas"] == 3
        (tmp_path / "web.json").write_text(snap.output)
        explained = CliRunner().invoke(app, ["explain", "-o", "json", str(tmp_path / "web.json")])
        out = json.loads(explained.output)
        assert out["desiredReplicas"] == first.decision.desired_replicas
        assert [(c["type"], c["status"], c["reason"]) for c in out["conditions"]] == [
            (c.type, c.status, c.reason) for c in first.decision.conditions]

        # the cluster's controller scales to 6 as well; the new pods settle at 50 %: they agree
        kd.put_object(native_hpa("web", desired=6, current=6))
        kd.put_object(deployment("web", 6) | {"status": {"replicas": 6}})
        put_pods(kd, "web", 3, 6)
        set_cpu(kd, "web", 6, "100m")
        await wait_for(lambda: sample(registry, "pyhpa_preview_decisions_total", result="agree"),
                       what="an agreeing preview sync")
        agree = [line for line in preview_lines(caplog) if "result=agree" in line][0]
        assert agree.startswith("preview hpa=default/web result=agree desired=6 cluster_desired=6 current=6 ")
        assert sample(registry, "pyhpa_preview_cluster_desired_replicas", namespace="default", hpa_name="web") == 6
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await cluster.close()
    assert [r for r in kd.requests if r[0] in WRITES] == []  # no scale, status, event: nothing
    assert controller.writer.refused == 0  # and nothing even tried to write
    assert kd.list_objects("events.k8s.io/v1", "events", "default") == []
    assert replicas(kd, "web") == 6  # as the test set it, never pyhpa
    assert kd.get_object(HPA_GV, "horizontalpodautoscalers", "default", "web")["status"]["desiredReplicas"] == 6
    assert kd.invalid_requests == []


def test_logfmt_quotes_what_needs_quoting():
    assert logfmt({"a": 1, "b": "x y", "c": None, "d": True, "e": ""}) == 'a=1 b="x y" c=- d=true e=""'


def test_pyhpa_run_preview_logs_one_line_per_sync_and_writes_nothing():
    """The command itself (``pyhpa run --preview``): wiring, log line, no write, graceful stop."""
    kd = KubeDouble.start_in_thread()
    try:
        web_of_two(kd)
        kd.put_object(native_hpa("web", desired=2, current=2))
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyhpa.cli.main", "run", "--preview", "--server", kd.url, "--health-port", "-1",
             "--sync-period", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
        seen = []
        try:
            while not any("logger=pyhpa.preview msg=preview hpa=default/web" in line for line in seen):
                seen.append(lines.get(timeout=60))  # queue.Empty after 60 s without output: fails
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        report = next(line for line in seen if "logger=pyhpa.preview msg=preview hpa=default/web" in line)
        assert "result=differ desired=4 cluster_desired=2 current=2 " in report, report
        assert proc.returncode == 0, "".join(seen)
        assert [r for r in kd.requests if r[0] in WRITES] == []
        assert kd.count_requests("GET", r"horizontalpodautoscalers", watch=True) >= 1
        assert kd.count_requests("GET", r"horizontalautoscalers") == 0
        assert kd.count_requests("GET", r"leases") == 0  # a preview takes no part in leader election
        assert kd.invalid_requests == []
    finally:
        kd.stop()
