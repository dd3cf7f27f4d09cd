"""A HorizontalAutoscaler scaling a real Deployment on the real control plane.

The deployment and replicaset controllers of kube-controller-manager v1.37.2 make the ReplicaSets and Pods, the
scheduler binds them to KWOK's nodes and KWOK starts them; their CPU is KWOK's (``set_pod_cpu`` annotates them),
scraped by metrics-server and served as metrics.k8s.io through the aggregation layer (``real_plane``); the metrics
pipeline failing with and without ``fallback`` is test_metrics_pipeline.py's and test_adapter.py's;
``pyhpa run`` (a subprocess, as the admin) reads and writes only through kube-apiserver. What the unit tests
expect of conditions, status and events (tests/test_controller_e2e.py, tests/test_fallback_controller.py,
tests/test_pause_controller.py, tests/test_schedules_controller.py) is checked here as the API server stored it.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from lightkube.resources.apps_v1 import Deployment
from lightkube.types import PatchType
from test_prediction_live import LEAD, RISE_IN, history_file, needs_prometheus

from controlplane.prometheus import PrometheusServer

from .util import (
    HA,
    apply,
    autoscaler,
    condition,
    cpu_utilization,
    deployment,
    events_of,
    ha_status,
    running_pods,
    set_pod_cpu,
    spec_replicas,
    wait_until,
)

LONG_AGO = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}  # outside the CPU initialization period


@pytest.fixture
def plane(real_plane):
    """This module runs on the real metrics pipeline (metrics-server scraping KWOK's nodes)."""
    return real_plane


NO_DOWN_WINDOW = {"scaleDown": {"stabilizationWindowSeconds": 0}}


def _pods_running(plane, ns, app, n):
    return wait_until(lambda: len(running_pods(plane, ns, app)) == n, what=f"{n} running pods of {app}")


def test_scales_a_deployment_up_and_down_through_its_scale_subresource(plane, client, ns, pyhpa):
    apply(client, deployment("web", ns, replicas=2, annotations=LONG_AGO))
    _pods_running(plane, ns, "web", 2)
    # 140 % of the 100m request, target 50 %: ceil(2 * 140 / 50) = 6 (away from a rounding edge: KWOK's rate is
    # within 2 % of the annotation)
    set_pod_cpu(plane, ns, "web", 140)
    apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10, behavior=NO_DOWN_WINDOW))
    pyhpa("--sync-period", "1", "-n", ns)

    wait_until(lambda: spec_replicas(client, ns, "web") == 6, what="the scale-up to 6")
    status = wait_until(lambda: (s := ha_status(client, ns, "web")).get("desiredReplicas") == 6 and s,
                        what="status.desiredReplicas 6")
    assert condition(status, "AbleToScale")["reason"] == "SucceededRescale"
    assert condition(status, "ScalingActive")["status"] == "True"
    assert condition(status, "ScalingActive")["reason"] == "ValidMetricFound"
    assert condition(status, "ScalingLimited")["reason"] == "DesiredWithinRange"
    assert abs(status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] - 140) <= 3  # KWOK's rate
    rescale = [e for e in events_of(client, ns, "web") if e.reason == "SuccessfulRescale"]
    assert rescale[0].note == "New size: 6; reason: cpu resource utilization (percentage of request) above target"
    assert rescale[0].type == "Normal" and rescale[0].reportingController

    # The deployment controller made the pods; all six nearly idle now: ceil(6 * 10 / 50) = 2 through the same
    # subresource, then the two left at 10 %: ceil(2 * 10 / 50) = 1, minReplicas.
    _pods_running(plane, ns, "web", 6)
    set_pod_cpu(plane, ns, "web", 10)
    wait_until(lambda: spec_replicas(client, ns, "web") == 1, what="the scale-down to 1")
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 1, what="the deployment controller to remove pods")
    status = wait_until(lambda: (s := ha_status(client, ns, "web")).get("currentReplicas") == 1 and s,
                        what="status.currentReplicas 1")
    assert status["lastScaleTime"]
    notes = [e.note for e in events_of(client, ns, "web") if e.reason == "SuccessfulRescale"]
    assert notes[1:] == ["New size: 2; reason: All metrics below target",
                         "New size: 1; reason: All metrics below target"]
    assert client.get(Deployment, "web", namespace=ns).status.readyReplicas == 1


