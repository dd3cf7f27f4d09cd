"""The kubelet stand-in against kube-apiserver: it binds and starts a Deployment's pods on one watch.

kube-apiserver answers ``pods/binding`` with a ``Status``, not a Binding; the stand-in once took that for an error,
relisted every pod after each binding and fell minutes behind when many pods were created at once.
"""

from __future__ import annotations

from .util import apply, deployment, running_pods, wait_until


def test_pods_are_bound_and_started_without_a_relist(plane, client, ns):
    before = plane.kubelet.relists
    apply(client, deployment("web", ns, replicas=12))
    pods = wait_until(lambda: len(running_pods(plane, ns, "web")) == 12 and running_pods(plane, ns, "web"),
                      what="12 running pods")
    assert {p["spec"]["nodeName"] for p in pods} == {plane.kubelet.node}
    assert all(c["status"] == "True" for p in pods for c in p["status"]["conditions"] if c["type"] == "Ready")
    assert plane.kubelet.relists == before
