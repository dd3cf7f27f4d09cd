"""The cluster's nodes and pods without a kubelet: kube-scheduler v1.37.2 binds the pods, KWOK v0.8.0 plays the nodes.

What the kubelet stand-in did (bind every pod to one node, start it, honour annotations) is the real scheduler's and
KWOK's stages' now (controlplane/kwok/stages.yaml): pods spread over the KWOK nodes by the scheduler's default
profile, a pod that fits no node stays Pending as Unschedulable, and the two annotations of our pod-ready stage set
a pod's start time and readiness.
"""

from __future__ import annotations

from lightkube import codecs
from lightkube.resources.core_v1 import Event, Node, Pod

from controlplane.cluster import NODE_PREFIX

from .util import apply, deployment, running_pods, wait_until


def _ready(pod: dict) -> str:
    return next((c["status"] for c in pod["status"].get("conditions") or [] if c["type"] == "Ready"), "")


def test_kubectl_get_nodes_shows_the_kwok_nodes_ready(plane):
    out = plane.run_kubectl("get", "nodes", "--no-headers").stdout.splitlines()
    names = sorted(line.split()[0] for line in out)
    assert names == [f"{NODE_PREFIX}{i}" for i in range(plane.nodes)]
    assert all(line.split()[1] == "Ready" for line in out), out
    node = plane.client().get(Node, names[0])
    assert node.status.allocatable["cpu"] == plane.node_cpu
    assert node.status.nodeInfo.kubeletVersion == "kwok-0.8.0"


def test_the_scheduler_binds_and_kwok_starts_a_deployment_s_pods(plane, client, ns):
    apply(client, deployment("web", ns, replicas=6))
    pods = wait_until(lambda: len(running_pods(plane, ns, "web")) == 6 and running_pods(plane, ns, "web"),
                      what="6 running pods")
    assert all(_ready(p) == "True" for p in pods)
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert nodes <= {f"{NODE_PREFIX}{i}" for i in range(plane.nodes)}
    assert len(nodes) == plane.nodes  # LeastAllocated spreads equal pods over equal nodes
    scheduled = wait_until(lambda: len(s := [e for e in client.list(Event, namespace=ns) if e.reason == "Scheduled"])
                           == 6 and s, what="6 Scheduled events")
    assert {e.reportingComponent or e.source.component for e in scheduled} == {"default-scheduler"}


def test_a_pod_that_fits_no_node_stays_pending_as_unschedulable(plane, client, ns):
    apply(client, deployment("huge", ns, replicas=1, cpu="1000"))  # 1,000 CPUs: more than any KWOK node

    def unschedulable():
        pods = [p for p in plane.pods.pods(ns) if p["metadata"]["labels"].get("app") == "huge"]
        conds = [c for p in pods for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"]
        return conds and conds[0]["status"] == "False" and conds[0]

    cond = wait_until(unschedulable, what="PodScheduled=False")
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"]
    pod = client.get(Pod, namespace=ns, name=next(p["metadata"]["name"] for p in plane.pods.pods(ns)))
    assert pod.status.phase == "Pending" and not pod.spec.nodeName


def test_the_pod_ready_stage_reads_the_start_time_and_readiness_annotations(plane, client, ns):
    client.create(codecs.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "old", "namespace": ns, "annotations": {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]}}))
    client.create(codecs.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "unready", "namespace": ns, "annotations": {"kwok.pyhpa.dev/ready": "false"}},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]}}))
    pods = wait_until(lambda: len(running_pods(plane, ns, None)) == 2 and
                      {p["metadata"]["name"]: p for p in running_pods(plane, ns, None)}, what="2 running pods")
    old, unready = pods["old"]["status"], pods["unready"]["status"]
    assert old["startTime"] == "2026-01-01T00:00:00Z"
    assert {c["type"]: c["lastTransitionTime"] for c in old["conditions"]}["Ready"] == "2026-01-01T00:00:00Z"
    assert _ready(pods["old"]) == "True"
    assert _ready(pods["unready"]) == "False" and unready["phase"] == "Running"
    assert unready["containerStatuses"][0]["ready"] is False
