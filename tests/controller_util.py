"""Builders and helpers shared by the controller tests (objects as the API server stores them)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Callable

import yaml

ROOT = Path(__file__).resolve().parent.parent
CRD = yaml.safe_load((ROOT / "deploy" / "crd.yaml").read_text())
START = "2020-01-01T00:00:00Z"


def cpu_metric(utilization: int = 50) -> dict:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": utilization}}}


def autoscaler(name: str, target: str, metrics: list[dict] | None = None, ns: str = "default", kind: str = "Deployment",
               api_version: str = "apps/v1", min_replicas: int = 1, max_replicas: int = 10, **spec: Any) -> dict:
    """A HorizontalAutoscaler (pyhpa.dev/v1alpha1); ``spec`` adds fields (behavior, syncPeriodSeconds, ...)."""
    body = {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
            "minReplicas": min_replicas, "maxReplicas": max_replicas,
            "metrics": metrics if metrics is not None else [cpu_metric()], **spec}
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": name, "namespace": ns}, "spec": body}


def deployment(name: str, replicas: int, ns: str = "default", kind: str = "Deployment") -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "app"}]}}}}


def pod(name: str, app: str, ns: str = "default", cpu: str = "200m", ready: bool = True) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running", "startTime": START,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": START}]}}


async def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``predicate`` (sync or async) every 20 ms until truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)
