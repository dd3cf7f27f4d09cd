"""The node autoscaler models as deciders (``pyhpa.fleet.nodeautoscalers``): they read a view of the pools and return
actions, and Karpenter's disruption takes the candidates of every NodePool to each method, as its disruption
controller does (``GetCandidates`` over all NodePools, then each method's ``ComputeCommand``), not pool by pool in
the fleet file's order."""

from __future__ import annotations

from types import SimpleNamespace

from pyhpa.fleet.nodeautoscalers import Delete, KarpenterModel, Reason
from pyhpa.fleet.scheduler import PodRequests
from pyhpa.fleet.spec import Bytes, InstanceType, Karpenter, Millicores, NodePool

GI = 1 << 30
KIND = InstanceType(name="m", cpu=Millicores(4000), memory=Bytes(16 * GI), price_per_hour=0.2)
POD = PodRequests(1000, GI, 1000, GI, 1000, GI)


class Node:
    """A node as a model reads it (``NodeView``): ``pods`` pods of ``POD`` bound, no pod event since ``launched``."""

    def __init__(self, name: str, pool: str, pods: int, launched: float):
        self.name, self.pool, self.instance_type = name, pool, KIND.name
        self.cpu, self.memory, self.pods = KIND.cpu, KIND.memory, KIND.pods
        self.requested_cpu, self.requested_memory, self.pod_count = pods * POD.cpu, pods * POD.memory, pods
        self.price, self.launched, self.ready_at, self.last_pod_event = KIND.price_per_hour, launched, launched, launched
        self.deleting, self.replaces, self.replaced_by = False, None, None
        self.bound = {k: SimpleNamespace(requests=POD) for k in range(pods)}

    def utilization(self) -> float:
        return self.requested_cpu / self.cpu


class Pool:
    """A pool as a model reads it (``PoolView``): Ready nodes only."""

    def __init__(self, index: int, name: str, nodes: list[Node]):
        self.spec = NodePool(name=name, instance_types=(KIND,))
        self.index, self.version, self.nodes, self.upcoming = index, 0, nodes, []

    def waiting(self):
        return []

    def size(self) -> int:
        return len(self.nodes)


def _disrupt(pools: list[Pool]) -> list:
    """What the model (Karpenter's defaults) decides at its first poll and carries out 15 s later
    (``commandValidationDelay``). The model works on these stand-ins alone: it reads views and returns actions."""
    model = KarpenterModel(Karpenter(), 0.0, None)
    assert list(model.act(pools, 1000.0)) == [] and model.command is not None  # decided, waiting to validate
    return list(model.act(pools, model.next_time))


def test_single_node_consolidation_ranks_the_candidates_of_every_pool_together():
    """Pool a (first in the file) has a candidate of 2 pods that fit on its other node, pool b one of 1 pod that
    fits on its other node (the other nodes had a pod event lately: not candidates). Karpenter ranks the candidates
    of all pools together, fewest pods first, so b's goes; pool by pool in file order, a's would have."""
    a = Pool(0, "a", [Node("a-1", "a", 2, 0.0), Node("a-2", "a", 2, 0.0)])
    b = Pool(1, "b", [Node("b-1", "b", 1, 10.0), Node("b-2", "b", 2, 0.0)])
    a.nodes[1].last_pod_event = b.nodes[1].last_pod_event = 995.0
    assert _disrupt([a, b]) == [Delete(b.nodes[0], Reason.UNDERUTILIZED)]
    assert _disrupt([a]) == [Delete(a.nodes[0], Reason.UNDERUTILIZED)]  # a alone: its candidate goes


def test_emptiness_takes_the_empty_nodes_of_every_pool_in_one_command():
    """The Emptiness method: every pool's empty candidates (each within its pool's budget) in one command."""
    a = Pool(0, "a", [Node("a-1", "a", 0, 0.0), Node("a-2", "a", 3, 0.0)])
    b = Pool(1, "b", [Node("b-1", "b", 0, 0.0), Node("b-2", "b", 3, 0.0)])
    assert _disrupt([a, b]) == [Delete(a.nodes[0], Reason.EMPTY), Delete(b.nodes[0], Reason.EMPTY)]
