"""The node autoscalers of a fleet: Cluster Autoscaler and Karpenter, as models of what their documentation and
source say they do, with their own settings' names and defaults (``pyhpa.fleet.spec``; the sources of each default
in docs/fleet.md).

``cluster-autoscaler`` (kubernetes/autoscaler ``cluster-autoscaler``; a node group per instance type of a pool):
every ``scan-interval`` it scales up for the pods no node fits — those that fit a node still being launched wait for
it; the rest are bin-packed first-fit onto new nodes of each instance type, pods sorted by their share of the node,
the ``expander`` choosing the type (``least-waste``: the least unused CPU and memory share), never past
``maxNodes``; a node not Ready ``max-node-provision-time`` after its launch is a failed scale-up: the node is
deleted and its node group (instance type) left out of scale-ups for a backoff
(``initial-node-group-backoff-duration``, doubled at each failure after the last backoff ended, at most
``max-node-group-backoff-duration``, forgotten ``node-group-backoff-reset-timeout`` after the last failure or once a
node of the group is Ready: ``utils/backoff/exponential_backoff.go``, ``clusterstate``) — and, in a loop where it
did not scale up, scales down: a Ready node whose requests (DaemonSet pods included) are below
``scale-down-utilization-threshold`` of its allocatable, and whose pods all fit on the other nodes, is unneeded;
once unneeded for ``scale-down-unneeded-time``, and no scale-up happened in the last ``scale-down-delay-after-add``,
it is drained and removed (at most ``max-scale-down-parallelism``, 10, nodes a loop, of which
``max-drain-parallelism``, 1, with pods), never below ``minNodes``. ``least-waste`` measures waste against
allocatable (Cluster Autoscaler's, against the node template's capacity: a fleet file gives allocatable).

``karpenter`` (kubernetes-sigs/karpenter): pods no node fits open a batch that closes ``batchIdleDuration`` after
the last such pod or ``batchMaxDuration`` after the first; then the pods that fit no node being launched are packed
onto new NodeClaims, each keeping the instance types that still hold everything packed on it, and each launched
as the cheapest of them. Its disruption loop (every 10 s, at once after it acted) considers the pool's Ready nodes
that have had no pod bound or removed for ``consolidateAfter`` (``Never``: none; ``Consolidatable``): first empty
ones are removed (Emptiness); else, with ``WhenEmptyOrUnderutilized``, the node with the fewest pods whose pods all
fit on the other nodes is removed, or replaced by one strictly cheaper node that holds its pods (single-node
consolidation: the replacement launched first, the old node drained once it is Ready). A decision is carried out
15 s later if it still holds (``commandValidationDelay``); within the ``budgets`` (at most that many of the pool's
Ready nodes disrupted at once: a percent rounded up, ``GetAllowedDisruptions``) and never below ``minNodes``.

Simplified, and said so in docs/fleet.md: draining is instant (pods are evicted and replaced at once); Cluster
Autoscaler's scale-down ignores ``scale-down-delay-after-delete``/``-failure``; Karpenter's multi-node
consolidation and drift are not modelled.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Iterable

from .scheduler import PodRequests, fits
from .spec import (
    ClusterAutoscaler,
    ConsolidationPolicy,
    Expander,
    InstanceType,
    Karpenter,
    Model,
    NodeAutoscaler,
    NodePool,
    empty_node,
)

if TYPE_CHECKING:
    from .engine import FleetNode, FleetRun, PoolState

#: Cluster Autoscaler's ``--max-scale-down-parallelism`` and ``--max-drain-parallelism`` defaults
#: (``config/flags/flags.go``)
MAX_SCALE_DOWN_PARALLELISM = 10
MAX_DRAIN_PARALLELISM = 1
#: Karpenter's disruption controller polls this often when no method acted (seconds; ``pollingPeriod`` of
#: ``pkg/controllers/disruption/controller.go``), and waits this long before it carries out a consolidation it
#: decided, validating it again then (``commandValidationDelay``, ``consolidation.go``)
DISRUPTION_POLL_SECONDS = 10.0
COMMAND_VALIDATION_DELAY = 15.0


class _Bin:
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


def move_all(node, bins: list[tuple[object, _Bin]], skip: set[int]) -> bool:
    """Whether every pod of ``node`` fits, first fit, on ``bins`` (what-if copies of other nodes, as (node, bin);
    those whose node's id is in ``skip``, and ``node``'s own, left out). When they do, the bins keep them; when
    not, nothing changes."""
    placed: list[tuple[_Bin, PodRequests]] = []
    for pl in node.bound.values():
        r = pl.requests
        for other, b in bins:
            if other is node or id(other) in skip or fits(b, r):
                continue
            b.add(r)
            placed.append((b, r))
            break
        else:
            for b, r in reversed(placed):
                b.undo(r)
            return False
    return True


def first_fit(pods: Iterable[PodRequests], bins: list[_Bin]) -> list[PodRequests]:
    """Place each pod on the first bin it fits (``fits``); returns the pods that fit none."""
    left = []
    for r in pods:
        for b in bins:
            if not fits(b, r):
                b.add(r)
                break
        else:
            left.append(r)
    return left


def _share(r: PodRequests, kind: InstanceType) -> float:
    return (r.cpu / kind.cpu if kind.cpu else 0.0) + (r.memory / kind.memory if kind.memory else 0.0)


def binpack(pods: list[PodRequests], pool: NodePool, kind: InstanceType, limit: int) -> list[_Bin]:
    """Cluster Autoscaler's binpacking estimate: ``pods`` sorted by their share of a ``kind`` node, largest
    first, placed first-fit on new empty nodes of ``kind`` (DaemonSet overhead requested), at most ``limit``
    nodes; the new nodes with what they hold."""
    bins: list[_Bin] = []
    for r in sorted(pods, key=lambda r: _share(r, kind), reverse=True):
        if first_fit([r], bins):
            if len(bins) >= limit:
                continue
            b = _Bin(empty_node(kind, pool.daemon_set_overhead), kind)
            if fits(b, r):
                continue
            b.add(r)
            bins.append(b)
    return bins


def budget_nodes(text: str, nodes: int) -> int:
    """A Karpenter disruption budget's ``nodes`` (``"10%"`` or ``"3"``) as a count of a pool of ``nodes`` nodes:
    a percent rounded up."""
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * nodes / 100)
    return int(text)


class NodeAutoscalerModel:
    """What the fleet asks of a node autoscaler: ``next_time`` (its next loop, epoch s), ``act(t)`` (run it),
    ``unschedulable(pool, t)`` (a pod found no node), ``node_ready(node, t)``, and ``initial_type`` (the
    instance type of the nodes a pool starts with)."""

    def __init__(self, fleet: FleetRun, rng: random.Random):
        self.fleet, self.rng = fleet, rng
        self.next_time = fleet.start

    def initial_type(self, pool: PoolState, requests: PodRequests | None = None) -> InstanceType:
        kinds = pool.spec.instance_types
        if requests is None:
            return kinds[0]
        return next(k for k in kinds if not fits(empty_node(k, pool.spec.daemon_set_overhead), requests))

    def unschedulable(self, pool: PoolState, t: float) -> None:
        pass

    def node_ready(self, node: FleetNode, t: float) -> None:
        pass

    def act(self, t: float) -> None:
        raise NotImplementedError


class ClusterAutoscalerModel(NodeAutoscalerModel):
    """Cluster Autoscaler (``NodeAutoscalerModel``) with its flags (``ClusterAutoscaler``)."""

    def __init__(self, settings: ClusterAutoscaler, fleet: FleetRun, rng: random.Random):
        super().__init__(fleet, rng)
        self.s = settings
        self.last_scale_up = -math.inf
        self._unneeded: dict[int, tuple[int, list[FleetNode]]] = {}  # pool index -> (its version, unneeded nodes)
        #: (pool index, instance type) -> (backoff duration, backed off until, last failure), epoch s
        self.backoff: dict[tuple[int, str], tuple[float, float, float]] = {}

    def act(self, t: float) -> None:
        scaled = False
        for pool in self.fleet.pools.values():
            self._time_out(pool, t)
            scaled |= self._scale_up(pool, t)
        if scaled:
            self.last_scale_up = t
        else:
            for pool in self.fleet.pools.values():
                self._scale_down(pool, t)
        self.next_time = t + self.s.scan_interval

    def _time_out(self, pool: PoolState, t: float) -> None:
        """Nodes launched ``max-node-provision-time`` ago or more and not Ready: each a failed scale-up (a
        ``ScaleUpTimedOut`` event), deleted, its node group backed off."""
        late = [n for n in pool.upcoming if t - n.launched >= self.s.max_node_provision_time]
        for node in late:
            self.fleet.events.append((t, "ScaleUpTimedOut", pool.spec.name, node.name,
                                      f"not Ready {t - node.launched:g} s after its launch"))
            self.fleet.delete_node(node, t)
            self._back_off((pool.index, node.instance_type), t)

    def _back_off(self, key: tuple[int, str], t: float) -> None:
        """Cluster Autoscaler's exponentialBackoff.Backoff: the initial duration, or the last one (doubled, at most
        the maximum, when that backoff has ended); data older than the reset timeout is forgotten first
        (RemoveStaleBackoffData)."""
        duration = self.s.initial_node_group_backoff_duration
        seen = self.backoff.get(key)
        if seen is not None and seen[2] + self.s.node_group_backoff_reset_timeout >= t:
            duration = seen[0]
            if seen[1] < t:
                duration = min(2 * seen[0], self.s.max_node_group_backoff_duration)
        self.backoff[key] = (duration, t + duration, t)

    def node_ready(self, node: FleetNode, t: float) -> None:
        """A node of the group registered: its backoff is removed (a scale-up that succeeded)."""
        self.backoff.pop((self.fleet.pools[node.pool].index, node.instance_type), None)

    def _scale_up(self, pool: PoolState, t: float) -> bool:
        waiting = pool.waiting()
        if not waiting:
            return False
        upcoming = [_Bin(n) for n in pool.upcoming]
        left = first_fit((pl.requests for pl in waiting), upcoming)
        room = pool.spec.max_nodes - pool.size()
        if not left or room <= 0:
            return False
        options = []
        for kind in pool.spec.instance_types:
            held = self.backoff.get((pool.index, kind.name))
            if held is not None and held[1] > t:  # IsBackedOff
                continue
            bins = binpack(left, pool.spec, kind, room)
            if bins:
                options.append((kind, bins))
        if not options:
            return False
        kind, bins = self._expand(options)
        for _ in bins:
            self.fleet.launch(pool, kind, t)
        return True

    def _expand(self, options: list[tuple[InstanceType, list[_Bin]]]) -> tuple[InstanceType, list[_Bin]]:
        """The ``expander``'s choice among the node groups' options (ties at random, as its fallback)."""
        e = self.s.expander
        if e == Expander.RANDOM or len(options) == 1:
            return options[self.rng.randrange(len(options))] if len(options) > 1 else options[0]
        if e == Expander.MOST_PODS:
            key = [-sum(len(b.placed) for b in bins) for _, bins in options]
        elif e == Expander.PRICE:
            key = [kind.price_per_hour * len(bins) / max(sum(len(b.placed) for b in bins), 1) for kind, bins in options]
        else:  # least-waste: unused CPU share plus unused memory share of the new nodes
            key = []
            for kind, bins in options:
                cpu = sum(r.cpu for b in bins for r in b.placed)
                memory = sum(r.memory for b in bins for r in b.placed)
                key.append((1 - cpu / (kind.cpu * len(bins)) if kind.cpu else 0.0)
                           + (1 - memory / (kind.memory * len(bins)) if kind.memory else 0.0))
        best = min(key)
        top = [o for o, k in zip(options, key) if k == best]
        return top[self.rng.randrange(len(top))] if len(top) > 1 else top[0]

    def _scale_down(self, pool: PoolState, t: float) -> None:
        """Mark unneeded nodes (all of them removable together), then remove those unneeded long enough. The marks
        are simulated again only when the pool changed since the last loop (``PoolState.version``)."""
        seen = self._unneeded.get(pool.index)
        if seen is not None and seen[0] == pool.version:
            unneeded = seen[1]
        else:
            unneeded = self._mark_unneeded(pool, t)
            self._unneeded[pool.index] = (pool.version, unneeded)
        if t < self.last_scale_up + self.s.scale_down_delay_after_add:
            return
        removable = pool.size() - pool.spec.min_nodes
        due = [n for n in unneeded if t - n.unneeded_since >= self.s.scale_down_unneeded_time]
        busy = [n for n in due if n.bound][:MAX_DRAIN_PARALLELISM]
        chosen = ([n for n in due if not n.bound] + busy)[:MAX_SCALE_DOWN_PARALLELISM]
        for node in chosen[:max(removable, 0)]:
            self.fleet.delete_node(node, t)

    def _mark_unneeded(self, pool: PoolState, t: float) -> list[FleetNode]:
        """The pool's unneeded nodes now (``unneeded_since`` set on each, cleared on the others): below the
        threshold, lowest first, each whose pods fit on the nodes not already chosen (with the pods moved there
        before)."""
        nodes = sorted(pool.nodes, key=lambda n: n.utilization())
        bins = [(n, _Bin(n)) for n in pool.nodes]
        unneeded: list[FleetNode] = []
        chosen: set[int] = set()
        for node in nodes:
            if node.utilization() >= self.s.scale_down_utilization_threshold:
                node.unneeded_since = None
                continue
            if move_all(node, bins, chosen):
                if node.unneeded_since is None:
                    node.unneeded_since = t
                unneeded.append(node)
                chosen.add(id(node))
            else:
                node.unneeded_since = None
        return unneeded


class KarpenterModel(NodeAutoscalerModel):
    """Karpenter (``NodeAutoscalerModel``) with its settings and NodePool disruption (``Karpenter``)."""

    def __init__(self, settings: Karpenter, fleet: FleetRun, rng: random.Random):
        super().__init__(fleet, rng)
        self.s = settings
        self.batch_first: float | None = None
        self.batch_last = 0.0
        self.next_disruption = fleet.start
        self.next_time = fleet.start
        #: a consolidation decided and waiting for its validation: (pool, nodes to remove, cheaper instance type)
        self.command: tuple | None = None
        #: pool index -> (its version, when a node next turns consolidatable) of a poll that decided nothing
        self._idle: dict[int, tuple[int, float]] = {}

    def initial_type(self, pool: PoolState, requests: PodRequests | None = None) -> InstanceType:
        kinds = pool.spec.instance_types
        if requests is None:
            return min(kinds, key=lambda k: k.price_per_hour)
        fitting = [k for k in kinds if not fits(empty_node(k, pool.spec.daemon_set_overhead), requests)]
        return min(fitting, key=lambda k: k.price_per_hour)

    def _batch_end(self) -> float:
        if self.batch_first is None:
            return math.inf
        return min(self.batch_last + self.s.batch_idle_duration, self.batch_first + self.s.batch_max_duration)

    def _schedule(self) -> None:
        """Move the next loop to the batch's end or the next disruption poll, whichever comes first, and tell the
        fleet (its clock runs a loop only at the latest ``next_time``: a batch's end moves later with each pod)."""
        was = self.next_time
        self.next_time = min(self._batch_end(), self.next_disruption)
        if self.next_time != was:
            self.fleet.autoscaler_wakes()

    def unschedulable(self, pool: PoolState, t: float) -> None:
        if self.batch_first is None:
            self.batch_first = t
        self.batch_last = t
        self._schedule()

    def act(self, t: float) -> None:
        if t >= self._batch_end():
            self.batch_first = None
            for pool in self.fleet.pools.values():
                self._provision(pool, t)
        if t >= self.next_disruption:
            self.next_disruption = t + DISRUPTION_POLL_SECONDS
            if self.command is not None:
                command, self.command = self.command, None
                if self._carry_out(command, t):
                    self.next_disruption = t
            else:
                for pool in self.fleet.pools.values():
                    self.command = self._decide(pool, t)
                    if self.command is not None:
                        self.next_disruption = t + COMMAND_VALIDATION_DELAY
                        break
        self.next_time = min(self._batch_end(), self.next_disruption)

    def _provision(self, pool: PoolState, t: float) -> None:
        waiting = pool.waiting()
        if not waiting:
            return
        upcoming = [_Bin(n) for n in pool.upcoming]
        left = first_fit((pl.requests for pl in waiting), upcoming)
        claims = self.pack(left, pool.spec, pool.spec.max_nodes - pool.size())
        for kinds, _ in claims:
            self.fleet.launch(pool, min(kinds, key=lambda k: k.price_per_hour), t)

    @staticmethod
    def pack(pods: list[PodRequests], pool: NodePool, limit: int) -> list[tuple[list[InstanceType], _Bin]]:
        """Karpenter's scheduler for new NodeClaims: pods by CPU then memory, largest first, each added to the
        first claim that some of its instance types still hold with it, else a new claim of the types that hold it
        alone (at most ``limit`` claims); each claim with the instance types left and what it holds."""
        over = pool.daemon_set_overhead
        claims: list[tuple[list[InstanceType], _Bin]] = []
        for r in sorted(pods, key=lambda r: (r.cpu, r.memory), reverse=True):
            for i, (kinds, b) in enumerate(claims):
                still = [k for k in kinds if _holds(k, over, b, r)]
                if still:
                    b.add(r)
                    claims[i] = (still, b)
                    break
            else:
                if len(claims) >= limit:
                    continue
                kinds = [k for k in pool.instance_types if not fits(empty_node(k, over), r)]
                if not kinds:
                    continue
                b = _Bin(empty_node(kinds[0], over))
                b.cpu = b.memory = b.pods = math.inf  # the claim's room is its types'
                b.add(r)
                claims.append((kinds, b))
        return claims

    def _candidates(self, pool: PoolState, t: float) -> tuple[list[FleetNode], int]:
        """The pool's consolidatable nodes, and how many may be disrupted now (budgets, minNodes)."""
        after = self.s.consolidate_after
        if math.isinf(after):
            return [], 0
        disrupting = sum(1 for n in pool.nodes if n.replaced_by is not None)
        allowed = min(budget_nodes(b.nodes, len(pool.nodes)) for b in self.s.budgets) - disrupting
        allowed = min(allowed, pool.size() - pool.spec.min_nodes - disrupting)
        candidates = [n for n in pool.nodes if n.replaced_by is None and t - n.last_pod_event >= after]
        return candidates, allowed

    def _decide(self, pool: PoolState, t: float) -> tuple | None:
        """One disruption method's decision (Emptiness, then single-node consolidation), or None. A pool that has
        not changed (``PoolState.version``) since a poll that decided nothing, and where no node has turned
        consolidatable since, decides nothing again."""
        idle = self._idle.get(pool.index)
        if idle is not None and idle[0] == pool.version and t < idle[1]:
            return None
        decision = self._decide_now(pool, t)
        if decision is None:
            after = self.s.consolidate_after
            later = [n.last_pod_event + after for n in pool.nodes if t - n.last_pod_event < after]
            self._idle[pool.index] = (pool.version, min(later, default=math.inf))
        return decision

    def _decide_now(self, pool: PoolState, t: float) -> tuple | None:
        candidates, allowed = self._candidates(pool, t)
        if allowed <= 0 or not candidates:
            return None
        empty = [n for n in candidates if not n.bound]
        if empty:
            return pool, empty[:allowed], None
        if self.s.consolidation_policy != ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED:
            return None
        bins = [(n, _Bin(n)) for n in pool.nodes if n.replaced_by is None]
        for node in sorted(candidates, key=lambda n: (len(n.bound), n.launched)):
            if move_all(node, bins, set()):
                return pool, [node], None
            cheaper = self._replacement(node, pool.spec)
            if cheaper is not None:
                return pool, [node], cheaper
        return None

    def _carry_out(self, command: tuple, t: float) -> bool:
        """Validate a decision again (each node still consolidatable and within the budget; a deletion's pods
        still fit elsewhere, a replacement still cheaper) and carry it out; False when it no longer holds."""
        pool, nodes, cheaper = command
        candidates, allowed = self._candidates(pool, t)
        nodes = [n for n in nodes if n in candidates][:max(allowed, 0)]
        if not nodes:
            return False
        if cheaper is None:
            if any(n.bound for n in nodes):
                bins = [(n, _Bin(n)) for n in pool.nodes if n.replaced_by is None]
                if not move_all(nodes[0], bins, set()):
                    return False
            for node in nodes:
                self.fleet.delete_node(node, t)
            return True
        node = nodes[0]
        if self._replacement(node, pool.spec) is None:
            return False
        new = self.fleet.launch(pool, cheaper, t)
        new.replaces, node.replaced_by = node, new
        return True

    @staticmethod
    def _replacement(node: FleetNode, pool: NodePool) -> InstanceType | None:
        """The cheapest instance type cheaper than ``node``'s whose one node holds all of ``node``'s pods."""
        pods = [pl.requests for pl in node.bound.values()]
        best = None
        for kind in pool.instance_types:
            if kind.price_per_hour >= node.price or (best is not None and kind.price_per_hour >= best.price_per_hour):
                continue
            b = _Bin(empty_node(kind, pool.daemon_set_overhead))
            if not first_fit(pods, [b]):
                best = kind
        return best

    def node_ready(self, node: FleetNode, t: float) -> None:
        old = node.replaces
        if old is not None and not old.deleting:
            self.fleet.delete_node(old, t)


def _holds(kind: InstanceType, over, b: _Bin, r: PodRequests) -> bool:
    """Whether one node of ``kind`` holds what claim ``b`` holds plus ``r`` (NodeResourcesFit's rule)."""
    return (b.pod_count + 1 <= kind.pods and b.requested_cpu + r.cpu <= kind.cpu
            and b.requested_memory + r.memory <= kind.memory)


def make_autoscaler(spec: NodeAutoscaler, fleet: FleetRun, rng: random.Random) -> NodeAutoscalerModel:
    """The model ``spec.model`` with its settings."""
    if spec.model == Model.KARPENTER:
        return KarpenterModel(spec.karpenter, fleet, rng)
    return ClusterAutoscalerModel(spec.cluster_autoscaler, fleet, rng)
