"""The status-backed controller memory (``StatusMemory``): what it persists decides as the full memory
would, and a steady autoscaler does not rewrite its status every sync.

The equivalence is checked through ``pyhpa.core.decide`` itself (a recommendation given as
``prenormalized``, so stabilization windows and scaling policies do all the work): a memory persisted at
some sync and restored by a new leader makes every later decision exactly as the full in-process memory.
"""

from __future__ import annotations

import asyncio

from controller_util import autoscaler, pod, wait_for
from hypothesis import given, settings
from hypothesis import strategies as st
from lightkube.resources.core_v1 import Pod as PodResource

from pyhpa.controller import Controller, Settings
from pyhpa.controller.cache.autoscaler import parse_autoscaler
from pyhpa.controller.kube.stubs import StubCluster, StubMetrics
from pyhpa.controller.sync.memory import (
    RESTORED_BEFORE,
    StatusMemory,
    memory_from_status,
    memory_to_status,
    persisted_memory,
    restored_memory,
)
from pyhpa.core import (
    Behavior,
    ControllerConfig,
    Memory,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
    decide,
    relevant_memory,
)
from tests.builders import NOW, cpu_hpa, scale

CFG = ControllerConfig(downscale_stabilization_window_seconds=120)

policy = st.builds(ScalingPolicy, st.sampled_from(["Pods", "Percent"]), st.integers(1, 200), st.integers(1, 240))
rules = st.builds(ScalingRules, st.one_of(st.none(), st.integers(0, 240)), st.sampled_from(["Max", "Min"]),
                  st.lists(policy, min_size=1, max_size=3).map(tuple))
behaviors = st.one_of(st.none(), st.builds(
    Behavior, rules.map(lambda r: r if r.stabilization_window_seconds is not None else
                        ScalingRules(0, r.select_policy, r.policies)), rules))
steps = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 12)), min_size=2, max_size=40)


@settings(max_examples=300, deadline=None)
@given(behaviors, steps, st.data())
def test_persisted_memory_decides_every_later_sync_as_the_full_memory(behavior, syncs, data):
    """Run syncs with the full memory; at a random sync, persist (through the status dict shape) and
    restore as a new leader would; from then on both memories must give the same decision every sync."""
    hpa = cpu_hpa(min_r=1, max_r=12, behavior=behavior)
    split = data.draw(st.integers(0, len(syncs) - 2))
    now, current, full = NOW, 4, Memory()
    restored = None
    for i, (gap, desired) in enumerate(syncs):
        now += gap
        d = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=full, now=now, config=CFG,
                              prenormalized=desired))
        if restored is not None:
            r = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=restored, now=now,
                                  config=CFG, prenormalized=desired))
            assert (r.desired_replicas, r.rescale) == (d.desired_replicas, d.rescale), (i, full, restored)
            restored = r.memory
        full, current = d.memory, d.desired_replicas
        if i == split:
            section = memory_to_status(persisted_memory(full, hpa, CFG, now))
            restored = restored_memory(memory_from_status(section), now)


@settings(max_examples=300, deadline=None)
@given(behaviors, steps)
def test_the_working_copy_kept_between_syncs_decides_as_the_full_memory(behavior, syncs):
    """The controller keeps only ``relevant_memory`` of each decision's memory between syncs (a steady
    autoscaler keeps one recommendation, not one per sync of the window): every sync then decides exactly as
    with upstream's full list — replicas, rescale, conditions and events."""
    hpa = cpu_hpa(min_r=1, max_r=12, behavior=behavior)
    now, current, full, kept = NOW, 4, Memory(), Memory()
    for i, (gap, desired) in enumerate(syncs):
        now += gap
        d = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=full, now=now, config=CFG,
                              prenormalized=desired))
        k = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=kept, now=now, config=CFG,
                              prenormalized=desired))
        assert (k.desired_replicas, k.rescale) == (d.desired_replicas, d.rescale), (i, full, kept)
        assert [(c.type, c.status, c.reason, c.message) for c in k.conditions] == \
               [(c.type, c.status, c.reason, c.message) for c in d.conditions]
        assert [(e.type, e.reason, e.message) for e in k.events] == [(e.type, e.reason, e.message) for e in d.events]
        full, current = d.memory, d.desired_replicas
        kept = relevant_memory(k.memory, hpa, CFG, now)
        assert len(kept.recommendations) <= len(full.recommendations)


@settings(max_examples=200, deadline=None)
@given(behaviors, steps)
def test_a_repeated_recommendation_persists_the_same_section(behavior, syncs):
    """Once persisted, syncs that repeat the newest recommendation leave the section as it is (no write)."""
    hpa = cpu_hpa(min_r=1, max_r=12, behavior=behavior)
    now, current, mem = NOW, 4, Memory()
    for gap, desired in syncs:
        now += gap
        mem = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=mem, now=now, config=CFG,
                                prenormalized=desired)).memory
    stored = memory_from_status(memory_to_status(persisted_memory(mem, hpa, CFG, now)))
    live = sorted(mem.recommendations)[-1][1]
    for _ in range(5):
        now += 15
        d = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=mem, now=now, config=CFG,
                              prenormalized=live))
        if d.rescale:
            return  # a rescale changes the status anyway
        mem = d.memory
        again = memory_to_status(persisted_memory(mem, hpa, CFG, now, stored))
        assert again == memory_to_status(persisted_memory(stored, hpa, CFG, now, stored))


