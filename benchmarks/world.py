"""The benchmarks' world: 10 autoscalers per namespace, each of one CPU Utilization metric (50 %) over a Deployment of
10 pods (``names``, ``autoscaler``, ``deployment``, ``pod``), the same on the API double (``controller.py``) and on
the real kube-apiserver (``real_world.py``). Its own module, so neither of those imports the other for it."""

from __future__ import annotations

PODS_PER_HPA = 10
HPAS_PER_NAMESPACE = 10
START = "2020-01-01T00:00:00Z"


def names(i: int) -> tuple[str, str]:
    """(namespace, name) of the i-th autoscaler (its Deployment has the same name)."""
    return f"bench-{i // HPAS_PER_NAMESPACE:04d}", f"app-{i}"


#: the replicas run: every autoscaler has this fallback, and one in FAILING_EVERY has no pod metrics (its
#: metric fails at every sync: it counts failures, then holds at the fallback's 10 replicas, its current count)
FALLBACK = {"failureThreshold": 3, "replicas": PODS_PER_HPA}
FAILING_EVERY = 10


def autoscaler(i: int, fallback: bool = False) -> dict:
    ns, name = names(i)
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1, "maxReplicas": 100,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}
    if fallback:
        spec["fallback"] = dict(FALLBACK)
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def failing(i: int, fallback: bool) -> bool:
    """The i-th autoscaler's pods have no metrics (only in the replicas run, where autoscalers have fallbacks)."""
    return fallback and i % FAILING_EVERY == FAILING_EVERY - 1


def deployment(i: int) -> dict:
    ns, name = names(i)
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": PODS_PER_HPA, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "app"}]}}},
            "status": {"replicas": PODS_PER_HPA}}


def pod(i: int, j: int) -> dict:
    ns, name = names(i)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{j}", "namespace": ns, "labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "200m"}}}]},
            "status": {"phase": "Running", "startTime": START,
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": START}]}}
