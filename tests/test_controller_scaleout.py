"""Scale out: fewer requests per sync with the same decisions (Scale cache, shared namespace metrics lists),
the shard membership on Leases, rendezvous hashing, and the load metrics. Through the HTTP double."""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections import Counter

import pytest
from controller_util import CRD, ControllerTask, autoscaler, deployment, pod, wait_for
from hypothesis import given
from hypothesis import strategies as st
from lightkube import codecs
from prometheus_client import generate_latest
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.adapters.kubeconfig import load_config
from pyhpa.adapters.metrics_api import resource_samples
from pyhpa.cli.main import app
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler, TargetRef
from pyhpa.controller.cache.scalecache import ScaleCache
from pyhpa.controller.kube.api import ApiFailure, HttpMetrics, LightkubeCluster
from pyhpa.controller.kube.transport import SyncContext, note_request, set_current_sync
from pyhpa.controller.scaleout.shards import (
    GROUP_LABEL,
    VIEW_ANNOTATION,
    ShardMembership,
    ShardSettings,
    lease_name,
    owner,
)
from pyhpa.controller.sync.nsmetrics import (
    SHARE_SECONDS,
    NamespaceMetrics,
    namespace_phase,
    phase_points,
    resync_delay,
)


def cluster_of(kd: KubeDouble) -> LightkubeCluster:
    return LightkubeCluster(load_config(server=kd.url), 10.0, "pyhpa-test", trust_env=False)


# ----- rendezvous hashing ---------------------------------------------------------------------------------------
def test_rendezvous_moves_only_the_share_of_a_member_that_joins_or_leaves():
    keys = [f"ns-{i % 37}/hpa-{i}" for i in range(6000)]
    three = {k: owner(k, ["a", "b", "c"]) for k in keys}
    counts = Counter(three.values())
    assert set(counts) == {"a", "b", "c"} and min(counts.values()) > 1800  # about a third each
    four = {k: owner(k, ["d", "c", "b", "a"]) for k in keys}  # order of the members does not matter
    moved = {k for k in keys if four[k] != three[k]}
    assert all(four[k] == "d" for k in moved) and 1300 < len(moved) < 1700  # only to the newcomer, a quarter
    two = {k: owner(k, ["a", "c"]) for k in keys}
    assert all(two[k] == three[k] for k in keys if three[k] != "b")  # only b's keys move when b leaves
    assert owner("x/y", []) is None


def test_a_namespace_keeps_one_phase_and_namespaces_spread_over_the_period():
    phases = [namespace_phase(f"ns-{i}", 15.0) for i in range(500)]
    assert all(0 <= p < 15.0 for p in phases) and min(phases) < 0.5 and max(phases) > 14.5
    assert namespace_phase("ns-1", 15.0) == namespace_phase("ns-1", 15.0) != namespace_phase("ns-1", 30.0)
    last, following = phase_points("ns-1", 15.0, 1_000_000.0)
    assert last <= 1_000_000.0 < following == last + 15.0 and (last - namespace_phase("ns-1", 15.0)) % 15.0 == 0


@given(st.floats(1.0, 300.0), st.just(0.0) | st.floats(0.01, 0.9), st.floats(1e9, 2e9), st.text(min_size=1, max_size=20))
def test_a_resync_lands_within_the_jitter_and_on_the_phase_when_it_can(period, jitter, started, namespace):
    """Every resync within period * (1 +- jitter) (``--jitter``); one that starts on its phase point stays on it;
    one off its phase comes back to it within ceil(0.5 / jitter) periods (upstream: every period exactly)."""
    delay = resync_delay(namespace, period, started, jitter)
    assert period * (1 - jitter) - 1e-6 <= delay <= period * (1 + jitter) + 1e-6
    if jitter == 0:
        assert delay == period
        return
    on_phase = phase_points(namespace, period, started)[0]
    assert resync_delay(namespace, period, on_phase, jitter) == pytest.approx(period, abs=1e-6)
    t = started
    for _ in range(math.ceil(0.5 / jitter) + 1):
        t += resync_delay(namespace, period, t, jitter)
    assert min(abs(t - p) for p in phase_points(namespace, period, t)) < 1e-4


