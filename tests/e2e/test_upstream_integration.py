"""Upstream's own HPA integration tests, run against pyhpa on the real control plane.

Source: k8s.io/kubernetes v1.37.2 ``test/integration/podautoscaler/`` (podautoscaler_test.go, behavior_test.go,
util.go; in the Go module cache after ``python -m controlplane build``). Same objects, same steps, same expected
replicas and conditions; where they differ in form, it is said at the test:

* upstream builds a native HPA ``dummy-hpa`` and runs its HorizontalController in the test process with
  ``hpaControllerResyncPeriod`` 1 s, ``downscaleStabilisationWindow`` 1 s, ``tolerance`` 0.1,
  ``cpuInitializationPeriod`` 10 s and ``delayOfInitialReadinessStatus`` 10 s (util.go); here the same spec is a
  HorizontalAutoscaler ``dummy-hpa`` and ``pyhpa run`` gets those values as its flags (``FLAGS``);
* upstream serves the external metric ``qps`` from a fake client that ignores the selector; here the metrics
  fixture serves it through external.metrics.k8s.io;
* upstream has no deployment controller and sets ``status.replicas`` itself (``simulatePodsScheduled``); here the
  deployment controller, kube-scheduler and KWOK make, bind and start the pods, so the status follows by itself;
* ``waitForDeploymentCondition`` polls every second for ``10 * hpaControllerResyncPeriod`` (10 s); this busy
  two-core machine gets ``WAIT`` instead for what must happen, and exactly upstream's 10 s for what must not.
"""

from __future__ import annotations

import time

from .util import apply, condition, deployment, ha_status, spec_replicas, wait_until

FLAGS = ("--sync-period", "1", "--downscale-stabilization", "1", "--tolerance", "0.1",
         "--cpu-initialization-period", "10", "--initial-readiness-delay", "10")
WAIT = 60.0
UPSTREAM_WAIT = 10.0  # 10 * hpaControllerResyncPeriod
EXTERNAL = "qps"  # externalMetricName


def dummy_deployment(ns: str, replicas: int) -> dict:
    """util.go createDeployment: dummy-deployment, app=dummy, one container fake-container, cpu request 100m,
    limit 200m."""
    d = deployment("dummy-deployment", ns, replicas=replicas, cpu="100m", limit="200m")
    d["metadata"]["labels"] = {"app": "dummy"}
    d["spec"]["selector"] = {"matchLabels": {"app": "dummy"}}
    d["spec"]["template"]["metadata"]["labels"] = {"app": "dummy"}
    container = d["spec"]["template"]["spec"]["containers"][0]
    container.update(name="fake-container", image="fake-image")
    return d


def dummy_hpa(ns: str, metric: dict, min_replicas: int, max_replicas: int, behavior: dict | None = None) -> dict:
    """util.go newHPA + withHPAMinMaxReplicas (+ withHPABehavior) as a HorizontalAutoscaler."""
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "dummy-deployment"},
            "minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": [metric]}
    if behavior:
        spec["behavior"] = behavior
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": "dummy-hpa", "namespace": ns}, "spec": spec}


def qps_metric() -> dict:
    """The External metric of TestHPAScaleToZero and TestHPAWithTolerance: qps, target type Value with
    averageValue 100 (as upstream writes it: the HPA reads averageValue first)."""
    return {"type": "External", "external": {"metric": {"name": EXTERNAL},
                                             "target": {"type": "Value", "averageValue": "100"}}}


def replicas(client, ns: str) -> int:
    return spec_replicas(client, ns, "dummy-deployment")


def set_qps(plane, ns: str, value: str) -> None:
    plane.fixture.set_external_metric(ns, EXTERNAL, [({}, value)])


def seen_per_pod(client, ns: str, average: str, what: str) -> None:
    """Wait until pyhpa decided with the Deployment's pods all counted: upstream divides an External AverageValue
    metric by the scale's ``status.replicas`` (``GetExternalPerPodMetricReplicas``), and the status shows the quotient
    (``currentMetrics[0].external.current.averageValue``). Upstream's test sets ``status.replicas`` itself
    (``simulatePodsScheduled``); here pods start on a busy machine, and a sync that still saw fewer pods (3800 over
    36 is 5.6 % over the target, outside the 5 % tolerance) would scale although upstream's step would not."""

    def current() -> str | None:
        metrics = ha_status(client, ns, "dummy-hpa").get("currentMetrics") or []
        return metrics[0].get("external", {}).get("current", {}).get("averageValue") if metrics else None

    wait_until(lambda: current() == average, timeout=WAIT, what=f"{what} (averageValue {average})")


