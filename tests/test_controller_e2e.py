"""The controller end to end through the Kubernetes API double (kubedouble) over real HTTP.

Objects the user writes (Deployments, autoscalers) are created through the API and schema-checked;
what kubelet and the workload controllers would write (pods, their status) is put into the double
directly. Every test checks ``kd.invalid_requests == []``: every body the controller sent passed the
official schemas (built-ins) or the CRD's schema. Waits are event-based with generous timeouts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from controller_util import CRD, autoscaler, deployment, pod, wait_for
from lightkube import codecs

from kubedouble import KubeDouble
from pyhpa.adapters.kubeconfig import load_config
from pyhpa.controller import Controller, Settings
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler
from pyhpa.controller.kube.api import HttpMetrics, LightkubeCluster
from pyhpa.controller.outputs.status import status_from_decision, with_columns
from pyhpa.core import decide

HA = "pyhpa.dev/v1alpha1"


class Running:
    """A Controller against the double on the test's loop; ``results`` are its SyncResults in order,
    ``written`` the status bodies it PUT (key, status), ``synced_at[key]`` the loop times of its syncs."""

    def __init__(self, kd: KubeDouble, **settings):
        settings.setdefault("health_port", None)
        self.settings = Settings(**settings)
        self.cluster = LightkubeCluster(load_config(server=kd.url), self.settings.api_timeout_seconds,
                                        self.settings.field_manager, trust_env=False)
        metrics = HttpMetrics(self.cluster.raw, self.cluster.discovery, self.settings.metrics_timeout_seconds)
        self.controller = Controller(self.settings, self.cluster, metrics)
        self.results, self.written, self.synced_at = [], [], {}
        self.controller.reconciler.on_synced = self._synced
        writer = self.controller.writer
        original = writer.replace_status

        async def spy(ns, name, body):
            answer = await original(ns, name, body)
            self.written.append((f"{ns}/{name}", body["status"]))
            return answer

        writer.replace_status = spy
        self.stop = asyncio.Event()
        self.task: asyncio.Task | None = None

    def _synced(self, result) -> None:
        self.results.append(result)
        self.synced_at.setdefault(result.key, []).append(asyncio.get_running_loop().time())

    async def __aenter__(self) -> "Running":
        self.task = asyncio.create_task(self.controller.run(self.stop))
        await wait_for(lambda: self.controller.ready or self.task.done(), what="caches synced")
        return self

    async def __aexit__(self, *exc) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 60)
        await self.cluster.close()

    def rescales(self, key: str) -> list:
        return [r for r in self.results if r.key == key and r.decision is not None and r.decision.rescale]


def replicas(kd: KubeDouble, name: str, gv: str = "apps/v1", plural: str = "deployments") -> int:
    return kd.get_object(gv, plural, "default", name)["spec"]["replicas"]


def events(kd: KubeDouble, regarding: str) -> list[dict]:
    return [e for e in kd.list_objects("events.k8s.io/v1", "events", "default")
            if e["regarding"]["name"] == regarding]


def set_cpu(kd: KubeDouble, app: str, n: int, usage: str, **containers: str) -> None:
    for i in range(n):
        kd.set_pod_metrics("default", f"{app}-{i}", {"app": {"cpu": usage}, **{c: {"cpu": u} for c, u in containers.items()}})


def put_pods(kd: KubeDouble, app: str, start: int, stop: int) -> None:
    for i in range(start, stop):
        kd.put_object(pod(f"{app}-{i}", app))


async def put_deployment(kd: KubeDouble, client: Any, name: str, n: int, usage: str) -> None:
    """A Deployment ``name`` of ``n`` Running pods (``put_pods``), each using ``usage`` of CPU, created through
    ``client`` (lightkube's async client of ``kd``)."""
    await client.create(codecs.from_dict(deployment(name, n)))
    put_pods(kd, name, 0, n)
    set_cpu(kd, name, n, usage)


def printer_columns(obj: dict) -> list:
    """What ``kubectl get`` shows of ``obj`` in the CRD's printer columns (their simple JSONPaths), in order."""
    out = []
    for column in CRD["spec"]["versions"][0]["additionalPrinterColumns"]:
        value = obj
        for key in column["jsonPath"].lstrip(".").split("."):
            value = value.get(key) if isinstance(value, dict) else None
        out.append(value)
    return out


def assert_exactly_as_decided(result, written_status: dict) -> None:
    """The status the controller wrote is the core's decision on the inputs that sync gathered (and the texts of
    the printer columns, REFERENCE and TARGETS, from its metrics: tests/test_printer_columns.py)."""
    a = result.gathered.autoscaler
    again = decide(result.gathered.inputs)
    assert again.desired_replicas == result.decision.desired_replicas
    decided = status_from_decision(again, a.generation)
    assert written_status == with_columns(decided, a, [p.status for p in again.proposals])


async def test_scales_writes_status_and_events_as_the_core_decides_then_stops_when_deleted(kd):
    client = kd.async_client()
    await put_deployment(kd, client, "web", 3, "200m")  # 100 % of the 200m request; target 50 %
    await client.create(HorizontalAutoscaler(autoscaler(
        "web", "web", behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}, syncPeriodSeconds=1)))
    async with Running(kd, sync_period_seconds=1) as run:
        await wait_for(lambda: replicas(kd, "web") == 6, what="scale up to 6")
        up = (await wait_for(lambda: run.rescales("default/web"), what="the scale-up sync's result"))[0]
        assert (up.decision.current_replicas, up.decision.desired_replicas, up.action) == (3, 6, "scale_up")
        key_status = [s for k, s in run.written if k == "default/web"]
        assert_exactly_as_decided(up, key_status[0])
        status = key_status[0]
        assert (status["currentReplicas"], status["desiredReplicas"]) == (3, 6)
        assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
            ("AbleToScale", "True", "SucceededRescale"), ("ScalingActive", "True", "ValidMetricFound"),
            ("ScalingLimited", "False", "DesiredWithinRange"),
            ("ScaledToZero", "False", "NotScaledToZero")]  # HPAScaleToZero: on by default since v1.37
        assert status["currentMetrics"] == [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": 100, "averageValue": "200m"}}}]
        # kubectl get hza: REFERENCE and TARGETS as kubectl get hpa shows them, from the CRD's printer columns
        stored = kd.get_object(HA, "horizontalautoscalers", "default", "web")
        assert printer_columns(stored)[:2] == ["Deployment/web", "cpu: 100%/50%"]
        evs = await wait_for(lambda: events(kd, "web"), what="the rescale event")
        ev = evs[0]
        assert (ev["type"], ev["reason"], ev["action"]) == ("Normal", "SuccessfulRescale", "Scale")
        assert ev["note"] == "New size: 6; reason: cpu resource utilization (percentage of request) above target"
        assert ev["note"] == up.decision.events[0].message
        assert ev["reportingController"] == "pyhpa.dev/controller"
        assert (ev["regarding"]["apiVersion"], ev["regarding"]["kind"]) == (HA, "HorizontalAutoscaler")

        # the "deployment controller" brings the new pods up; load drops to 25 %: scale down again
        put_pods(kd, "web", 3, 6)
        set_cpu(kd, "web", 6, "50m")
        await wait_for(lambda: replicas(kd, "web") == 3, what="scale down to 3")
        downs = await wait_for(lambda: [r for r in run.rescales("default/web") if r.action == "scale_down"],
                               what="the scale-down sync's result")
        assert [r.decision.desired_replicas for r in downs] == [3]
        await wait_for(lambda: any(e["note"] == "New size: 3; reason: All metrics below target"
                                   for e in events(kd, "web")), what="the scale-down event")
        stored = kd.get_object(HA, "horizontalautoscalers", "default", "web")["status"]
        assert stored["observedGeneration"] == 1 and stored["desiredReplicas"] == 3
        assert stored["targets"] == "cpu: 25%/50%"
        assert kd.count_requests("GET", r"^/api/v1/pods$", watch=False) == 1  # the informer's list, no LIST per sync
        assert kd.count_requests("GET", r"^/api/v1/namespaces/default/pods") == 0

        # deleting the autoscaler stops it
        await client.delete(HorizontalAutoscaler, "web", namespace="default")
        await wait_for(lambda: "default/web" not in run.controller.autoscalers, what="the delete to arrive")
        await wait_for(lambda: run.controller.queue.processing == 0, what="a sync already in flight to finish")
        kd.clear_requests()
        set_cpu(kd, "web", 6, "400m")
        await asyncio.sleep(3.5)  # three sync periods
        assert kd.count_requests(path_regex="deployments/web/scale") == 0
        assert kd.count_requests(path_regex="metrics.k8s.io") == 0
        assert replicas(kd, "web") == 3
    assert kd.invalid_requests == []


async def test_every_metric_source_through_the_metrics_apis(kd):
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("api", 2)))
    for i in range(2):
        p = pod(f"api-{i}", "api")
        p["spec"]["containers"].append({"name": "sidecar", "image": "s", "resources": {"requests": {"cpu": "100m"}}})
        kd.put_object(p)
    set_cpu(kd, "api", 2, "100m", sidecar="100m")
    kd.set_pods_metric("default", "requests_per_second", {"api-0": "15", "api-1": "15"})
    kd.set_object_metric("default", "deployments.apps", "api", "queue_length", "30")
    kd.set_external_metric("default", "queue_messages", [({"queue": "jobs"}, "20"), ({"queue": "other"}, "100")])
    metrics = [
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {
            "type": "Utilization", "averageUtilization": 50}}},
        {"type": "Pods", "pods": {"metric": {"name": "requests_per_second"},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "Object", "object": {"describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                                      "metric": {"name": "queue_length"}, "target": {"type": "Value", "value": "10"}}},
        {"type": "External", "external": {"metric": {"name": "queue_messages",
                                                     "selector": {"matchLabels": {"queue": "jobs"}}},
                                          "target": {"type": "AverageValue", "averageValue": "5"}}},
    ]
    await client.create(HorizontalAutoscaler(autoscaler("api", "api", metrics, max_replicas=20)))
    async with Running(kd, sync_period_seconds=30) as run:
        await wait_for(lambda: run.written, what="the first status")
        first = run.results[0]
        assert_exactly_as_decided(first, run.written[0][1])
        props = first.decision.proposals
        assert [p.replicas for p in props] == [2, 3, 6, 4] and all(p.error is None for p in props)
        assert [m["type"] for m in run.written[0][1]["currentMetrics"]] == [
            "ContainerResource", "Pods", "Object", "External"]
        assert replicas(kd, "api") == first.decision.desired_replicas == 4  # scale-up limit max(2*2, 4)
        assert kd.count_requests("GET", r"custom\.metrics\.k8s\.io/v1beta2/namespaces/default/pods/\*/requests_per_second") == 1
        assert kd.count_requests("GET", r"deployments\.apps/api/queue_length") == 1
        assert kd.count_requests("GET", r"external\.metrics\.k8s\.io/v1beta1/namespaces/default/queue_messages") == 1
    assert kd.invalid_requests == []


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                                    "statusReplicasPath": ".status.replicas",
                                                                    "labelSelectorPath": ".status.selector"}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                               "status": {"type": "object", "properties": {
                                   "replicas": {"type": "integer"}, "selector": {"type": "string"}}}}}}}]},
}