# ----- shard membership on Leases -------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_membership_join_delay_expiry_and_the_write_gate(kd):
    clock = Clock()
    s = dict(namespace="default", group="g", lease_duration_seconds=4.0, renew_deadline_seconds=3.0,
             retry_period_seconds=1.0)
    a = ShardMembership(kd.async_client(), ShardSettings(identity="a", **s), clock)
    b = ShardMembership(kd.async_client(), ShardSettings(identity="b", **s), clock)
    assert not a.may_write() and not a.owns("x/y")
    await a._create()
    await a.tick()  # alone: nobody else to acknowledge it, it joins at once and owns everything
    assert a.members == ("a",) and a.joined.is_set() and a.may_write() and a.owns("x/y")
    clock.now += 4.0
    await a.tick()
    assert a.joined.is_set() and a.may_write() and a.owns("x/y")
    keys = [f"ns/k{i}" for i in range(200)]

    await b._create()  # b joins: a sees it at its next list and gives b's share up at once ...
    await b.tick()
    assert not b.joined.is_set()  # a has not acknowledged b yet
    await a.tick()
    assert a.members == b.members == ("a", "b")
    mine_a = {k for k in keys if a.owns(k)}
    assert mine_a == {k for k in keys if owner(k, ["a", "b"]) == "a"} and 0 < len(mine_a) < len(keys)
    assert not any(b.owns(k) for k in keys) and not b.may_write()  # ... while b waits for a's acknowledgement
    lease = kd.get_object("coordination.k8s.io/v1", "leases", "default", lease_name("g", "a"))
    assert json.loads(lease["metadata"]["annotations"][VIEW_ANNOTATION]) == ["a", "b"]  # published at once
    clock.now += 1.0
    await b.tick()  # b reads a's view with b in it: joined one retry period later, not a lease duration
    assert b.joined.is_set() and {k for k in keys if b.owns(k)} == set(keys) - mine_a
    assert b.handover_since == 1004.0  # what it gains may have gone unsynced since its Lease was created
    clock.now += 1.0
    await a.tick()
    await b.tick()

    clock.now += 2.9  # a lists nothing for longer than the renew deadline: its view may be stale, it stops
    assert a.may_write()
    clock.now += 0.2
    assert not a.may_write()
    await a.tick()
    assert a.may_write()

    clock.now += 3.9  # b stops renewing (it died): a keeps it until its Lease is unchanged for a lease duration
    await a.tick()
    assert a.members == ("a", "b")
    clock.now += 0.2
    await a.tick()
    assert a.members == ("a",) and all(a.owns(k) for k in keys)
    assert a.handover_since == pytest.approx(1009.1 - 1.0)  # a retry period before b's last renewal a saw
    assert kd.get_object("coordination.k8s.io/v1", "leases", "default", lease_name("g", "b")) is None  # deleted
    await b.tick()  # b comes back: its Lease is gone, it cannot renew; past the deadline it has lost
    assert b.lost.is_set() and not b.may_write() and not b.owns(keys[0])
    lease = kd.get_object("coordination.k8s.io/v1", "leases", "default", lease_name("g", "a"))
    assert lease["metadata"]["labels"] == {GROUP_LABEL: "g"} and lease["spec"]["holderIdentity"] == "a"
    await a.release()
    assert kd.get_object("coordination.k8s.io/v1", "leases", "default", lease_name("g", "a")) is None
    assert not a.may_write()
    assert kd.invalid_requests == []