def test_dominated_and_outdated_recommendations_are_dropped():
    hpa = cpu_hpa()  # no behavior: only the 120 s scale-down window
    recs = [(NOW - 500, 9), (NOW - 100, 3), (NOW - 90, 6), (NOW - 60, 5), (NOW - 30, 2), (NOW, 2)]
    # 9 is outdated; 3 is dominated by the newer 6; the live 2 keeps its newest time, or the given one
    assert relevant_memory(Memory(recs), hpa, CFG, NOW).recommendations == [(NOW - 90, 6), (NOW - 60, 5), (NOW, 2)]
    assert relevant_memory(Memory(recs), hpa, CFG, NOW, live_since=NOW - 45).recommendations == [
        (NOW - 90, 6), (NOW - 60, 5), (NOW - 45, 2)]
    assert restored_memory(Memory([(NOW - 90, 6), (NOW - 45, 2)]), NOW + 7).recommendations == [
        (NOW - 90, 6), (NOW + 7, 2)]


def _reference_section(a, memory: Memory, now: float) -> dict:
    """The rule of ``StatusMemory.status_section`` without its shortcut: the new section, unless the stored one
    persists the same once both dropped what has aged out at ``now`` (then the stored one)."""
    stored = a.memory_status
    previous = None if stored is None else memory_from_status(stored)
    section = memory_to_status(persisted_memory(memory, a.hpa, a.config, now, previous))
    if previous is not None and memory_to_status(persisted_memory(previous, a.hpa, a.config, now, previous)) == section:
        return stored
    return section


def _without_live_stamp(m: Memory) -> tuple:
    recs = m.recommendations
    return (None if recs is None else (recs[:-1], recs[-1][1] if recs else None),
            m.scale_up_events, m.scale_down_events)


@settings(max_examples=200, deadline=None)
@given(behaviors, steps, st.data())
def test_the_controller_persists_what_the_core_says_can_matter_and_decides_the_same_with_it(behavior, syncs, data):
    """Through the controller's own persistence (StatusMemory.status_section, the status write, a new
    leader's load): at every sync the persisted section holds exactly what ``pyhpa.core.relevant_memory``
    says can still change a decision (the live value possibly stamped earlier), and a new leader that
    loads it decides every later sync as the full memory does."""
    hpa = cpu_hpa(min_r=1, max_r=12, behavior=behavior)
    a = parse_autoscaler(autoscaler("web", "web"), Settings())
    a.hpa, a.config = hpa, CFG
    clock = Clock(NOW)
    store = StatusMemory(clock)
    split = data.draw(st.integers(0, len(syncs) - 2))
    current, full, leader = 4, Memory(), None
    for i, (gap, desired) in enumerate(syncs):
        clock.now += gap
        now = clock.now
        d = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=full, now=now, config=CFG,
                              prenormalized=desired))
        if leader is not None:
            r = decide(SyncInputs(hpa=hpa, scale=scale(current), pods=[], samples=[], memory=leader, now=now,
                                  config=CFG, prenormalized=desired))
            assert (r.desired_replicas, r.rescale) == (d.desired_replicas, d.rescale), (i, full, leader)
            leader = r.memory
        full, current = d.memory, d.desired_replicas
        section = store.status_section(a, full)
        assert section == _reference_section(a, full, now)
        a.memory_status = section  # the status write (or the stored section kept)
        persisted = memory_from_status(a.memory_status)
        want = relevant_memory(full, hpa, CFG, now)
        assert _without_live_stamp(relevant_memory(persisted, hpa, CFG, now)) == _without_live_stamp(want)
        if i == split:  # a new leader without a working copy takes over right after this sync (its load stamps
            leader = StatusMemory(clock).load(a, now + RESTORED_BEFORE)  # the live value just before its sync)
# ----- the store in a controller (stubs: no HTTP) ----------------------------------------------------------------
class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def stub_world(replicas: int, usage: str, **spec):
    cluster, metrics = StubCluster(), StubMetrics()
    cluster.put_autoscaler(autoscaler("web", "web", **spec))
    cluster.put_scale("default", "Deployment", "web", replicas, "app=web")
    for i in range(replicas):
        cluster.put_pod(PodResource.from_dict(pod(f"web-{i}", "web")))
    set_usage(metrics, replicas, usage)
    return cluster, metrics


def set_usage(metrics: StubMetrics, replicas: int, usage: str) -> None:
    items = [{"metadata": {"name": f"web-{i}", "namespace": "default"}, "timestamp": "2026-01-01T00:00:00Z",
              "window": "30s", "containers": [{"name": "app", "usage": {"cpu": usage}}]} for i in range(replicas)]
    metrics.resource[("default", "app=web")] = {"kind": "PodMetricsList", "items": items}


