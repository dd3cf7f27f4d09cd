"""Issue 21, "lean at scale": what a replica keeps per pod, the writes it makes in steady state and after a
restart, and the hand-over when a replica joins or leaves.

- The pod cache keeps compact records (``pyhpa.controller.cache.pods``): a bound on the bytes per cached pod,
  measured with ``tracemalloc``, and the parts pods of one template share.
- A steady round writes nothing: an autoscaler whose metric fails and holds at its fallback writes no status
  and sends no event once its fallback applies (``status.warnings`` remembers what was said).
- A restart of a replica with many autoscalers: its first round writes no status, sends no event, and makes no
  scale-down that the memory before the restart held back (it scales down at the very sync the replica that
  never restarted does).
- A join and a leave of a shard replica leave no autoscaler unsynced for more than two sync periods.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import msgspec
from controller_util import autoscaler, deployment, pod, wait_for
from lightkube.resources.core_v1 import Pod as PodResource

from pyhpa.adapters.kubeconfig import load_config
from pyhpa.controller import Controller, Settings, run_controller
from pyhpa.controller.cache.pods import PodCache, PodView
from pyhpa.controller.kube.stubs import StubCluster, StubMetrics
from pyhpa.controller.sync.memory import StatusMemory

PODS = 4


def _pod_doc(ns: str, app: str, j: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-{j}", "namespace": ns, "resourceVersion": str(1000 + j),
                         "uid": f"uid-{app}-{j}", "labels": {"app": app, "pod-template-hash": "5d8f9c7b6"},
                         "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}},
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.2.3",
                                     "env": [{"name": f"VAR_{k}", "value": "x" * 40} for k in range(10)],
                                     "resources": {"requests": {"cpu": "200m", "memory": "256Mi"},
                                                   "limits": {"cpu": "1", "memory": "512Mi"}}}],
                     "nodeName": "node-1", "serviceAccountName": "default"},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z", "podIP": "10.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"},
                                      {"type": "PodScheduled", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}


# ----- memory per pod record --------------------------------------------------------------------------------
def _measure_pod_cache() -> tuple[float, float]:
    """(bytes per cached pod, bytes per lightkube Pod of the same JSON), traced in this process."""
    docs = [msgspec.json.encode(_pod_doc(f"ns-{i // 100}", f"app-{i}", j)) for i in range(200) for j in range(10)]
    cache = PodCache()
    tracemalloc.start()
    try:
        for raw in docs:  # as the informer does: decode one object, cache it, drop it
            view = msgspec.json.decode(raw, type=PodView)
            cache.upsert(f"{view.metadata.namespace}/{view.metadata.name}", view)
            del view
        per_pod = tracemalloc.get_traced_memory()[0] / len(docs)
        tracemalloc.reset_peak()
        whole = [PodResource.from_dict(msgspec.json.decode(raw)) for raw in docs[:100]]
        per_model = tracemalloc.get_traced_memory()[0] / len(whole) - per_pod * len(docs) / len(whole)
    finally:
        tracemalloc.stop()
    return per_pod, per_model


def test_a_cached_pod_costs_less_than_400_bytes_and_pods_of_a_template_share_their_parts():
    """2,000 pods (200 templates of 10) decoded as the informer decodes them and cached: the cache holds
    under 400 bytes per pod (record, name, indexes), where a lightkube Pod of the same JSON alone takes
    several kilobytes; labels, requests and limits are one object per template. Traced in a fresh interpreter:
    tracemalloc counts every thread's allocations, and a test process may still run another test's threads."""
    out = subprocess.run([sys.executable, "-c", "import test_controller_lean as t; print(*t._measure_pod_cache())"],
                         cwd=Path(__file__).parent, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=f"{Path(__file__).parent}:{Path(__file__).parent.parent}"))
    assert out.returncode == 0, out.stderr
    per_pod, per_model = map(float, out.stdout.split())
    assert per_pod < 400, per_pod
    assert per_model > 4 * per_pod, (per_model, per_pod)
    docs = [msgspec.json.encode(_pod_doc(f"ns-{i // 100}", f"app-{i}", j)) for i in range(200) for j in range(10)]
    cache = PodCache()
    for raw in docs:
        view = msgspec.json.decode(raw, type=PodView)
        cache.upsert(f"{view.metadata.namespace}/{view.metadata.name}", view)
        del view
    assert len(cache) == 2_000
    a, b = cache.get("ns-0", "app-0-0"), cache.get("ns-0", "app-0-1")
    assert a.labels == {"app": "app-0", "pod-template-hash": "5d8f9c7b6"} and a.ready and a.phase == "Running"
    assert a.requests[("cpu", "app")] == 200 and a.limits[("cpu", "app")] == 1000
    assert a.labels is b.labels and a.requests is b.requests and a.limits is b.limits and a.containers is b.containers
    assert [p.name for p in cache.select("ns-0", "app=app-0")] == [f"app-0-{j}" for j in range(10)]
    del a, b
    for j in range(10):  # the parts nobody uses any more are dropped
        cache.delete(f"ns-0/app-0-{j}", None)
    before = len(cache.records)
    assert cache.records.prune() >= 1 and len(cache.records) < before


# ----- a stub world driven round by round ---------------------------------------------------------------------
class World:
    """Autoscalers of 4 pods at 50 % of their CPU request (CPU target 50 %) on the stub API; ``failing`` of them
    have no pod metrics and a fallback (hold at 4). Rounds are driven by hand at a fake decision clock."""

    def __init__(self, n: int, failing: int, start: float):
        self.cluster, self.metrics = StubCluster(), StubMetrics()
        self.now = start
        self.n = n
        for i in range(n):
            name = f"app-{i}"
            spec = {"fallback": {"failureThreshold": 2, "replicas": PODS}} if i < failing else {}
            self.cluster.put_autoscaler(autoscaler(name, name, **spec))
            self.cluster.put_scale("default", "Deployment", name, PODS, f"app={name}")
            for j in range(PODS):
                self.cluster.put_pod(PodResource.from_dict(pod(f"{name}-{j}", name)))
            if i >= failing:
                self.usage(i, "100m")

    def usage(self, i: int, cpu: str) -> None:
        name = f"app-{i}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))
        self.metrics.resource[("default", f"app={name}")] = {
            "kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
            "items": [{"metadata": {"name": f"{name}-{j}", "namespace": "default"}, "timestamp": stamp,
                       "window": "30s", "containers": [{"name": "app", "usage": {"cpu": cpu}}]}
                      for j in range(PODS)]}

    def replicas(self, i: int) -> int:
        return self.cluster.scales[("default", "Deployment", f"app-{i}")][0]


class Replica:
    """A Controller on the world's stub API (status-backed memory, as ``pyhpa run``), started and stopped."""

    def __init__(self, world: World):
        self.world = world
        self.controller = Controller(Settings(health_port=None), world.cluster, world.metrics,
                                     memory=StatusMemory(lambda: world.now), clock=lambda: world.now)
        self.done = 0
        self.controller.reconciler.on_synced = lambda r: setattr(self, "done", self.done + 1)
        self.stop = asyncio.Event()
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> "Replica":
        self.task = asyncio.create_task(self.controller.run(self.stop))
        await wait_for(lambda: self.controller.ready and self.done >= self.world.n, what="the first round")
        await self.controller.events.flush(5)
        return self

    async def round(self, seconds: float = 15.0) -> tuple[int, int]:
        """Advance the clock, sync every autoscaler once; (status writes, events sent) of the round."""
        w = self.world
        writes, events = w.cluster.status_writes, len(w.cluster.events) + w.cluster.event_patches
        w.now += seconds
        target = self.done + w.n
        for key in list(self.controller.autoscalers):
            self.controller.queue.add(key)
        await wait_for(lambda: self.done >= target, what="a round")
        await self.controller.events.flush(5)
        return w.cluster.status_writes - writes, len(w.cluster.events) + w.cluster.event_patches - events

    async def __aexit__(self, *exc) -> None:
        self.stop.set()
        await self.task