def test_a_gained_autoscaler_is_synced_now_only_if_its_phase_point_came_during_the_hand_over():
    """The replica that gains autoscalers syncs at once those whose namespace's phase point came after the
    hand-over began (widened by a retry period and jitter * period), the longest unsynced first, and any with
    schedule windows; every other one at its next phase point: one period after its last owner synced it."""
    from types import SimpleNamespace

    from pyhpa.controller.scaleout.shards import Sharding

    period, wall, clock = 15.0, 1_800_000_000.0, Clock()
    settings = ShardSettings("default", "g", "b", 15.0, 10.0, 2.0)
    sharding = Sharding(None, settings, clock)
    sharding.membership.handover_since = clock.now - 4.0  # the joiner's Lease was created 4 s ago
    sharding.membership.members = ("a", "b")  # "a" gave them up
    hpa = SimpleNamespace(schedules=())
    autoscalers = {f"ns-{i}/web": SimpleNamespace(namespace=f"ns-{i}", sync_period_seconds=period, hpa=hpa)
                   for i in range(300)}
    autoscalers["ns-0/cron"] = SimpleNamespace(namespace="ns-0", sync_period_seconds=period,
                                               hpa=SimpleNamespace(schedules=("a window",)))
    sharding.controller = SimpleNamespace(settings=SimpleNamespace(jitter=0.1), clock=lambda: wall,
                                          autoscalers=autoscalers)
    plan = sharding._gain_schedule(sorted(autoscalers))
    assert sorted(key for _, key in plan) == sorted(autoscalers)  # each queued once
    assert plan[0] == (0.0, "ns-0/cron")
    window = 4.0 + 2.0 + 0.1 * period
    now = [key for delay, key in plan if delay == 0.0 and key != "ns-0/cron"]
    lasts = [phase_points(autoscalers[key].namespace, period, wall)[0] for key in now]
    assert lasts == sorted(lasts) and all(wall - window <= last <= wall for last in lasts)  # oldest first
    assert 0.2 * 300 < len(now) < 0.7 * 300
    for delay, key in plan:
        last, following = phase_points(autoscalers[key].namespace, period, wall)
        if key not in now and key != "ns-0/cron":
            assert last < wall - window and delay == pytest.approx(following - wall) and 0 < delay <= period
    sharding.membership.members = ("b",)  # alone (a start, a restart): nobody alive synced them, all now
    assert all(delay == 0.0 for delay, _ in sharding._gain_schedule(sorted(autoscalers)))
    sharding.membership.members = ("a", "b")
    sharding.membership.handover_since = -math.inf  # a departed member never seen renewing: all now
    assert all(delay == 0.0 for delay, _ in sharding._gain_schedule(sorted(autoscalers)))
    sharding.membership.handover_since = clock.now - 4.0
    sharding.controller.settings.jitter = 0.0  # no phase: every gained autoscaler now
    assert all(delay == 0.0 for delay, _ in sharding._gain_schedule(sorted(autoscalers)))


async def test_an_identity_in_use_is_refused(kd):
    from pyhpa.controller.scaleout.shards import ShardLost

    s = ShardSettings("default", "g", "same", 4.0, 3.0, 1.0)
    first = ShardMembership(kd.async_client(), s)
    await first._create()
    with pytest.raises(ShardLost, match="identity 'same' is in use"):
        await ShardMembership(kd.async_client(), s)._create()
    assert len(kd.list_objects("coordination.k8s.io/v1", "leases", "default")) == 1


def test_shards_flag_values():
    runner = CliRunner()
    bad = runner.invoke(app, ["run", "--server", "http://127.0.0.1:9", "--shards", "3"])
    assert bad.exit_code == 2 and "error: --shards: '3' is not one of '1', 'auto'" in bad.output  # a choice
    both = runner.invoke(app, ["run", "--server", "http://127.0.0.1:9", "--shards", "auto", "--leader-elect"])
    assert both.exit_code == 2 and "do not combine it with --leader-elect" in both.output