@pytest.mark.parametrize("kind", ["StatefulSet", "ReplicaSet", "Widget"])
async def test_any_target_with_a_scale_subresource(kd, kind):
    client = kd.async_client()
    if kind == "Widget":
        kd.register_crd(WIDGET_CRD)
        kd.put_object({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
                       "spec": {"replicas": 2}, "status": {"replicas": 2, "selector": "app=w"}})
        api_version, gv, plural = "example.com/v1", "example.com/v1", "widgets"
    else:
        body = deployment("w", 2, kind=kind)
        if kind == "StatefulSet":
            body["spec"]["serviceName"] = "w"
        await client.create(codecs.from_dict(body))
        api_version, gv, plural = "apps/v1", "apps/v1", kind.lower() + "s"
    put_pods(kd, "w", 0, 2)
    set_cpu(kd, "w", 2, "200m")
    await client.create(HorizontalAutoscaler(autoscaler("w", "w", kind=kind, api_version=api_version)))
    async with Running(kd):
        await wait_for(lambda: replicas(kd, "w", gv, plural) == 4, what=f"the {kind} scaled to 4")
    assert kd.invalid_requests == []


async def test_a_hanging_metrics_api_does_not_delay_the_other_autoscalers(kd):
    """One autoscaler's external metrics API never answers; with 2 workers, the others still sync on
    their own period while that autoscaler's syncs wait for the metrics timeout, then report it."""
    client = kd.async_client()
    healthy = [f"ok-{i}" for i in range(4)]
    for name in healthy + ["slow"]:
        await put_deployment(kd, client, name, 2, "100m")
    kd.add_fault("GET", r"external\.metrics\.k8s\.io/.*/stuck_metric", hang=True)
    stuck = {"type": "External", "external": {"metric": {"name": "stuck_metric"},
                                              "target": {"type": "Value", "value": "1"}}}
    await client.create(HorizontalAutoscaler(autoscaler("slow", "slow", [stuck])))
    for name in healthy:
        await client.create(HorizontalAutoscaler(autoscaler(name, name)))
    period, timeout = 1.0, 6.0
    async with Running(kd, workers=2, sync_period_seconds=period, metrics_timeout_seconds=timeout) as run:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await wait_for(lambda: "default/slow" in run.synced_at, timeout=60, what="the slow sync to time out")
        slow_took = run.synced_at["default/slow"][0] - started
        window = [t for name in healthy for t in run.synced_at[f"default/{name}"] if t <= started + slow_took]
        for name in healthy:
            times = [t for t in run.synced_at[f"default/{name}"] if t <= started + slow_took]
            gaps = [b - a for a, b in zip(times, times[1:])]
            assert len(times) >= 3, (name, times)
            # never waited for "slow" (each wait would be the 6 s timeout); a busy machine may stall the loop a while
            assert max(gaps) < timeout * 0.75, (name, gaps)
        # the slow sync ended by the timeout (its message below), not an answer: the healthy ones synced meanwhile
        assert len(window) >= 12
        status = await wait_for(lambda: (kd.get_object(HA, "horizontalautoscalers", "default", "slow") or {}).get("status"),
                                what="the slow autoscaler's status")
        active = {c["type"]: c for c in status["conditions"]}["ScalingActive"]
        assert (active["status"], active["reason"]) == ("False", "FailedGetExternalMetric")
        assert f"no answer within {timeout:g}s" in active["message"]
    assert kd.invalid_requests == []


