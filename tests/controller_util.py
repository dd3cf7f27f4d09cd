"""Builders and helpers shared by the controller tests (objects as the API server stores them)."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

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


def web_of_two(kd: Any) -> None:
    """The HorizontalAutoscaler CRD and a Deployment ``web`` of two Running pods at 200m of CPU (their request) in
    ``default``, in the KubeDouble ``kd``."""
    kd.register_crd(CRD)
    kd.put_object(deployment("web", 2) | {"status": {"replicas": 2}})
    for i in range(2):
        kd.put_object(pod(f"web-{i}", "web"))
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})


@asynccontextmanager
async def running(controller: Any) -> AsyncIterator[list]:
    """Runs ``controller`` (``pyhpa.controller.Controller``) while the block runs, then stops it and waits for it to
    end; yields the list each sync's ``SyncResult`` is appended to (it stays readable after the block)."""
    results: list = []
    controller.reconciler.on_synced = results.append
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        yield results
    finally:
        stop.set()
        await task


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


class Skew:
    """Epoch seconds for the decisions: wall time plus an offset a test moves forward (windows of minutes
    are checked without waiting for them; what counts is the decision time the controller used)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def set(self, now: float) -> None:
        self.offset = now - time.time()


class ControllerTask:
    """``run_controller`` (the production wiring of ``pyhpa run``: status-backed memory, leader election when
    asked) as a task on the test's loop against a kubedouble; ``results`` are its SyncResults in order."""

    def __init__(self, kd: Any, clock: Callable[[], float] | None = None, **settings: Any):
        from pyhpa.controller import Settings

        settings.setdefault("health_port", None)
        self.settings = Settings(**settings)
        self.kd, self.clock = kd, clock or time.time
        self.controller: Any = None
        self.results: list = []
        self.stop = asyncio.Event()
        self.task: asyncio.Task | None = None

    def start(self) -> "ControllerTask":
        from pyhpa.adapters.kubeconfig import load_config
        from pyhpa.controller import run_controller

        self.task = asyncio.create_task(run_controller(self.settings, load_config(server=self.kd.url), stop=self.stop,
                                                       install_signals=False, on_started=self._started,
                                                       clock=self.clock))
        return self

    def _started(self, controller: Any, health: Any) -> None:
        self.controller = controller
        controller.reconciler.on_synced = self.results.append

    async def syncs(self, n: int, key: str | None = None, timeout: float = 30.0) -> None:
        """Wait for ``n`` more syncs (of ``key`` only, when given)."""
        def count() -> int:
            return sum(1 for r in self.results if key is None or r.key == key)

        target = count() + n
        await wait_for(lambda: count() >= target, timeout, what=f"{n} syncs of {key or 'any autoscaler'}")

    async def kill(self) -> None:
        """Die without a graceful shutdown (no Lease release)."""
        self.task.cancel()
        try:
            await asyncio.wait_for(self.task, 60)
        except asyncio.CancelledError:
            pass

    async def shutdown(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 60)

    async def __aenter__(self) -> "ControllerTask":
        self.start()
        await wait_for(lambda: (self.controller is not None and self.controller.ready) or self.task.done(),
                       what="caches synced")
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.shutdown()