# ----- one metrics.k8s.io list per namespace --------------------------------------------------------------------
async def test_shared_namespace_list_answers_each_selector_as_the_selector_query_does(kd):
    rng = random.Random(7)
    values = {"app": ["web", "api", "db"], "tier": ["a", "b"], "canary": ["yes"]}
    for i in range(60):
        labels = {k: rng.choice(v) for k, v in values.items() if rng.random() < 0.8}
        body = pod(f"p-{i:02d}", "x", ns="shop")
        body["metadata"]["labels"] = labels
        kd.put_object(body)
        if rng.random() < 0.9:  # some pods have no metrics
            kd.set_pod_metrics("shop", f"p-{i:02d}", {"app": {"cpu": f"{rng.randint(1, 400)}m"}})
    selectors = ["app=web", "app=web,tier=a", "app in (api,db)", "tier notin (a)", "canary", "!canary,app=api",
                 "app=web,tier!=b", "app=nothing", "app=db,canary,tier in (a,b)"]
    cluster = cluster_of(kd)
    direct = HttpMetrics(cluster.raw, cluster.discovery)
    shared = NamespaceMetrics(direct, lambda ns: 60, lambda ns, name: None, lambda ns, sel: 30, window=60.0)
    try:
        expected = {sel: await direct.resource_metrics("shop", sel) for sel in selectors}
        kd.clear_requests()
        got = {sel: await shared.resource_metrics("shop", sel) for sel in selectors}
    finally:
        await cluster.close()

    def strip(answer):  # the double stamps each item with the time of the answer
        return [{k: v for k, v in item.items() if k != "metadata"} | {"name": item["metadata"]["name"]}
                for item in answer["items"]]

    for sel in selectors:
        assert strip(got[sel]) == strip(expected[sel]), sel
        assert resource_samples(got[sel], "cpu") == resource_samples(expected[sel], "cpu"), sel
    # the first selector is asked as such (is the namespace worth listing?), then one list for the others
    queries = [q.get("labelSelector") for m, p, q in kd.requests if p.endswith("/namespaces/shop/pods")]
    assert queries == ["app=web", None]
    assert (shared.selector_queries, shared.namespace_lists, shared.shared) == (1, 1, 7)


async def test_a_small_share_of_a_big_namespace_keeps_its_selector_queries(kd):
    cluster = cluster_of(kd)
    direct = HttpMetrics(cluster.raw, cluster.discovery)
    for i in range(4):
        kd.put_object(pod(f"w-{i}", "web" if i < 2 else "api"))
        kd.set_pod_metrics("default", f"w-{i}", {"app": {"cpu": "100m"}})
    shared = NamespaceMetrics(direct, lambda ns: 1000, lambda ns, name: None,  # 1,000 pods in the namespace
                              lambda ns, sel: 2)
    try:
        for _ in range(3):
            await shared.resource_metrics("default", "app=web")
            await shared.resource_metrics("default", "app=api")
    finally:
        await cluster.close()
    assert (shared.selector_queries, shared.namespace_lists) == (6, 0)


class Unlabelled:
    """A metrics API whose PodMetrics carry no labels (the pod cache's labels decide then)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def resource_metrics(self, namespace: str, selector: str) -> dict:
        self.calls.append(selector)
        items = [{"metadata": {"name": n, "namespace": namespace}, "timestamp": "2026-01-01T00:00:00Z",
                  "window": "30s", "containers": [{"name": "app", "usage": {"cpu": "10m"}}]} for n in ("a", "b", "c")]
        if selector:  # the API's own answer to a selector: a and b are app=web
            items = [i for i in items if i["metadata"]["name"] in ("a", "b") and selector == "app=web"
                     or i["metadata"]["name"] == "c" and selector == "app=api"]
        return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}


async def test_items_without_labels_are_picked_by_the_pod_cache():
    labels = {"a": {"app": "web"}, "b": {"app": "web"}, "c": {"app": "api"}}
    api = Unlabelled()
    shared = NamespaceMetrics(api, lambda ns: 3, lambda ns, name: labels.get(name), lambda ns, sel: 2, window=60.0)
    answers = [await shared.resource_metrics("ns", sel) for sel in ("app=web", "app=api", "app=web", "app=api")]
    assert api.calls == ["app=web", ""]
    assert [[i["metadata"]["name"] for i in a["items"]] for a in answers] == [["a", "b"], ["c"], ["a", "b"], ["c"]]


class Slow(Unlabelled):
    """Unlabelled's answers, each after ``release`` is set (a list in flight), or a failure."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.release, self.fail = asyncio.Event(), fail

    async def resource_metrics(self, namespace: str, selector: str) -> dict:
        self.calls.append(selector)
        note_request()  # as the transport does for each request
        await self.release.wait()
        if self.fail:
            raise ApiFailure(503, "metrics API unavailable")
        return await Unlabelled.resource_metrics(Unlabelled(), namespace, selector)


