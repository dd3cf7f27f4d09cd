"""Faults of the real thing: kube-apiserver restarted under a running controller, etcd compaction (410 Gone), a
409 Conflict on a status write, and a Deployment deleted under its autoscaler; on the real metrics pipeline
(metrics-server scraping KWOK's nodes, which ride out the restarts too).

CPU figures are kept away from rounding edges (90 % of a 50 % target is a ratio of 1.8, not 2.0): KWOK's rates are
within 2 % of the annotation, and ceil(2 * 2.02) is 5, not 4.

What the API server answered is read from its audit log (``ControlPlane.audit_events``): user agent, verb, URI,
response code of every request.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from lightkube.resources.apps_v1 import Deployment
from lightkube.types import PatchType

from .util import (
    AFTER_RESTART,
    HA,
    apply,
    autoscaler,
    condition,
    cpu_utilization,
    deployment,
    events_of,
    ha_status,
    running_pods,
    scaled_to,
    set_pod_cpu,
    spec_replicas,
    wait_until,
)

LONG_AGO = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}


@pytest.fixture
def plane(real_plane):
    """This module runs on the real metrics pipeline (metrics-server scraping KWOK's nodes)."""
    return real_plane


def _web(plane, client, ns, replicas=2, cpu=90, name="web", **spec):
    apply(client, deployment(name, ns, replicas=replicas, annotations=LONG_AGO))
    wait_until(lambda: len(running_pods(plane, ns, name)) == replicas, what=f"{replicas} running pods of {name}")
    set_pod_cpu(plane, ns, name, cpu)
    apply(client, autoscaler(name, ns, name, [cpu_utilization(50)], 1, 20,
                             behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}, **spec))


def _rescale_notes(client, ns, name):
    return [e.note for e in events_of(client, ns, name) if e.reason == "SuccessfulRescale"]


def test_an_apiserver_restart_resumes_the_watches_and_repeats_no_event(plane, client, ns, pyhpa):
    _web(plane, client, ns)  # 2 pods at 90 % of target 50: ceil(2 * 1.8) = 4
    run = pyhpa("--sync-period", "1", "-n", ns)
    wait_until(lambda: spec_replicas(client, ns, "web") == 4, what="the scale-up to 4")
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 4, what="4 running pods")
    set_pod_cpu(plane, ns, "web", 50)  # at target: steady
    time.sleep(3)
    before = _rescale_notes(client, ns, "web")
    assert before == ["New size: 4; reason: cpu resource utilization (percentage of request) above target"]

    plane.restart_apiserver(down_seconds=3)
    assert run.proc.poll() is None
    # Something new after the restart: a second autoscaler, and more load on the first.
    _web(plane, client, ns, replicas=1, cpu=90, name="api")
    set_pod_cpu(plane, ns, "web", 90)  # 4 pods: ceil(4 * 1.8) = 8
    # within a restart's backoffs (AFTER_RESTART), not within a sync period
    wait_until(lambda: scaled_to(client, ns, "api", 2, run), timeout=AFTER_RESTART,
               what="the new autoscaler synced after the restart")
    wait_until(lambda: scaled_to(client, ns, "web", 8, run), timeout=AFTER_RESTART,
               what="the first one scaled again after the restart")
    time.sleep(3)
    notes = _rescale_notes(client, ns, "web")
    assert notes == before + ["New size: 8; reason: cpu resource utilization (percentage of request) above target"]
    assert len({e.name for e in events_of(client, ns, "web")}) == len(events_of(client, ns, "web"))
    assert run.proc.poll() is None


def test_etcd_compaction_gets_410_gone_and_a_relist_that_sees_what_changed(plane, client, ns, pyhpa):
    _web(plane, client, ns, replicas=1, cpu=50)
    _web(plane, client, ns, replicas=1, cpu=50, name="old")
    run = pyhpa("--sync-period", "1", "-n", ns)
    wait_until(lambda: condition(ha_status(client, ns, "old"), "ScalingActive"), what="a first sync of old")

    os.kill(run.proc.pid, signal.SIGSTOP)  # its watches stay open but read nothing: the history moves on
    try:
        client.delete(HA, "old", namespace=ns)
        _web(plane, client, ns, replicas=1, cpu=90, name="new")
        for i in range(20):  # history the controller has not seen
            client.patch(HA, "web", {"metadata": {"annotations": {"touch": str(i)}}}, namespace=ns,
                         patch_type=PatchType.MERGE)
        plane.compact_etcd()
        plane.restart_apiserver()  # the watch cache starts again from etcd: the old resourceVersions are gone
    finally:
        os.kill(run.proc.pid, signal.SIGCONT)
    wait_until(lambda: run.says("watch history expired"), timeout=AFTER_RESTART, what="a 410 Gone on resuming a watch")
    wait_until(lambda: scaled_to(client, ns, "new", 2, run), timeout=AFTER_RESTART,
               what="the autoscaler created meanwhile synced")
    text = run.text()
    assert "re-listing" in text
    gone_at = len(text)
    time.sleep(3)
    assert f"{ns}/old" not in run.text()[gone_at:]  # the deleted one is no longer synced
    assert run.proc.poll() is None


