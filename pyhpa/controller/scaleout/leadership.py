"""Leader election for ``pyhpa run`` (upstream: kube-controller-manager ``--leader-elect``).

Every replica campaigns for one coordination.k8s.io/v1 Lease (``pyhpa.controller.scaleout.leader.LeaderElector``: the
client-go protocol). Only the holder runs the controller (informers, workers): a standby only campaigns,
so it keeps no memory of its own and, once it leads, loads each autoscaler's memory from its status
(``StatusMemory``). Every write of the leader passes ``LeaderElector.may_write`` (the controller's write
gate), which turns False as soon as the last renewal is older than the renew deadline, so a replica
that loses the Lease stops writing at once, before anyone else can acquire it (lease duration > renew
deadline). Having lost the Lease, the process stops its controller and ``run`` raises ``LeadershipLost``;
``pyhpa run`` then exits with code 1, as kube-controller-manager does ("leaderelection lost"), and
Kubernetes restarts the container as a fresh standby. On a graceful stop (SIGTERM) the leader releases
the Lease so a standby takes over without waiting for it to expire.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid

from lightkube import AsyncClient

from .leader import LeaderElector, LeaseSettings

log = logging.getLogger("pyhpa.controller.leadership")


class LeadershipLost(Exception):
    """This replica lost the Lease while leading (or its elector failed): the process must exit."""


def default_identity() -> str:
    """``<hostname>_<random>``: unique per process, as kube-controller-manager's ``hostname_<uuid>``."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:12]}"


def lease_settings(namespace: str, name: str, identity: str, lease_duration: float, renew_deadline: float,
                   retry_period: float) -> LeaseSettings:
    """The elector's settings (durations in seconds; an empty ``identity`` gets ``default_identity()``)."""
    return LeaseSettings(namespace=namespace, name=name, identity=identity or default_identity(),
                         lease_duration_seconds=lease_duration, renew_deadline_seconds=renew_deadline,
                         retry_period_seconds=retry_period)


class Leadership:
    """Runs a Controller only while this replica holds the Lease.

    ``may_write`` is the controller's write gate; ``standby`` is True while campaigning (a standby is
    ready: it is healthy and takes over when needed). The gauge ``leader_election_master_status{name}``
    (client-go's metric) is 1 while leading.
    """

    def __init__(self, client: AsyncClient, settings: LeaseSettings):
        settings.validate()
        self.settings = settings
        self.elector = LeaderElector(client, settings)
        self._gauge = None

    def may_write(self) -> bool:
        """True only while holding a Lease renewed within the renew deadline."""
        return self.elector.may_write()

    @property
    def standby(self) -> bool:
        return not self.elector.acquired.is_set() and not self.elector.lost.is_set()

    def _set_gauge(self, value: int) -> None:
        if self._gauge is not None:
            self._gauge.set(value)

    async def run(self, controller, stop: asyncio.Event) -> None:
        """Campaign; lead (run ``controller``) until ``stop`` is set, then release the Lease. Raises
        LeadershipLost when the Lease is lost while leading. Cancelled (the process dies): no release."""
        s = self.settings
        self._gauge = controller.monitor.leader.labels(s.name)
        self._set_gauge(0)
        log.info("campaigning for lease %s/%s as %s", s.namespace, s.name, s.identity)
        elector = asyncio.create_task(self.elector.run(), name="leader-elector")
        led = None
        try:
            first = await _first(self.elector.acquired.wait(), stop.wait(), elector)
            if first == 2:
                raise LeadershipLost(f"leader election failed: {_failure(elector)}")
            if first == 1:
                return
            self._set_gauge(1)
            controller_stop = asyncio.Event()
            led = asyncio.create_task(controller.run(controller_stop), name="controller")
            await _first(stop.wait(), self.elector.lost.wait(), elector, led)
            controller_stop.set()
            await led
            if not stop.is_set():
                raise LeadershipLost(f"lost lease {s.namespace}/{s.name} (identity {s.identity}); exiting")
            elector.cancel()  # no renewal may race the release
            await asyncio.gather(elector, return_exceptions=True)
            await self.elector.release()
            log.info("released lease %s/%s", s.namespace, s.name)
        finally:
            self._set_gauge(0)
            for task in (led, elector):
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(*(t for t in (led, elector) if t is not None), return_exceptions=True)


def _failure(task: asyncio.Task) -> str:
    err = task.exception()
    return repr(err) if err is not None else "the elector stopped"


async def _first(*waitables) -> int:
    """Wait until the first of ``waitables`` (coroutines or tasks) completes; the index of that one.
    Coroutines are wrapped in tasks and cancelled afterwards; given tasks are left running."""
    tasks = [w if isinstance(w, asyncio.Task) else asyncio.ensure_future(w) for w in waitables]
    owned = [t for t, w in zip(tasks, waitables) if t is not w]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in owned:
            t.cancel()
    return min(tasks.index(t) for t in done)
