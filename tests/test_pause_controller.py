"""Pause (issue 22) through ``pyhpa run`` (production wiring: ``run_controller``, status-backed memory) against
the HTTP API double: annotations on a HorizontalAutoscaler take effect at once (no spec change), status and the
``Paused`` condition say since when, a value that does not parse is a Warning event and a condition, removing
the annotation resumes; under ``--preview`` a native HPA's annotations pause what pyhpa would decide.
"""

from __future__ import annotations

import asyncio
import json

from controller_util import ControllerTask, autoscaler, deployment, pod, wait_for
from lightkube import codecs
from lightkube.types import PatchType
from test_controller_preview import native_hpa
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.adapters.kubeconfig import load_config
from pyhpa.adapters.parse import timestamp
from pyhpa.cli.main import app
from pyhpa.controller import Controller, Settings
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler
from pyhpa.controller.kube.api import HttpMetrics, LightkubeCluster

HA = "pyhpa.dev/v1alpha1"
FAST = {"scaleDown": {"stabilizationWindowSeconds": 0},
        "scaleUp": {"policies": [{"type": "Pods", "value": 100, "periodSeconds": 1}]}}


def replicas(kd: KubeDouble) -> int:
    return kd.get_object("apps/v1", "deployments", "default", "web")["spec"]["replicas"]


def status(kd: KubeDouble) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", "web") or {}).get("status") or {}


def paused(kd: KubeDouble) -> tuple:
    c = {c["type"]: c for c in status(kd).get("conditions") or []}.get("Paused") or {}
    return c.get("status"), c.get("reason"), c.get("message", "")


def events(kd: KubeDouble) -> list[dict]:
    return [e for e in kd.list_objects("events.k8s.io/v1", "events", "default") if e["regarding"]["name"] == "web"]


async def annotate(kd: KubeDouble, value: dict) -> None:
    """Merge-patch ``metadata.annotations`` (None removes one), as ``kubectl annotate`` does."""
    await kd.async_client().patch(HorizontalAutoscaler, "web", {"metadata": {"annotations": value}},
                                  namespace="default", patch_type=PatchType.MERGE)


async def test_pause_annotations_through_pyhpa_run(kd, tmp_path):
    await kd.async_client().create(codecs.from_dict(deployment("web", 2)))
    for i in range(3):
        kd.put_object(pod(f"web-{i}", "web"))
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})  # 100 % of 50 %: wants 4 and more
    body = autoscaler("web", "web", syncPeriodSeconds=60, behavior=FAST)  # a long period: only the pause syncs
    body["metadata"]["annotations"] = {"pyhpa.dev/paused": "true"}
    await kd.async_client().create(HorizontalAutoscaler(body))
    async with ControllerTask(kd) as run:
        await wait_for(lambda: paused(kd)[0] == "True", what="Paused=True")
        assert replicas(kd) == 2
        st = status(kd)
        assert st["pause"]["reason"] == "Paused" and st["pause"]["replicas"] == 2
        since = timestamp(st["pause"]["since"])
        assert paused(kd)[1] == "Paused" and "frozen at 2" in paused(kd)[2]
        await wait_for(lambda: any(e["reason"] == "Paused" and e["type"] == "Normal" for e in events(kd)),
                       what="the Normal event Paused")  # events are sent by a background task

        # `pyhpa snapshot` keeps the annotation: `pyhpa explain` of the live autoscaler says paused, as the controller
        snap = await asyncio.to_thread(CliRunner().invoke, app, ["snapshot", "default/web", "--server", kd.url,
                                                                 "--format", "json"])
        assert snap.exit_code == 0, snap.output
        assert json.loads(snap.output)["hpa"]["metadata"]["annotations"] == {"pyhpa.dev/paused": "true"}
        path = tmp_path / "web.json"
        path.write_text(snap.output)
        explained = json.loads(CliRunner().invoke(app, ["explain", "-o", "json", str(path)]).output)
        assert explained["desiredReplicas"] == 2
        assert [c["reason"] for c in explained["conditions"] if c["type"] == "Paused"] == ["Paused"]

        # paused-replicas wins over paused: scales to 5 and holds, at once (an annotation is no spec change)
        await annotate(kd, {"pyhpa.dev/paused-replicas": "5"})
        await wait_for(lambda: replicas(kd) == 5, timeout=20, what="scaled to paused-replicas")
        await wait_for(lambda: status(kd).get("pause", {}).get("reason") == "PausedReplicas", what="PausedReplicas")
        assert timestamp(status(kd)["pause"]["since"]) == since  # paused since the first annotation

        # a value that does not parse: Warning event and condition, and no silent pause (paused-replicas ignored,
        # paused still holds: the count stays where it is)
        await annotate(kd, {"pyhpa.dev/paused-replicas": "five", "pyhpa.dev/paused": None})
        await wait_for(lambda: paused(kd)[1] == "InvalidPauseAnnotation", timeout=20, what="InvalidPauseAnnotation")
        assert paused(kd)[0] == "False" and "'five'" in paused(kd)[2]
        warning = await wait_for(lambda: [e for e in events(kd) if e["reason"] == "InvalidPauseAnnotation"],
                                 what="the Warning event InvalidPauseAnnotation")
        assert warning and warning[0]["type"] == "Warning" and "pyhpa.dev/paused-replicas" in warning[0]["note"]
        assert "pause" not in status(kd)
        await wait_for(lambda: replicas(kd) == 6, timeout=20, what="autoscaling again (3 pods at twice the target): not paused")

        # removing the annotation: Resumed
        await annotate(kd, {"pyhpa.dev/paused-replicas": None})
        await wait_for(lambda: paused(kd)[1] == "Resumed", timeout=20, what="Resumed")
        assert kd.invalid_requests == []
        assert all(r.decision is None or r.decision.error is None for r in run.results)


async def test_pause_under_preview_for_a_native_hpa(kd):
    """``pyhpa run --preview`` reads a native HPA's pause annotations: what pyhpa would decide is paused."""
    await kd.async_client().create(codecs.from_dict(deployment("web", 3)))
    for i in range(3):
        kd.put_object(pod(f"web-{i}", "web"))
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})  # pyhpa alone would want 6
    hpa = native_hpa("web", desired=3, current=3)
    hpa["metadata"]["annotations"] = {"pyhpa.dev/paused-replicas": "4"}
    kd.put_object(hpa)
    settings = Settings(preview=True, sync_period_seconds=1, health_port=None)
    cluster = LightkubeCluster(load_config(server=kd.url), settings.api_timeout_seconds, settings.field_manager,
                               trust_env=False)
    controller = Controller(settings, cluster, HttpMetrics(cluster.raw, cluster.discovery, 5.0))
    results = []
    controller.reconciler.on_synced = results.append
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        await wait_for(lambda: results, what="a preview sync")
        d = results[0].decision
        assert d.desired_replicas == 4 and str(d.decided_by) == "Pause/paused-replicas"
        assert [(c.status, c.reason) for c in d.conditions if c.type == "Paused"] == [("True", "PausedReplicas")]
        assert replicas(kd) == 3  # preview: nothing written
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await cluster.close()