def never_within(predicate, seconds: float) -> bool:
    """True when ``predicate`` stays false for ``seconds`` (polled each second, as upstream polls)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return False
        time.sleep(1)
    return True


def test_hpa_scale_up_to_min(plane, client, ns, pyhpa):
    """TestHPAScaleUpToMin: a 1-replica Deployment, CPU Utilization 50 %, min 2 max 10: at least 2 replicas."""
    pyhpa(*FLAGS, "-n", ns)
    apply(client, dummy_deployment(ns, 1))
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    apply(client, dummy_hpa(ns, cpu, 2, 10))
    wait_until(lambda: replicas(client, ns) >= 2, timeout=WAIT, every=1, what="atLeastReplicas(2)")


def _scaled_to_zero(client, ns: str) -> dict:
    status = ha_status(client, ns, "dummy-hpa")
    found = condition(status, "ScaledToZero")
    assert found is not None, "ScaledToZero condition not found on HPA status"
    return found


def test_hpa_scale_to_zero(plane, client, ns, pyhpa):
    """TestHPAScaleToZero (feature gate HPAScaleToZero on: ``--scale-to-zero``): External qps, min 0 max 10."""
    pyhpa(*FLAGS, "--scale-to-zero", "-n", ns)
    apply(client, dummy_deployment(ns, 1))
    apply(client, dummy_hpa(ns, qps_metric(), 0, 10))
    # Phase 1: metric=500, expect scale up to 5 pods; ScaledToZero False.
    set_qps(plane, ns, "500")
    wait_until(lambda: replicas(client, ns) >= 5, timeout=WAIT, every=1, what="Phase 1: atLeastReplicas(5)")
    wait_until(lambda: _scaled_to_zero(client, ns)["status"] == "False", what="Phase 1: ScaledToZero False")
    # Phase 2: metric=0, expect scale down to 0 and ScaledToZero True.
    set_qps(plane, ns, "0")
    wait_until(lambda: replicas(client, ns) == 0, timeout=WAIT, every=1, what="Phase 2: equalReplicas(0)")
    wait_until(lambda: _scaled_to_zero(client, ns)["status"] == "True", what="Phase 2: ScaledToZero True")
    # Phase 3: metric=400, expect scale up again (replicas >= 4); ScaledToZero False.
    set_qps(plane, ns, "400")
    wait_until(lambda: replicas(client, ns) >= 4, timeout=WAIT, every=1, what="Phase 3: atLeastReplicas(4)")
    wait_until(lambda: _scaled_to_zero(client, ns)["status"] == "False", what="Phase 3: ScaledToZero False")


def test_hpa_with_tolerance(plane, client, ns, pyhpa):
    """TestHPAWithTolerance (HPAConfigurableTolerance on): 35 replicas, qps 3500 against averageValue 100,
    scale-up tolerance 5 %, scale-down tolerance 50 %, min 1 max 1000; its four subtests in order."""
    pyhpa(*FLAGS, "-n", ns)
    apply(client, dummy_deployment(ns, 35))
    set_qps(plane, ns, "3500")
    behavior = {"scaleUp": {"tolerance": "0.05"}, "scaleDown": {"tolerance": "0.5"}}
    apply(client, dummy_hpa(ns, qps_metric(), 1, 1000, behavior))

    # scale_up: metric 3700, expected atLeastReplicas(37)
    set_qps(plane, ns, "3700")
    wait_until(lambda: replicas(client, ns) >= 37, timeout=WAIT, every=1, what="scale_up: atLeastReplicas(37)")
    # scale_up_in_tolerance: metric 3800, unexpected atLeastReplicas(38)
    seen_per_pod(client, ns, "100", "37 pods observed (simulatePodsScheduled): 3700 over 37 pods")
    set_qps(plane, ns, "3800")
    assert never_within(lambda: replicas(client, ns) >= 38, UPSTREAM_WAIT), "scale_up_in_tolerance reached 38"
    # scale_down: metric 1000, expected noMoreThanReplicas(10)
    set_qps(plane, ns, "1000")
    wait_until(lambda: replicas(client, ns) <= 10, timeout=WAIT, every=1, what="scale_down: noMoreThanReplicas(10)")
    # scale_down_in_tolerance: metric 800, unexpected noMoreThanReplicas(9)
    seen_per_pod(client, ns, str(-(-1000 // replicas(client, ns))),
                 "the pods of the scale-down observed (simulatePodsScheduled): 1000 over the remaining pods")
    set_qps(plane, ns, "800")
    assert never_within(lambda: replicas(client, ns) <= 9, UPSTREAM_WAIT), "scale_down_in_tolerance reached 9"
