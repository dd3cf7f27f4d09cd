"""The real resource-metrics pipeline: KWOK's kubelet endpoints -> metrics-server v0.9.0 -> metrics.k8s.io -> pyhpa
and upstream's HPA controller, on ``real_plane`` (no value set by a test reaches a controller but through it).

What it exercises that the metrics fixture did not (the seeds' metrics pipeline, 002 and 000):

* metrics-server computes CPU from the difference of two cumulative samples of KWOK's ``/metrics/resource``, so a
  new pod has no metrics until its second scrape: the autoscalers count it as upstream's missing-pod rule says
  (``replica_calculator.go`` ``GetResourceReplicas``: on a scale-up a missing pod counts as using nothing), so a
  scale-up does not overshoot while its new pods have no metrics;
* the pipeline failing at night (metrics-server stopped): without ``fallback`` pyhpa holds, with
  ``ScalingActive=False/FailedGetResourceMetric`` as upstream does; with ``fallback`` it goes to its fallback
  replicas; both recover once metrics-server is back.

Load is KWOK's: each pod's ``kwok.x-k8s.io/usage-cpu`` annotation, a Deployment's demand spread over its running pods
(``SpreadLoad``, as a Service spreads requests).
"""

from __future__ import annotations

import threading
import time

from lightkube import codecs
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler

from .util import (
    USAGE_CPU,
    SpreadLoad,
    apply,
    autoscaler,
    condition,
    cpu_utilization,
    deployment,
    ha_status,
    new_namespace,
    pod_cpu,
    running_pods,
    spec_replicas,
    wait_until,
)

NO_DOWN_WINDOW = {"scaleDown": {"stabilizationWindowSeconds": 0}}
SCRAPES = 120  # seconds for anything that waits on metrics-server's scrapes (10 s each here) and a 15 s period


def _ns(plane, prefix: str) -> str:
    import uuid

    return new_namespace(plane.client(), f"{prefix}-{uuid.uuid4().hex[:6]}")


def _native_hpa(name: str, ns: str, target: str, percent: int, lo: int, hi: int) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": lo, "maxReplicas": hi, "metrics": [cpu_utilization(percent)],
                     "behavior": NO_DOWN_WINDOW}}


class Replicas(threading.Thread):
    """Records a Deployment's ``spec.replicas`` each time it changes (polled every 0.5 s) and, once its autoscaler's
    status comes from a sync at or after the first rescale, every ``(status, reason)`` of its ScalingActive
    condition. ``active`` reads ``(status.desiredReplicas, (status, reason))``, None while there is no condition.
    (An autoscaler writes the Scale before its status: right after the rescale, the status read may still be the
    previous sync's; its desiredReplicas tells them apart.)"""

    def __init__(self, plane, ns: str, name: str, active=None):
        super().__init__(daemon=True)
        self.client, self.ns, self.name = plane.client(), ns, name
        self.seen: list[int] = []
        self.active = active
        self.scaling_active: set[tuple[str, str]] = set()
        self._after_rescale = False
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.5):
            self._poll()

    def _poll(self) -> None:
        try:
            n = spec_replicas(self.client, self.ns, self.name)
        except Exception:  # noqa: BLE001 - a hiccup: the next poll
            return
        if not self.seen or self.seen[-1] != n:
            self.seen.append(n)
        if self.active is not None and len(self.seen) > 1:
            try:
                now = self.active()
            except Exception:  # noqa: BLE001 - a hiccup: the next poll
                return
            if now is None:
                return
            desired, condition_now = now
            self._after_rescale = self._after_rescale or desired != self.seen[0]
            if self._after_rescale:
                self.scaling_active.add(condition_now)

    def stop(self) -> list[int]:
        """Stop polling and return the values seen, the current one last (read once more after the thread ended)."""
        self._done.set()
        self.join(5)
        self._poll()
        return self.seen


def test_kubectl_top_pods_shows_kwok_s_usage_after_two_scrapes(real_plane):
    ns = _ns(real_plane, "top")
    client = real_plane.client()
    apply(client, deployment("web", ns, replicas=2, annotations={USAGE_CPU: "250m"}))
    pods = wait_until(lambda: len(running_pods(real_plane, ns, "web")) == 2 and running_pods(real_plane, ns, "web"),
                      what="2 running pods")
    # just started: metrics-server has at most one cumulative sample of each, and CPU needs two (KWOK's counter
    # starts at its first scrape, which metrics-server drops as zero: a KWOK pod's CPU shows at its third scrape)
    assert [pod_cpu(client, ns, p["metadata"]["name"]) for p in pods] == [None, None]
    wait_until(lambda: all(pod_cpu(client, ns, p["metadata"]["name"]) for p in pods), timeout=SCRAPES,
               what="metrics-server's scrapes of the new pods")
    # the rate of KWOK's counter between two scrapes: within 2 % of the annotation (the counter is read at the
    # request, the sample dated at the scrape's start)
    assert all(abs(pod_cpu(client, ns, p["metadata"]["name"]) - 250) <= 5 for p in pods)
    top = real_plane.run_kubectl("top", "pods", "-n", ns, "--no-headers").stdout.splitlines()
    assert sorted(line.split()[0] for line in top) == sorted(p["metadata"]["name"] for p in pods)
    assert all(abs(int(line.split()[1].rstrip("m")) - 250) <= 5 for line in top), top


