"""Cluster Autoscaler (kubernetes/autoscaler ``cluster-autoscaler``) as a model of what its documentation and source
say it does, with its flags' names and defaults (``pyhpa.fleet.spec.ClusterAutoscaler``; the source of each default
in docs/fleet.md). A node group per instance type of a pool.

Every ``scan-interval`` it scales up for the pods no node fits — those that fit a node still being launched wait for
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

Simplified, and said so in docs/fleet.md: draining is instant (the engine evicts and replaces pods at once);
``scale-down-delay-after-delete``/``-failure`` are not modelled.
"""

from __future__ import annotations

import math
import random
from typing import Iterator, Sequence

from ..scheduler import PodRequests, fits
from ..spec import ClusterAutoscaler, Expander, InstanceType, NodePool, empty_node
from .base import Action, Bin, Delete, Launch, NodeAutoscalerModel, NodeView, PoolView, Reason, first_fit, move_all

#: Cluster Autoscaler's ``--max-scale-down-parallelism`` and ``--max-drain-parallelism`` defaults
#: (``config/flags/flags.go``)
MAX_SCALE_DOWN_PARALLELISM = 10
MAX_DRAIN_PARALLELISM = 1


def _share(r: PodRequests, kind: InstanceType) -> float:
    return (r.cpu / kind.cpu if kind.cpu else 0.0) + (r.memory / kind.memory if kind.memory else 0.0)


def binpack(pods: list[PodRequests], pool: NodePool, kind: InstanceType, limit: int) -> list[Bin]:
    """Cluster Autoscaler's binpacking estimate: ``pods`` sorted by their share of a ``kind`` node, largest
    first, placed first-fit on new empty nodes of ``kind`` (DaemonSet overhead requested), at most ``limit``
    nodes; the new nodes with what they hold."""
    bins: list[Bin] = []
    for r in sorted(pods, key=lambda r: _share(r, kind), reverse=True):
        if first_fit([r], bins):
            if len(bins) >= limit:
                continue
            b = Bin(empty_node(kind, pool.daemon_set_overhead), kind)
            if fits(b, r):
                continue
            b.add(r)
            bins.append(b)
    return bins


class ClusterAutoscalerModel(NodeAutoscalerModel):
    """Cluster Autoscaler (``NodeAutoscalerModel``) with its flags (``ClusterAutoscaler``)."""

    s: ClusterAutoscaler

    def __init__(self, settings: ClusterAutoscaler, start: float, rng: random.Random):
        super().__init__(settings, start, rng)
        self.last_scale_up = -math.inf
        #: pool index -> (its version, its unneeded nodes) of the last scale-down simulation
        self._unneeded: dict[int, tuple[int, list[NodeView]]] = {}
        #: when each node was first found unneeded (the node's name; absent: needed)
        self.unneeded_since: dict[str, float] = {}
        #: (pool index, instance type) -> (backoff duration, backed off until, last failure), epoch s
        self.backoff: dict[tuple[int, str], tuple[float, float, float]] = {}

    def act(self, pools: Sequence[PoolView], t: float) -> Iterator[Action]:
        scaled = False
        for pool in pools:
            yield from self._time_out(pool, t)
            launches = self._scale_up(pool, t)
            scaled |= bool(launches)
            yield from launches
        if scaled:
            self.last_scale_up = t
        else:
            for pool in pools:
                yield from self._scale_down(pool, t)
        self.next_time = t + self.s.scan_interval

    def _time_out(self, pool: PoolView, t: float) -> Iterator[Action]:
        """Nodes launched ``max-node-provision-time`` ago or more and not Ready: each a failed scale-up, deleted,
        its node group backed off."""
        late = [n for n in pool.upcoming if t - n.launched >= self.s.max_node_provision_time]
        for node in late:
            yield Delete(node, Reason.SCALE_UP_TIMED_OUT)
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

    def node_ready(self, pool: PoolView, node: NodeView, t: float) -> None:
        """A node of the group registered: its backoff is removed (a scale-up that succeeded)."""
        self.backoff.pop((pool.index, node.instance_type), None)

    def _scale_up(self, pool: PoolView, t: float) -> list[Launch]:
        waiting = pool.waiting()
        if not waiting:
            return []
        upcoming = [Bin(n) for n in pool.upcoming]
        left = first_fit((pl.requests for pl in waiting), upcoming)
        room = pool.spec.max_nodes - pool.size()
        if not left or room <= 0:
            return []
        options = []
        for kind in pool.spec.instance_types:
            held = self.backoff.get((pool.index, kind.name))
            if held is not None and held[1] > t:  # IsBackedOff
                continue
            bins = binpack(left, pool.spec, kind, room)
            if bins:
                options.append((kind, bins))
        if not options:
            return []
        kind, bins = self._expand(options)
        return [Launch(pool, kind, Reason.SCALE_UP) for _ in bins]

    def _expand(self, options: list[tuple[InstanceType, list[Bin]]]) -> tuple[InstanceType, list[Bin]]:
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

    def _scale_down(self, pool: PoolView, t: float) -> list[Delete]:
        """Mark unneeded nodes (all of them removable together), then remove those unneeded long enough. The marks
        are simulated again only when the pool changed since the last loop (``PoolView.version``)."""
        seen = self._unneeded.get(pool.index)
        if seen is not None and seen[0] == pool.version:
            unneeded = seen[1]
        else:
            unneeded = self._mark_unneeded(pool, t)
            self._unneeded[pool.index] = (pool.version, unneeded)
        if t < self.last_scale_up + self.s.scale_down_delay_after_add:
            return []
        removable = pool.size() - pool.spec.min_nodes
        if removable <= 0:  # at minNodes: nothing to remove (and no need to visit every node of a large floor)
            return []
        since = self.unneeded_since
        due = [n for n in unneeded if t - since[n.name] >= self.s.scale_down_unneeded_time]
        busy = [n for n in due if n.bound][:MAX_DRAIN_PARALLELISM]
        chosen = ([n for n in due if not n.bound] + busy)[:MAX_SCALE_DOWN_PARALLELISM]
        return [Delete(node, Reason.SCALE_DOWN) for node in chosen[:removable]]

    def _mark_unneeded(self, pool: PoolView, t: float) -> list[NodeView]:
        """The pool's unneeded nodes now (``unneeded_since`` kept for each, dropped for the others): below the
        threshold, lowest first, each whose pods fit on the nodes not already chosen (with the pods moved there
        before)."""
        nodes = sorted(pool.nodes, key=lambda n: n.utilization())
        bins = [(n, Bin(n)) for n in pool.nodes]
        unneeded: list[NodeView] = []
        chosen: set[int] = set()
        since = self.unneeded_since
        for node in nodes:
            if node.utilization() >= self.s.scale_down_utilization_threshold:
                since.pop(node.name, None)
                continue
            if move_all(node, bins, chosen):
                since.setdefault(node.name, t)
                unneeded.append(node)
                chosen.add(id(node))
            else:
                since.pop(node.name, None)
        return unneeded
