"""Invariants of the decision core (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyhpa.core import Behavior, ControllerConfig, ScalingPolicy, ScalingRules, SyncInputs, decide
from pyhpa.core.calculator import within
from tests.builders import NOW, cpu_hpa, cpu_pods, old_memory, scale

CFG = ControllerConfig()
usage = st.integers(min_value=0, max_value=4000)


def run(usages, target=50, min_r=1, max_r=50, behavior=None, config=CFG):
    pods, samples = cpu_pods(usages)
    hpa = cpu_hpa(target, min_r, max_r, behavior)
    return decide(SyncInputs(hpa=hpa, scale=scale(len(usages)), pods=pods, samples=[samples],
                             memory=old_memory(len(usages)), now=NOW, config=config))


@settings(max_examples=300)
@given(st.lists(usage, min_size=1, max_size=30), st.integers(10, 200))
def test_ratio_inside_tolerance_never_changes_replicas(usages, target):
    d = run(usages, target)
    p = d.proposals[0]
    if within(p.ratio, 0.1, 0.1):
        assert p.replicas == len(usages)
        assert d.desired_replicas == len(usages)


@settings(max_examples=300)
@given(st.lists(usage, min_size=1, max_size=30), st.integers(1, 30), st.integers(1, 30))
def test_result_respects_min_and_max_when_current_inside(usages, a, b):
    min_r, max_r = min(a, b), max(a, b)
    n = len(usages)
    if not min_r <= n <= max_r:
        return
    d = run(usages, 50, min_r, max_r)
    assert min_r <= d.desired_replicas <= max_r


@settings(max_examples=300)
@given(st.lists(usage, min_size=1, max_size=20), st.integers(1, 500), st.integers(0, 19))
def test_higher_metric_never_gives_fewer_replicas(usages, extra, index):
    higher = list(usages)
    higher[index % len(usages)] += extra
    assert run(higher).desired_replicas >= run(usages).desired_replicas


def _behavior(up_tol, down_tol):
    up = ScalingRules(0, "Max", (ScalingPolicy("Percent", 1000, 15),), up_tol)
    down = ScalingRules(0, "Max", (ScalingPolicy("Percent", 100, 15),), down_tol)
    return Behavior(up, down)


@settings(max_examples=300)
@given(st.lists(usage, min_size=1, max_size=20), st.floats(0.0, 0.9), st.floats(0.0, 0.9))
def test_per_direction_tolerance_only_affects_its_direction(usages, t1, t2):
    base = run(usages, behavior=_behavior(0.1, 0.1)).desired_replicas
    n = len(usages)
    changed_down = run(usages, behavior=_behavior(0.1, t1)).desired_replicas
    changed_up = run(usages, behavior=_behavior(t2, 0.1)).desired_replicas
    if base > n:  # a scale-up is untouched by the scale-down tolerance
        assert changed_down == base
    if base < n:  # and a scale-down by the scale-up tolerance
        assert changed_up == base
    assert not (changed_down > n and base <= n)  # scale-down tolerance never creates a scale-up
    assert not (changed_up < n and base >= n)  # scale-up tolerance never creates a scale-down


@settings(max_examples=200)
@given(st.lists(usage, min_size=1, max_size=20))
def test_feature_gate_off_ignores_per_direction_tolerance(usages):
    cfg = ControllerConfig(configurable_tolerance=False)
    wide = run(usages, behavior=_behavior(0.9, 0.9), config=cfg).desired_replicas
    default = run(usages, behavior=_behavior(None, None), config=cfg).desired_replicas
    assert wide == default


@settings(max_examples=200)
@given(st.lists(usage, min_size=1, max_size=20), st.integers(1, 4000))
def test_new_hpa_never_scales_down_within_stabilization_window(usages, target):
    pods, samples = cpu_pods(usages)
    from pyhpa.core import Memory

    d = decide(SyncInputs(hpa=cpu_hpa(target, 1, 50), scale=scale(len(usages)), pods=pods, samples=[samples],
                          memory=Memory(), now=NOW, config=CFG))
    assert d.desired_replicas >= len(usages)
