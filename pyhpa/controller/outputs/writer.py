"""Every write the controller makes goes through ``Writer``, so one switch can stop them all.

``gate()`` is asked before each write: the next issue's leader election (a replica that loses the
Lease stops writing at once) and ``--preview`` (read-only) plug in here. A gated write raises
``WritesDisabled``; reads pass through unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from ..cache.autoscaler import TargetRef
from ..kube.api import Cluster


class WritesDisabled(Exception):
    """The gate refused a write (not the leader, or read-only mode)."""


class Writer:
    """Scale updates, status updates and events, each checked against ``gate``."""

    def __init__(self, cluster: Cluster, gate: Callable[[], bool] | None = None):
        self.cluster = cluster
        self.gate = gate or (lambda: True)
        self.refused = 0
        #: the view under which the gate lets a write through (``--shards auto``: the membership's change count)
        self.epoch: Callable[[], int] = lambda: 0
        self._in_flight: dict[int, int] = {}  # epoch -> writes sent under it and not answered yet

    def _check(self, what: str) -> None:
        if not self.gate():
            self.refused += 1
            raise WritesDisabled(f"writes are disabled: {what} not sent")

    async def _send(self, what: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """Ask the gate, then send ``call()`` counted as in flight under the current epoch until it is answered."""
        self._check(what)
        epoch = self.epoch()
        self._in_flight[epoch] = self._in_flight.get(epoch, 0) + 1
        try:
            return await call()
        finally:
            left = self._in_flight[epoch] - 1
            if left:
                self._in_flight[epoch] = left
            else:
                del self._in_flight[epoch]

    async def drain(self, before: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until no write the gate let through under an epoch older than
        ``before`` is still in flight: a replica acknowledges a new shard view only once the writes it sent
        for keys it no longer owns have landed, so the new owner's writes come after them. False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while any(e < before for e in self._in_flight):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def update_scale(self, namespace: str, ref: TargetRef, handle: Any, replicas: int) -> None:
        await self._send("scale update", lambda: self.cluster.update_scale(namespace, ref, handle, replicas))

    async def replace_status(self, namespace: str, name: str, body: dict) -> dict:
        return await self._send("status update", lambda: self.cluster.replace_status(namespace, name, body))

    async def get_autoscaler(self, namespace: str, name: str) -> dict:
        return await self.cluster.get_autoscaler(namespace, name)

    async def create_event(self, event: Any) -> None:
        await self._send("event", lambda: self.cluster.create_event(event))

    async def patch_event(self, namespace: str, name: str, patch: dict) -> None:
        await self._send("event", lambda: self.cluster.patch_event(namespace, name, patch))
