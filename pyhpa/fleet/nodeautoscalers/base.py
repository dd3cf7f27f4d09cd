"""What a node autoscaler model reads and what it returns: a read-only view of the node pools (``PoolView``,
``NodeView``) and the actions it decides (``Launch``, ``Delete``, ``Replace``, each with its ``Reason``), as
Karpenter's disruption methods return a ``Command`` for the disruption controller to carry out. The fleet's engine
(``pyhpa.fleet.engine``) owns the nodes and pods: it carries out each action (launching the node, draining and
removing it, billing it) and records the events; a model only decides.

A model's ``act(pools, t)`` yields its actions one at a time: the engine carries out each before the model goes on,
so what the model reads after an action (a pool's nodes, its size) includes it, as it would in the project's own
loop. Also here: the what-if bins both models simulate with (``Bin``, ``move_all``, ``first_fit``).

Time is in epoch seconds, CPU in millicores, memory in bytes, prices in dollars per node-hour.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Iterable, Iterator, Mapping, Protocol, Sequence

from ..scheduler import PodRequests, fits, fits_ok
from ..spec import InstanceType, NodePool, empty_node


class BoundPod(Protocol):
    """A pod bound to a node, as a model sees it: its requests."""

    @property
    def requests(self) -> PodRequests: ...


class NodeView(Protocol):
    """A node as a model reads it (never writes): its allocatable ``cpu`` (millicores), ``memory`` (bytes) and
    ``pods``; what its pods and DaemonSet pods request (``requested_cpu``, ``requested_memory``, ``pod_count``); its
    ``instance_type`` name and ``price`` (dollars per node-hour); when it was launched, turned Ready and last had a
    pod bound or removed (``last_pod_event``); the pods bound to it; whether it is being deleted; and the node it was
    launched to replace (``replaces``) or that replaces it (``replaced_by``), or None."""

    name: str
    pool: str
    instance_type: str
    cpu: int
    memory: int
    pods: int
    requested_cpu: int
    requested_memory: int
    pod_count: int
    price: float
    launched: float
    ready_at: float
    last_pod_event: float
    deleting: bool

    @property
    def bound(self) -> Mapping[Any, BoundPod]: ...

    @property
    def replaces(self) -> NodeView | None: ...

    @property
    def replaced_by(self) -> NodeView | None: ...

    def utilization(self) -> float:
        """The larger of requested CPU and memory over allocatable (DaemonSet overhead included)."""


class PendingPod(Protocol):
    """A pod no node fitted, still waiting: its requests."""

    @property
    def requests(self) -> PodRequests: ...


class PoolView(Protocol):
    """A node pool as a model reads it: its ``spec`` (``NodePool``), its ``index`` in the fleet file, its Ready
    ``nodes`` (in the order they turned Ready) and ``upcoming`` ones (launched, not Ready), and ``version``, which
    changes whenever a pod is bound to or leaves one of its nodes or a node is launched, turns Ready or is deleted."""

    spec: NodePool
    index: int
    version: int

    @property
    def nodes(self) -> Sequence[NodeView]: ...

    @property
    def upcoming(self) -> Sequence[NodeView]: ...

    def waiting(self) -> Sequence[PendingPod]:
        """The pods no node fitted that still wait, oldest first."""

    def size(self) -> int:
        """Nodes that count towards ``minNodes``/``maxNodes``: Ready (not being deleted) and launched."""


class Reason(StrEnum):
    """Why a model acts (the project's own words for it)."""

    #: Cluster Autoscaler's scale-up for pods no node fits
    SCALE_UP = "ScaleUp"
    #: Cluster Autoscaler: a node not Ready ``max-node-provision-time`` after its launch (a failed scale-up)
    SCALE_UP_TIMED_OUT = "ScaleUpTimedOut"
    #: Cluster Autoscaler's scale-down of a node unneeded for ``scale-down-unneeded-time``
    SCALE_DOWN = "ScaleDown"
    #: Karpenter's provisioner: a NodeClaim for the pods of a batch
    PROVISIONING = "Provisioning"
    #: Karpenter's Emptiness disruption method
    EMPTY = "Empty"
    #: Karpenter's single-node consolidation (delete, or replace with a cheaper node)
    UNDERUTILIZED = "Underutilized"


@dataclass(frozen=True, slots=True)
class Launch:
    """Launch a node of ``instance_type`` in ``pool``: Ready after the pool's provisioning delay."""

    pool: PoolView
    instance_type: InstanceType
    reason: Reason


@dataclass(frozen=True, slots=True)
class Delete:
    """Drain ``node`` (its pods evicted and replaced by their workloads) and remove it."""

    node: NodeView
    reason: Reason


@dataclass(frozen=True, slots=True)
class Replace:
    """Launch a node of ``instance_type`` to replace ``node``: ``node`` is drained and removed once the new one is
    Ready (Karpenter's replacement, launched before the old node goes)."""

    node: NodeView
    instance_type: InstanceType
    reason: Reason


Action = Launch | Delete | Replace


class NodeAutoscalerModel:
    """A node autoscaler model: ``next_time`` (its next loop, epoch s), ``act(pools, t)`` (run that loop: yields
    its actions), ``unschedulable(pool, t)`` (a pod found no node: the model may move ``next_time``),
    ``node_ready(pool, node, t)``, and ``initial_type`` (the instance type of the nodes a pool starts with).
    ``rng`` draws its random choices (an expander's ties)."""

    def __init__(self, settings: Any, start: float, rng: random.Random):
        self.s, self.rng = settings, rng
        self.next_time = start

    def initial_type(self, pool: PoolView, requests: PodRequests | None = None) -> InstanceType:
        """The pool's first instance type, or the first that holds a pod of ``requests``."""
        kinds = pool.spec.instance_types
        if requests is None:
            return kinds[0]
        return next(k for k in kinds if not fits(empty_node(k, pool.spec.daemon_set_overhead), requests))

    def unschedulable(self, pool: PoolView, t: float) -> None:
        """A pod of ``pool`` found no node at ``t``."""

    def node_ready(self, pool: PoolView, node: NodeView, t: float) -> None:
        """``node`` of ``pool`` turned Ready at ``t``."""

    def act(self, pools: Sequence[PoolView], t: float) -> Iterator[Action]:
        """The loop at ``t`` (``next_time``): the actions it decides, one at a time; ``next_time`` is the next loop's
        once the iterator is exhausted."""
        raise NotImplementedError


class Bin:
    """A node in a what-if: its room left (``fits`` reads these fields) and the pods placed on it."""

    __slots__ = ("cpu", "memory", "pods", "requested_cpu", "requested_memory", "pod_count", "kind", "placed")

    def __init__(self, node, kind: InstanceType | None = None):
        self.cpu, self.memory, self.pods = node.cpu, node.memory, node.pods
        self.requested_cpu, self.requested_memory, self.pod_count = (node.requested_cpu, node.requested_memory,
                                                                     node.pod_count)
        self.kind = kind
        self.placed: list[PodRequests] = []

    def add(self, r: PodRequests) -> None:
        self.requested_cpu += r.cpu
        self.requested_memory += r.memory
        self.pod_count += 1
        self.placed.append(r)

    def undo(self, r: PodRequests) -> None:
        """Take back the last ``add`` of ``r``."""
        self.requested_cpu -= r.cpu
        self.requested_memory -= r.memory
        self.pod_count -= 1
        self.placed.pop()


def move_all(node: NodeView, bins: list[tuple[NodeView, Bin]], skip: set[int]) -> bool:
    """Whether every pod of ``node`` fits, first fit, on ``bins`` (what-if copies of other nodes, as (node, bin);
    those whose node's id is in ``skip``, and ``node``'s own, left out). When they do, the bins keep them; when
    not, nothing changes."""
    placed: list[tuple[Bin, PodRequests]] = []
    for pl in node.bound.values():
        r = pl.requests
        for other, b in bins:
            if other is node or id(other) in skip or not fits_ok(b, r):
                continue
            b.add(r)
            placed.append((b, r))
            break
        else:
            for b, r in reversed(placed):
                b.undo(r)
            return False
    return True


def first_fit(pods: Iterable[PodRequests], bins: list[Bin]) -> list[PodRequests]:
    """Place each pod on the first bin it fits (``fits_ok``); returns the pods that fit none."""
    left = []
    for r in pods:
        for b in bins:
            if fits_ok(b, r):
                b.add(r)
                break
        else:
            left.append(r)
    return left
