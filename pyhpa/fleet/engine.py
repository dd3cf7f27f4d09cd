"""A fleet on one simulated clock (``pyhpa.simulate.clock``): every workload's simulated cluster
(``pyhpa.simulate.cluster.Cluster``, the same decision core as ``pyhpa simulate``), kube-scheduler placing their new
pods on the node pools' nodes (``pyhpa.fleet.scheduler``), the nodes turning Ready, a node autoscaler model deciding
which nodes to add and remove (``pyhpa.fleet.nodeautoscalers``: it returns actions, which ``FleetRun.carry_out``
carries out) and the timeline's sampler, each an actor on that clock.

The next thing that happens anywhere runs next; at one instant the fleet's own events (nodes Ready, then
scheduling, then the node autoscaler, then the sample) come before the workloads' events. A pod a workload creates
is Pending: kube-scheduler tries it after the profile's ``pod_scheduling_seconds`` (its queue and binding latency,
with the pod's jitter); when no node fits it stays Pending (unschedulable) and is tried again whenever a node of its
pool turns Ready or a pod of its pool is deleted (kube-scheduler's requeue on Node add and Pod delete events), until
bound (``Cluster.bind``). Pods that a node autoscaler drains are deleted and replaced by their workload at once
(``Cluster.evict``).

Time is in epoch seconds, CPU in millicores, memory in bytes, prices in dollars per node-hour.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import random
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable, NamedTuple

import numpy as np

from ..adapters.errors import InputError
from ..adapters.parse import format_time
from ..simulate import Settings, check_extent
from ..simulate.clock import ATTEMPT, AUTOSCALER, READY, RETRY, SAMPLE, Clock
from ..simulate.cluster import Cluster, History, SimPod
from ..simulate.compiled import CompiledCluster
from .nodeautoscalers import Action, Delete, Launch, Reason, Replace, make_model
from .scheduler import Node, Placer, PodRequests
from .spec import Fleet, InstanceType, LoadedWorkload, NodePool

#: the standard normal's 90th percentile: a log-normal delay's sigma is ln(p90 / median) / this
Z90 = 1.2815515655446004
#: the most pods a simulated fleet holds at once (each workload also holds at most
#: ``pyhpa.simulate.target.MAX_SIMULATED_PODS``): bounds a run's memory and time when many autoscalers meet huge loads
MAX_FLEET_PODS = 1_000_000
#: timeline.csv has a row per pool this often (seconds of simulated time)
SAMPLE_SECONDS = 60.0


class EventKind(StrEnum):
    """What happened to a node or a pod (``FleetEvent.kind``, events.csv's ``kind``)."""

    NODE_LAUNCHED = "NodeLaunched"
    NODE_READY = "NodeReady"
    NODE_DELETED = "NodeDeleted"
    POD_UNSCHEDULABLE = "PodUnschedulable"
    SCALE_UP_TIMED_OUT = "ScaleUpTimedOut"


class FleetEvent(NamedTuple):
    """A row of events.csv: when (epoch s), what (``kind``), in which pool, to which node or pod (``name``:
    ``workload/pod`` for a pod), its ``detail`` (an instance type, the pods a deleted node had, ...) and, for a node
    the node autoscaler launched or removed, why (``reason``: its action's ``pyhpa.fleet.nodeautoscalers.Reason``;
    empty for the nodes of the start and for the engine's own events)."""

    time: float
    kind: EventKind
    pool: str
    name: str
    detail: str
    reason: str = ""


class PoolSample(NamedTuple):
    """A row of timeline.csv: a pool at one simulated minute (``SAMPLE_SECONDS``): its Ready and launching nodes,
    its Pending pods and those no node fits, what its Ready nodes' pods request (DaemonSet overhead included) and
    allocate (millicores, bytes), and what its nodes cost an hour (Ready and launching, dollars)."""

    time: float
    pool: str
    nodes: int
    nodes_launching: int
    pending_pods: int
    unschedulable_pods: int
    requested_cpu_millicores: int
    allocatable_cpu_millicores: int
    requested_memory_bytes: int
    allocatable_memory_bytes: int
    cost_per_hour: float


#: timeline.csv's columns (``PoolSample``'s fields)
SAMPLE_COLUMNS = PoolSample._fields


class FleetNode(Node):
    """A node of a pool: besides what the scheduler sees (``Node``), its price, when it was launched (the node
    autoscaler's request; billed from then), Ready and deleted (``math.inf`` while it lives), the pods bound to it,
    the last time a pod was bound to it or left it, whether it is being deleted, and the node it replaces or that
    replaces it (a ``Replace``). What a node autoscaler model reads of it: ``pyhpa.fleet.nodeautoscalers.NodeView``."""

    __slots__ = ("price", "launched", "ready_at", "deleted_at", "bound", "last_pod_event", "deleting", "replaces",
                 "replaced_by", "reason")

    def __init__(self, name: str, kind: InstanceType, pool: PoolState, launched: float):
        super().__init__(name, kind.cpu, kind.memory, kind.pods, pool.spec.name, kind.name)
        over = pool.spec.daemon_set_overhead
        self.requested_cpu = self.nonzero_cpu = over.cpu
        self.requested_memory = self.nonzero_memory = over.memory
        self.price = kind.price_per_hour
        self.launched = launched
        self.ready_at = math.inf
        self.deleted_at = math.inf
        self.bound: dict[SimPod, Placement] = {}
        self.last_pod_event = launched
        self.deleting = False
        self.replaces: FleetNode | None = None  # the node this one is launched to replace (``Replace``)
        self.replaced_by: FleetNode | None = None
        self.reason = ""  # why the node autoscaler launched it (its action's Reason; "" for the start's nodes)

    def utilization(self) -> float:
        """The larger of requested CPU and memory over allocatable (DaemonSet pods' overhead included), as Cluster
        Autoscaler's scale-down measures it."""
        return max(self.requested_cpu / self.cpu if self.cpu else 0.0,
                   self.requested_memory / self.memory if self.memory else 0.0)


class Placement:
    """One pod of a workload created during the run: Pending until ``node`` is set (bound)."""

    __slots__ = ("workload", "pod", "requests", "created", "pool", "node", "failed_at", "gone")

    def __init__(self, workload: int, pod: SimPod, requests: PodRequests, created: float, pool: PoolState):
        self.workload, self.pod, self.requests, self.created, self.pool = workload, pod, requests, created, pool
        self.node: FleetNode | None = None
        self.failed_at: float | None = None  # the first attempt that found no node
        self.gone = False  # deleted while Pending


@dataclass(slots=True)
class PoolState:
    """A node pool's nodes (what a node autoscaler model reads of it: ``pyhpa.fleet.nodeautoscalers.PoolView``):
    ``nodes`` Ready and schedulable, in the order they turned Ready (the scheduler's node list), ``upcoming`` launched and not Ready yet, ``all`` every node ever (the bill); the pods no node fits
    (``unschedulable``), and the number of its pods Pending."""

    spec: NodePool
    index: int
    nodes: list[FleetNode] = field(default_factory=list)
    upcoming: list[FleetNode] = field(default_factory=list)
    all: list[FleetNode] = field(default_factory=list)
    unschedulable: list[Placement] = field(default_factory=list)
    pending: int = 0
    counter: int = 0
    workloads: list[int] = field(default_factory=list)
    #: changes whenever a pod is bound to or leaves one of its nodes, or a node is launched, turns Ready or is
    #: deleted (what a node autoscaler's scale-down reads): an unchanged pool needs no new scale-down simulation
    version: int = 0

    def waiting(self) -> list[Placement]:
        """The unschedulable pods still waiting (not deleted since), oldest first."""
        self.unschedulable = [p for p in self.unschedulable if not p.gone and p.node is None]
        return self.unschedulable

    def size(self) -> int:
        """Nodes that count towards min/max: Ready (not being deleted) and launched."""
        return len(self.nodes) + len(self.upcoming)


@dataclass(slots=True)
class WorkloadStats:
    """What the fleet adds to a workload's own figures (seconds): how long its new pods were Pending, split into
    the scheduler's part (created to the first attempt that bound it, or that found no node) and the wait for a
    node (from the first attempt that found none to the bind); how many pods waited for a node; how many of its
    pods node autoscalers evicted."""

    pods_created: int = 0
    pods_bound: int = 0
    pending_pod_seconds: float = 0.0
    scheduling_seconds: float = 0.0
    node_wait_seconds: float = 0.0
    pods_waited_for_node: int = 0
    evicted_pods: int = 0


def provisioning_delay(pool: NodePool, rng: random.Random) -> float:
    """A new node's seconds from launch to Ready: log-normal with the pool's ``provisioningSeconds`` median and
    p90 (the median when they are equal)."""
    p = pool.provisioning_seconds
    if p.median <= 0:
        return 0.0
    if p.p90 <= p.median:
        return p.median
    sigma = math.log(p.p90 / p.median) / Z90
    return p.median * math.exp(sigma * rng.gauss(0.0, 1.0))


def _span(w: LoadedWorkload, start: float, end: float) -> tuple[np.ndarray, dict[str, np.ndarray], History | None]:
    """The workload's trace rows over the fleet's span (the row in force at ``start`` moved to it) and the rows
    before it (the forecaster's history, for an autoscaler that predicts)."""
    tr = w.trace
    times = tr.times
    first = max(int(np.searchsorted(times, start, side="right")) - 1, 0)
    last = int(np.searchsorted(times, end, side="left"))
    keep = slice(first, max(last, first + 1))
    cut = times[keep].astype(float)
    cut[0] = max(cut[0], start)
    columns = {k: v[keep] for k, v in tr.values.items()}
    history = None
    if w.autoscaler.hpa.prediction is not None and first > 0:
        before = {k: v[:first] for k, v in tr.values.items()}
        history = History(times=times[:first], rps=w.profile.load_to_rps(before[w.spec.trace.column]),
                          columns=before)
    return cut, columns, history


def workload_cluster(fleet: Fleet, i: int, settings: Settings, binder=None, summary_only: bool = True) -> Cluster:
    """Workload ``i`` of ``fleet`` as a simulated cluster over the fleet's span (seeded ``settings.seed + i``; the
    trace rows of the span and, for an autoscaler that predicts, its history): with ``binder`` (the fleet's
    scheduler) its new pods wait to be bound, without it they bind after the profile's own scheduling delay, as in
    ``pyhpa simulate`` (nodes always there). Raises InputError naming the fleet file and the workload (a span past the
    simulator's bound of syncs)."""
    w = fleet.workloads[i]
    h = w.autoscaler
    times, columns, history = _span(w, fleet.start, fleet.end)
    try:
        check_extent(dataclasses.replace(w.trace, times=times, values=columns, end=fleet.end), h, w.profile,
                     w.spec.profile)
    except InputError as err:
        raise err.at(file=fleet.file, obj=f"workload {w.spec.name}") from None
    rps = w.profile.load_to_rps(columns[w.spec.trace.column])
    return CompiledCluster(h.hpa, w.target, w.profile, h.config, times, rps, columns, fleet.start, fleet.end,
                   h.sync_period_seconds, settings.seed + i, (), history=history, binder=binder,
                   obj=f"workload {w.spec.name}", summary_only=summary_only)


class TwinWorkload(NamedTuple):
    """A workload of the instant-nodes twin (``instant_twin``): its overloaded seconds and unserved requests with
    nodes always there."""

    overloaded_seconds: float
    unserved_requests: float


def instant_twin(fleet: Fleet, settings: Settings = Settings(),
                 progress: Callable[[int, int], None] | None = None) -> list[TwinWorkload]:
    """The fleet's instant-nodes twin: each workload with nodes always there, run alone as ``pyhpa simulate`` runs it
    (``workload_cluster`` with no binder: the same seed, span and history as in the fleet). What the fleet's run
    adds to its overload is the node pool's doing: pods waiting for nodes, evictions. ``progress(done, total)``
    after each workload. Raises InputError (a workload scaling past the simulator's bound, naming it)."""
    out = []
    n = len(fleet.workloads)
    for i in range(n):
        c = workload_cluster(fleet, i, settings)
        try:
            c.run()
        except InputError as err:
            raise err.at(file=fleet.file) from None
        out.append(TwinWorkload(c.stats.overloaded_seconds, c.stats.unserved_requests))
        if progress is not None:
            progress(i + 1, n)
    return out


class FleetRun:
    """A fleet simulated over the span all its traces cover (``fleet.start`` to ``fleet.end``): ``run`` it, then
    read ``clusters`` (each workload's simulated cluster, as ``pyhpa simulate`` has it), ``stats`` (the fleet's
    figures of each workload), ``pools`` (nodes, bill) and ``samples`` (timeline rows). ``settings.seed`` seeds
    workload ``i``'s cluster with ``seed + i``, and the scheduler's ties and the nodes' provisioning delays with
    streams of their own. Each cluster keeps of its timeline only what its summary reads
    (``pyhpa.simulate.timeline.SummaryTimeline``: a fleet of thousands fits in memory) unless ``keep_rows``."""

    def __init__(self, fleet: Fleet, settings: Settings = Settings(), keep_rows: bool = False):
        self.fleet, self.settings, self.keep_rows = fleet, settings, keep_rows
        self.start, self.end = fleet.start, fleet.end
        self.placer = Placer(fleet.spec.scheduler.scoring_strategy, random.Random(settings.seed * 7919 + 1))
        self.delays = random.Random(settings.seed * 7919 + 2)
        self.pools = {p.name: PoolState(p, i) for i, p in enumerate(fleet.spec.node_pools)}
        self.placements: dict[SimPod, Placement] = {}
        self.stats = [WorkloadStats() for _ in fleet.workloads]
        self.samples: list[PoolSample] = []
        self._sums: dict[int, tuple] = {}  # each pool's (version, the sums of its last sample's node figures)
        #: what happened to nodes and pods, in order
        self.events: list[FleetEvent] = []
        #: the one clock of every actor: the workloads, kube-scheduler, the nodes, the node autoscaler, the sampler
        self.clock = Clock(fleet.start, fleet.end)
        self._index_of: dict[int, int] = {}  # id(cluster) -> its workload's index
        self.clusters: list[Cluster] = []
        self.autoscaler = make_model(fleet.spec.node_autoscaler, fleet.start, random.Random(settings.seed * 7919 + 3))
        self._pool_list = list(self.pools.values())
        for pool in self.pools.values():
            for _ in range(pool.spec.min_nodes):
                self._ready(self.start, self.launch(pool, self.autoscaler.initial_type(pool), self.start, delay=0.0))
        for i, w in enumerate(fleet.workloads):
            self.clusters.append(self._cluster(i, w))
        self.clock.at(self.start, SAMPLE, self._sample)
        self.clock.at(self.autoscaler.next_time, AUTOSCALER, self._autoscaler_loop)

    # ----------------------------------------------------------------- set-up
    def _cluster(self, i: int, w: LoadedWorkload) -> Cluster:
        """Workload ``i``'s simulated cluster, its pods of the start bound to nodes of its pool (a node launched
        Ready for those that fit none)."""
        c = workload_cluster(self.fleet, i, self.settings, binder=self, summary_only=not self.keep_rows)
        pool = self.pools[w.pool.name]
        pool.workloads.append(i)
        self._index_of[id(c)] = i
        for pod in c.pods:
            node = self.placer.place(w.requests, pool.nodes)
            if node is None:
                node = self._ready(self.start, self.launch(pool, self.autoscaler.initial_type(pool, w.requests),
                                                           self.start, delay=0.0))
            pl = Placement(i, pod, w.requests, self.start, pool)
            self.placements[pod] = pl
            self._attach(pl, node, self.start)
        c.attach(self.clock)
        return c

    # ----------------------------------------------------------------- the clock
    def run(self, progress: Callable[[float, float], None] | None = None) -> FleetRun:
        """Simulate to the end; ``progress(simulated_seconds, total_seconds)`` now and then. Raises InputError
        (a workload scaling past the simulator's bound, naming it)."""
        total = self.end - self.start
        # the fleet's long-lived objects (its traces, workloads, pools) out of the collector's passes while the clock
        # runs: a full pass over them at every few thousand allocations made a large fleet's time grow faster than
        # its size (400 workloads for a day: 61 s with, 31 s without, on the same machine)
        gc.freeze()
        try:
            self.clock.run(None if progress is None else (lambda t: progress(t - self.start, total)),
                           max(total / 200, 1.0))
        except InputError as err:
            raise err.at(file=self.fleet.file) from None
        finally:
            gc.unfreeze()
        for c in self.clusters:
            c.finish()
        for pl in self.placements.values():
            if pl.node is None and not pl.gone:
                self._pending_until(pl, self.end)
        if progress is not None:
            progress(total, total)
        return self

    @property
    def now(self) -> float:
        """The clock's time (epoch s)."""
        return self.clock.now

    def _autoscaler_loop(self, t: float, _payload=None) -> None:
        """The node autoscaler's loop, when ``t`` is still its ``next_time`` (an entry whose time moved is passed
        over): its actions carried out, its next loop put on the clock."""
        if t == self.autoscaler.next_time:
            for action in self.autoscaler.act(self._pool_list, t):
                self.carry_out(action, t)
            self.clock.at(self.autoscaler.next_time, AUTOSCALER, self._autoscaler_loop)

    def carry_out(self, action: Action, t: float) -> None:
        """Carry out a node autoscaler's action at ``t``: launch a node (``Launch``), drain and remove one
        (``Delete``; a failed scale-up's a ``ScaleUpTimedOut`` event first), or launch a node to replace one
        (``Replace``: the old node is removed once the new one is Ready)."""
        if isinstance(action, Launch):
            self.launch(self.pools[action.pool.spec.name], action.instance_type, t, reason=action.reason)
        elif isinstance(action, Delete):
            node = action.node
            if action.reason == Reason.SCALE_UP_TIMED_OUT:
                self.events.append(FleetEvent(t, EventKind.SCALE_UP_TIMED_OUT, node.pool, node.name,
                                              f"not Ready {t - node.launched:g} s after its launch"))
            self.delete_node(node, t, action.reason)
        elif isinstance(action, Replace):
            old = action.node
            new = self.launch(self.pools[old.pool], action.instance_type, t, reason=action.reason)
            new.replaces, old.replaced_by = old, new
        else:
            raise TypeError(f"not a node autoscaler's action: {action!r}")

    # ----------------------------------------------------------------- the binder (Cluster's)
    def created(self, cluster: Cluster, pod: SimPod, t: float) -> None:
        """A workload created ``pod`` at ``t``: kube-scheduler tries it after the profile's scheduling delay."""
        i = self._index_of[id(cluster)]
        if len(self.placements) >= MAX_FLEET_PODS:
            raise InputError(f"scales the fleet past {MAX_FLEET_PODS:,} pods at {format_time(t)}; a simulated fleet "
                             "holds at most that many: lower maxReplicas or the loads (trace.scale)",
                             field="spec.maxReplicas")
        w = self.fleet.workloads[i]
        pl = Placement(i, pod, w.requests, t, self.pools[w.pool.name])
        self.placements[pod] = pl
        pl.pool.pending += 1
        self.stats[i].pods_created += 1
        self.clock.at(t + cluster.profile.pod_scheduling_seconds * pod.factors[0], ATTEMPT, self._attempt, pl)

    def removed(self, cluster: Cluster, pod: SimPod) -> None:
        """A workload deleted ``pod`` (bound or Pending): its node's room is free, and the pool's unschedulable
        pods are tried again."""
        pl = self.placements.pop(pod, None)
        if pl is None:
            return
        node = pl.node
        if node is None:
            pl.gone = True
            pl.pool.pending -= 1
            self._pending_until(pl, self.now)
            return
        node.remove(pl.requests)
        del node.bound[pod]
        node.last_pod_event = self.now
        pl.pool.version += 1
        if pl.pool.unschedulable and not node.deleting:
            self.clock.at(self.now, RETRY, self._retry, pl.pool)

    # ----------------------------------------------------------------- scheduling
    def _attempt(self, t: float, pl: Placement) -> None:
        if pl.gone:
            return
        pool = pl.pool
        node = self.placer.place(pl.requests, pool.nodes)
        if node is not None:
            self._bind(pl, node, t)
            return
        if pl.failed_at is None:
            pl.failed_at = t
            self.events.append(FleetEvent(t, EventKind.POD_UNSCHEDULABLE, pool.spec.name,
                                          f"{self.fleet.workloads[pl.workload].spec.name}/{pl.pod.name}", ""))
        pool.unschedulable.append(pl)
        was = self.autoscaler.next_time
        self.autoscaler.unschedulable(pool, t)
        if self.autoscaler.next_time != was:  # its next loop moved: put it on the clock (earlier ones are passed over)
            self.clock.at(self.autoscaler.next_time, AUTOSCALER, self._autoscaler_loop)

    def _retry(self, t: float, pool: PoolState) -> None:
        """Try the pool's unschedulable pods again, oldest first (a request that found no node in this pass is not
        tried again in it: binding others only fills nodes)."""
        waiting = pool.waiting()
        if not waiting:
            return
        pool.unschedulable = []
        failed: set[PodRequests] = set()
        for pl in waiting:
            node = None if pl.requests in failed else self.placer.place(pl.requests, pool.nodes)
            if node is None:
                failed.add(pl.requests)
                pool.unschedulable.append(pl)
            else:
                self._bind(pl, node, t)

    def _bind(self, pl: Placement, node: FleetNode, t: float) -> None:
        self._attach(pl, node, t)
        pl.pool.pending -= 1
        s = self.stats[pl.workload]
        s.pods_bound += 1
        self._pending_until(pl, t, bound=True)
        self.clusters[pl.workload].bind(pl.pod, t)

    def _attach(self, pl: Placement, node: FleetNode, t: float) -> None:
        node.add(pl.requests)
        node.bound[pl.pod] = pl
        node.last_pod_event = t
        pl.node = node
        pl.pool.version += 1

    def _pending_until(self, pl: Placement, t: float, bound: bool = False) -> None:
        """Count ``pl``'s Pending time up to ``t`` (bound then, deleted then, or the end)."""
        s = self.stats[pl.workload]
        lo = max(pl.created, self.start)
        if t <= lo:
            return
        s.pending_pod_seconds += t - lo
        first = pl.failed_at if pl.failed_at is not None else t
        s.scheduling_seconds += max(min(first, t) - lo, 0.0)
        if pl.failed_at is not None:
            s.node_wait_seconds += t - max(pl.failed_at, lo)
            if bound:
                s.pods_waited_for_node += 1

    # ----------------------------------------------------------------- nodes
    def launch(self, pool: PoolState, kind: InstanceType, t: float, delay: float | None = None,
               reason: str = "") -> FleetNode:
        """A node of ``kind`` launched in ``pool`` at ``t``: Ready after ``delay`` seconds (the pool's
        provisioning delay, drawn, when None); ``reason``: the node autoscaler's (its action's Reason)."""
        pool.counter += 1
        pool.version += 1
        node = FleetNode(f"{pool.spec.name}-{pool.counter:05d}", kind, pool, t)
        node.reason = str(reason)
        pool.all.append(node)
        self.events.append(FleetEvent(t, EventKind.NODE_LAUNCHED, pool.spec.name, node.name, kind.name, node.reason))
        if delay is None:
            delay = provisioning_delay(pool.spec, self.delays)
            pool.upcoming.append(node)
            self.clock.at(t + delay, READY, self._ready, node)
        return node

    def _ready(self, t: float, node: FleetNode) -> FleetNode:
        if node.deleted_at <= t:  # given up while it was launching (Cluster Autoscaler's max-node-provision-time)
            return node
        pool = self.pools[node.pool]
        if node in pool.upcoming:
            pool.upcoming.remove(node)
        node.ready_at = t
        pool.nodes.append(node)
        pool.version += 1
        self.events.append(FleetEvent(t, EventKind.NODE_READY, pool.spec.name, node.name, node.instance_type))
        self.autoscaler.node_ready(pool, node, t)
        old = node.replaces
        if old is not None and not old.deleting:  # a replacement is Ready: the node it replaces goes
            self.delete_node(old, t, node.reason)
        if pool.unschedulable:
            self._retry(t, pool)
        return node

    def delete_node(self, node: FleetNode, t: float, reason: str = "") -> None:
        """A node autoscaler removes ``node`` at ``t`` (``reason``: its action's Reason): it leaves the scheduler's
        list, its pods are evicted (each workload replaces them at once; they are scheduled as new pods) and it is
        billed until ``t``."""
        pool = self.pools[node.pool]
        node.deleting = True
        pool.version += 1
        self.events.append(FleetEvent(t, EventKind.NODE_DELETED, pool.spec.name, node.name,
                                      f"{len(node.bound)} pods; last pod event {t - node.last_pod_event:g} s before",
                                      str(reason)))
        if node in pool.nodes:
            pool.nodes.remove(node)
        if node in pool.upcoming:
            pool.upcoming.remove(node)
        for pod, pl in list(node.bound.items()):
            self.stats[pl.workload].evicted_pods += 1
            self.clusters[pl.workload].evict(pod, t)
        node.deleted_at = t

    # ----------------------------------------------------------------- timeline
    def _sample(self, t: float, _payload=None) -> None:
        """A timeline.csv row per pool; the next one ``SAMPLE_SECONDS`` later."""
        for pool in self.pools.values():
            ready = pool.nodes
            sums = self._sums.get(pool.index)
            if sums is None or sums[0] != pool.version:  # the nodes' figures change only with the pool's version
                sums = self._sums[pool.index] = (
                    pool.version, sum(n.requested_cpu for n in ready), sum(n.cpu for n in ready),
                    sum(n.requested_memory for n in ready), sum(n.memory for n in ready),
                    sum(n.price for n in ready) + sum(n.price for n in pool.upcoming))
            self.samples.append(PoolSample(t, pool.spec.name, len(ready), len(pool.upcoming), pool.pending,
                                           len(pool.waiting()), *sums[1:]))
        self.clock.at(t + SAMPLE_SECONDS, SAMPLE, self._sample)