async def test_a_steady_autoscaler_does_not_write_its_status_every_sync():
    """Status (with status.pyhpa) is written on the first sync, once when the load drops (the hold starts),
    and not again while nothing that can change a decision changes; the stored memory holds the window."""
    cluster, metrics = stub_world(4, "100m")  # 50 % of the 200m request: on target, 4 replicas
    clock = Clock(NOW)
    store = StatusMemory(clock)
    controller = Controller(Settings(health_port=None, sync_period_seconds=0.05, jitter=0), cluster, metrics,
                            memory=store, clock=clock)
    results = []
    controller.reconciler.on_synced = results.append
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))

    async def syncs(n: int) -> None:
        target = len(results) + n
        while len(results) < target:
            await wait_for(lambda: len(results) >= target, what=f"{n} syncs")
        clock.now += 15

    try:
        await syncs(1)
        assert cluster.status_writes == 1
        await syncs(6)
        assert cluster.status_writes == 1  # steady: nothing written
        # the printer columns' texts (issue 37) are in the one write, and cost no other
        assert cluster.autoscaler_objects["default/web"]["status"]["targets"] == "cpu: 50%/50%"
        set_usage(metrics, 4, "25m")  # 12.5 %: the core wants 1, the 300 s window holds 4
        await syncs(1)
        await syncs(6)
        assert cluster.status_writes == 2 and cluster.scales[("default", "Deployment", "web")][0] == 4
        status = cluster.autoscaler_objects["default/web"]["status"]
        assert {c["type"]: c["reason"] for c in status["conditions"]}["AbleToScale"] == "ScaleDownStabilized"
        stored = memory_from_status(status["pyhpa"]).recommendations
        assert [v for _, v in stored] == [4, 1]  # the last 4 (exact time), then the live value 1
        last_four = stored[0][0]
        assert last_four == max(t for t, v in results[-1].decision.memory.recommendations if v == 4)
    finally:
        stop.set()
        await task
    # a new leader (no working copy) holds exactly until the last 4 leaves the window, then scales down
    a = parse_autoscaler(cluster.autoscaler_objects["default/web"], Settings())
    fresh = StatusMemory(Clock(last_four + 299))
    mem = fresh.load(a)
    assert fresh.restored == 1 and mem.recommendations[0] == (last_four, 4)
    inputs = results[-1].gathered.inputs
    held = decide(SyncInputs(hpa=a.hpa, scale=inputs.scale, pods=inputs.pods, samples=inputs.samples, memory=mem,
                             now=last_four + 299, config=a.config))
    later = decide(SyncInputs(hpa=a.hpa, scale=inputs.scale, pods=inputs.pods, samples=inputs.samples, memory=mem,
                              now=last_four + 301, config=a.config))
    assert (held.desired_replicas, later.desired_replicas) == (4, 1)


async def test_a_write_without_a_decision_keeps_the_stored_memory_and_bad_memory_is_rewritten():
    cluster, metrics = stub_world(2, "100m")
    obj = cluster.autoscaler_objects["default/web"]
    cluster.put_autoscaler(dict(obj, status={"desiredReplicas": 2, "pyhpa": {"recommendations": [{"timestamp": "x"}]}}))
    clock = Clock(NOW)
    store = StatusMemory(clock)
    a = parse_autoscaler(cluster.autoscaler_objects["default/web"], Settings())
    assert store.load(a) == Memory()  # malformed: ignored (amnesia, as upstream), never a crash
    assert store.status_section(a, None) == a.memory_status  # e.g. FailedGetScale: keep what is stored
    fresh = store.status_section(a, Memory([(NOW, 2)]))
    assert memory_from_status(fresh).recommendations == [(NOW, 2)]


def test_a_new_leader_loads_the_memory_and_its_own_recommendation_becomes_the_live_one():
    obj = autoscaler("web", "web")
    obj["status"] = {"pyhpa": memory_to_status(Memory([(NOW - 100, 4), (NOW - 50, 1)]))}
    a = parse_autoscaler(obj, Settings())
    clock = Clock(NOW + 1)
    store = StatusMemory(clock)
    mem = store.load(a, NOW)  # the sync's own time, not the clock's
    assert mem.recommendations == [(NOW - 100, 4), (NOW - 0.001, 1)]  # 1 held until just before this sync
    d = decide(SyncInputs(hpa=a.hpa, scale=scale(4), pods=[], samples=[], memory=mem, now=NOW, config=a.config,
                          prenormalized=2))
    assert d.desired_replicas == 4  # the 4 of 100 s ago still holds (300 s window)
    store.save(a, d.memory)
    assert store.load(a, NOW + 15) is d.memory  # the working copy, from now on
    section = memory_from_status(store.status_section(a, d.memory))
    assert section.recommendations == [(NOW - 100, 4), (NOW, 2)]  # 1 is dominated by the newer 2 (no up window)