async def test_a_fallback_in_steady_state_writes_no_status_and_sends_no_event():
    """Ten autoscalers whose metric fails (fallback after 2 failures: hold at 4) and ten healthy ones: the
    failing ones count failures and start their fallback (status writes, one FailedGetResourceMetric and one
    FallbackStarted each), then every round is silent; their status keeps what was said and a count that
    stops one past the threshold."""
    world = World(20, failing=10, start=1_800_000_000.0)
    async with Replica(world) as r:
        assert world.cluster.status_writes == 20
        said = [e.reason for e in world.cluster.events]
        assert said.count("FailedGetResourceMetric") == 10
        rounds = [await r.round() for _ in range(6)]
    assert rounds[0][0] == 10  # second failure: counted
    assert sum(e for _, e in rounds[:3]) == 10 and [e.reason for e in world.cluster.events].count("FallbackStarted") == 10
    assert rounds[-3:] == [(0, 0)] * 3, rounds
    st = world.cluster.autoscaler_objects["default/app-0"]["status"]
    assert st["metricHealth"][0]["numberOfFailures"] == 3 and st["metricHealth"][0]["status"] == "Failing"
    assert st["pyhpa"]["metricFailures"][0]["numberOfFailures"] == 3
    assert [w["reason"] for w in st["warnings"]] == ["FailedGetResourceMetric"]
    assert "warnings" not in world.cluster.autoscaler_objects["default/app-10"]["status"]
    assert all(world.replicas(i) == PODS for i in range(20))