def test_a_cpu_autoscaler_scales_1_to_6_and_back_through_metrics_server_as_upstream_does(real_plane, pyhpa):
    """pyhpa (HorizontalAutoscaler ``web``) and upstream's HPA controller (HorizontalPodAutoscaler ``twin``), both
    at the default 15 s period, each on a Deployment of its own with the same demand: 290m over 100m requests at a
    50 % target. One pod at 290 % wants 6 (the default scale-up policy allows 5 first: 4 pods or 100 % per 15 s);
    five at 58 % want ceil(5 * 1.16) = 6; six at 49 % are within the tolerance (figures away from every rounding
    edge: KWOK's rates are within 2 %). The scale-up adds pods that have no metrics for their first scrapes;
    upstream's missing-pod rule counts them as using nothing, so neither goes past 6, and both say
    ScalingActive=True/ValidMetricFound all along (a missing pod is no metric failure). Then 20m: back to 1."""
    ns = _ns(real_plane, "cpu")
    client = real_plane.client()
    for name in ("web", "twin"):
        apply(client, deployment(name, ns, replicas=1))
    wait_until(lambda: len(running_pods(real_plane, ns, None)) == 2, what="one running pod each")
    apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10, behavior=NO_DOWN_WINDOW))
    client.create(codecs.from_dict(_native_hpa("twin", ns, "twin", 50, 1, 10)))
    pyhpa("-n", ns, on=real_plane)
    def web_active():
        s = ha_status(client, ns, "web")
        c = condition(s, "ScalingActive")
        return (s.get("desiredReplicas"), (c["status"], c["reason"])) if c else None

    def twin_active():
        status = client.get(HorizontalPodAutoscaler, "twin", namespace=ns).status
        c = next((c for c in status.conditions or [] if c.type == "ScalingActive"), None)
        return (status.desiredReplicas, (c.status, c.reason)) if c else None

    watched = {"web": Replicas(real_plane, ns, "web", web_active),
               "twin": Replicas(real_plane, ns, "twin", twin_active)}
    for w in watched.values():
        w.start()
    with SpreadLoad(real_plane, ns, "web", 290) as web, SpreadLoad(real_plane, ns, "twin", 290) as twin:
        wait_until(lambda: spec_replicas(client, ns, "web") == 6 and spec_replicas(client, ns, "twin") == 6,
                   timeout=4 * SCRAPES, what="both at 6 replicas")
        status = wait_until(lambda: (s := ha_status(client, ns, "web")).get("desiredReplicas") == 6 and s,
                            timeout=SCRAPES, what="pyhpa's status at 6")
        assert condition(status, "ScalingActive")["reason"] == "ValidMetricFound"
        # settled: every pod counted, 49m each, 98 % of the target: both stay at 6 for two more periods
        wait_until(lambda: len(running_pods(real_plane, ns, "web")) == 6 and all(
            pod_cpu(client, ns, p["metadata"]["name"]) for p in running_pods(real_plane, ns, "web")),
            timeout=SCRAPES, what="metrics for every pod of web")
        time.sleep(30)
        assert spec_replicas(client, ns, "web") == 6 and spec_replicas(client, ns, "twin") == 6
        web.set(20)
        twin.set(20)
        wait_until(lambda: spec_replicas(client, ns, "web") == 1 and spec_replicas(client, ns, "twin") == 1,
                   timeout=4 * SCRAPES, what="both back to 1")
    seen = {name: w.stop() for name, w in watched.items()}
    for name, sequence in seen.items():
        assert sequence[0] == 1 and sequence[-1] == 1 and max(sequence) == 6, (name, sequence)
    # from the first rescale on, while new pods had no metrics yet: a missing pod is no metric failure, in both
    assert {name: w.scaling_active for name, w in watched.items()} == {
        "web": {("True", "ValidMetricFound")}, "twin": {("True", "ValidMetricFound")}}
    twin_status = client.get(HorizontalPodAutoscaler, "twin", namespace=ns).status
    assert twin_status.desiredReplicas == 1
    assert (condition(ha_status(client, ns, "web"), "ScalingActive")["status"],
            next(c.status for c in twin_status.conditions if c.type == "ScalingActive")) == ("True", "True")


