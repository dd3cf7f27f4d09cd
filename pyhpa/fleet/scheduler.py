"""Placing a fleet's pods on its nodes as kube-scheduler v1.37.2's default profile does by resources: the
NodeResourcesFit plugin's Filter and its Score (``LeastAllocated``, the default profile's, or ``MostAllocated``;
cpu and memory, weight 1 each), the best score winning and ties broken at random, over the nodes that
``numFeasibleNodesToFind`` says to look at.

A port, as the quantity and selector parsing are: ``tests/test_upstream_decide.py`` checks ``pod_requests``,
``fits`` and ``score`` against upstream's own plugin (k8s.io/kubernetes v1.37.2
``pkg/scheduler/framework/plugins/noderesources``, called from Go by ``hpa-decide --sched-fit``) on random pods and
nodes. What it follows, by upstream name:

- ``pod_requests``: component-helpers ``resource.PodRequests`` (containers summed; an init container's requests
  are a floor, restartable ones — sidecars — add; pod-level ``resources.requests`` replace cpu and memory; pod
  ``overhead`` adds), and with ``NonMissingContainerRequests`` (a container with no cpu request counts 100m, no
  memory request 200Mi: ``schedutil.DefaultMilliCPURequest``/``DefaultMemoryRequest``) for scores, as
  ``PodInfo.CalculateResource`` counts a node's pods and the Fit scorer the pod being placed (without its pod-level
  requests: v1.37.2's ``NewFit`` does not pass that feature to its scorer).
- ``fits``: ``fitsRequest`` — the node's pod count below its allocatable ``pods``, and each requested resource
  within allocatable minus what the node's pods request; reasons ``Too many pods``, ``Insufficient cpu``,
  ``Insufficient memory``.
- ``score``: ``leastRequestedScore``/``mostRequestedScore`` over the node's non-zero requests plus the pod's,
  averaged with the weights (``leastResourceScorer``, ``mostResourceScorer``); integer arithmetic as Go's.
- ``Placer.place``: ``schedulePod``: ``numFeasibleNodesToFind`` (all nodes below 100; else ``50 - nodes/125``
  percent, at least 5 % and 100 nodes), searched from where the last search stopped (``nextStartNodeIndex``), then
  the highest score, ties at random (``SortedScoredNodes``' randomizer). The tests of the placement itself:
  ``tests/test_fleet_scheduler.py``.

Not modelled: the default profile's other plugins (BalancedAllocation, PodTopologySpread's system defaults,
TaintToleration, ImageLocality, ...): a fleet's nodes have no taints or images and one zone, and only
NodeResourcesFit's score is summed. Upstream filters nodes in parallel, so which nodes it finds first when more than
``numFeasibleNodesToFind`` fit is not fixed; here they are searched in order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Iterable

from ..adapters.parse import quantity

MAX_NODE_SCORE = 100  # fwk.MaxNodeScore
DEFAULT_MILLI_CPU_REQUEST = 100  # schedutil.DefaultMilliCPURequest: a container without a cpu request, for scores
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest (200Mi)
MIN_FEASIBLE_NODES_TO_FIND = 100  # schedule_one.go minFeasibleNodesToFind
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5  # minFeasibleNodesPercentageToFind
DEFAULT_MAX_PODS = 110  # the kubelet's --max-pods default: a node's allocatable pods
RESOURCES = ("cpu", "memory")


class ScoringStrategy(StrEnum):
    """kube-scheduler's NodeResourcesFit scoring (``NodeResourcesFitArgs.scoringStrategy.type``)."""

    LEAST_ALLOCATED = "LeastAllocated"  # the default profile's
    MOST_ALLOCATED = "MostAllocated"


@dataclass(slots=True, frozen=True)
class PodRequests:
    """What one pod asks of a node: ``cpu`` (millicores) and ``memory`` (bytes) as Filter counts them;
    ``nonzero_cpu``/``nonzero_memory`` as a node counts its pods for scores (``PodInfo.CalculateResource``'s
    ``Non0CPU``/``Non0Mem``); ``score_cpu``/``score_memory`` as Score counts the pod being placed
    (``resourceAllocationScorer.calculatePodResourceRequest``: v1.37.2's Fit plugin does not pass the
    PodLevelResources feature to its scorer, so pod-level requests are not read there)."""

    cpu: int
    memory: int
    nonzero_cpu: int
    nonzero_memory: int
    score_cpu: int
    score_memory: int


_DEFAULTS = {"cpu": Decimal(DEFAULT_MILLI_CPU_REQUEST) / 1000, "memory": Decimal(DEFAULT_MEMORY_REQUEST)}


def _requests(container: dict) -> dict:
    return ((container.get("resources") or {}).get("requests")) or {}


def _add(into: dict[str, Decimal], more: dict[str, Decimal]) -> None:
    for r, v in more.items():
        into[r] = into.get(r, Decimal(0)) + v


