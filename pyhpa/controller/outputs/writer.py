"""Every write the controller makes goes through ``Writer``, so one switch can stop them all.

``gate()`` is asked before each write: the next issue's leader election (a replica that loses the
Lease stops writing at once) and ``--preview`` (read-only) plug in here. A gated write raises
``WritesDisabled``; reads pass through unchanged.
"""

from __future__ import annotations

from typing import Any, Callable

from ..kube.api import Cluster
from ..cache.autoscaler import TargetRef


class WritesDisabled(Exception):
    """The gate refused a write (not the leader, or read-only mode)."""


class Writer:
    """Scale updates, status updates and events, each checked against ``gate``."""

    def __init__(self, cluster: Cluster, gate: Callable[[], bool] | None = None):
        self.cluster = cluster
        self.gate = gate or (lambda: True)
        self.refused = 0

    def _check(self, what: str) -> None:
        if not self.gate():
            self.refused += 1
            raise WritesDisabled(f"writes are disabled: {what} not sent")

    async def update_scale(self, namespace: str, ref: TargetRef, handle: Any, replicas: int) -> None:
        self._check("scale update")
        await self.cluster.update_scale(namespace, ref, handle, replicas)

    async def replace_status(self, namespace: str, name: str, body: dict) -> dict:
        self._check("status update")
        return await self.cluster.replace_status(namespace, name, body)

    async def get_autoscaler(self, namespace: str, name: str) -> dict:
        return await self.cluster.get_autoscaler(namespace, name)

    async def create_event(self, event: Any) -> None:
        self._check("event")
        await self.cluster.create_event(event)

    async def patch_event(self, namespace: str, name: str, patch: dict) -> None:
        self._check("event")
        await self.cluster.patch_event(namespace, name, patch)