async def test_a_list_read_ahead_is_the_one_the_syncs_then_take():
    labels = {"a": {"app": "web"}, "b": {"app": "web"}, "c": {"app": "api"}}
    api = Slow()
    shared = NamespaceMetrics(api, lambda ns: 3, lambda ns, name: labels.get(name), lambda ns, sel: 2, window=60.0)
    assert shared.prefetch("ns", ["app=web"]) is False  # one selector: the namespace is not worth a list
    assert api.calls == []
    assert shared.prefetch("ns", ["app=web", "app=api"]) is True  # asked now, not awaited
    await asyncio.sleep(0)
    assert api.calls == [""] and shared.read_ahead == 1
    assert shared.prefetch("ns", ["app=web", "app=api"]) is False  # within its window: not asked again

    async def sync(selector: str) -> tuple[dict, int]:
        counted = SyncContext(selector)  # as SyncLoad.begin does in a worker
        set_current_sync(counted)
        answer = await shared.resource_metrics("ns", selector)
        return answer, counted.requests

    syncs = [asyncio.ensure_future(sync(sel)) for sel in ("app=web", "app=api")]
    await asyncio.sleep(0.01)
    assert not any(s.done() for s in syncs)  # they wait for the list read ahead...
    api.release.set()
    (web, web_requests), (api_answer, api_requests) = await asyncio.gather(*syncs)
    assert api.calls == [""]  # ...and ask nothing of their own
    assert [[i["metadata"]["name"] for i in a["items"]] for a in (web, api_answer)] == [["a", "b"], ["c"]]
    assert (web_requests, api_requests) == (1, 0)  # its one request counts for the first sync that takes it
    assert (shared.namespace_lists, shared.shared, shared.selector_queries) == (1, 2, 0)


async def test_a_failed_list_read_ahead_fails_its_syncs_and_nothing_else(caplog):
    api = Slow(fail=True)
    shared = NamespaceMetrics(api, lambda ns: 3, lambda ns, name: {"app": "web"}, lambda ns, sel: 2, window=60.0)
    assert shared.prefetch("ns", ["app=web", "app=api"]) is True
    api.release.set()
    with pytest.raises(ApiFailure, match="metrics API unavailable"):
        await shared.resource_metrics("ns", "app=web")
    assert shared.prefetch("other", ["app=web", "app=api"]) is True  # a list no sync ever takes
    for _ in range(3):
        await asyncio.sleep(0)
    del shared
    import gc

    gc.collect()
    assert "never retrieved" not in caplog.text


async def test_the_next_namespace_list_is_read_ahead_and_counted_for_the_syncs_it_serves(kd):
    client = kd.async_client()
    keys = []
    for ns in ("ns-a", "ns-b", "ns-c"):
        kd.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for name in ("x", "y", "z"):
            await client.create(codecs.from_dict(deployment(name, 2, ns=ns)))
            for i in range(2):
                kd.put_object(pod(f"{name}-{i}", name, ns=ns))
                kd.set_pod_metrics(ns, f"{name}-{i}", {"app": {"cpu": "100m"}})  # 50 %: steady at 2
            await client.create(HorizontalAutoscaler(autoscaler(name, name, ns=ns)))
            keys.append(f"{ns}/{name}")
    async with ControllerTask(kd, sync_period_seconds=3600) as run:
        await wait_for(lambda: {r.key for r in run.results} >= set(keys), what="the first round")
        c = run.controller
        await asyncio.sleep(SHARE_SECONDS + 0.1)  # the first round's lists are past their window
        kd.clear_requests()
        requests, ahead, results = c.load.requests_total, c.shared_metrics.read_ahead, len(run.results)
        for key in keys:  # every autoscaler due at once, namespace after namespace
            c.queue.add(key)
        await wait_for(lambda: len(run.results) >= results + len(keys), what="the second round")
        lists = [q for m, path, q in kd.requests if "/apis/metrics.k8s.io/" in path]
        assert all(r.decision is not None and not r.decision.rescale for r in run.results[results:])
        assert c.shared_metrics.read_ahead > ahead  # ns-b's list was asked while ns-a's autoscalers synced
        assert 3 <= len(lists) <= len(keys)
        assert len(kd.requests) == len(lists)  # steady: no Scale read, no status written
        assert c.load.requests_total - requests == len(lists)  # each counted for one sync, read ahead or not