def _native_condition(client, ns: str, name: str, kind: str):
    status = client.get(HorizontalPodAutoscaler, name, namespace=ns).status
    return next((c for c in status.conditions or [] if c.type == kind), None)


def test_metrics_server_stopped_at_night_holds_or_falls_back_and_both_recover(real_plane, pyhpa):
    """Two HorizontalAutoscalers at 2 replicas (100m over 100m requests at 50 %), one with ``fallback``
    (failureThreshold 1, 5 replicas), and upstream's HPA (``native``) beside them. metrics-server stops and the
    demand doubles: pyhpa's without fallback holds at 2 with ScalingActive=False/FailedGetResourceMetric, as
    upstream's does, and the other goes to 5. metrics-server comes back: all three follow the demand, 200m at
    50 %: 4 replicas each."""
    ns = _ns(real_plane, "night")
    client = real_plane.client()
    names = ("plain", "safe", "native")
    for name in names:
        apply(client, deployment(name, ns, replicas=2))
    wait_until(lambda: len(running_pods(real_plane, ns, None)) == 6, what="two running pods each")
    apply(client, autoscaler("plain", ns, "plain", [cpu_utilization(50)], 1, 10, behavior=NO_DOWN_WINDOW))
    apply(client, autoscaler("safe", ns, "safe", [cpu_utilization(50)], 1, 10, behavior=NO_DOWN_WINDOW,
                             fallback={"failureThreshold": 1, "replicas": 5}))
    server = real_plane.components["metrics-server"]
    with SpreadLoad(real_plane, ns, "plain", 100) as plain, SpreadLoad(real_plane, ns, "safe", 100) as safe, \
            SpreadLoad(real_plane, ns, "native", 100) as native:
        # before the autoscalers start: a pod without metrics yet is a failed read of the metric, which
        # ``fallback`` with failureThreshold 1 would answer at once (upstream: FailedGetResourceMetric)
        wait_until(lambda: all(pod_cpu(client, ns, p["metadata"]["name"])
                               for p in running_pods(real_plane, ns, None)), timeout=SCRAPES,
                   what="metrics-server's first CPU values of the six pods")
        client.create(codecs.from_dict(_native_hpa("native", ns, "native", 50, 1, 10)))
        pyhpa("--sync-period", "5", "-n", ns, on=real_plane)
        wait_until(lambda: all(condition(ha_status(client, ns, n), "ScalingActive") and
                               condition(ha_status(client, ns, n), "ScalingActive")["reason"] == "ValidMetricFound"
                               for n in ("plain", "safe")) and
                   (c := _native_condition(client, ns, "native", "ScalingActive")) and c.reason == "ValidMetricFound",
                   timeout=SCRAPES, what="all three reading metrics")
        assert [spec_replicas(client, ns, n) for n in names] == [2, 2, 2]
        server.stop()
        try:
            for load in (plain, safe, native):
                load.set(200)
            wait_until(lambda: spec_replicas(client, ns, "safe") == 5, timeout=SCRAPES, what="the fallback to 5")
            status = wait_until(lambda: (s := ha_status(client, ns, "plain")) and
                                condition(s, "ScalingActive")["status"] == "False" and s,
                                timeout=SCRAPES, what="plain's ScalingActive=False")
            assert condition(status, "ScalingActive")["reason"] == "FailedGetResourceMetric"
            theirs = wait_until(lambda: (c := _native_condition(client, ns, "native", "ScalingActive")) and
                                c.status == "False" and c, timeout=SCRAPES, what="upstream's ScalingActive=False")
            assert theirs.reason == "FailedGetResourceMetric"
            assert spec_replicas(client, ns, "plain") == spec_replicas(client, ns, "native") == 2  # held
            assert condition(ha_status(client, ns, "safe"), "Fallback")["status"] == "True"
        finally:
            server.start()
        wait_until(lambda: [spec_replicas(client, ns, n) for n in names] == [4, 4, 4],
                   timeout=3 * SCRAPES, what="all three following the demand again (4 replicas)")
    for name in ("plain", "safe"):
        assert condition(ha_status(client, ns, name), "ScalingActive")["status"] == "True"
    assert condition(ha_status(client, ns, "safe"), "Fallback")["status"] == "False"
    assert _native_condition(client, ns, "native", "ScalingActive").status == "True"