def _aggregate(spec: dict, defaults: dict[str, Decimal]) -> dict[str, Decimal]:
    """component-helpers ``aggregateContainerResourcesByFn`` for cpu and memory (exact quantities), a container
    missing a resource of ``defaults`` counted at its default (``NonMissingContainerRequests``)."""

    def of(container: dict) -> dict[str, Decimal]:
        given = _requests(container)
        out = {r: quantity(given[r]) for r in RESOURCES if r in given}
        for r, v in defaults.items():
            out.setdefault(r, v)
        return out

    result: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        _add(result, of(c))
    sidecars: dict[str, Decimal] = {}
    init: dict[str, Decimal] = {}
    for c in spec.get("initContainers") or []:
        res = of(c)
        if c.get("restartPolicy") == "Always":
            _add(result, res)
            _add(sidecars, res)
            res = dict(sidecars)
        else:
            _add(res, sidecars)
        for r, v in res.items():
            if r not in init or v > init[r]:
                init[r] = v
    for r, v in init.items():
        if r not in result or v > result[r]:
            result[r] = v
    return result


def _pod_requests(spec: dict, defaults: dict[str, Decimal], pod_level: bool) -> dict[str, Decimal]:
    """component-helpers ``PodRequests`` for cpu and memory: the containers' (``_aggregate``), pod-level requests
    in their place (``applyPodLevelResources``, when ``pod_level``), plus the pod's ``overhead``."""
    result = _aggregate(spec, defaults)
    if pod_level:
        given = ((spec.get("resources") or {}).get("requests")) or {}
        for r in RESOURCES:
            if r in given:
                result[r] = quantity(given[r])
    _add(result, {r: quantity(v) for r, v in ((spec.get("overhead")) or {}).items() if r in RESOURCES})
    return result


def _rounded(requests: dict[str, Decimal]) -> tuple[int, int]:
    """(cpu ``MilliValue``, memory ``Value``): rounded up."""
    return math.ceil(requests.get("cpu", Decimal(0)) * 1000), math.ceil(requests.get("memory", Decimal(0)))


def pod_requests(spec: dict, pod_level_resources: bool = True) -> PodRequests:
    """The requests of a pod with this ``spec`` (a PodSpec dict: ``containers``, ``initContainers``,
    ``resources``, ``overhead``), as kube-scheduler v1.37.2 counts them (component-helpers ``PodRequests``;
    ``pod_level_resources``: the PodLevelResources feature, on by default in v1.37): cpu in millicores rounded up
    (``MilliValue``), memory in bytes rounded up (``Value``). The non-zero requests follow
    ``getNonMissingContainerRequests``: with pod-level requests set, only a resource requested nowhere gets its
    default. Raises InputError for a malformed quantity."""
    requests = _pod_requests(spec, {}, pod_level_resources)
    pod_level_set = pod_level_resources and any(r in (((spec.get("resources") or {}).get("requests")) or {})
                                                for r in RESOURCES)
    missing = {r: v for r, v in _DEFAULTS.items() if r not in requests} if pod_level_set else _DEFAULTS
    nonzero = _pod_requests(spec, missing, pod_level_resources) if missing else requests
    return PodRequests(*_rounded(requests), *_rounded(nonzero), *_rounded(_pod_requests(spec, _DEFAULTS, False)))


def defaulted_spec(spec: dict) -> dict:
    """The pod spec as the API server stores a pod created from it (``SetDefaults_Pod``): a container (or init
    container) with a limit and no request of a resource requests its limit."""
    spec = dict(spec)
    for key in ("containers", "initContainers"):
        items = []
        for c in spec.get(key) or []:
            res = dict(c.get("resources") or {})
            limits = res.get("limits") or {}
            requests = dict(res.get("requests") or {})
            for r, v in limits.items():
                requests.setdefault(r, v)
            if requests:
                res["requests"] = requests
            items.append({**c, "resources": res})
        if key in spec:
            spec[key] = items
    return spec


class Node:
    """A node as the scheduler sees it: allocatable ``cpu`` (millicores), ``memory`` (bytes) and ``pods``; what
    its pods request (``requested_*``, and ``nonzero_*`` as scores count) and how many pods it has. ``pool`` and
    ``instance_type`` name what it is."""

    __slots__ = ("name", "pool", "instance_type", "cpu", "memory", "pods", "requested_cpu", "requested_memory",
                 "nonzero_cpu", "nonzero_memory", "pod_count")

    def __init__(self, name: str, cpu: int, memory: int, pods: int = DEFAULT_MAX_PODS, pool: str = "",
                 instance_type: str = ""):
        self.name, self.pool, self.instance_type = name, pool, instance_type
        self.cpu, self.memory, self.pods = cpu, memory, pods
        self.requested_cpu = self.requested_memory = self.nonzero_cpu = self.nonzero_memory = 0
        self.pod_count = 0

    def add(self, pod: PodRequests) -> None:
        """A pod bound to this node (``NodeInfo.AddPod``)."""
        self.requested_cpu += pod.cpu
        self.requested_memory += pod.memory
        self.nonzero_cpu += pod.nonzero_cpu
        self.nonzero_memory += pod.nonzero_memory
        self.pod_count += 1

    def remove(self, pod: PodRequests) -> None:
        """A pod of this node deleted (``NodeInfo.RemovePod``)."""
        self.requested_cpu -= pod.cpu
        self.requested_memory -= pod.memory
        self.nonzero_cpu -= pod.nonzero_cpu
        self.nonzero_memory -= pod.nonzero_memory
        self.pod_count -= 1