def test_pause_annotations_hold_and_set_the_replicas(plane, client, ns, pyhpa):
    apply(client, deployment("web", ns, replicas=2, annotations=LONG_AGO))
    _pods_running(plane, ns, "web", 2)
    set_pod_cpu(plane, ns, "web", 140)
    ha = autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10)
    ha["metadata"]["annotations"] = {"pyhpa.dev/paused": "true"}
    apply(client, ha)
    pyhpa("--sync-period", "1", "-n", ns)
    status = wait_until(lambda: condition(ha_status(client, ns, "web"), "Paused") and ha_status(client, ns, "web"),
                        what="the Paused condition")
    assert condition(status, "Paused")["status"] == "True"
    assert spec_replicas(client, ns, "web") == 2  # it wants 6 and is frozen

    client.patch(HA, "web", {"metadata": {"annotations": {"pyhpa.dev/paused": None, "pyhpa.dev/paused-replicas": "4"}}},
                 namespace=ns, patch_type=PatchType.MERGE)
    wait_until(lambda: spec_replicas(client, ns, "web") == 4, what="paused-replicas 4")
    assert ha_status(client, ns, "web")["pause"]
    client.patch(HA, "web", {"metadata": {"annotations": {"pyhpa.dev/paused-replicas": None}}}, namespace=ns,
                 patch_type=PatchType.MERGE)
    wait_until(lambda: spec_replicas(client, ns, "web") >= 6, what="scaling again once the annotation is removed")
    assert condition(ha_status(client, ns, "web"), "Paused")["status"] == "False"


def test_a_schedule_window_raises_the_floor_while_it_is_active(plane, client, ns, pyhpa):
    apply(client, deployment("web", ns, replicas=1, annotations=LONG_AGO))
    _pods_running(plane, ns, "web", 1)
    set_pod_cpu(plane, ns, "web", 50)  # at target: upstream alone keeps 1
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    window = {"name": "launch", "start": (now - dt.timedelta(minutes=1)).isoformat().replace("+00:00", "Z"),
              "end": (now + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z"), "minReplicas": 3}
    apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10, schedules=[window]))
    pyhpa("--sync-period", "1", "-n", ns)
    wait_until(lambda: spec_replicas(client, ns, "web") == 3, what="the window's floor of 3")
    # the rescale comes before the sync's status write: wait for the status of the same sync
    status = wait_until(lambda: (st := ha_status(client, ns, "web")).get("schedules") and st,
                        what="status.schedules written")
    assert status["schedules"]["active"] == ["launch"]
    assert condition(status, "ScheduleActive")["status"] == "True"


@needs_prometheus
def test_prediction_from_a_backfilled_prometheus_scales_up_before_the_load(plane, client, ns, pyhpa, tmp_path):
    """tests/test_prediction_live.py on the real control plane: 7 days of the pods' CPU counter backfilled into a
    real Prometheus (promtool), the load rising every day ten minutes after now (``RISE_IN``, inside the forecast's
    ``LEAD``); the live pod is idle."""
    apply(client, deployment("web", ns, replicas=1, cpu="1", annotations=LONG_AGO))
    _pods_running(plane, ns, "web", 1)
    set_pod_cpu(plane, ns, "web", 200)  # 20 % of the 1-CPU request against 50 %: the metric asks for 1
    now = time.time()
    history_file(tmp_path / "history.om", now, rise_in=RISE_IN, namespace=ns)
    with PrometheusServer([], backfill=tmp_path / "history.om") as prom:
        apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10, prediction={"leadSeconds": LEAD}))
        pyhpa("--sync-period", "1", "-n", ns, "--prometheus-url", prom.url)
        wait_until(lambda: spec_replicas(client, ns, "web") > 1, timeout=90, what="a predictive scale-up")
        assert time.time() < now + RISE_IN, "the scale-up came after the load would have arrived"
        status = wait_until(lambda: (s := ha_status(client, ns, "web")).get("prediction", {}).get("reason")
                            == "Predicting" and s, what="status.prediction")
        assert status["prediction"]["periodsSeconds"] == [86400]
        assert condition(status, "PredictionActive")["status"] == "True"
        rescale = [e.note for e in events_of(client, ns, "web") if e.reason == "SuccessfulRescale"]
        assert "Prediction" in rescale[0] or "predict" in rescale[0].lower(), rescale
