"""The fleet's scheduler (``pyhpa.fleet.scheduler``) as kube-scheduler v1.37.2 places pods by resources. Its
filter, scores and pod requests are checked against upstream's own plugin on random inputs in
``tests/test_upstream_decide.py``; these are the worked cases of its own test tables and of ``schedulePod``."""

from __future__ import annotations

import random

from pyhpa.fleet.scheduler import (
    DEFAULT_MEMORY_REQUEST,
    Node,
    Placer,
    PodRequests,
    ScoringStrategy,
    fits,
    num_feasible_nodes_to_find,
    pod_requests,
    score,
)


def _pod(cpu: int, memory: int) -> PodRequests:
    return PodRequests(cpu, memory, cpu, memory, cpu, memory)


def test_least_allocated_scores_of_upstreams_table():
    """As least_allocated_test.go's "nothing scheduled, resources requested, differently sized nodes": each
    resource's free share after the pod, in integer percent, then their mean (integer division)."""
    pod = _pod(3000, 5000)
    assert score(Node("a", 4000, 10000), pod) == ((4000 - 3000) * 100 // 4000 + (10000 - 5000) * 100 // 10000) // 2
    assert score(Node("b", 6000, 10000), pod) == ((6000 - 3000) * 100 // 6000 + 50) // 2
    # requested above allocatable scores 0 for that resource; MostAllocated clamps it to 100
    assert score(Node("c", 2000, 10000), pod) == (0 + 50) // 2
    assert score(Node("c", 2000, 10000), pod, ScoringStrategy.MOST_ALLOCATED) == (100 + 50) // 2


def test_the_filter_names_what_is_short():
    node = Node("n", 1000, 1000, pods=1)
    assert fits(node, _pod(500, 500)) == ()
    node.add(_pod(600, 100))
    assert fits(node, _pod(500, 500)) == ("Too many pods", "Insufficient cpu")
    assert fits(Node("m", 1000, 100), _pod(0, 0)) == ()  # a pod requesting nothing fits while pods are left


def test_missing_requests_count_at_their_defaults_for_scores_only():
    r = pod_requests({"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m"}}}, {"name": "b"}]})
    assert (r.cpu, r.memory) == (250, 0)
    assert (r.nonzero_cpu, r.nonzero_memory) == (350, 2 * DEFAULT_MEMORY_REQUEST)


def test_how_many_nodes_the_scheduler_looks_at():
    """``numFeasibleNodesToFind`` with the adaptive default: all below 100 nodes; 50 % less 1 % per 125 nodes, at
    least 5 % and 100 nodes."""
    assert [num_feasible_nodes_to_find(n) for n in (5, 99, 100, 199, 500, 1000, 5000, 6000)] == \
        [5, 99, 100, 100, 230, 420, 500, 300]


def test_least_allocated_spreads_and_most_allocated_packs():
    for strategy, expect in ((ScoringStrategy.LEAST_ALLOCATED, [1, 1, 1]), (ScoringStrategy.MOST_ALLOCATED, [3, 0, 0])):
        nodes = [Node(f"n{i}", 4000, 8 << 30) for i in range(3)]
        placer = Placer(strategy, random.Random(0))
        for _ in range(3):
            node = placer.place(_pod(500, 1 << 30), nodes)
            node.add(_pod(500, 1 << 30))
        assert sorted((n.pod_count for n in nodes), reverse=True) == sorted(expect, reverse=True)


def test_no_node_fits_is_none_and_ties_follow_the_seed():
    placer = Placer(ScoringStrategy.LEAST_ALLOCATED, random.Random(1))
    assert placer.place(_pod(5000, 1), [Node("a", 4000, 100)]) is None
    picks = {Placer(ScoringStrategy.LEAST_ALLOCATED, random.Random(seed)).place(_pod(1, 1), [
        Node(f"n{i}", 1000, 1000) for i in range(4)]).name for seed in range(40)}
    assert len(picks) == 4  # equal nodes: each chosen for some seed
    again = [Placer(ScoringStrategy.LEAST_ALLOCATED, random.Random(7)).place(_pod(1, 1), [
        Node(f"n{i}", 1000, 1000) for i in range(4)]).name for _ in range(3)]
    assert len(set(again)) == 1