# ----- the Scale cache ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,plural", [("Deployment", "deployments"), ("StatefulSet", "statefulsets"),
                                         ("ReplicaSet", "replicasets")])
async def test_cached_scale_is_what_the_scale_subresource_says(kd, kind, plural):
    client = kd.async_client()
    body = deployment("web", 3, kind=kind)
    body["spec"]["selector"] = {"matchLabels": {"zone": "z1", "app": "web"}, "matchExpressions": [
        {"key": "track", "operator": "In", "values": ["stable", "canary"]},
        {"key": "debug", "operator": "DoesNotExist"}, {"key": "blue", "operator": "NotIn", "values": ["x", "a"]}]}
    body["spec"]["template"]["metadata"]["labels"] |= {"zone": "z1", "track": "stable"}
    if kind == "StatefulSet":
        body["spec"]["serviceName"] = "web"
    await client.create(codecs.from_dict(body))
    cluster = cluster_of(kd)
    cache = ScaleCache(cluster.listwatch)
    tasks = cache.tasks()
    ref = TargetRef("apps/v1", kind, "web")
    try:
        await wait_for(lambda: cache.synced, what="the cache to list")
        live, _ = await cluster.get_scale("default", ref)
        assert cache.get("default", ref) == live
        assert live.selector == "app=web,blue notin (a,x),!debug,track in (canary,stable),zone=z1"
        obj = kd.get_object("apps/v1", plural, "default", "web")
        obj["spec"]["replicas"], obj["status"] = 5, {"replicas": 4}
        kd.put_object(obj)
        await wait_for(lambda: cache.get("default", ref).spec_replicas == 5, what="the watch to update the cache")
        assert cache.get("default", ref) == (await cluster.get_scale("default", ref))[0]
        assert cache.get("default", TargetRef("apps/v1", kind, "absent")) is None  # live GET: not found
        assert cache.get("default", TargetRef("v1", "ReplicationController", "web")) is None  # not cached
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await cluster.close()


async def test_steady_syncs_read_no_scale_and_a_rescale_reads_it_live_first(kd):
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", 2)))
    for i in range(2):
        kd.put_object(pod(f"web-{i}", "web"))
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "100m"}})  # 50 %: steady at 2
    await client.create(HorizontalAutoscaler(autoscaler("web", "web")))
    async with ControllerTask(kd, sync_period_seconds=0.2) as run:
        await run.syncs(3, "default/web")
        kd.clear_requests()
        await run.syncs(5, "default/web")
        assert kd.count_requests("GET", r"/scale$") == 0  # the Deployment informer has the Scale
        assert kd.count_requests("PUT", r"/scale$") == 0
        # the cache goes stale: the watch of Deployments is cut and cannot come back, then the Deployment moves
        blocked = kd.add_fault("GET", r"/deployments$", status=503, query_regex="watch=")
        assert kd.cut_watches("deployments", abrupt=True) == 1
        obj = kd.get_object("apps/v1", "deployments", "default", "web")
        obj["spec"]["replicas"] = 3
        kd.put_object(obj)
        await run.syncs(2, "default/web")
        assert run.controller.scales.get("default", TargetRef("apps/v1", "Deployment", "web")).spec_replicas == 2
        kd.clear_requests()
        for i in range(2):
            kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})  # 100 %: wants 4
        await wait_for(lambda: kd.get_object("apps/v1", "deployments", "default", "web")["spec"]["replicas"] == 4,
                       what="the scale-up")
        # the sync that wrote the Scale records its result after the write returns: wait for that too
        rescaled = await wait_for(lambda: [r for r in run.results if r.decision is not None and r.decision.rescale],
                                  what="the rescaling sync's result")
        assert len(rescaled) == 1 and rescaled[0].gathered.inputs.scale.spec_replicas == 3  # decided again from the live Scale
        assert rescaled[0].decision.current_replicas == 3
        assert kd.count_requests("PUT", r"/scale$") == 1
        kd.remove_fault(blocked)
        text = generate_latest(run.controller.monitor.registry).decode()
    samples = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
               if line.startswith("pyhpa_") and "{" not in line}  # the unlabelled series
    assert samples["pyhpa_sync_lag_seconds_count"] >= 10 and samples["pyhpa_sync_api_requests_count"] >= 10
    assert samples["pyhpa_shard_autoscalers"] == 1 and samples["pyhpa_shard_members"] == 1
    assert kd.invalid_requests == []


