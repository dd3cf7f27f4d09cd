"""Leader election on a coordination.k8s.io/v1 Lease (the client-go leaderelection protocol).

One replica holds the Lease and renews ``spec.renewTime`` every ``retry_period_seconds``.
Another replica takes it over when the record has not changed for
``lease_duration_seconds`` as observed on its own monotonic clock (so clock skew between
replicas does not matter). Takeover and renewal are optimistic updates with the Lease's
``resourceVersion``: of two replicas racing, the API server lets one win (409 for the other).

The holder stops writing *at once* when it cannot renew within ``renew_deadline_seconds``:
``may_write()`` turns False as soon as the last successful renewal is older than the
deadline, even before the elector's loop notices, and ``lost`` is set.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import httpx2
from lightkube import ApiError, AsyncClient
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

log = logging.getLogger("pyhpa.leader")


@dataclass(slots=True)
class LeaseSettings:
    """Durations in seconds, as kube-controller-manager's --leader-elect-* flags (defaults 15/10/2)."""

    namespace: str = "kube-system"
    name: str = "pyhpa-controller"
    identity: str = ""
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0

    def validate(self) -> None:
        validate_lease_timing(self.lease_duration_seconds, self.renew_deadline_seconds, self.retry_period_seconds)


def validate_lease_timing(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """The rule of kube-controller-manager's --leader-elect-* flags (leader election and shard Leases alike);
    ValueError when it does not hold."""
    if not (lease_duration > renew_deadline > retry_period > 0):
        raise ValueError("need lease duration > renew deadline > retry period > 0")


@dataclass
class LeaderElector:
    """Campaigns for the Lease; ``acquired``/``lost`` are asyncio Events for the controller."""

    client: AsyncClient
    settings: LeaseSettings
    clock: callable = time.monotonic
    acquired: asyncio.Event = field(default_factory=asyncio.Event)
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    _renewed_at: float | None = None
    _observed: tuple | None = None
    _observed_at: float = 0.0
    _last_error: str | None = None

    def may_write(self) -> bool:
        """True only while this replica holds a Lease renewed within the renew deadline."""
        if self._renewed_at is None or self.lost.is_set():
            return False
        return self.clock() - self._renewed_at < self.settings.renew_deadline_seconds

    async def run(self) -> None:
        """Acquire, then renew until renewal fails past the deadline (then set ``lost`` and return)."""
        s = self.settings
        while not self.acquired.is_set():
            if await self._try_acquire_or_renew():
                self.acquired.set()
                log.info("acquired lease %s/%s as %s", s.namespace, s.name, s.identity)
                break
            await asyncio.sleep(s.retry_period_seconds)
        while True:
            await asyncio.sleep(s.retry_period_seconds)
            if await self._try_acquire_or_renew():
                continue
            if not self.may_write():
                self.lost.set()
                log.warning("lost lease %s/%s", s.namespace, s.name)
                return

    async def release(self) -> None:
        """Give the Lease up on graceful shutdown so a standby takes over without waiting."""
        if self._renewed_at is None or self.lost.is_set():
            return
        self.lost.set()
        try:
            lease = await self.client.get(Lease, self.settings.name, namespace=self.settings.namespace)
            if lease.spec and lease.spec.holderIdentity == self.settings.identity:
                lease.spec.holderIdentity = None
                lease.spec.leaseDurationSeconds = 1
                await self.client.replace(lease)
        except (httpx2.HTTPError, OSError) as err:  # best effort: the Lease expires anyway
            log.info("could not release lease: %s", err)

    async def _try_acquire_or_renew(self) -> bool:
        s = self.settings
        now_wall = datetime.now(timezone.utc)
        try:
            lease = await self.client.get(Lease, s.name, namespace=s.namespace)
        except ApiError as err:
            if err.status.code != 404:
                return self._failed(err)
            return await self._create(now_wall)
        except (httpx2.HTTPError, OSError) as err:
            return self._failed(err)
        spec = lease.spec or LeaseSpec()
        record = (spec.holderIdentity, spec.renewTime, spec.leaseTransitions)
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        mine = spec.holderIdentity == s.identity
        expired = self.clock() - self._observed_at >= (spec.leaseDurationSeconds or s.lease_duration_seconds)
        if not mine and spec.holderIdentity and not expired:
            return False
        if not mine:
            spec.acquireTime = now_wall
            spec.leaseTransitions = (spec.leaseTransitions or 0) + 1
        spec.holderIdentity = s.identity
        spec.renewTime = now_wall
        spec.leaseDurationSeconds = int(s.lease_duration_seconds)
        lease.spec = spec
        return await self._write(lease, replace=True)

    async def _create(self, now_wall: datetime) -> bool:
        s = self.settings
        lease = Lease(
            metadata=ObjectMeta(name=s.name, namespace=s.namespace),
            spec=LeaseSpec(holderIdentity=s.identity, leaseDurationSeconds=int(s.lease_duration_seconds),
                           acquireTime=now_wall, renewTime=now_wall, leaseTransitions=0),
        )
        return await self._write(lease, replace=False)

    async def _write(self, lease: Lease, replace: bool) -> bool:
        started = self.clock()
        try:
            if replace:
                await self.client.replace(lease)
            else:
                await self.client.create(lease)
        except ApiError as err:
            if err.status.code == 409:  # another replica won the race
                return False
            return self._failed(err)
        except (httpx2.HTTPError, OSError) as err:
            return self._failed(err)
        self._renewed_at = started
        self._last_error = None
        return True

    def _failed(self, err: Exception) -> bool:
        """An attempt failed for another reason than a lost race: said once per distinct reason (as client-go
        logs "error retrieving resource lock"), e.g. a missing namespace or RBAC refusing the Lease verbs, so a
        replica that can never lead does not wait in silence. Returns False."""
        message = err.status.message if isinstance(err, ApiError) else f"{type(err).__name__}: {err}"
        if message != self._last_error:
            self._last_error = message
            log.warning("cannot acquire or renew lease %s/%s: %s", self.settings.namespace, self.settings.name,
                        message)
        return False
