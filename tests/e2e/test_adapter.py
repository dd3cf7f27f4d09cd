"""Custom and external metrics through the real chain: an application's metrics -> Prometheus (Debian's) ->
prometheus-adapter v0.12.0 with the repository's rules (controlplane/manifests/prometheus-adapter-config.yaml) ->
custom.metrics.k8s.io and external.metrics.k8s.io through kube-apiserver's aggregation layer -> pyhpa and upstream's
HPA controller, on ``real_plane``.

The application is this test's exporter (prometheus-client, on loopback): the series a PodMonitor would scrape
from each pod (``app_inflight_requests{namespace, pod}``), an ingress's rate per Service
(``ingress_requests_per_second{namespace, service}``) and a queue's backlog (``queue_messages_ready{namespace,
queue}``). Prometheus scrapes it every second; the adapter relists series every 5 s.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from control_plane_gate import require_control_plane
from lightkube import codecs
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from controlplane.net import free_port
from controlplane.prometheus import PrometheusServer, prometheus_binary

from .util import (
    apply,
    autoscaler,
    condition,
    deployment,
    ha_status,
    new_namespace,
    running_pods,
    spec_replicas,
    wait_until,
)

WAIT = 180  # a Prometheus scrape (1 s), an adapter relist (5 s), a 15 s period and the pods' start, on a busy machine
NO_DOWN_WINDOW = {"scaleDown": {"stabilizationWindowSeconds": 0}}


class App:
    """The application's metrics (see the module docstring), served for Prometheus at ``target``."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.inflight = Gauge("app_inflight_requests", "requests in flight in the pod", ["namespace", "pod"],
                              registry=self.registry)
        self.ingress = Gauge("ingress_requests_per_second", "requests per second through the Service's ingress",
                             ["namespace", "service"], registry=self.registry)
        self.queue = Gauge("queue_messages_ready", "messages waiting in the queue", ["namespace", "queue"],
                           registry=self.registry)
        port = free_port()
        self.server, self.thread = start_http_server(port, addr="127.0.0.1", registry=self.registry)
        self.target = f"127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.shutdown()


class SpreadInflight:
    """A Deployment's requests in flight (``total``) spread over its running pods, each pod's share its series of
    ``app_inflight_requests`` (a gone pod's series removed), every second."""

    def __init__(self, plane, app: App, ns: str, name: str, total: float):
        self.plane, self.app, self.ns, self.name, self.total = plane, app, ns, name, total
        self._stop = threading.Event()
        self._known: set[str] = set()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def apply(self) -> None:
        pods = [p["metadata"]["name"] for p in running_pods(self.plane, self.ns, self.name)]
        for pod in pods:
            self.app.inflight.labels(self.ns, pod).set(self.total / len(pods))
        for gone in self._known - set(pods):
            self.app.inflight.remove(self.ns, gone)
        self._known = set(pods)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.apply()

    def __enter__(self) -> "SpreadInflight":
        self.apply()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture(scope="module")
def chain(real_plane):
    """(the exporter, Prometheus) with prometheus-adapter started on ``real_plane``."""
    require_control_plane(("prometheus-adapter",))  # built after the cluster's binaries
    if prometheus_binary() is None:
        pytest.fail("prometheus is not installed: .ci/run installs Debian's prometheus package")
    app = App()
    with PrometheusServer([app.target], scrape_interval="1s") as prom:
        real_plane.start_adapter(prom.url, relist_seconds=5)
        try:
            yield app, prom
        finally:
            real_plane.stop_adapter()
            app.stop()


def _pods_metric(name: str, average: str) -> dict:
    return {"type": "Pods", "pods": {"metric": {"name": name}, "target": {"type": "AverageValue",
                                                                        "averageValue": average}}}


def _native(name: str, ns: str, metrics: list[dict], lo: int, hi: int) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": lo, "maxReplicas": hi, "metrics": metrics, "behavior": NO_DOWN_WINDOW}}


def test_a_pods_metric_scales_pyhpa_and_upstream_alike(real_plane, chain, pyhpa):
    """``app_inflight_requests`` averaging 10 a pod: 60 in flight over 2 pods wants 6 (two steps: 4 pods or 100 %
    per 15 s allows 4 first), then 12 wants 2 again. pyhpa's ``api`` and upstream's ``twin`` read the same
    adapter."""
    app, _ = chain
    ns = new_namespace(real_plane.client(), f"pods-{uuid.uuid4().hex[:6]}")
    client = real_plane.client()
    for name in ("api", "twin"):
        apply(client, deployment(name, ns, replicas=2))
    wait_until(lambda: len(running_pods(real_plane, ns, None)) == 4, what="two running pods each")
    metric = [_pods_metric("app_inflight_requests", "10")]
    apply(client, autoscaler("api", ns, "api", metric, 1, 10, behavior=NO_DOWN_WINDOW))
    client.create(codecs.from_dict(_native("twin", ns, metric, 1, 10)))
    pyhpa("-n", ns, on=real_plane)
    with SpreadInflight(real_plane, app, ns, "api", 60) as api, SpreadInflight(real_plane, app, ns, "twin", 60) as twin:
        wait_until(lambda: spec_replicas(client, ns, "api") == 6 and spec_replicas(client, ns, "twin") == 6,
                   timeout=WAIT, what="both at 6 replicas")
        status = ha_status(client, ns, "api")
        assert condition(status, "ScalingActive")["reason"] == "ValidMetricFound"
        api.total = twin.total = 12
        wait_until(lambda: spec_replicas(client, ns, "api") == 2 and spec_replicas(client, ns, "twin") == 2,
                   timeout=WAIT, what="both back to 2")
        # the next syncs at 2 replicas read the same 6 a pod and write it (the sync that scaled wrote 12 / 6 = 2)
        wait_until(lambda: ha_status(client, ns, "api")["currentMetrics"][0]["pods"]["current"]["averageValue"]
                   == client.get(HorizontalPodAutoscaler, "twin", namespace=ns).status.currentMetrics[0].pods.current
                   .averageValue == "6", timeout=WAIT, what="both statuses at 6 a pod")


