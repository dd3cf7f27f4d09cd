"""Sharding across replicas (``pyhpa run --shards auto``) on coordination.k8s.io/v1 Leases.

Each replica holds a Lease of its own (``<group>-shard-<hash of its identity>``, labelled
``pyhpa.dev/shard-group: <group>``) and renews it every retry period; the set of live Leases of the group is
the membership. Every replica lists the group's Leases every retry period and judges a Lease dead as
client-go judges a leader's: its record (holder, renewTime) has not changed for ``leaseDurationSeconds`` on
the observer's own monotonic clock (clock skew between nodes does not matter). Autoscalers are split by
rendezvous (highest-random-weight) hashing of ``namespace/name`` over the sorted member identities
(``owner``): a replica that joins takes only the keys it now wins, one that leaves gives only its own.

A replica writes an object only while (the write gate, ``may_write``):

* its own Lease was renewed less than ``renew_deadline`` ago (as ``--leader-elect``), and
* its view of the membership comes from a list started less than ``renew_deadline`` ago, and
* it has *joined*: every other live member has acknowledged it — published, in its own Lease's
  ``pyhpa.dev/shard-view`` annotation (written at the renewal that follows a change of its view), a view that
  includes it — or one ``lease_duration`` has passed since its Lease was created, and
* the autoscaler being synced is in its share under that view.

Why no object is written by two replicas at once (``delta``: how long a write takes to reach the API server
after the gate said yes; the margin is ``lease_duration - renew_deadline``, as for leader election):

* A replica C that joins at t0 (its Lease created) writes once every other live member M acknowledged it: M
  publishes its view only after applying it, so from then on M does not own C's keys (its gate checks the
  ownership of each write's key under its current view). A member that does not acknowledge (it cannot renew,
  or is stuck) holds C back until t0 + lease_duration: any replica writing at t >= t0 + lease_duration has a
  view listed after t - renew_deadline > t0, which holds C; one whose view predates C checked before
  t0 + renew_deadline.
* Two replicas that both see each other cannot both own a key: both compute the same winner among them.
* A replica that leaves (its Lease unchanged for lease_duration on the observer's clock) renewed last at some
  r; it stopped writing at r + renew_deadline; the others take its keys no earlier than r + lease_duration.
  A graceful stop closes the gate, finishes or cancels the syncs, then deletes the Lease, so the others take
  over at their next list.

So the other replicas pick up a dead replica's share within one lease duration plus a retry period of its last
renewal, a stopped replica's share at their next list, and a joining replica's share pauses only from the
others' next list to the joiner's next list after their acknowledgement (about two retry periods: issue 21,
"seamless hand-over": no autoscaler waits more than two sync periods). Every replica syncs an autoscaler at its
namespace's phase of the period (``pyhpa.controller.sync.nsmetrics.resync_delay``), so a gained autoscaler whose
phase point came during the hand-over is synced at once, the others at their next phase point: one period after
the last owner's sync (``Sharding._gain_schedule``). A
replica that cannot renew for ``renew_deadline`` stops writing; past that it has lost its Lease: it stops and
``run`` raises ``ShardLost`` (``pyhpa run`` exits 1, Kubernetes restarts it with a new identity, which joins
anew). Leases found dead are deleted by whoever sees them (so restarts leave no garbage).

A create or a renewal whose answer is lost (a client timeout on a busy machine, a reset connection) may still have
been carried out: the replica knows its own Lease by the token it put on it (``INCARNATION_ANNOTATION``), so a
create answered 409 on such a Lease adopts it (its join then waits a lease duration from the adoption, as a new
Lease's does), and a renewal answered 409 (its resourceVersion is stale) renews the Lease as the server has it,
while it is still this process's. Only a Lease of the same name made by another process means the identity is in
use twice (``ShardLost``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Iterable

import httpx2
from lightkube import ApiError, AsyncClient
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

from ..outputs.load import current_sync
from ..settings import SCALE_CACHE_WAIT_SECONDS  # the controller's own bound on that wait
from ..sync.nsmetrics import phase_points
from .leader import validate_lease_timing
from .leadership import LeadershipLost

log = logging.getLogger("pyhpa.controller.shards")

GROUP_LABEL = "pyhpa.dev/shard-group"
#: annotation of a member's Lease: the member identities (a JSON list) of the view it applies
VIEW_ANNOTATION = "pyhpa.dev/shard-view"
#: annotation of a member's Lease: a token drawn by the process that created it, so that it knows its own Lease
#: again when the answer to its create or to a renewal was lost (a timeout, a connection reset) though the API
#: server carried it out
INCARNATION_ANNOTATION = "pyhpa.dev/shard-incarnation"


class ShardLost(LeadershipLost):
    """This replica could not renew its shard Lease within the renew deadline: the process must exit (code 1,
    as for a lost leader Lease)."""


def weight(member: str, key: str) -> int:
    """Rendezvous weight of ``key`` on ``member`` (64 bits of BLAKE2b of both)."""
    return int.from_bytes(hashlib.blake2b(f"{member}\x00{key}".encode(), digest_size=8).digest(), "big")


def owner(key: str, members: Iterable[str]) -> str | None:
    """The member that owns ``key`` (``namespace/name``): the highest weight, ties to the smaller identity;
    None for no members."""
    best, best_w = None, -1
    for m in sorted(members):
        w = weight(m, key)
        if w > best_w:
            best, best_w = m, w
    return best


def lease_name(group: str, identity: str) -> str:
    """The Lease of ``identity`` in ``group`` (a valid object name whatever the identity holds)."""
    return f"{group}-shard-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """Durations in seconds, as ``--leader-elect-*``; ``group`` prefixes the Lease names (and labels them)."""

    namespace: str
    group: str
    identity: str
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0

    def validate(self) -> None:
        validate_lease_timing(self.lease_duration_seconds, self.renew_deadline_seconds, self.retry_period_seconds)


class ShardMembership:
    """This replica's Lease and its view of the group (see the module docstring).

    ``members``: sorted identities of the live Leases (this replica's included); ``joined`` and ``lost``
    are asyncio Events; ``on_change()`` is called whenever ``members`` or ``joined`` changes.
    """

    def __init__(self, client: AsyncClient, settings: ShardSettings, clock: Callable[[], float] = time.monotonic):
        settings.validate()
        self.client = client
        self.settings = settings
        self.clock = clock
        self.name = lease_name(settings.group, settings.identity)
        self.members: tuple[str, ...] = ()
        self.joined = asyncio.Event()
        self.lost = asyncio.Event()
        self.on_change: Callable[[], None] | None = None
        #: awaited before a new view is acknowledged (published): the writes sent under the old view land first
        self.before_acknowledge: Callable[[], Awaitable[Any]] | None = None
        self._lease: Lease | None = None
        self._created_at: float | None = None
        self._renewed_at: float | None = None
        self._listed_at: float | None = None
        self._first_listed_at: float | None = None  # the first list of the group this replica made
        self._observed: dict[str, tuple[tuple, float]] = {}  # lease name -> (record, when it last changed)
        self._next_expiry: float | None = None  # when the first live member's Lease expires unless renewed
        self._owns: dict[str, bool] = {}
        self._acknowledged = False  # every other live member's published view holds this replica
        self._published: tuple[str, ...] | None = None  # the view written to this replica's Lease
        self._incarnation = uuid.uuid4().hex  # INCARNATION_ANNOTATION of the Lease this process creates
        self.changes = 0
        #: since when (``clock``) the autoscalers this replica gains at the latest change may have gone
        #: unsynced: its Lease's creation when it joins, a departed member's last renewal seen when one leaves
        self.handover_since: float | None = None

    # ----- the gate ------------------------------------------------------------------------------------------
    def may_write(self) -> bool:
        """Joined, Lease renewed and membership listed within the renew deadline, not lost."""
        return self.joined.is_set() and not self.lost.is_set() and self._fresh()

    def _fresh(self) -> bool:
        """Own Lease renewed and the group listed, both started less than the renew deadline ago."""
        if self._renewed_at is None or self._listed_at is None:
            return False
        now, deadline = self.clock(), self.settings.renew_deadline_seconds
        return now - self._renewed_at < deadline and now - self._listed_at < deadline

    def owns(self, key: str) -> bool:
        """``key`` is in this replica's share under its current view (False until joined)."""
        if not self.joined.is_set() or self.lost.is_set():
            return False
        mine = self._owns.get(key)
        if mine is None:
            mine = self._owns[key] = owner(key, self.members) == self.settings.identity
        return mine

    # ----- the loop ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Create the Lease, then renew and list every retry period; returns once the Lease is lost."""
        s = self.settings
        while self._created_at is None:
            await self._create()
            if self._created_at is None:
                await asyncio.sleep(s.retry_period_seconds)
        log.info("joined shard group %s as %s (Lease %s/%s); taking a share in %.1fs", s.group, s.identity,
                 s.namespace, self.name, s.lease_duration_seconds)
        while True:
            await self.tick()
            if self.lost.is_set():
                return
            next_tick = self.clock() + s.retry_period_seconds
            while True:  # between ticks, list again the moment another member's Lease would expire
                expiry = self._next_expiry
                if expiry is None or expiry >= next_tick:
                    await asyncio.sleep(max(0.0, next_tick - self.clock()))
                    break
                await asyncio.sleep(max(0.0, expiry - self.clock()) + 0.01)
                await self._list()

    async def tick(self) -> None:
        """One renewal and one list of the group; updates the view, ``joined`` and ``lost``."""
        s = self.settings
        renewed = await self._renew()
        if not renewed and self._renewed_at is not None and \
                self.clock() - self._renewed_at >= s.renew_deadline_seconds:
            self.lost.set()
            log.warning("lost shard Lease %s/%s (identity %s)", s.namespace, self.name, s.identity)
            self._changed()
            return
        await self._list()
        if self._published != self.members:  # acknowledge a new view at once (a joiner waits for it) ...
            if self.before_acknowledge is not None:  # ... once the writes sent under the old view have landed
                await self.before_acknowledge()
            await self._renew()
        if not self.joined.is_set() and self._created_at is not None and self._fresh() and (
                self._acknowledged or self.clock() - self._created_at >= s.lease_duration_seconds):
            self.joined.set()
            self.handover_since = min(self._created_at, self.handover_since or self._created_at)
            log.info("shard %s active: %d members %s", s.identity, len(self.members), list(self.members))
            self._changed()

    async def _create(self) -> None:
        s = self.settings
        now = datetime.now(timezone.utc)
        lease = Lease(metadata=ObjectMeta(name=self.name, namespace=s.namespace, labels={GROUP_LABEL: s.group},
                                          annotations={VIEW_ANNOTATION: "[]", INCARNATION_ANNOTATION: self._incarnation}),
                      spec=LeaseSpec(holderIdentity=s.identity, leaseDurationSeconds=_seconds(s.lease_duration_seconds),
                                     acquireTime=now, renewTime=now, leaseTransitions=0))
        started = self.clock()
        try:
            self._lease = await self.client.create(lease)
        except ApiError as err:
            if err.status.code != 409:
                log.warning("cannot create shard Lease %s/%s: %s", s.namespace, self.name, err.status.message)
                return
            # the name is taken: by this process when the answer to an earlier create was lost, else by another
            # replica of the same identity, which must not share a Lease
            mine, known = await self._read_own()
            if mine is None:
                if known:
                    raise ShardLost(f"Lease {s.namespace}/{self.name} already exists: identity {s.identity!r} "
                                    f"is in use by another replica") from None
                return  # not readable now: the next attempt asks again
            log.info("shard Lease %s/%s was created by this replica (the answer was lost)", s.namespace, self.name)
            self._lease = mine
            self._created_at = self.clock()  # its join waits a full lease duration from now, as for a new Lease
            return
        except (httpx2.HTTPError, OSError) as err:
            log.warning("cannot create shard Lease %s/%s: %s", s.namespace, self.name, err)
            return
        self._renewed_at = started
        self._created_at = self.clock()

    async def _renew(self) -> bool:
        lease = self._lease
        lease.spec.renewTime = datetime.now(timezone.utc)
        view = self.members
        lease.metadata.annotations = dict(lease.metadata.annotations or {}, **{VIEW_ANNOTATION: json.dumps(list(view))})
        started = self.clock()
        try:
            try:
                self._lease = await self.client.replace(lease)
            except ApiError as err:
                if err.status.code != 409:
                    raise
                # a conflict: the Lease changed since this replica last read it, as when the answer to a renewal
                # was lost though it was carried out; renewed again on the Lease as it is, when still its own
                mine, _ = await self._read_own()
                if mine is None:
                    raise
                mine.spec.renewTime = lease.spec.renewTime
                mine.metadata.annotations = dict(mine.metadata.annotations or {}, **{VIEW_ANNOTATION: json.dumps(list(view))})
                self._lease = await self.client.replace(mine)
        except (httpx2.HTTPError, OSError) as err:  # ApiError included: 404 (deleted as dead), 409, 5xx
            log.warning("shard Lease %s not renewed: %s", self.name, getattr(getattr(err, "status", None),
                                                                           "message", None) or err)
            return False
        self._renewed_at = started
        self._published = view
        return True

    async def _read_own(self) -> tuple[Lease | None, bool]:
        """(this process's Lease as the API server has it, or None; whether that is known): None and True when the
        Lease is gone or another process's (its INCARNATION_ANNOTATION not this one's), None and False when it
        cannot be read now."""
        s = self.settings
        try:
            lease = await self.client.get(Lease, self.name, namespace=s.namespace)
        except ApiError as err:
            return None, err.status.code == 404
        except (httpx2.HTTPError, OSError):
            return None, False
        annotations = (lease.metadata.annotations or {}) if lease.metadata is not None else {}
        if annotations.get(INCARNATION_ANNOTATION) != self._incarnation or lease.spec is None or \
                lease.spec.holderIdentity != s.identity:
            return None, True
        return lease, True

    async def _list(self) -> None:
        s = self.settings
        started = self.clock()
        try:
            leases = [lease async for lease in self.client.list(Lease, namespace=s.namespace,
                                                                 labels={GROUP_LABEL: s.group})]
        except (httpx2.HTTPError, OSError) as err:
            log.warning("shard Leases of %s not listed: %s", s.group, err)
            return
        now = self.clock()
        live, dead, seen, expiries = {s.identity}, [], {}, []
        acknowledged = True
        for lease in leases:
            name, spec = lease.metadata.name, lease.spec or LeaseSpec()
            record = (spec.holderIdentity, spec.renewTime, spec.leaseTransitions)
            old = self._observed.get(name)
            since = old[1] if old is not None and old[0] == record else now
            seen[name] = (record, since)
            if name == self.name or not spec.holderIdentity:
                continue
            duration = spec.leaseDurationSeconds or s.lease_duration_seconds
            if now - since >= duration:
                dead.append(name)
            else:
                live.add(spec.holderIdentity)
                expiries.append(since + duration)
                acknowledged = acknowledged and s.identity in _view(lease)
        self._acknowledged = acknowledged
        previous, self._observed = self._observed, seen
        self._next_expiry = min(expiries, default=None)
        self._listed_at = started
        if self._first_listed_at is None:
            self._first_listed_at = now
        members = tuple(sorted(live))
        if members != self.members:
            self.handover_since = self._departed_since(previous, set(self.members) - live, now)
            log.info("shard group %s: %d members %s", s.group, len(members), list(members))
            self.members = members
            self._changed()
        for name in dead:
            await self._delete_dead(name)

    def _departed_since(self, observed: dict[str, tuple[tuple, float]], departed: set[str], now: float) -> float:
        """When the ``departed`` members may have stopped syncing: a retry period before their last renewal
        seen; -inf for one never seen renewing (its record unchanged since this replica's first list: it may
        have stopped long before); ``now`` when none departed."""
        s = self.settings
        since = now
        for identity in departed:
            seen = observed.get(lease_name(s.group, identity))
            if seen is None or self._first_listed_at is None or seen[1] <= self._first_listed_at:
                return -math.inf
            since = min(since, seen[1] - s.retry_period_seconds)
        return since

    async def _delete_dead(self, name: str) -> None:
        """Delete a Lease judged dead (its holder stopped writing long ago; if it still runs, its renewal now
        fails and it exits)."""
        try:
            await self.client.delete(Lease, name, namespace=self.settings.namespace)
            log.info("deleted dead shard Lease %s/%s", self.settings.namespace, name)
        except (httpx2.HTTPError, OSError):
            pass  # someone else did, or will
        self._observed.pop(name, None)

    def _changed(self) -> None:
        self._owns.clear()
        self.changes += 1
        if self.on_change is not None:
            self.on_change()

    async def release(self) -> None:
        """Stop writing, then delete the Lease (graceful stop: the others take over at their next list)."""
        self.lost.set()
        self._owns.clear()
        if self._lease is None:
            return
        try:
            await self.client.delete(Lease, self.name, namespace=self.settings.namespace)
        except (httpx2.HTTPError, OSError) as err:  # best effort: it expires anyway
            log.info("could not delete shard Lease %s: %s", self.name, err)


def _view(lease: Lease) -> set[str]:
    """The member identities a Lease's holder published as its view (empty when none or malformed)."""
    text = (lease.metadata.annotations or {}).get(VIEW_ANNOTATION) if lease.metadata is not None else None
    try:
        view = json.loads(text) if text else []
    except ValueError:
        return set()
    return {m for m in view if isinstance(m, str)} if isinstance(view, list) else set()


def _seconds(value: float) -> int:
    return max(1, int(round(value)))


class Sharding:
    """Runs a Controller as one shard of the group: the controller syncs only the keys this replica owns.

    ``may_write`` is the controller's write gate (the membership's gate, plus ownership of the autoscaler the
    current sync is for); ``claim(key)`` tells the worker whether to sync a key it took from the queue.
    """

    def __init__(self, client: AsyncClient, settings: ShardSettings, clock: Callable[[], float] = time.monotonic):
        self.membership = ShardMembership(client, settings, clock)
        self.settings = settings
        self.controller: Any = None
        self._owned: set[str] = set()

    @property
    def identity(self) -> str:
        return self.settings.identity

    def may_write(self) -> bool:
        m = self.membership
        if not m.may_write():
            return False
        sync = current_sync()
        return sync is None or m.owns(sync.key)

    def claim(self, key: str) -> bool:
        """The worker took ``key``: True when it is ours to sync now."""
        if self.membership.owns(key):
            self._owned.add(key)
            return True
        return False

    def settle(self, key: str) -> None:
        """A sync of ``key`` ended: if the key left the share meanwhile, drop what that sync kept (its memory
        working copy and its desired_replicas series; its writes were refused by the gate)."""
        if not self.membership.owns(key):
            self._drop(key)

    def _drop(self, key: str) -> None:
        c = self.controller
        self._owned.discard(key)
        c.queue.remove(key)
        c.memory.forget(key)
        a = c.autoscalers.get(key)
        if a is not None:
            c.monitor.deleted(a.namespace, a.name)

    def refresh_foreign_selectors(self) -> int:
        """File the pod selector of every autoscaler of another share (and of its own share not synced yet) in the
        controller's selector index, from the Scale cache (upstream's AmbiguousSelector check needs the selectors of *all* autoscalers; a
        replica learns its own share's from its syncs). Returns how many are known."""
        c = self.controller
        scales = getattr(c, "scales", None)
        if c is None or scales is None:
            return 0
        index, known = c.reconciler.selectors, 0
        for key, a in list(c.autoscalers.items()):
            if a.scale_target_ref is None or (self.membership.owns(key) and index.knows(key)):
                continue  # its own share's are learned from the syncs (until then, from the cache too)
            scale = scales.peek(a.namespace, a.scale_target_ref)
            if scale is not None:
                index.put(key, a.namespace, scale.selector)
                known += 1
        return known

    async def _foreign_selectors(self) -> None:
        while True:
            self.refresh_foreign_selectors()
            await asyncio.sleep(self.settings.retry_period_seconds)

    def owned(self) -> int:
        """Autoscalers known to this replica that are in its share (the shard size)."""
        autoscalers = self.controller.autoscalers if self.controller is not None else {}
        return sum(1 for key in autoscalers if self.membership.owns(key))

    def _rebalance(self) -> None:
        """Membership changed: sync the keys gained at once (memory from status), drop the ones lost."""
        c = self.controller
        if c is None or c.queue is None:
            return
        now = {key for key in c.autoscalers if self.membership.owns(key)}
        gained, lost = sorted(now - self._owned), self._owned - now
        if gained:  # every selector filed before the first sync of a gained key (AmbiguousSelector)
            self.refresh_foreign_selectors()
        for delay, key in self._gain_schedule(gained):
            c.memory.forget(key)  # a working copy from an earlier term is stale: load the status' memory
            c.queue.add(key, delay)
        for key in lost:
            self._drop(key)
        self._owned = now
        if gained or lost:
            log.info("shard %s: %d autoscalers (+%d, -%d)", self.identity, len(now), len(gained), len(lost))

    def _gain_schedule(self, gained: list[str]) -> list[tuple[float, str]]:
        """(delay in seconds, key) of each gained autoscaler, in the order to queue them. Every replica syncs an
        autoscaler at its namespace's phase of the period (``pyhpa.controller.sync.nsmetrics.resync_delay``), so
        the last owner synced it at its latest phase point unless that point came after the hand-over began
        (``ShardMembership.handover_since``, widened by ``jitter * period`` and a retry period for an owner
        still converging to the phase or late to see the change): those are synced now, the longest unsynced
        first; the others at their next phase point, one period after the last owner's sync — not all at once,
        which made the last of them wait for the whole burst. An autoscaler with schedule windows (whose next
        start or end only a sync computes), or with ``--jitter 0`` (no phase), is synced now; and all of them
        when no other member is alive (a start or a restart alone) or one departed that this replica never saw
        renewing (its last sync is unknown)."""
        c, m = self.controller, self.membership
        jitter = c.settings.jitter
        others = [member for member in m.members if member != self.identity]
        if m.handover_since is None or m.handover_since == -math.inf or jitter <= 0 or not others:
            return [(0.0, key) for key in gained]  # nobody alive synced them: a start, a restart, a dead member
        age = max(0.0, m.clock() - m.handover_since) + self.settings.retry_period_seconds
        wall = c.clock()
        now, later = [], []
        for key in gained:
            a = c.autoscalers.get(key)
            if a is None or a.hpa is None or a.hpa.schedules:
                now.append((-math.inf, key))
                continue
            last, following = phase_points(a.namespace, a.sync_period_seconds, wall)
            if wall - last <= age + jitter * a.sync_period_seconds:
                now.append((last, key))
            else:
                later.append((following - wall, key))
        now.sort()
        return [(0.0, key) for _, key in now] + later

    async def _join_when_synced(self, controller: Any, stop: asyncio.Event, led: asyncio.Task) -> None:
        """Wait until the controller's informers (and its Scale cache) have listed, then run the membership."""

        scales = getattr(controller, "scales", None)
        loop, ready_at = asyncio.get_running_loop(), None
        while True:
            if stop.is_set() or led.done():
                return
            if controller.ready:
                ready_at = loop.time() if ready_at is None else ready_at
                if scales is None or scales.synced or loop.time() - ready_at >= SCALE_CACHE_WAIT_SECONDS:
                    break
            await asyncio.sleep(0.05)
        await self.membership.run()

    async def run(self, controller: Any, stop: asyncio.Event) -> None:
        """Campaign and run ``controller`` as this shard until ``stop`` (then release the Lease); raises ShardLost
        when the Lease is lost. Cancelled (the process dies): no release."""
        self.controller = controller
        controller.shards = self
        controller.load.shard(self.owned, lambda: len(self.membership.members))
        self.membership.on_change = self._rebalance
        writer, m = controller.writer, self.membership
        writer.epoch = lambda: m.changes
        m.before_acknowledge = lambda: writer.drain(m.changes, self.settings.retry_period_seconds)
        controller_stop = asyncio.Event()
        led = asyncio.create_task(controller.run(controller_stop), name="controller")
        # join the group only once the caches are synced: a replica takes its share when it can sync it at once
        # (listing 100,000 pods takes a while; meanwhile the others keep syncing every autoscaler)
        member = asyncio.create_task(self._join_when_synced(controller, stop, led), name="shard-membership")
        foreign = asyncio.create_task(self._foreign_selectors(), name="shard-foreign-selectors")
        lost = asyncio.ensure_future(self.membership.lost.wait())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({member, led, lost, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if member.done() and not member.cancelled() and member.exception() is not None:
                raise member.exception()  # ShardLost: our Lease name is taken
            controller_stop.set()
            if not stop.is_set():
                self.membership.lost.set()  # the gate closes before the in-flight syncs end
            await led
            if not stop.is_set():
                s = self.settings
                raise ShardLost(f"lost shard Lease {s.namespace}/{self.membership.name} (identity {s.identity}); "
                                "exiting")
            member.cancel()
            await asyncio.gather(member, return_exceptions=True)
            await self.membership.release()
            log.info("left shard group %s", self.settings.group)
        finally:
            for task in (lost, stopped, member, led, foreign):
                if not task.done():
                    task.cancel()
            await asyncio.gather(lost, stopped, member, led, foreign, return_exceptions=True)


__all__ = ["GROUP_LABEL", "INCARNATION_ANNOTATION", "VIEW_ANNOTATION", "ShardLost", "ShardMembership", "ShardSettings", "Sharding", "lease_name", "owner",
           "weight"]
