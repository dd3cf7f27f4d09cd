"""The Kubernetes API double, exercised through lightkube's real clients (sync and async) and httpx2."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest
from lightkube import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.autoscaling_v1 import ScaleSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, LabelSelectorRequirement, ObjectMeta
from lightkube.operators import exists, in_, not_equal, not_exists, not_in
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Pod
from lightkube.types import OnErrorAction, OnErrorResult, PatchType, on_error_retry

from kubedouble import KubeDouble

REPO = Path(__file__).resolve().parents[1]

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas",
                                                     "labelSelectorPath": ".status.selector"}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "replicas": {"type": "integer", "default": 1},
                    "port": {"x-kubernetes-int-or-string": True},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                "status": {"type": "object", "properties": {
                    "replicas": {"type": "integer"}, "selector": {"type": "string"},
                    "phase": {"type": "string", "enum": ["Ready", "Pending"]}}}}}},
        }],
    },
}
Widget = create_namespaced_resource("example.com", "v1", "Widget", "widgets")


def deployment(name: str, replicas: int = 2, selector: LabelSelector | None = None) -> Deployment:
    """A valid Deployment labelled ``app=<name>``."""
    labels = {"app": name}
    return Deployment(
        metadata=ObjectMeta(name=name, labels=labels),
        spec=DeploymentSpec(
            replicas=replicas, selector=selector or LabelSelector(matchLabels=labels),
            template=PodTemplateSpec(metadata=ObjectMeta(labels=labels),
                                     spec=PodSpec(containers=[Container(name="app", image="nginx")]))))


def pod(name: str, **labels: str) -> Pod:
    """A valid Pod with ``labels``."""
    return Pod(metadata=ObjectMeta(name=name, labels=labels),
               spec=PodSpec(containers=[Container(name="app", image="nginx")]))


def names(objs) -> list[str]:
    return sorted(o.metadata.name for o in objs)


@pytest.fixture
def kd(kube_double_thread):
    return kube_double_thread


@pytest.fixture
def client(kd):
    with kd.client() as c:
        yield c


# ----- CRUD, selectors, paging -------------------------------------------------------------------------
def test_create_get_list_with_label_and_field_selectors(kd, client):
    for name, labels in [("a", {"app": "web", "tier": "fe"}), ("b", {"app": "web"}), ("c", {"app": "db"})]:
        created = client.create(pod(name, **labels))
        assert created.metadata.uid and created.metadata.creationTimestamp and created.metadata.generation == 1
        assert created.metadata.namespace == "default" and created.status.phase == "Pending"
    client.create(pod("d", app="web"), namespace="other")

    assert client.get(Pod, "a").metadata.labels == {"app": "web", "tier": "fe"}
    assert names(client.list(Pod, labels={"app": "web"})) == ["a", "b"]
    assert names(client.list(Pod, labels={"app": not_equal("web")})) == ["c"]
    assert names(client.list(Pod, labels={"app": in_(["web", "db"]), "tier": exists()})) == ["a"]
    assert names(client.list(Pod, labels={"app": not_in(["db"]), "tier": not_exists()})) == ["b"]
    assert names(client.list(Pod, fields={"metadata.name": "c"})) == ["c"]
    assert names(client.list(Pod, namespace="*", labels={"app": "web"})) == ["a", "b", "d"]
    assert names(client.list(Pod, namespace="*", fields={"metadata.namespace": "other"})) == ["d"]

    with pytest.raises(ApiError) as err:
        client.create(pod("a"))
    assert (err.value.status.code, err.value.status.reason) == (409, "AlreadyExists")
    with pytest.raises(ApiError) as err:
        client.get(Pod, "missing")
    assert (err.value.status.code, err.value.status.reason) == (404, "NotFound")
    client.delete(Pod, "a")
    with pytest.raises(ApiError) as err:
        client.delete(Pod, "a")
    assert err.value.status.code == 404


def test_raw_selector_syntax_and_paging(kd, client):
    for i in range(5):
        client.create(pod(f"p{i}", app="web", idx=str(i)))
    raw = httpx2.get(f"{kd.url}/api/v1/namespaces/default/pods",
                    params={"labelSelector": "app==web,idx in (1, 3),!missing"}).json()
    assert [i["metadata"]["name"] for i in raw["items"]] == ["p1", "p3"]
    assert int(raw["metadata"]["resourceVersion"]) == int(kd.resource_version)

    kd.clear_requests()
    assert names(client.list(Pod, chunk_size=2)) == [f"p{i}" for i in range(5)]
    assert kd.count_requests("GET", r"/pods$") == 3  # lightkube followed two continue tokens


def test_resource_versions_and_generation(client):
    d = client.create(deployment("web", replicas=2))
    rv1 = int(d.metadata.resourceVersion)
    d.spec.replicas = 3
    d2 = client.replace(d)
    assert int(d2.metadata.resourceVersion) > rv1 and d2.metadata.generation == 2
    d3 = client.patch(Deployment, "web", {"metadata": {"labels": {"x": "y"}}}, patch_type=PatchType.MERGE)
    assert d3.metadata.generation == 2 and int(d3.metadata.resourceVersion) > int(d2.metadata.resourceVersion)
    assert client.replace(d3).metadata.resourceVersion == d3.metadata.resourceVersion  # no-op: no new version


# ----- watch -------------------------------------------------------------------------------------------
async def test_watch_events_and_resume_from_resource_version(kube_double):
    kd, client = kube_double, kube_double.async_client()
    seen: list[tuple[str, str, str]] = []

    async def watch(rv=None, count=3):
        async for etype, obj in client.watch(Deployment, namespace="default", resource_version=rv):
            seen.append((etype, obj.metadata.name, obj.metadata.resourceVersion))
            if len(seen) >= count:
                return

    task = asyncio.create_task(watch())
    while not kd.open_watches:
        await asyncio.sleep(0.01)
    await client.create(deployment("web"))
    await client.patch(Deployment, "web", {"spec": {"replicas": 5}}, patch_type=PatchType.MERGE)
    await client.delete(Deployment, "web")
    await asyncio.wait_for(task, 5)
    assert [e[0] for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert int(seen[2][2]) > int(seen[1][2]) > int(seen[0][2])

    added_rv = seen[0][2]
    seen.clear()
    await asyncio.wait_for(watch(rv=added_rv, count=2), 5)  # replayed from retained history
    assert [e[0] for e in seen] == ["MODIFIED", "DELETED"]
    await client.close()


def test_watch_label_selector_transitions_and_put_object(kd, client):
    events: list[tuple[str, str]] = []
    done = threading.Event()

    def run():
        for etype, obj in client.watch(Pod, labels={"role": "worker"}):
            events.append((etype, obj.metadata.name))
            if len(events) == 3:
                done.set()
                return

    threading.Thread(target=run, daemon=True).start()
    _wait(lambda: kd.open_watches)
    client.create(pod("p1", role="worker"))
    client.patch(Pod, "p1", {"metadata": {"labels": {"role": "idle"}}}, patch_type=PatchType.MERGE)
    obj = kd.get_object("v1", "pods", "default", "p1")
    obj["metadata"]["labels"]["role"] = "worker"
    kd.put_object(obj)
    assert done.wait(5)
    assert events == [("ADDED", "p1"), ("DELETED", "p1"), ("ADDED", "p1")]


def test_expired_resource_version_gives_410_and_relist_recovers(kd, client):
    client.create(deployment("a"))
    listing = client.list(Deployment)
    assert names(listing) == ["a"]
    old_rv = listing.resourceVersion
    client.create(deployment("b"))
    kd.expire_history()

    with pytest.raises(ApiError) as err:  # the 410 arrives as an ERROR event inside the stream
        next(iter(client.watch(Deployment, resource_version=old_rv)))
    assert (err.value.status.code, err.value.status.reason) == (410, "Expired")

    relist = client.list(Deployment)  # the informer pattern: re-list, then watch from the new version
    assert names(relist) == ["a", "b"]
    stream = iter(client.watch(Deployment, resource_version=relist.resourceVersion))
    client.create(deployment("c"))
    etype, obj = next(stream)
    assert (etype, obj.metadata.name) == ("ADDED", "c")

    kd.expire_history()  # on_error_retry: lightkube drops the version and gets the current state as ADDED
    retry = iter(client.watch(Deployment, resource_version=old_rv, on_error=on_error_retry))
    replayed = [next(retry) for _ in range(3)]
    assert sorted((t, o.metadata.name) for t, o in replayed) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


def test_cut_watches_graceful_resumes_without_loss_and_abrupt_raises(kd, client):
    client.create(deployment("a"))
    stream = iter(client.watch(Deployment, resource_version=kd.resource_version))
    client.create(deployment("b"))
    assert next(stream)[1].metadata.name == "b"
    assert kd.cut_watches(r"/deployments$") == 1
    client.create(deployment("c"))
    assert next(stream)[1].metadata.name == "c"  # lightkube reconnected from the last version it saw
    assert kd.count_requests("GET", "deployments", watch=True) == 2

    errors: list[Exception] = []

    def stop_on_error(e, count):
        errors.append(e)
        return OnErrorResult(OnErrorAction.STOP)

    abrupt = iter(client.watch(Deployment, resource_version=kd.resource_version, on_error=stop_on_error))
    client.create(deployment("d"))
    assert next(abrupt)[1].metadata.name == "d"
    kd.cut_watches(abrupt=True)
    assert list(abrupt) == []
    assert isinstance(errors[0], httpx2.TransportError)


async def test_bookmarks_and_server_timeout():
    async with KubeDouble() as kd:
        url = f"{kd.url}/apis/apps/v1/namespaces/default/deployments"
        async with httpx2.AsyncClient(timeout=5) as h:
            params = {"watch": "1", "allowWatchBookmarks": "true", "resourceVersion": kd.resource_version,
                      "timeoutSeconds": "1"}
            async with h.stream("GET", url, params=params) as resp:
                while not kd.open_watches:
                    await asyncio.sleep(0.01)
                assert kd.send_bookmarks() == 1
                lines = [line async for line in resp.aiter_lines()]  # ends by itself after timeoutSeconds
        assert len(lines) == 1 and '"BOOKMARK"' in lines[0] and kd.resource_version in lines[0]


# ----- optimistic concurrency, status, scale -------------------------------------------------------------
def test_stale_update_and_stale_scale_give_409(client):
    d = client.create(deployment("web"))
    client.patch(Deployment, "web", {"spec": {"replicas": 4}}, patch_type=PatchType.MERGE)
    d.spec.replicas = 9
    with pytest.raises(ApiError) as err:
        client.replace(d)
    assert (err.value.status.code, err.value.status.reason) == (409, "Conflict")

    scale = client.get(Deployment.Scale, "web")
    client.create(pod("bump"))  # unrelated writes do not make the scale stale
    scale.spec = ScaleSpec(replicas=6)
    fresh = client.replace(scale, "web")
    assert fresh.spec.replicas == 6 and client.get(Deployment, "web").spec.replicas == 6
    scale.spec = ScaleSpec(replicas=7)  # still carries the old resourceVersion
    with pytest.raises(ApiError) as err:
        client.replace(scale, "web")
    assert (err.value.status.code, err.value.status.reason) == (409, "Conflict")
    patched = client.patch(Deployment.Scale, "web", {"spec": {"replicas": 8}}, patch_type=PatchType.MERGE)
    assert patched.spec.replicas == 8


def test_status_update_does_not_change_spec(client):
    d = client.create(deployment("web", replicas=2))
    assert d.status is not None and d.status.replicas is None
    d.spec.replicas = 10
    d.status.replicas = 2
    d.status.readyReplicas = 2
    after = client.replace(Deployment.Status(**_fields(d)), "web")
    assert after.status.readyReplicas == 2 and after.spec.replicas == 2 and after.metadata.generation == 1
    patched = client.patch(Deployment.Status, "web", {"status": {"replicas": 3}, "spec": {"replicas": 7}},
                           patch_type=PatchType.MERGE)
    assert patched.status.replicas == 3 and patched.spec.replicas == 2
    d2 = client.get(Deployment, "web")
    d2.spec.replicas = 4
    d2.status.replicas = 99  # status sent to the main resource is ignored
    out = client.replace(d2)
    assert out.spec.replicas == 4 and out.status.replicas == 3 and out.metadata.generation == 2


def _fields(obj):
    return {f: getattr(obj, f) for f in ("apiVersion", "kind", "metadata", "spec", "status")}


def test_scale_selector_string_from_match_labels_and_expressions(client):
    selector = LabelSelector(matchLabels={"app": "web", "a": "1"}, matchExpressions=[
        LabelSelectorRequirement(key="tier", operator="In", values=["fe", "be"]),
        LabelSelectorRequirement(key="canary", operator="DoesNotExist")])
    d = deployment("web", replicas=3, selector=selector)
    d.spec.template.metadata.labels = {"app": "web", "a": "1", "tier": "fe"}
    client.create(d)
    scale = client.get(Deployment.Scale, "web")
    assert scale.spec.replicas == 3 and scale.status.replicas == 0
    assert scale.status.selector == "a=1,app=web,!canary,tier in (be,fe)"


# ----- patch flavours ------------------------------------------------------------------------------------
def test_patch_types_json_strategic_and_apply(client):
    client.create(deployment("web"))
    out = client.patch(Deployment, "web", [{"op": "replace", "path": "/spec/replicas", "value": 4}],
                       patch_type=PatchType.JSON)
    assert out.spec.replicas == 4
    out = client.patch(Deployment, "web", {"metadata": {"annotations": {"k": "v"}}})  # strategic default
    assert out.metadata.annotations == {"k": "v"}
    lease = Lease(metadata=ObjectMeta(name="leader"), spec={"holderIdentity": "me", "leaseDurationSeconds": 15})
    created = client.apply(lease, field_manager="pyhpa")
    assert created.spec.holderIdentity == "me"
    applied = client.apply(Lease(metadata=ObjectMeta(name="leader"), spec={"holderIdentity": "you"}),
                           field_manager="pyhpa", force=True)
    assert applied.spec.holderIdentity == "you" and applied.spec.leaseDurationSeconds == 15
    with pytest.raises(ApiError) as err:
        client.patch(Deployment, "web", [{"op": "test", "path": "/spec/replicas", "value": 1}],
                     patch_type=PatchType.JSON)
    assert err.value.status.code == 422


# ----- CRDs ----------------------------------------------------------------------------------------------
def test_crd_registration_create_status_and_scale(kd, client):
    kd.register_crd(WIDGET_CRD)
    w = client.create(Widget(metadata=ObjectMeta(name="w1"), spec={"size": 2, "port": "http"},
                             status={"phase": "Ready"}))
    assert w.spec["replicas"] == 1  # schema default applied
    assert not w.status  # status is dropped on create (status subresource)
    w["status"] = {"phase": "Ready", "replicas": 1, "selector": "app=w1"}
    w.spec["size"] = 50
    st = client.replace(Widget.Status(w.to_dict()), "w1")
    assert st.status["phase"] == "Ready" and st.spec["size"] == 2
    scale = client.get(Widget.Scale, "w1")
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (1, 1, "app=w1")
    client.patch(Widget.Scale, "w1", {"spec": {"replicas": 3}}, patch_type=PatchType.MERGE)
    assert client.get(Widget, "w1").spec["replicas"] == 3

    with pytest.raises(ApiError) as err:
        client.create(Widget(metadata=ObjectMeta(name="bad"), spec={"size": 0}))
    assert err.value.status.code == 422 and "spec.size" in err.value.status.message
    with pytest.raises(ApiError) as err:
        client.create(Widget(metadata=ObjectMeta(name="bad"), spec={"size": 1, "colour": "red"}))
    assert err.value.status.code == 422  # unknown fields are rejected, not silently pruned
    assert len(kd.invalid_requests) == 2


def test_crd_via_post_and_discovery(kd, client):
    client.create(CustomResourceDefinition.from_dict(WIDGET_CRD))
    crds = list(client.list(CustomResourceDefinition))
    assert [c.metadata.name for c in crds] == ["widgets.example.com"]
    assert any(c.type == "Established" and c.status == "True" for c in crds[0].status.conditions)
    client.create(Widget(metadata=ObjectMeta(name="w"), spec={"size": 1}))
    doc = httpx2.get(f"{kd.url}/apis/example.com/v1").json()
    assert {r["name"] for r in doc["resources"]} == {"widgets", "widgets/status", "widgets/scale"}
    client.delete(CustomResourceDefinition, "widgets.example.com")
    assert httpx2.get(f"{kd.url}/apis/example.com/v1/namespaces/default/widgets").status_code == 404


def test_discovery_documents(kd):
    with httpx2.Client(base_url=kd.url) as h:
        assert h.get("/version").json()["minor"] == "37"
        assert h.get("/api").json()["versions"] == ["v1"]
        groups = {g["name"] for g in h.get("/apis").json()["groups"]}
        assert {"apps", "autoscaling", "coordination.k8s.io", "events.k8s.io", "metrics.k8s.io",
                "custom.metrics.k8s.io", "external.metrics.k8s.io"} <= groups
        assert h.get("/apis/apps").json()["preferredVersion"]["groupVersion"] == "apps/v1"
        apps = {r["name"]: r for r in h.get("/apis/apps/v1").json()["resources"]}
        assert apps["deployments/scale"]["kind"] == "Scale" and apps["deployments/scale"]["group"] == "autoscaling"
        assert "deployments/status" in apps and apps["deployments"]["namespaced"] is True
        core = {r["name"] for r in h.get("/api/v1").json()["resources"]}
        assert {"pods", "pods/status", "namespaces", "events"} <= core
        hpa = {r["name"] for r in h.get("/apis/autoscaling/v2").json()["resources"]}
        assert hpa == {"horizontalpodautoscalers", "horizontalpodautoscalers/status"}
        missing = h.get("/apis/nope/v1/things")
        assert missing.status_code == 404 and missing.json()["kind"] == "Status"


# ----- metrics -------------------------------------------------------------------------------------------
def test_metrics_apis(kd, client):
    client.create(pod("web-1", app="web"))
    client.create(pod("web-2", app="web"))
    client.create(pod("db-1", app="db"))
    kd.set_pod_metrics("default", "web-1", {"app": {"cpu": "250m", "memory": "64Mi"}}, timestamp=0)
    kd.set_pod_metrics("default", "db-1", {"app": {"cpu": 1, "memory": "1Gi"}}, window=60)
    kd.set_pods_metric("default", "rps", {"web-1": "20", "web-2": 30.5}, labels={"path": "root"})
    kd.set_object_metric("default", "deployments.apps", "web", "requests", "15")
    kd.set_object_metric("default", "services", "web", "qps", 7)
    kd.set_external_metric("default", "queue_depth", [({"queue": "a"}, "30"), ({"queue": "b"}, 5)])

    with httpx2.Client(base_url=kd.url) as h:
        pm = h.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", params={"labelSelector": "app=web"})
        assert pm.json()["kind"] == "PodMetricsList"
        [item] = pm.json()["items"]
        assert item["metadata"]["labels"] == {"app": "web"} and item["timestamp"] == "1970-01-01T00:00:00Z"
        assert item["window"] == "30s" and item["containers"] == [{"name": "app", "usage": {"cpu": "250m",
                                                                                           "memory": "64Mi"}}]
        one = h.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/db-1").json()
        assert one["kind"] == "PodMetrics" and one["window"] == "60s" and one["containers"][0]["usage"]["cpu"] == "1"
        assert h.get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web-2").status_code == 404

        cm = h.get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/rps",
                   params={"labelSelector": "app=web", "metricLabelSelector": "path=root"}).json()
        assert cm["kind"] == "MetricValueList"
        assert {(i["describedObject"]["name"], i["value"]) for i in cm["items"]} == {("web-1", "20"),
                                                                                     ("web-2", "30500m")}
        assert cm["items"][0]["describedObject"]["apiVersion"] == "/v1"
        assert cm["items"][0]["metric"] == {"name": "rps", "selector": {"matchLabels": {"path": "root"}}}
        none = h.get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/rps",
                     params={"metricLabelSelector": "path=other"}).json()
        assert none["items"] == []
        obj = h.get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/deployments.apps/web/requests").json()
        assert obj["items"][0]["describedObject"] == {"kind": "Deployment", "namespace": "default", "name": "web",
                                                      "apiVersion": "apps/v1"}
        assert obj["items"][0]["value"] == "15"
        svc = h.get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/services/web/qps").json()
        assert svc["items"][0]["describedObject"]["kind"] == "Service" and svc["items"][0]["value"] == "7"

        ext = h.get("/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth",
                    params={"labelSelector": "queue in (a)"}).json()
        assert ext["kind"] == "ExternalMetricValueList"
        assert [(i["metricLabels"], i["value"]) for i in ext["items"]] == [({"queue": "a"}, "30")]

        for path in ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/unknown",
                     "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/deployments.apps/web/unknown",
                     "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/unknown"):
            resp = h.get(path)
            assert resp.status_code == 404 and resp.json()["reason"] == "NotFound"
        disc = {r["name"] for r in h.get("/apis/custom.metrics.k8s.io/v1beta2").json()["resources"]}
        assert {"pods/rps", "deployments.apps/requests", "services/qps"} == disc


# ----- faults and observation ----------------------------------------------------------------------------
def test_fault_503_times_and_request_log(kd, client):
    fault = kd.add_fault(method="GET", path_regex=r"/deployments/web$", status=503, times=2)
    client.create(deployment("web"))
    for _ in range(2):
        with pytest.raises(ApiError) as err:
            client.get(Deployment, "web")
        assert (err.value.status.code, err.value.status.reason) == (503, "ServiceUnavailable")
    assert client.get(Deployment, "web").metadata.name == "web" and fault.hits == 2
    assert ("POST", "/apis/apps/v1/namespaces/default/deployments", {}) in kd.requests
    assert kd.count_requests("GET", r"/deployments/web$") == 3 and kd.count_requests("GET", "/pods") == 0


def test_fault_hang_until_client_timeout(kd):
    kd.add_fault(path_regex="/pods", hang=True)
    started = time.monotonic()
    with kd.client(timeout=httpx2.Timeout(0.5)) as c, pytest.raises(httpx2.TimeoutException):
        list(c.list(Pod))
    assert time.monotonic() - started < 30  # the client's timeout ended it: it did not wait for the hanging answer
    kd.clear_faults()
    with kd.client() as c:
        assert list(c.list(Pod)) == []


def test_fault_lost_carries_the_request_out_and_never_answers(kd):
    kd.add_fault("POST", r"/deployments$", status=None, lost=True, times=1)
    with kd.client(timeout=httpx2.Timeout(0.5)) as c:
        with pytest.raises(httpx2.TimeoutException):
            c.create(deployment("web"))
        assert c.get(Deployment, "web").metadata.name == "web"  # it was created all the same
        with pytest.raises(ApiError) as err:  # and the fault is spent: a second create is answered
            c.create(deployment("web"))
        assert err.value.status.code == 409


async def test_fault_delay_with_async_client():
    async with KubeDouble() as kd:
        kd.add_fault(path_regex="/leases", status=None, delay=0.3, times=1)
        client = kd.async_client()
        started = time.monotonic()
        assert [x async for x in client.list(Lease)] == []
        assert time.monotonic() - started >= 0.3
        await client.close()


# ----- schema checks -------------------------------------------------------------------------------------
def test_invalid_deployment_is_rejected_with_422_and_recorded(kd, client):
    bad = deployment("web")
    bad.spec.replicas = "three"
    with pytest.raises(ApiError) as err:
        client.create(bad)
    status = err.value.status
    assert (status.code, status.reason) == (422, "Invalid") and "spec.replicas" in status.message
    assert kd.invalid_requests[0]["body"]["spec"]["replicas"] == "three"
    assert kd.get_object("apps/v1", "deployments", "default", "web") is None

    client.create(deployment("web"))
    with pytest.raises(ApiError):
        client.patch(Deployment, "web", {"spec": {"replicas": "many"}}, patch_type=PatchType.MERGE)
    with pytest.raises(ApiError):
        client.patch(Deployment, "web", {"spec": {"bogus": 1}}, patch_type=PatchType.MERGE)  # strict: no unknowns
    with pytest.raises(ApiError):
        client.patch(Deployment.Scale, "web", {"spec": {"replicas": "x"}}, patch_type=PatchType.MERGE)
    with pytest.raises(ApiError) as err:
        client.create(pod("Bad_Name"))
    assert "metadata.name" in err.value.status.message
    assert len(kd.invalid_requests) == 5
    assert all(r["code"] == 422 for r in kd.invalid_requests)


def test_schema_version_falls_back_to_closest_shipped():
    from kubedouble.validation import resolve_version
    assert resolve_version("1.37") == "1.37.0"
    assert resolve_version("v1.99.3").startswith("1.")  # newest shipped
    assert resolve_version("1.2") == resolve_version("1.0")  # oldest shipped


def test_cached_validator_matches_kubernetes_validate(kd):
    import kubernetes_validate
    good = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {}}}
    bad = {**good, "spec": {**good["spec"], "replicas": "three"}}
    kd.validator.reference_validate(good)
    kd.validator.validate_builtin(good)
    with pytest.raises(kubernetes_validate.ValidationError):
        kd.validator.reference_validate(bad)
    with pytest.raises(Exception, match="spec.replicas"):
        kd.validator.validate_builtin(bad)


# ----- standalone ----------------------------------------------------------------------------------------
def test_module_runs_standalone_with_pyhpa_crd():
    with subprocess.Popen([sys.executable, "-m", "kubedouble", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, cwd=REPO) as proc:
        try:
            url = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
            doc = httpx2.get(f"{url}/apis/pyhpa.dev/v1alpha1", timeout=5).json()
            assert {r["name"] for r in doc["resources"]} >= {"horizontalautoscalers", "horizontalautoscalers/status"}
        finally:
            proc.terminate()


def _wait(cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_a_custom_resource_refuses_a_strategic_merge_patch_as_kube_apiserver_does(kube_double_thread):
    """kube-apiserver answers 415 to a strategic merge patch of a custom resource (no patch strategy for CRDs);
    the merge patch is what kubectl sends there (tests/e2e met the real answer)."""
    from controller_util import CRD, autoscaler
    from lightkube import ApiError
    from lightkube.types import PatchType

    from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

    kd = kube_double_thread
    kd.register_crd(CRD)
    client = kd.client()
    client.create(HorizontalAutoscaler(autoscaler("web", "web")))
    with pytest.raises(ApiError) as err:
        client.patch(HorizontalAutoscaler, "web", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    assert err.value.status.code == 415
    assert err.value.status.message == ("the body of the request was in an unknown format - accepted media types "
                                         "include: application/json-patch+json, application/merge-patch+json, "
                                         "application/apply-patch+yaml")
    patched = client.patch(HorizontalAutoscaler, "web", {"metadata": {"labels": {"a": "b"}}}, namespace="default",
                           patch_type=PatchType.MERGE)
    assert patched.metadata.labels == {"a": "b"}