def test_an_object_metric_of_a_service_and_an_external_metric(real_plane, chain, pyhpa):
    """``ingress_requests_per_second`` of Service ``web`` (350, target value 100: 4 replicas) and
    ``queue_messages_ready`` of queue ``orders`` (90, target 30 a replica: 3 replicas), each scaling a Deployment
    from 1."""
    app, _ = chain
    ns = new_namespace(real_plane.client(), f"obj-{uuid.uuid4().hex[:6]}")
    client = real_plane.client()
    client.create(codecs.from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
                                    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}))
    for name in ("web", "worker"):
        apply(client, deployment(name, ns, replicas=1))
    app.ingress.labels(ns, "web").set(350)
    app.queue.labels(ns, "orders").set(90)
    apply(client, autoscaler("web", ns, "web", [{"type": "Object", "object": {
        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
        "metric": {"name": "ingress_requests_per_second"}, "target": {"type": "Value", "value": "100"}}}], 1, 10))
    apply(client, autoscaler("worker", ns, "worker", [{"type": "External", "external": {
        "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "orders"}}},
        "target": {"type": "AverageValue", "averageValue": "30"}}}], 1, 10))
    pyhpa("-n", ns, on=real_plane)
    wait_until(lambda: spec_replicas(client, ns, "web") == 4 and spec_replicas(client, ns, "worker") == 3,
               timeout=WAIT, what="web at 4 and worker at 3")
    assert ha_status(client, ns, "web")["currentMetrics"][0]["object"]["current"]["value"] == "350"
    # upstream's GetExternalPerPodMetricReplicas: the average over the replicas of the sync (90 over 1 when it
    # scaled; the next sync's 90 over 3)
    wait_until(lambda: ha_status(client, ns, "worker")["currentMetrics"][0]["external"]["current"]["averageValue"]
               == "30", timeout=WAIT, what="worker's status at 30 a replica")


def test_the_adapter_stopped_at_night_holds_or_falls_back_and_both_recover(real_plane, chain, pyhpa):
    """Two autoscalers of ``queue_messages_ready`` (target 30 a replica, 60 now: 2 replicas), one with ``fallback``
    (failureThreshold 1, 5 replicas). The adapter stops and the backlog grows to 120: the one without fallback
    holds at 2 with ScalingActive=False/FailedGetExternalMetric, the other goes to 5; the adapter comes back: both
    follow the backlog, 4 replicas."""
    app, prom = chain
    ns = new_namespace(real_plane.client(), f"night-{uuid.uuid4().hex[:6]}")
    client = real_plane.client()
    for name in ("plain", "safe"):
        apply(client, deployment(name, ns, replicas=1))
    app.queue.labels(ns, "jobs").set(60)
    metric = [{"type": "External", "external": {
        "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "jobs"}}},
        "target": {"type": "AverageValue", "averageValue": "30"}}}]
    apply(client, autoscaler("plain", ns, "plain", metric, 1, 10, behavior=NO_DOWN_WINDOW))
    apply(client, autoscaler("safe", ns, "safe", metric, 1, 10, behavior=NO_DOWN_WINDOW,
                             fallback={"failureThreshold": 1, "replicas": 5}))
    pyhpa("--sync-period", "5", "-n", ns, on=real_plane)
    wait_until(lambda: spec_replicas(client, ns, "plain") == 2 and spec_replicas(client, ns, "safe") == 2,
               timeout=WAIT, what="both at 2")
    real_plane.components["prometheus-adapter"].stop()
    try:
        app.queue.labels(ns, "jobs").set(120)
        wait_until(lambda: spec_replicas(client, ns, "safe") == 5, timeout=WAIT, what="the fallback to 5")
        status = wait_until(lambda: (s := ha_status(client, ns, "plain")) and
                            condition(s, "ScalingActive")["status"] == "False" and s, timeout=WAIT,
                            what="plain's ScalingActive=False")
        assert condition(status, "ScalingActive")["reason"] == "FailedGetExternalMetric"
        assert spec_replicas(client, ns, "plain") == 2
    finally:
        real_plane.components["prometheus-adapter"].start()
    wait_until(lambda: spec_replicas(client, ns, "plain") == 4 and spec_replicas(client, ns, "safe") == 4,
               timeout=WAIT, what="both following the backlog again (4 replicas)")
    assert condition(ha_status(client, ns, "safe"), "Fallback")["status"] == "False"
