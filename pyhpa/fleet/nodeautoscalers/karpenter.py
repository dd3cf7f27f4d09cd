"""Karpenter (kubernetes-sigs/karpenter) as a model of what its documentation and source say it does, with its
settings' and NodePool fields' names and defaults (``pyhpa.fleet.spec.Karpenter``; the source of each default in
docs/fleet.md).

Pods no node fits open a batch that closes ``batchIdleDuration`` after the last such pod or ``batchMaxDuration``
after the first; then the pods that fit no node being launched are packed onto new NodeClaims, each keeping the
instance types that still hold everything packed on it, and each launched as the cheapest of them. Its disruption
loop (every 10 s, at once after it acted) considers the pool's Ready nodes that have had no pod bound or removed for
``consolidateAfter`` (``Never``: none; ``Consolidatable``): first empty ones are removed (Emptiness); else, with
``WhenEmptyOrUnderutilized``, the node with the fewest pods whose pods all fit on the other nodes is removed, or
replaced by one strictly cheaper node that holds its pods (single-node consolidation: a ``Replace``, the
replacement launched first and the old node drained once it is Ready). A decision is carried out 15 s later if it
still holds (``commandValidationDelay``); within the ``budgets`` (at most that many of the pool's Ready nodes
disrupted at once: a percent rounded up, ``GetAllowedDisruptions``) and never below ``minNodes``.

Simplified, and said so in docs/fleet.md: draining is instant; multi-node consolidation, drift and expiry are not
modelled.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Iterator, Sequence

from ..scheduler import PodRequests, fits
from ..spec import ConsolidationPolicy, InstanceType, Karpenter, NodePool, empty_node
from .base import (
    Action,
    Bin,
    Delete,
    Launch,
    NodeAutoscalerModel,
    NodeView,
    PoolView,
    Reason,
    Replace,
    first_fit,
    move_all,
)

#: Karpenter's disruption controller polls this often when no method acted (seconds; ``pollingPeriod`` of
#: ``pkg/controllers/disruption/controller.go``), and waits this long before it carries out a consolidation it
#: decided, validating it again then (``commandValidationDelay``, ``consolidation.go``)
DISRUPTION_POLL_SECONDS = 10.0
COMMAND_VALIDATION_DELAY = 15.0


def budget_nodes(text: str, nodes: int) -> int:
    """A Karpenter disruption budget's ``nodes`` (``"10%"`` or ``"3"``) as a count of a pool of ``nodes`` nodes:
    a percent rounded up."""
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * nodes / 100)
    return int(text)


@dataclass(frozen=True, slots=True)
class Command:
    """A disruption decided and waiting for its validation (``pkg/controllers/disruption`` ``Command``): the
    ``nodes`` to remove (each with its pool; Emptiness takes the empty nodes of every pool, each pool within its
    budget), or the one to replace with a node of ``replacement``; the method that decided it (``reason``)."""

    nodes: tuple[tuple[PoolView, NodeView], ...]
    replacement: InstanceType | None
    reason: Reason


def _holds(kind: InstanceType, over, b: Bin, r: PodRequests) -> bool:
    """Whether one node of ``kind`` holds what claim ``b`` holds plus ``r`` (NodeResourcesFit's rule)."""
    return (b.pod_count + 1 <= kind.pods and b.requested_cpu + r.cpu <= kind.cpu
            and b.requested_memory + r.memory <= kind.memory)


class KarpenterModel(NodeAutoscalerModel):
    """Karpenter (``NodeAutoscalerModel``) with its settings and NodePool disruption (``Karpenter``)."""

    s: Karpenter

    def __init__(self, settings: Karpenter, start: float, rng: random.Random):
        super().__init__(settings, start, rng)
        self.batch_first: float | None = None
        self.batch_last = 0.0
        self.next_disruption = start
        #: a consolidation decided and waiting for its validation
        self.command: Command | None = None
        #: pool index -> (its version, when a node next turns consolidatable) of a poll that decided nothing
        self._idle: dict[int, tuple[int, float]] = {}

    def initial_type(self, pool: PoolView, requests: PodRequests | None = None) -> InstanceType:
        """The pool's cheapest instance type (that holds a pod of ``requests``)."""
        kinds = pool.spec.instance_types
        if requests is None:
            return min(kinds, key=lambda k: k.price_per_hour)
        fitting = [k for k in kinds if not fits(empty_node(k, pool.spec.daemon_set_overhead), requests)]
        return min(fitting, key=lambda k: k.price_per_hour)

    def _batch_end(self) -> float:
        if self.batch_first is None:
            return math.inf
        return min(self.batch_last + self.s.batch_idle_duration, self.batch_first + self.s.batch_max_duration)

    def unschedulable(self, pool: PoolView, t: float) -> None:
        """A pending pod: the batch opens (or its idle timer restarts); ``next_time`` moves to the batch's end or the
        next disruption poll, whichever comes first."""
        if self.batch_first is None:
            self.batch_first = t
        self.batch_last = t
        self.next_time = min(self._batch_end(), self.next_disruption)

    def act(self, pools: Sequence[PoolView], t: float) -> Iterator[Action]:
        if t >= self._batch_end():
            self.batch_first = None
            for pool in pools:
                yield from self._provision(pool)
        if t >= self.next_disruption:
            self.next_disruption = t + DISRUPTION_POLL_SECONDS
            if self.command is not None:
                command, self.command = self.command, None
                actions = self._validate(command, t)
                if actions:
                    self.next_disruption = t
                    yield from actions
            else:
                self.command = self._decide(pools, t)
                if self.command is not None:
                    self.next_disruption = t + COMMAND_VALIDATION_DELAY
        self.next_time = min(self._batch_end(), self.next_disruption)

    def _provision(self, pool: PoolView) -> list[Launch]:
        waiting = pool.waiting()
        if not waiting:
            return []
        upcoming = [Bin(n) for n in pool.upcoming]
        left = first_fit((pl.requests for pl in waiting), upcoming)
        claims = self.pack(left, pool.spec, pool.spec.max_nodes - pool.size())
        return [Launch(pool, min(kinds, key=lambda k: k.price_per_hour), Reason.PROVISIONING) for kinds, _ in claims]

    @staticmethod
    def pack(pods: list[PodRequests], pool: NodePool, limit: int) -> list[tuple[list[InstanceType], Bin]]:
        """Karpenter's scheduler for new NodeClaims: pods by CPU then memory, largest first, each added to the
        first claim that some of its instance types still hold with it, else a new claim of the types that hold it
        alone (at most ``limit`` claims); each claim with the instance types left and what it holds."""
        over = pool.daemon_set_overhead
        claims: list[tuple[list[InstanceType], Bin]] = []
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
                b = Bin(empty_node(kinds[0], over))
                b.cpu = b.memory = b.pods = math.inf  # the claim's room is its types'
                b.add(r)
                claims.append((kinds, b))
        return claims

    def _candidates(self, pool: PoolView, t: float) -> tuple[list[NodeView], int]:
        """The pool's consolidatable nodes, and how many may be disrupted now (budgets, minNodes)."""
        after = self.s.consolidate_after
        if math.isinf(after):
            return [], 0
        disrupting = sum(1 for n in pool.nodes if n.replaced_by is not None)
        allowed = min(budget_nodes(b.nodes, len(pool.nodes)) for b in self.s.budgets) - disrupting
        allowed = min(allowed, pool.size() - pool.spec.min_nodes - disrupting)
        candidates = [n for n in pool.nodes if n.replaced_by is None and t - n.last_pod_event >= after]
        return candidates, allowed

    def _decide(self, pools: Sequence[PoolView], t: float) -> Command | None:
        """One disruption method's decision over every pool's candidates, as Karpenter's disruption controller takes
        the candidates of all NodePools to each method in turn: Emptiness (the empty candidates of every pool, each
        pool within its budget), then single-node consolidation (the candidates of all pools ranked together, fewest
        pods first, then the oldest: the first whose pods fit on the other nodes of its pool is removed, or replaced
        by a cheaper node); None when neither acts. A pool that has not changed (``PoolView.version``) since a poll
        that decided nothing, and where no node has turned consolidatable since, has nothing to offer again."""
        offered = []
        for pool in pools:
            idle = self._idle.get(pool.index)
            if idle is not None and idle[0] == pool.version and t < idle[1]:
                continue
            candidates, allowed = self._candidates(pool, t)
            offered.append((pool, candidates if allowed > 0 else [], allowed))
        empty = tuple((pool, n) for pool, candidates, allowed in offered
                      for n in [n for n in candidates if not n.bound][:allowed])
        if empty:
            return Command(empty, None, Reason.EMPTY)
        decision = None
        if self.s.consolidation_policy == ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED:
            decision = self._single_node(offered)
        if decision is None:
            after = self.s.consolidate_after
            for pool, _, _ in offered:
                later = [n.last_pod_event + after for n in pool.nodes if t - n.last_pod_event < after]
                self._idle[pool.index] = (pool.version, min(later, default=math.inf))
        return decision

    def _single_node(self, offered: list[tuple[PoolView, list[NodeView], int]]) -> Command | None:
        """Single-node consolidation over every pool's candidates ranked together (fewest pods, then the oldest):
        the first whose pods all fit on the other nodes of its pool (removed), or that one strictly cheaper node
        holds (replaced)."""
        ranked = sorted(((pool, n) for pool, candidates, _ in offered for n in candidates),
                        key=lambda pn: (len(pn[1].bound), pn[1].launched))
        bins: dict[int, list] = {}
        for pool, node in ranked:
            if pool.index not in bins:
                bins[pool.index] = [(n, Bin(n)) for n in pool.nodes if n.replaced_by is None]
            if move_all(node, bins[pool.index], set()):
                return Command(((pool, node),), None, Reason.UNDERUTILIZED)
            cheaper = self._replacement(node, pool.spec)
            if cheaper is not None:
                return Command(((pool, node),), cheaper, Reason.UNDERUTILIZED)
        return None

    def _validate(self, command: Command, t: float) -> list[Action]:
        """Validate a decision again (each node still consolidatable and within its pool's budget; a deletion's pods
        still fit elsewhere, a replacement still cheaper): its actions, or none when it no longer holds."""
        nodes: list[tuple[PoolView, NodeView]] = []
        by_pool: dict[int, list] = {}
        for pool, node in command.nodes:
            by_pool.setdefault(pool.index, [pool, []])[1].append(node)
        for pool, chosen in by_pool.values():
            candidates, allowed = self._candidates(pool, t)
            nodes += [(pool, n) for n in [n for n in chosen if n in candidates][:max(allowed, 0)]]
        if not nodes:
            return []
        if command.replacement is None:
            if any(n.bound for _, n in nodes):
                pool, first = nodes[0]
                bins = [(n, Bin(n)) for n in pool.nodes if n.replaced_by is None]
                if not move_all(first, bins, set()):
                    return []
            return [Delete(node, command.reason) for _, node in nodes]
        pool, node = nodes[0]
        if self._replacement(node, pool.spec) is None:
            return []
        return [Replace(node, command.replacement, command.reason)]

    @staticmethod
    def _replacement(node: NodeView, pool: NodePool) -> InstanceType | None:
        """The cheapest instance type cheaper than ``node``'s whose one node holds all of ``node``'s pods."""
        pods = [pl.requests for pl in node.bound.values()]
        best = None
        for kind in pool.instance_types:
            if kind.price_per_hour >= node.price or (best is not None and kind.price_per_hour >= best.price_per_hour):
                continue
            b = Bin(empty_node(kind, pool.daemon_set_overhead))
            if not first_fit(pods, [b]):
                best = kind
        return best
