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


def test_the_demo_s_annotated_load_reaches_upstream_s_hpa_within_a_scrape_or_two(plane, client, ns):
    """Issue 37: ``kubectl annotate pods ... metrics.pyhpa.dev/cpu=300m`` on pods that just started. The fixture once
    froze the sample's timestamp when the value was set, so upstream's CPU initialization rule left every pod out
    (FailedGetResourceMetric, "did not receive metrics for targeted pods") until 300 s after it started. Its samples
    now advance as metrics-server's do: upstream's own HPA controller (1 s period here) counts the pods about one
    scrape (15 s) after they turned ready, and scales."""
    from lightkube import codecs
    from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler

    apply(client, deployment("demo", ns, replicas=2))  # pods started now: inside the 300 s CPU initialization period
    wait_until(lambda: len(running_pods(plane, ns, "demo")) == 2, what="2 running pods")
    plane.run_kubectl("annotate", "pods", "-n", ns, "-l", "app=demo", "metrics.pyhpa.dev/cpu=300m")
    client.create(codecs.from_dict({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "demo", "namespace": ns},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo"},
                 "minReplicas": 1, "maxReplicas": 10,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                     "type": "Utilization", "averageUtilization": 50}}}]}}))

    def measured():
        status = client.get(HorizontalPodAutoscaler, "demo", namespace=ns).status
        current = [m.resource.current.averageUtilization for m in status.currentMetrics or [] if m.resource]
        return current and current[0] > 0 and status

    # two scrapes and a little: well inside the 300 s the frozen timestamp cost
    status = wait_until(measured, timeout=90, what="upstream's HPA to count the annotated pods")
    assert status.currentMetrics[0].resource.current.averageUtilization == 300
    active = next(c for c in status.conditions if c.type == "ScalingActive")
    assert (active.status, active.reason) == ("True", "ValidMetricFound")