def test_shipped_rbac_lets_the_scale_cache_list_the_workload_kinds():
    import yaml

    from pyhpa.cli.run_cmd import manifest_text

    role = next(d for d in yaml.safe_load_all(manifest_text("rbac"))
                if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "pyhpa-controller")
    apps = [r for r in role["rules"] if r["apiGroups"] == ["apps"]]
    assert apps == [{"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "replicasets"],
                     "verbs": ["list", "watch"]}]


async def test_ambiguous_selectors_are_found_across_shards(kd):
    """Two autoscalers on the same pods, each in another replica's share: each replica knows the other
    share's selectors from the Scale cache, so both report AmbiguousSelector and neither scales."""
    names = [f"hpa-{i}" for i in range(40)]
    a = next(n for n in names if owner(f"default/{n}", ["x", "y"]) == "x")
    b = next(n for n in names if owner(f"default/{n}", ["x", "y"]) == "y")
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", 2)))
    for i in range(2):
        kd.put_object(pod(f"web-{i}", "web"))
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})  # 100 %: either alone would scale
    for name in (a, b):
        await client.create(HorizontalAutoscaler(autoscaler(name, "web")))
    lease = dict(shards="auto", sync_period_seconds=0.5, leader_elect_namespace="default", leader_elect_name="amb",
                 leader_elect_lease_duration_seconds=2.0, leader_elect_renew_deadline_seconds=1.5,
                 leader_elect_retry_period_seconds=0.25)
    async with ControllerTask(kd, leader_elect_identity="x", **lease) as x, \
            ControllerTask(kd, leader_elect_identity="y", **lease) as y:
        def reasons(name):
            status = (kd.get_object("pyhpa.dev/v1alpha1", "horizontalautoscalers", "default", name) or {}).get("status")
            return {c["type"]: c["reason"] for c in (status or {}).get("conditions") or []}

        def both_joined() -> bool:
            return all(t.controller.shards is not None and t.controller.shards.membership.joined.is_set()
                       and len(t.controller.shards.membership.members) == 2 for t in (x, y))

        # the first to join is alone for a moment (it syncs both); once both joined, each syncs its own share
        await wait_for(both_joined, timeout=30, what="both replicas joined")
        # a sync started before the view changed has ended (none in flight), then the results start afresh
        await wait_for(lambda: x.controller.queue.processing == y.controller.queue.processing == 0, timeout=30,
                       what="no sync in flight")
        x.results.clear()
        y.results.clear()
        await wait_for(lambda: reasons(a).get("ScalingActive") == reasons(b).get("ScalingActive") == "AmbiguousSelector",
                       timeout=30, what="both autoscalers ambiguous")
        await x.syncs(3, f"default/{a}")
        await y.syncs(3, f"default/{b}")
        assert {r.key for r in x.results} == {f"default/{a}"} and {r.key for r in y.results} == {f"default/{b}"}
        assert kd.get_object("apps/v1", "deployments", "default", "web")["spec"]["replicas"] == 2
    assert kd.invalid_requests == []


def test_run_exits_1_with_one_line_when_the_shard_lease_is_lost(kube_double_thread):
    kd = kube_double_thread
    kd.register_crd(CRD)
    kd.add_fault("PUT", r"/leases/shardy-shard-", status=503)  # creating works; every renewal fails
    result = CliRunner().invoke(app, [
        "run", "--server", kd.url, "--shards", "auto", "--leader-elect-resource-namespace", "default",
        "--leader-elect-resource-name", "shardy", "--leader-elect-identity", "solo", "--leader-elect-lease-duration",
        "1.5", "--leader-elect-renew-deadline", "1", "--leader-elect-retry-period", "0.2", "--health-port", "-1"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert lines == [f"error: lost shard Lease default/{lease_name('shardy', 'solo')} (identity solo); exiting"]
    assert kd.invalid_requests == []