def _status_writes(plane, ns: str) -> list[dict]:
    """The controller's requests on the autoscaler ``web``, in arrival order (audit log)."""
    path = f"/namespaces/{ns}/horizontalautoscalers/web"
    return [e for e in plane.audit_events() if e.get("userAgent", "").startswith("pyhpa/")
            and e["requestURI"].split("?")[0] in (f"/apis/pyhpa.dev/v1alpha1{path}",
                                                    f"/apis/pyhpa.dev/v1alpha1{path}/status")]


def test_a_409_on_a_status_write_is_retried_and_the_status_lands(plane, client, ns, pyhpa):
    """Another writer changes the autoscaler's labels every 20 ms (no new generation): some status PUTs carry a
    stale resourceVersion and get 409; the controller reads the object again and writes once more (as
    StatusWriter does, up to 3 times), and the sync's status lands."""
    _web(plane, client, ns, replicas=2, cpu=50)
    run = pyhpa("--sync-period", "1", "-n", ns)
    wait_until(lambda: condition(ha_status(client, ns, "web"), "ScalingActive"), what="a first sync")
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.wait(0.02):
            client.patch(HA, "web", {"metadata": {"labels": {"churn": str(i)}}}, namespace=ns,
                         patch_type=PatchType.MERGE)
            i += 1

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    try:
        def retried() -> bool:
            # within tolerance: a new status at each of metrics-server's scrapes
            set_pod_cpu(plane, ns, "web", 46 + int(time.time()) % 8, wait=False)
            seen = _status_writes(plane, ns)
            for i, e in enumerate(seen):
                if e["verb"] == "update" and e["responseStatus"]["code"] == 409:
                    after = [(x["verb"], x["responseStatus"]["code"]) for x in seen[i + 1:i + 3]]
                    if after == [("get", 200), ("update", 200)]:
                        return True
            return False
        wait_until(retried, timeout=240, every=0.5, what="a status PUT answered 409, then a GET and a PUT that landed")
    finally:
        stop.set()
        writer.join(5)
    set_pod_cpu(plane, ns, "web", 53)
    wait_until(lambda: abs((ha_status(client, ns, "web").get("currentMetrics") or [{}])[0]
                           .get("resource", {}).get("current", {}).get("averageUtilization", 0) - 53) <= 2,
               what="the status of the latest sync written once the other writer stopped")
    assert spec_replicas(client, ns, "web") == 2
    assert run.proc.poll() is None and "Traceback" not in run.text()


def test_a_deployment_deleted_under_its_autoscaler_is_failedgetscale_until_it_is_back(plane, client, ns, pyhpa):
    _web(plane, client, ns, replicas=1, cpu=50)
    _web(plane, client, ns, replicas=1, cpu=90, name="other")
    run = pyhpa("--sync-period", "1", "-n", ns)
    wait_until(lambda: condition(ha_status(client, ns, "web"), "ScalingActive"), what="a first sync")
    client.delete(Deployment, "web", namespace=ns)
    status = wait_until(lambda: (s := ha_status(client, ns, "web")) and (c := condition(s, "AbleToScale"))
                        and c["status"] == "False" and s, what="AbleToScale=False")
    assert condition(status, "AbleToScale")["reason"] == "FailedGetScale"
    assert 'deployments.apps "web" not found' in condition(status, "AbleToScale")["message"]
    wait_until(lambda: any(e.reason == "FailedGetScale" for e in events_of(client, ns, "web")), what="the event")
    wait_until(lambda: spec_replicas(client, ns, "other") == 2, what="the other autoscaler keeps working")
    apply(client, deployment("web", ns, replicas=1, annotations=LONG_AGO))
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 1, what="the new pod")
    set_pod_cpu(plane, ns, "web", 90)
    wait_until(lambda: spec_replicas(client, ns, "web") == 2, what="scaling again once the Deployment is back")
    wait_until(lambda: condition(ha_status(client, ns, "web"), "AbleToScale")["status"] == "True", what="AbleToScale")
    assert run.proc.poll() is None and "Traceback" not in run.text()