def fits(node: Node, pod: PodRequests) -> tuple[str, ...]:
    """Why NodeResourcesFit's Filter refuses ``pod`` on ``node`` (``fitsRequest``'s reasons, in its order); empty
    when it fits."""
    reasons = []
    if node.pod_count + 1 > node.pods:
        reasons.append("Too many pods")
    if pod.cpu == 0 and pod.memory == 0:
        return tuple(reasons)
    if pod.cpu > 0 and pod.cpu > node.cpu - node.requested_cpu:
        reasons.append("Insufficient cpu")
    if pod.memory > 0 and pod.memory > node.memory - node.requested_memory:
        reasons.append("Insufficient memory")
    return tuple(reasons)


def fits_ok(node: Node, pod: PodRequests) -> bool:
    """``pod`` fits ``node`` (``fits`` gives no reason), without building the reasons: the scheduler's and the node
    autoscalers' inner loops, which visit every node of a pool."""
    if node.pod_count + 1 > node.pods:
        return False
    if pod.cpu == 0 and pod.memory == 0:
        return True
    return not ((pod.cpu > 0 and pod.cpu > node.cpu - node.requested_cpu)
                or (pod.memory > 0 and pod.memory > node.memory - node.requested_memory))


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def score(node: Node, pod: PodRequests, strategy: ScoringStrategy = ScoringStrategy.LEAST_ALLOCATED) -> int:
    """NodeResourcesFit's Score of ``pod`` on ``node`` (0-100): for cpu and memory, the share left free
    (``leastRequestedScore``) or used (``mostRequestedScore``) once the pod is added, counting requests as
    non-zero; a resource the node has none of is left out; the mean of the two (weights 1)."""
    total = weights = 0
    least = strategy == ScoringStrategy.LEAST_ALLOCATED
    for requested, capacity in ((node.nonzero_cpu + pod.score_cpu, node.cpu),
                                (node.nonzero_memory + pod.score_memory, node.memory)):
        if capacity == 0:
            continue
        if least:
            s = 0 if requested > capacity else _go_div((capacity - requested) * MAX_NODE_SCORE, capacity)
        else:
            s = _go_div(min(requested, capacity) * MAX_NODE_SCORE, capacity)
        total += s
        weights += 1
    return total // weights if weights else 0


def num_feasible_nodes_to_find(nodes: int) -> int:
    """How many feasible nodes the scheduler looks for before scoring (``numFeasibleNodesToFind``, the default
    ``percentageOfNodesToScore`` 0: adaptive)."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return nodes
    percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


class Placer:
    """kube-scheduler's cycle for one pod at a time over a list of nodes: ``place`` returns the node it binds the
    pod to, or None (the pod stays Pending: unschedulable). ``rng`` breaks ties; ``next_start`` is
    ``nextStartNodeIndex``."""

    def __init__(self, strategy: ScoringStrategy, rng: random.Random):
        self.strategy, self.rng = strategy, rng
        self.next_start = 0

    def place(self, pod: PodRequests, nodes: list[Node]) -> Node | None:
        """The node for ``pod`` among ``nodes`` (those a pod of its pool may use, Ready), or None."""
        n = len(nodes)
        if n == 0:
            return None
        want = num_feasible_nodes_to_find(n)
        found: list[Node] = []
        processed = 0
        start = self.next_start % n
        for i in range(n):
            node = nodes[(start + i) % n]
            processed += 1
            if fits_ok(node, pod):
                found.append(node)
                if len(found) >= want:
                    break
        self.next_start = (start + processed) % n
        return self.best(pod, found)

    def best(self, pod: PodRequests, nodes: Iterable[Node]) -> Node | None:
        """The highest-scoring of ``nodes`` (all feasible), ties at random."""
        top: list[Node] = []
        best = -1
        for node in nodes:
            s = score(node, pod, self.strategy)
            if s > best:
                best, top = s, [node]
            elif s == best:
                top.append(node)
        if not top:
            return None
        return top[0] if len(top) == 1 else top[self.rng.randrange(len(top))]