async def test_informer_relists_when_the_watch_history_expires(kd):
    client = kd.async_client()
    await put_deployment(kd, client, "web", 2, "100m")
    async with Running(kd) as run:
        informer = run.controller.autoscaler_informer
        await wait_for(lambda: any("horizontalautoscalers" in p for p in kd.open_watches), what="the autoscaler watch")
        put_pods(kd, "web", 2, 4)  # newer resourceVersions the autoscaler watch never saw
        kd.expire_history()  # ... and the server forgets them: resuming from the old one gets 410 Gone
        assert kd.cut_watches("horizontalautoscalers") > 0
        await wait_for(lambda: informer.relists >= 2, what="the re-list after 410 Gone")
        await client.create(HorizontalAutoscaler(autoscaler("web", "web")))
        await wait_for(lambda: any(r.key == "default/web" for r in run.results), what="the new autoscaler synced")
    assert kd.invalid_requests == []


async def test_status_conflict_is_retried_with_the_fresh_resource_version(kd):
    client = kd.async_client()
    await put_deployment(kd, client, "web", 2, "100m")
    await client.create(HorizontalAutoscaler(autoscaler("web", "web")))
    fault = kd.add_fault("PUT", r"horizontalautoscalers/web/status", status=409, times=1,
                         message='Operation cannot be fulfilled: the object has been modified')
    async with Running(kd) as run:
        await wait_for(lambda: run.written, what="the status written after the conflict")
        assert fault.hits == 1 and run.controller.status.conflicts == 1
        assert not any(r.retry for r in run.results)
    stored = kd.get_object(HA, "horizontalautoscalers", "default", "web")["status"]
    assert stored == run.written[0][1]
    assert kd.invalid_requests == []