async def _scale_downs(restart_at: int | None, rounds: int) -> tuple[dict, list]:
    """Run ``rounds`` rounds of 15 s after the load drops (CPU 25 %: the metric wants 2, the 300 s scale-down
    window holds 4); with ``restart_at``, the replica is replaced by a new one (no working memory, a new event
    recorder) before that round, a period later (its first round). Returns the decision time of each autoscaler's
    scale-down and the (writes, events) of the new replica's first round."""
    world = World(60, failing=10, start=1_800_000_000.0)
    first: list = []
    down: dict[int, float] = {}
    replica = Replica(world)
    await replica.__aenter__()
    for _ in range(4):  # the fallbacks start, things settle
        await replica.round()
    for i in range(10, 60):
        world.usage(i, "50m")
    for k in range(rounds):
        if k == restart_at:
            await replica.__aexit__()
            world.now += 15.0  # the restart takes a period
            replica = Replica(world)
            writes, events = world.cluster.status_writes, len(world.cluster.events) + world.cluster.event_patches
            await replica.__aenter__()  # its first round: every autoscaler synced once
            first = [world.cluster.status_writes - writes,
                     len(world.cluster.events) + world.cluster.event_patches - events]
            for i in range(60):
                if world.replicas(i) < PODS:
                    down.setdefault(i, world.now)
        await replica.round()
        for i in range(60):
            if world.replicas(i) < PODS:
                down.setdefault(i, world.now)
    await replica.__aexit__()
    return down, first


async def test_a_restart_resends_no_events_writes_no_status_and_scales_down_no_earlier():
    """50 autoscalers whose load dropped (the 300 s window holds their scale-down) and 10 in fallback; the
    replica restarts 100 s into the window. The new replica's first round writes no status and sends no event
    (steady within one period), and each autoscaler scales down at the same round as without the restart: not
    earlier (the memory in status.pyhpa holds it back), not later."""
    reference, _ = await _scale_downs(None, 24)
    restarted, first = await _scale_downs(6, 23)
    assert first == [0, 0], first
    drop = 1_800_000_000.0 + 15 * 5  # the first sync that saw the low load
    assert len(reference) == 50 and min(reference.values()) >= drop + 300 - 15  # the window of the last 4
    assert restarted == reference


