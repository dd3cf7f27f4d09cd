"""Controller parts in isolation: work queue, pod cache, informer, settings, parsing, status, events, metrics.

Everything here runs against in-memory stubs (``pyhpa.controller.kube.stubs``); the HTTP path is covered by
the end-to-end tests. No timing assertions: waits are event-based with generous timeouts.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from itertools import islice

import pytest
from controller_util import autoscaler, pod, running, wait_for
from hypothesis import given, settings
from hypothesis import strategies as st
from lightkube.resources.core_v1 import Pod as PodResource
from prometheus_client import generate_latest

from pyhpa.adapters.errors import InputError
from pyhpa.controller import Controller, Settings
from pyhpa.controller.cache.autoscaler import parse_autoscaler
from pyhpa.controller.cache.informer import Informer, PodCache
from pyhpa.controller.kube.api import ApiFailure
from pyhpa.controller.kube.stubs import StubCluster, StubMetrics
from pyhpa.controller.outputs.monitor import Monitor
from pyhpa.controller.outputs.status import StaleSpec, StatusWriter
from pyhpa.controller.outputs.writer import Writer, WritesDisabled
from pyhpa.controller.settings import ObjectSettings, effective_config, object_settings
from pyhpa.controller.sync.memory import InProcessMemory, memory_from_status, memory_to_status
from pyhpa.controller.sync.queue import UPCOMING_MAX, QueueClosed, WorkQueue
from pyhpa.core import ControllerConfig, Memory, decide


# ----- work queue ---------------------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_queue_dedups_and_keeps_the_earlier_due_time():
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add("a", 10)
    q.add("a", 5)
    q.add("a", 20)
    assert len(q) == 1
    clock.now += 5
    assert await asyncio.wait_for(q.get(), 5) == "a"
    assert len(q) == 0


async def test_queue_hands_a_key_to_one_worker_at_a_time():
    q = WorkQueue()
    q.add("a")
    key = await q.get()
    q.add("a")  # re-added while processing: not handed out again yet
    getter = asyncio.ensure_future(q.get())
    await asyncio.sleep(0.05)
    assert not getter.done()
    q.done(key)
    assert await asyncio.wait_for(getter, 5) == "a"


async def test_queue_orders_by_due_time_and_wakes_waiters():
    q = WorkQueue()
    q.add("late", 0.2)
    q.add("soon", 0.05)
    assert await asyncio.wait_for(q.get(), 5) == "soon"
    assert await asyncio.wait_for(q.get(), 5) == "late"


async def test_queue_remove_while_processing_is_not_requeued():
    q = WorkQueue()
    q.add("a")
    key = await q.get()
    q.remove(key)
    q.done(key, delay=0)
    assert len(q) == 0


async def test_queue_retry_backoff_doubles_caps_and_resets():
    clock = FakeClock()
    q = WorkQueue(retry_base=1, retry_max=5, retry_qps=1000, retry_burst=1000, clock=clock)
    assert [q.retry_delay("a") for _ in range(5)] == [1, 2, 4, 5, 5]
    q.forget("a")
    assert q.retry_delay("a") == 1


async def test_queue_retries_are_rate_limited_overall():
    clock = FakeClock()
    q = WorkQueue(retry_base=0.001, retry_max=1, retry_qps=10, retry_burst=2, clock=clock)
    delays = [q.retry_delay(f"k{i}") for i in range(4)]
    assert delays[:2] == [0.001, 0.001]
    assert delays[2] == pytest.approx(0.1) and delays[3] == pytest.approx(0.2)


@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "get", "tick"]),
                          st.sampled_from([f"k{i}" for i in range(80)]), st.integers(0, 4)), max_size=200),
       st.integers(1, 70))
@settings(max_examples=200, deadline=None)
def test_upcoming_gives_the_next_due_keys_in_the_order_get_hands_them(ops, n):
    async def check() -> None:
        clock = FakeClock()
        q = WorkQueue(clock=clock)
        for op, letter, delay in ops:  # adds, removes, gets (never done: held keys are not due) and time passing
            if op == "add":
                q.add(letter, delay)
            elif op == "remove":
                q.remove(letter)
            elif op == "get" and next(q.upcoming(), None):
                await q.get()
            elif op == "tick":
                clock.now += delay
        upcoming = list(islice(q.upcoming(), n))
        handed = []
        while next(q.upcoming(), None):
            handed.append(await q.get())
        assert upcoming == handed[:min(n, UPCOMING_MAX)]
        assert list(q.upcoming()) == []

    asyncio.run(check())


async def test_queue_shutdown_releases_waiting_workers():
    q = WorkQueue()
    getter = asyncio.ensure_future(q.get())
    await asyncio.sleep(0.01)
    q.shutdown()
    with pytest.raises(QueueClosed):
        await asyncio.wait_for(getter, 5)


# ----- pod cache ----------------------------------------------------------------------------------------------
def _pod_model(name: str, app: str, ns: str = "default", **labels: str):
    d = pod(name, app, ns)
    d["metadata"]["labels"].update(labels)
    return PodResource.from_dict(d)


def test_pod_cache_selects_by_labels_and_follows_changes():
    cache = PodCache()
    for i in range(3):
        cache.upsert(f"default/web-{i}", _pod_model(f"web-{i}", "web", tier="front" if i else "back"))
    cache.upsert("default/db-0", _pod_model("db-0", "db"))
    cache.upsert("other/web-9", _pod_model("web-9", "web", "other"))
    assert [p.name for p in cache.select("default", "app=web")] == ["web-0", "web-1", "web-2"]
    assert [p.name for p in cache.select("default", "app=web,tier!=back")] == ["web-1", "web-2"]
    assert [p.name for p in cache.select("default", "tier in (back)")] == ["web-0"]
    cache.upsert("default/web-1", _pod_model("web-1", "db"))
    cache.delete("default/web-2", None)
    assert [p.name for p in cache.select("default", "app=web")] == ["web-0"]
    assert cache.select("default", "") == [] and cache.select("default", "app in (") == []
    assert len(cache) == 4


_LABELS = st.dictionaries(st.sampled_from(["app", "tier", "hash"]), st.sampled_from(["a", "b", "c"]), max_size=3)
_OPS = st.lists(st.tuples(st.sampled_from(["ns1", "ns2"]), st.integers(0, 7), st.one_of(st.none(), _LABELS)),
                min_size=1, max_size=40)
_SELECTORS = ["app=a", "app=b,tier=a", "tier!=b", "hash in (a,c)", "app", "!tier", "app=a,hash notin (b)", "tier=c"]


@settings(max_examples=200, deadline=None)
@given(_OPS)
def test_pod_cache_selects_as_a_scan_of_its_pods_would(ops):
    """Pods come, change labels and go (None: deleted); every selector picks what filtering every cached pod of
    the namespace picks, in name order (the index holds label groups, not pods)."""
    from pyhpa.core.selector import matches, parse_selector

    cache, live = PodCache(), {}
    for ns, i, labels in ops:
        name = f"p-{i}"
        if labels is None:
            cache.delete(f"{ns}/{name}", None)
            live.pop((ns, name), None)
        else:
            d = pod(name, "x")
            d["metadata"]["namespace"], d["metadata"]["labels"] = ns, dict(labels)
            cache.upsert(f"{ns}/{name}", PodResource.from_dict(d))
            live[(ns, name)] = labels
        for space in ("ns1", "ns2"):
            for text in _SELECTORS:
                reqs = parse_selector(text)
                want = sorted(n for (s2, n), lab in live.items() if s2 == space and matches(reqs, lab))
                assert [p.name for p in cache.select(space, text)] == want, (space, text)
    assert len(cache) == len(live)


# ----- informer -----------------------------------------------------------------------------------------------
class ExpiringListWatch:
    """First watch fails with 410 Gone; the re-list then shows one object deleted and one added."""

    def __init__(self) -> None:
        self.lists = 0
        self.objects = [{"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "1"}},
                        {"metadata": {"namespace": "ns", "name": "b", "resourceVersion": "2"}}]

    async def list(self):
        self.lists += 1
        if self.lists == 2:
            self.objects = [self.objects[0], {"metadata": {"namespace": "ns", "name": "c", "resourceVersion": "5"}}]
        return list(self.objects), str(self.lists * 10)

    async def watch(self, rv):
        if self.lists == 1:
            raise ApiFailure(410, "too old resource version", "Expired")
        yield "ADDED", {"metadata": {"namespace": "ns", "name": "d", "resourceVersion": "11"}}
        await asyncio.Event().wait()


async def test_informer_relists_when_the_watch_expires():
    lw, seen, deleted = ExpiringListWatch(), [], []
    informer = Informer("test", lw, lambda k, o: seen.append(k), lambda k, o: deleted.append(k))
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(lambda: "ns/d" in seen, what="the watch after the re-list")
    finally:
        task.cancel()
    assert lw.lists == 2 and informer.relists == 2
    assert seen == ["ns/a", "ns/b", "ns/c", "ns/d"]  # "a" unchanged on re-list: not delivered twice
    assert deleted == ["ns/b"]


class FailingListWatch:
    """Lists fine; each watch fails at once, except the ``healthy`` ones, which run 200 s (on ``now``) first; once
    ``steps`` are spent the watch runs on without an error."""

    def __init__(self, steps: list[str], now: list[float]) -> None:
        self.steps, self.now = steps, now

    async def list(self):
        return [], "1"

    async def watch(self, rv):
        if not self.steps:
            await asyncio.Event().wait()
        if self.steps.pop(0) == "healthy":
            self.now[0] += 200.0
        raise ApiFailure(500, "connection broken")
        yield  # an async generator, as a watch is


async def test_informer_backs_off_doubling_and_starts_over_after_two_minutes_without_an_error():
    """client-go's reflector backs off 0.8 s doubling to 30 s and resets after 2 minutes without an error
    (``NewExponentialBackoffManager(..., 2*time.Minute, ...)``): a watch that broke once, after hours of working,
    is retried after the first delay, not the last one an earlier streak of errors reached."""
    now, delays = [0.0], []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        now[0] += seconds
        await asyncio.sleep(0)

    steps = ["fail"] * 5 + ["healthy", "fail", "fail"]
    informer = Informer("test", FailingListWatch(steps, now), lambda k, o: None, lambda k, o: None,
                        backoff=(1.0, 8.0), clock=lambda: now[0], sleep=sleep)
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(lambda: len(delays) == 8, what="eight retries")
    finally:
        task.cancel()
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 1.0, 2.0, 4.0]
    assert informer.last_error == "connection broken"


# ----- settings and parsing ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,flag", [({"workers": 0}, "--workers"), ({"sync_period_seconds": 0}, "--sync-period"),
                                         ({"jitter": 1.0}, "--jitter"), ({"tolerance": -1}, "--tolerance"),
                                         ({"metrics_timeout_seconds": 0}, "--metrics-timeout")])
def test_settings_reject_bad_flags(kwargs, flag):
    with pytest.raises(InputError) as err:
        Settings(**kwargs)
    assert err.value.field == flag


def test_object_settings_override_the_flags():
    own = object_settings({"tolerance": 0.05, "syncPeriodSeconds": 30, "cpuInitializationPeriodSeconds": 60})
    base = ControllerConfig()
    cfg = effective_config(base, own)
    assert (cfg.tolerance, cfg.cpu_initialization_period_seconds, cfg.initial_readiness_delay_seconds) == (0.05, 60, 30)
    assert effective_config(base, ObjectSettings()) == base
    with pytest.raises(InputError) as err:
        object_settings({"tolerance": "lots"})
    assert err.value.field == "spec.tolerance"


def test_parse_autoscaler_reads_spec_settings_and_queries():
    obj = autoscaler("web", "web", [
        {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                                          "name": "main"},
                                      "metric": {"name": "hits"}, "target": {"type": "Value", "value": "100"}}},
    ], syncPeriodSeconds=7, tolerance=0.2)
    obj["metadata"].update(uid="u1", generation=3, resourceVersion="42")
    a = parse_autoscaler(obj, Settings())
    assert a.error is None and a.hpa.max_replicas == 10
    assert a.sync_period_seconds == 7 and a.config.tolerance == 0.2
    assert (a.key, a.generation, a.resource_version, a.scale_target_ref.kind) == ("default/web", 3, "42", "Deployment")
    assert [(q.type, q.name, q.metric_selector) for q in a.queries] == [("Pods", "rps", "verb=GET"),
                                                                        ("Object", "hits", "")]
    assert a.queries[1].described == ("networking.k8s.io/v1", "Ingress", "main")


def test_an_autoscaler_keeps_what_is_stored_packed_and_gives_fresh_copies():
    """status, status.pyhpa and spec are kept packed (JSON deflated with a preset dictionary) and read back as
    they were stored; changing a copy read changes nothing kept."""
    from pyhpa.controller.cache.autoscaler import packed

    obj = autoscaler("web", "web")
    status = {"observedGeneration": 1, "desiredReplicas": 3, "conditions": [
        {"type": "ScalingActive", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
         "reason": "ValidMetricFound", "message": "the HPA was able to successfully calculate a replica count from "
                                                   "cpu resource utilization (percentage of request)"}]}
    memory = {"recommendations": [{"timestamp": "2026-01-01T00:00:00.250000Z", "replicas": 3}],
              "scaleUpEvents": [], "scaleDownEvents": []}
    obj["status"] = dict(status, pyhpa=memory)
    a = parse_autoscaler(obj, Settings())
    assert (a.status, a.memory_status, a.spec) == (status, memory, obj["spec"])
    assert len(a.status_packed) < len(str(status)) / 3  # the words statuses repeat are in the preset dictionary
    copy = a.status
    copy["desiredReplicas"] = 9
    assert a.status == status
    assert a.same_status(status, memory) and not a.same_status(dict(status, desiredReplicas=9), memory)
    assert a.same_status(dict(status, desiredReplicas=3.0), memory)  # compared as values, as the API echoes them
    assert not a.same_status(status, None)
    a.writing = (packed(dict(status, desiredReplicas=4)), packed(memory))  # a write in flight
    assert a.same_status(dict(status, desiredReplicas=4), memory, in_flight=True)
    assert not a.same_status(dict(status, desiredReplicas=4), memory)


async def test_the_echo_of_a_status_write_in_flight_is_not_parsed_again():
    """The informer may deliver a status write's echo before the write's answer: the cached autoscaler is then
    kept (only its resourceVersion moves), as for the echo that comes after."""
    from pyhpa.controller.cache.autoscaler import packed

    c = Controller(Settings(health_port=None), StubCluster(), StubMetrics())
    obj = autoscaler("web", "web")
    obj["metadata"].update(uid="u1", generation=1, resourceVersion="1")
    c._on_autoscaler("default/web", obj)
    a = c.autoscalers["default/web"]
    status = {"observedGeneration": 1, "desiredReplicas": 2}
    a.writing = (packed(status), None)
    echo = dict(obj, metadata=dict(obj["metadata"], resourceVersion="2"), status=status)
    c._on_autoscaler("default/web", echo)
    assert c.autoscalers["default/web"] is a and a.resource_version == "2"
    a.writing = None
    c._on_autoscaler("default/web", dict(echo, status={"desiredReplicas": 5}))  # someone else's write
    assert c.autoscalers["default/web"] is not a and c.autoscalers["default/web"].status == {"desiredReplicas": 5}


def test_parse_autoscaler_keeps_an_invalid_spec_as_an_error():
    a = parse_autoscaler(autoscaler("bad", "web", min_replicas=5, max_replicas=2), Settings())
    assert a.hpa is None and "minReplicas (5) is greater than maxReplicas (2)" in a.error
    assert "spec.minReplicas" in a.error


def test_memory_round_trips_through_the_status_section():
    m = Memory([(1_800_000_000.0, 3)], [(1_800_000_010.0, 2)], [])
    assert memory_from_status(memory_to_status(m)) == m
    assert memory_from_status(None) == Memory()


# ----- status writer ------------------------------------------------------------------------------------------
async def _stub_autoscaler(cluster: StubCluster):
    stored = cluster.put_autoscaler(autoscaler("web", "web"))
    return parse_autoscaler(stored, Settings())


async def test_status_is_written_only_when_it_changed():
    cluster = StubCluster()
    a = await _stub_autoscaler(cluster)
    writer = StatusWriter(Writer(cluster), InProcessMemory())
    status = {"desiredReplicas": 3, "currentReplicas": 3}
    assert await writer.write(a, status) is True
    assert await writer.write(a, dict(status)) is False
    assert cluster.status_writes == 1


async def test_status_write_retries_a_conflict_with_the_fresh_version():
    cluster = StubCluster()
    a = await _stub_autoscaler(cluster)
    cluster.autoscaler_objects["default/web"]["metadata"]["resourceVersion"] = "999"  # changed behind our back
    writer = StatusWriter(Writer(cluster), InProcessMemory())
    assert await writer.write(a, {"desiredReplicas": 1}) is True
    assert writer.conflicts == 1 and cluster.status_writes == 1


async def test_status_write_conflict_after_a_spec_change_asks_for_a_new_sync():
    cluster = StubCluster()
    a = await _stub_autoscaler(cluster)
    cluster.put_autoscaler(autoscaler("web", "web", max_replicas=20))  # generation 2
    writer = StatusWriter(Writer(cluster), InProcessMemory())
    with pytest.raises(StaleSpec):
        await writer.write(a, {"desiredReplicas": 1})


async def test_writes_go_through_the_gate():
    cluster = StubCluster()
    a = await _stub_autoscaler(cluster)
    allowed = {"value": False}
    writer = Writer(cluster, gate=lambda: allowed["value"])
    with pytest.raises(WritesDisabled):
        await StatusWriter(writer, InProcessMemory()).write(a, {"desiredReplicas": 1})
    assert cluster.status_writes == 0 and writer.refused == 1


# ----- metrics ------------------------------------------------------------------------------------------------
def test_monitor_uses_upstream_names_and_labels():
    m = Monitor()
    m.reconciliation("scale_up", "none", 0.1)
    m.metric_computation("none", "internal", 0.05, "Resource")
    m.desired("ns", "web", 5)
    m.num_autoscalers.set(1)
    text = generate_latest(m.registry).decode()
    assert 'horizontal_pod_autoscaler_controller_reconciliations_total{action="scale_up",error="none"} 1.0' in text
    assert ('horizontal_pod_autoscaler_controller_reconciliation_duration_seconds_bucket'
            '{action="scale_up",error="none",le="0.128"} 1.0') in text
    assert ('horizontal_pod_autoscaler_controller_metric_computation_total'
            '{action="none",error="internal",metric_type="Resource"} 1.0') in text
    assert "horizontal_pod_autoscaler_controller_metric_computation_duration_seconds_count" in text
    assert 'horizontal_pod_autoscaler_controller_desired_replicas{hpa_name="web",namespace="ns"} 5.0' in text
    assert "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 1.0" in text


# ----- the controller on stubs ----------------------------------------------------------------------------------
def stub_world(replicas: int = 3, usage: str = "200m", **spec):
    cluster, metrics = StubCluster(), StubMetrics()
    cluster.put_autoscaler(autoscaler("web", "web", **spec))
    cluster.put_scale("default", "Deployment", "web", replicas, "app=web")
    items = []
    for i in range(replicas):
        cluster.put_pod(PodResource.from_dict(pod(f"web-{i}", "web")))
        items.append({"metadata": {"name": f"web-{i}", "namespace": "default"}, "timestamp": "2026-01-01T00:00:00Z",
                      "window": "30s", "containers": [{"name": "app", "usage": {"cpu": usage}}]})
    metrics.resource[("default", "app=web")] = {"kind": "PodMetricsList", "items": items}
    return cluster, metrics


async def test_controller_on_stubs_decides_with_the_core_and_writes_what_it_says():
    cluster, metrics = stub_world()
    controller = Controller(Settings(health_port=None, sync_period_seconds=60), cluster, metrics)
    async with running(controller) as results:
        await wait_for(lambda: results, what="the first sync")
        await wait_for(lambda: cluster.events, what="the event")
    result = results[0]
    expected = decide(replace(result.gathered.inputs, memory=Memory()))
    assert result.decision.desired_replicas == expected.desired_replicas == 6
    assert cluster.scales[("default", "Deployment", "web")][0] == 6
    status = cluster.autoscaler_objects["default/web"]["status"]
    assert status["desiredReplicas"] == 6 and status["currentReplicas"] == 3
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        (c.type, c.status, c.reason) for c in expected.conditions]
    assert [(e.reason, e.note) for e in cluster.events] == [(e.reason, e.message) for e in expected.events]
    assert result.action == "scale_up" and result.error == "none"


async def test_per_object_sync_period_is_used_for_requeues():
    cluster, metrics = stub_world(replicas=2, usage="100m", syncPeriodSeconds=1)
    controller = Controller(Settings(health_port=None, sync_period_seconds=3600), cluster, metrics)
    async with running(controller) as results:
        await wait_for(lambda: len(results) >= 2, timeout=30, what="a resync on the object's own 1 s period")
    assert all(r.decision.desired_replicas == 2 for r in results)


async def test_deleted_autoscaler_is_forgotten():
    cluster, metrics = stub_world()
    controller = Controller(Settings(health_port=None), cluster, metrics)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        await wait_for(lambda: len(controller.memory) == 1, what="the first sync")
        cluster.delete_autoscaler("default", "web")
        await wait_for(lambda: not controller.autoscalers, what="the delete")
        assert len(controller.memory) == 0 and len(controller.queue) == 0
        text = generate_latest(controller.monitor.registry).decode()
        assert "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 0.0" in text
        assert 'desired_replicas{hpa_name="web"' not in text
    finally:
        stop.set()
        await task


async def test_missing_target_gives_failed_get_scale_and_retries_with_backoff():
    cluster, metrics = stub_world()
    cluster.scales.clear()
    controller = Controller(Settings(health_port=None, retry_base_seconds=0.05), cluster, metrics)
    async with running(controller) as results:
        await wait_for(lambda: len(results) >= 3, what="retries")
        await wait_for(lambda: cluster.events, what="the event")
    assert all(r.retry and r.error == "internal" for r in results)
    cond = {c["type"]: c for c in cluster.autoscaler_objects["default/web"]["status"]["conditions"]}
    assert cond["AbleToScale"]["status"] == "False" and cond["AbleToScale"]["reason"] == "FailedGetScale"
    # said once: the lasting cause is remembered in status.warnings, its repeats are not sent again
    assert [e.reason for e in cluster.events] == ["FailedGetScale"] and cluster.event_patches == 0
    warnings = cluster.autoscaler_objects["default/web"]["status"]["warnings"]
    assert [w["reason"] for w in warnings] == ["FailedGetScale"]


async def test_invalid_spec_gets_a_condition_and_an_event_and_others_keep_syncing():
    cluster, metrics = stub_world()
    cluster.put_autoscaler(autoscaler("bad", "web", min_replicas=5, max_replicas=2))
    controller = Controller(Settings(health_port=None), cluster, metrics)
    results = {}
    controller.reconciler.on_synced = lambda r: results.setdefault(r.key, r)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        await wait_for(lambda: len(results) == 2, what="both syncs")
        await wait_for(lambda: len(cluster.events) == 2, what="both events")
    finally:
        stop.set()
        await task
    assert results["default/bad"].error == "spec" and results["default/web"].decision.desired_replicas == 6
    cond = cluster.autoscaler_objects["default/bad"]["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ScalingActive", "False", "InvalidSpec")
    assert {e.reason for e in cluster.events} == {"InvalidSpec", "SuccessfulRescale"}


async def test_shutdown_finishes_the_sync_in_flight_and_flushes_events():
    cluster, metrics = stub_world()
    gate = asyncio.Event()
    original = metrics.resource_metrics

    async def slow_metrics(ns, selector):
        await gate.wait()
        return await original(ns, selector)

    metrics.resource_metrics = slow_metrics
    controller = Controller(Settings(health_port=None), cluster, metrics)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    await wait_for(lambda: controller.queue is not None and controller.queue.processing == 1, what="a sync in flight")
    stop.set()
    await asyncio.sleep(0.05)
    assert not task.done() and not controller.ready  # waiting for the sync in flight
    gate.set()
    await asyncio.wait_for(task, 30)
    assert cluster.scales[("default", "Deployment", "web")][0] == 6 and len(cluster.events) == 1