async def test_health_readiness_and_metrics_endpoints(kd):
    import httpx2

    from pyhpa.controller import run_controller

    client = kd.async_client()
    await put_deployment(kd, client, "web", 2, "200m")
    await client.create(HorizontalAutoscaler(autoscaler("web", "web")))
    started: dict = {}
    stop = asyncio.Event()
    settings = Settings(health_host="127.0.0.1", health_port=0)
    task = asyncio.create_task(run_controller(settings, load_config(server=kd.url), stop=stop, install_signals=False,
                                              on_started=lambda c, h: started.update(c=c, h=h)))
    await wait_for(lambda: started, what="the controller to start")
    base = f"http://127.0.0.1:{started['h'].port}"
    async with httpx2.AsyncClient(trust_env=False) as http:
        assert (await http.get(f"{base}/healthz")).status_code == 200
        await wait_for(lambda: replicas(kd, "web") == 4, what="the scale up")

        async def ready():
            return (await http.get(f"{base}/readyz")).status_code == 200

        await wait_for(ready, what="/readyz")

        async def counted():  # the sync is counted when it ends: after its scale and status writes
            text = (await http.get(f"{base}/metrics")).text
            return text if 'reconciliations_total{action="scale_up",error="none"}' in text else None

        text = await wait_for(counted, what="the scale-up's sync counted in /metrics")
    stop.set()
    controller = await asyncio.wait_for(task, 60)
    assert not controller.ready
    for line in ('horizontal_pod_autoscaler_controller_reconciliations_total{action="scale_up",error="none"} 1.0',
                 'horizontal_pod_autoscaler_controller_metric_computation_total{action="scale_up",error="none",'
                 'metric_type="Resource"} 1.0',
                 "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 1.0",
                 'horizontal_pod_autoscaler_controller_desired_replicas{hpa_name="web",namespace="default"} 4.0'):
        assert line in text
    assert "horizontal_pod_autoscaler_controller_reconciliation_duration_seconds_bucket" in text
    assert "horizontal_pod_autoscaler_controller_metric_computation_duration_seconds_bucket" in text
    assert kd.invalid_requests == []
