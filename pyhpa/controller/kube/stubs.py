"""In-memory ``Cluster`` and ``MetricsClient`` (benchmarks and unit tests; no HTTP).

``StubCluster`` keeps autoscaler objects as dicts (the shape lightkube's generic resource gives),
pods as lightkube ``Pod`` models and each target's scale as numbers; writes update them and are
echoed to the watches, as an API server would. ``StubMetrics`` answers the metrics APIs with JSON
documents set by the caller (``set_*``) — the same shapes the real APIs return, so the answers go
through the same parsing as in production.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any, AsyncIterator

from ...core import Scale
from .api import ApiFailure
from .resources import TargetRef


class StubListWatch:
    """LIST returns the stored objects; WATCH yields what ``emit`` pushes (ADDED/MODIFIED/DELETED)."""

    def __init__(self, objects: dict[str, Any]):
        self._objects = objects
        self._watchers: list[asyncio.Queue] = []
        self.rv = 1

    async def list(self) -> tuple[list, str]:
        return list(self._objects.values()), str(self.rv)

    async def watch(self, resource_version: str) -> AsyncIterator[tuple[str, Any]]:
        queue: asyncio.Queue = asyncio.Queue()
        self._watchers.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._watchers.remove(queue)

    def emit(self, etype: str, obj: Any) -> None:
        self.rv += 1
        for q in self._watchers:
            q.put_nowait((etype, obj))


def _meta(obj: Any) -> dict:
    return obj["metadata"]


class StubCluster:
    """Autoscalers, pods and scales in memory. ``scales[(ns, kind, name)] = [spec, status, selector]``."""

    def __init__(self) -> None:
        self.autoscaler_objects: dict[str, dict] = {}
        self.pod_objects: dict[str, Any] = {}
        self.scales: dict[tuple[str, str, str], list] = {}
        self.events: list[Any] = []
        self.event_patches = 0
        self.status_writes = 0
        self.scale_writes = 0
        self._rv = 1
        self._autoscalers = StubListWatch(self.autoscaler_objects)
        self._pods = StubListWatch(self.pod_objects)

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    # ----- test/benchmark setup ----------------------------------------------------------------------
    def put_autoscaler(self, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        key = f"{meta.get('namespace', 'default')}/{meta['name']}"
        old = self.autoscaler_objects.get(key)
        meta.setdefault("uid", f"uid-{key}")
        meta["generation"] = (_meta(old).get("generation", 1) + 1) if old else 1
        meta["resourceVersion"] = self._next_rv()
        self.autoscaler_objects[key] = obj
        self._autoscalers.emit("MODIFIED" if old else "ADDED", obj)
        return obj

    def delete_autoscaler(self, namespace: str, name: str) -> None:
        obj = self.autoscaler_objects.pop(f"{namespace}/{name}", None)
        if obj is not None:
            self._autoscalers.emit("DELETED", obj)

    def put_pod(self, pod: Any) -> None:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        pod.metadata.resourceVersion = self._next_rv()
        existed = key in self.pod_objects
        self.pod_objects[key] = pod
        self._pods.emit("MODIFIED" if existed else "ADDED", pod)

    def put_scale(self, namespace: str, kind: str, name: str, replicas: int, selector: str) -> None:
        self.scales[(namespace, kind, name)] = [replicas, replicas, selector]

    # ----- Cluster -----------------------------------------------------------------------------------
    def autoscalers(self, namespace: str | None) -> StubListWatch:
        return self._autoscalers

    def pods(self, namespace: str | None) -> StubListWatch:
        return self._pods

    async def get_scale(self, namespace: str, ref: TargetRef) -> tuple[Scale, Any]:
        entry = self.scales.get((namespace, ref.kind, ref.name))
        if entry is None:
            raise ApiFailure(404, f'{ref.kind.lower()}s "{ref.name}" not found', "NotFound")
        return Scale(entry[0], entry[1], entry[2]), (namespace, ref.kind, ref.name)

    async def update_scale(self, namespace: str, ref: TargetRef, handle: Any, replicas: int) -> None:
        self.scales[handle][0] = replicas
        self.scale_writes += 1

    async def get_autoscaler(self, namespace: str, name: str) -> dict:
        obj = self.autoscaler_objects.get(f"{namespace}/{name}")
        if obj is None:
            raise ApiFailure(404, "not found", "NotFound")
        return copy.deepcopy(obj)

    async def replace_status(self, namespace: str, name: str, body: dict) -> dict:
        cur = self.autoscaler_objects.get(f"{namespace}/{name}")
        if cur is None:
            raise ApiFailure(404, "not found", "NotFound")
        if body["metadata"].get("resourceVersion") not in (None, "", _meta(cur)["resourceVersion"]):
            raise ApiFailure(409, "the object has been modified", "Conflict")
        new = dict(cur, status=body["status"], metadata=dict(_meta(cur), resourceVersion=self._next_rv()))
        self.autoscaler_objects[f"{namespace}/{name}"] = new
        self.status_writes += 1
        self._autoscalers.emit("MODIFIED", new)
        return new

    async def create_event(self, event: Any) -> None:
        self.events.append(event)

    async def patch_event(self, namespace: str, name: str, patch: dict) -> None:
        self.event_patches += 1

    async def close(self) -> None:
        return None


class StubMetrics:
    """Metrics API answers by (namespace, selector) / metric name; missing ones answer 404."""

    def __init__(self) -> None:
        self.resource: dict[tuple[str, str], dict] = {}
        self.pods: dict[tuple[str, str], dict] = {}
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.external: dict[tuple[str, str], dict] = {}
        self.calls = 0

    @staticmethod
    def _get(table: dict, key: tuple) -> dict:
        answer = table.get(key)
        if answer is None:
            raise ApiFailure(404, "the server could not find the requested resource", "NotFound")
        return answer

    async def resource_metrics(self, namespace: str, selector: str) -> dict:
        self.calls += 1
        return self._get(self.resource, (namespace, selector))

    async def pods_metric(self, namespace: str, metric: str, selector: str, metric_selector: str) -> dict:
        self.calls += 1
        return self._get(self.pods, (namespace, metric))

    async def object_metric(self, namespace: str, described: tuple[str, str, str], metric: str,
                            metric_selector: str) -> dict:
        self.calls += 1
        return self._get(self.objects, (namespace, described[2], metric))

    async def external_metric(self, namespace: str, metric: str, selector: str) -> dict:
        self.calls += 1
        return self._get(self.external, (namespace, metric))