# ----- hand-over -------------------------------------------------------------------------------------------------
PERIOD = 2.0


def _longest_gap(times: dict[str, list[float]], start: float, end: float) -> float:
    """The longest time an autoscaler went without a sync within [start, end] (an open gap counts to ``end``)."""
    worst = 0.0
    for ts in times.values():
        ts = sorted(ts)
        for a, b in zip(ts, ts[1:]):
            if b > start and a < end:
                worst = max(worst, b - a)
        if ts[-1] < end:
            worst = max(worst, end - ts[-1])
    return worst


async def test_a_join_and_a_leave_leave_no_autoscaler_unsynced_for_more_than_two_periods(kd):
    """Replica a syncs 24 autoscalers every 2 s; b joins (it takes its share once a acknowledged it), then a
    stops (SIGTERM: it deletes its Lease, b takes everything at its next list): no autoscaler goes more than
    two periods without a sync, and each is synced by one replica at a time."""
    keys = []
    for i in range(24):
        ns, name = f"n{i % 6}", f"app-{i}"
        kd.put_object(deployment(name, 2, ns) | {"status": {"replicas": 2}})
        for j in range(2):
            kd.put_object(pod(f"{name}-{j}", name, ns))
            kd.set_pod_metrics(ns, f"{name}-{j}", {"app": {"cpu": "100m"}})
        kd.put_object(autoscaler(name, name, ns=ns))
        keys.append(f"{ns}/{name}")
    times: dict[str, list[float]] = {k: [] for k in keys}
    by: dict[str, list[tuple[float, str]]] = {k: [] for k in keys}
    loop = asyncio.get_running_loop()

    def start(identity: str, stop: asyncio.Event) -> asyncio.Task:
        def synced(result) -> None:
            if result is not None and not result.message.startswith("writes are disabled"):
                times[result.key].append(loop.time())
                by[result.key].append((loop.time(), identity))

        def started(controller, health) -> None:
            controller.reconciler.on_synced = synced

        settings = Settings(shards="auto", leader_elect_identity=identity, leader_elect_namespace="default",
                            leader_elect_lease_duration_seconds=3.0, leader_elect_renew_deadline_seconds=2.0,
                            leader_elect_retry_period_seconds=0.5, sync_period_seconds=PERIOD, health_port=None)
        return asyncio.create_task(run_controller(settings, load_config(server=kd.url), stop=stop,
                                                  install_signals=False, on_started=started))

    stop_a, stop_b = asyncio.Event(), asyncio.Event()
    a = start("a", stop_a)
    await wait_for(lambda: all(times[k] for k in keys), timeout=60, what="every autoscaler synced by a")
    steady_from = loop.time()
    await asyncio.sleep(2 * PERIOD)
    joined = loop.time()
    b = start("b", stop_b)
    await wait_for(lambda: any(w == "b" for k in keys for _, w in by[k]), timeout=60, what="b syncing its share")
    await asyncio.sleep(3 * PERIOD)
    join_end = left = loop.time()
    stop_a.set()
    await a
    await asyncio.sleep(3 * PERIOD)
    leave_end = loop.time()
    stop_b.set()
    await b
    # two periods, plus twice how late a's syncs ran before the join (a busy machine's loop lags; a hand-over that
    # waited for a Lease to expire, 3 s, on top of a period would still exceed it on an idle one)
    late = max(0.0, _longest_gap(times, steady_from, joined) - PERIOD)
    assert _longest_gap(times, joined, join_end) <= 2 * (PERIOD + late)
    assert _longest_gap(times, left, leave_end) <= 2 * (PERIOD + late)
    shares = {w for k in keys for t, w in by[k] if joined + PERIOD < t < left}
    assert shares == {"a", "b"}  # both synced a share while both ran
    assert all(w == "b" for k in keys for t, w in by[k] if t > left + PERIOD)
    assert kd.invalid_requests == []
