"""HPAs reconciled per second by the live controller (``pyhpa run``), 10,000 autoscalers of 10 pods each.

Prints ``name=value`` lines, per API and worker count::

    api=stub workers=1 hpas=10000 reconciles_per_second=1234
    api=http workers=5 hpas=10000 reconciles_per_second=1234
    api=http workers=5 hpas=10000 first_round_seconds=12.3
    api=http workers=5 hpas=10000 steady_round_seconds=6.7
    api=http workers=5 hpas=10000 requests_per_sync=0.1
    api=http workers=5 hpas=10000 controller_cpu_ms_per_sync=0.45

and, for ``--replicas 2`` (default), the replicas run at upstream's 15 s period (``--shard-period``; one replica; it
restarts; a second joins; the first leaves)::

    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=1 rss_mb=150
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=1 status_writes_per_round=0
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=1 events_per_round=0
    api=http workers=5 hpas=10000 sync_period_seconds=15 restart=1 caches_synced_seconds=20.1
    api=http workers=5 hpas=10000 sync_period_seconds=15 restart=1 first_round_seconds=8.2
    api=http workers=5 hpas=10000 sync_period_seconds=15 restart=1 status_writes=0
    api=http workers=5 hpas=10000 sync_period_seconds=15 restart=1 events=0
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=2 rss_mb=150
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=2 syncs_per_second=667
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=2 sync_lag_p50_seconds=0.01
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=2 sync_lag_p99_seconds=2.5
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=2 status_writes_per_round=0
    api=http workers=5 hpas=10000 sync_period_seconds=15 replicas=2 events_per_round=0
    api=http workers=5 hpas=10000 sync_period_seconds=15 join=1 max_sync_gap_seconds=3.4
    api=http workers=5 hpas=10000 sync_period_seconds=15 leave=1 max_sync_gap_seconds=3.9

``api=stub``: the controller against in-memory API stubs (``pyhpa.controller.kube.stubs``), so the number is
the controller's own cost: queue, caches, metric parsing, the decision core, status comparison.
``api=http``: against the Kubernetes API double (kubedouble) in a separate process over real HTTP
(lightkube's client, aiohttp transport), as ``pyhpa run`` is wired: the targets' Scale from the
Deployment informer (``pyhpa.controller.cache.scalecache``), one metrics.k8s.io list per namespace and tick
(``pyhpa.controller.sync.nsmetrics``).

Each autoscaler has one CPU Utilization metric (50 %), its Deployment 10 pods at exactly 50 % of their
request, so decisions are "no change"; 10 autoscalers per namespace. Caches are synced first (not
timed). Then two timed rounds make every autoscaler due at once: round 1 is each autoscaler's first
sync (its status is written: one more request per sync, once) — ``first_round_seconds`` —, round 2 a
steady-state resync (status unchanged, nothing written), what the controller does every sync period —
``steady_round_seconds``, ``reconciles_per_second`` (10,000 / round 2), ``requests_per_sync`` (API
requests per sync in round 2, counted in the controller's transport) and
``controller_cpu_ms_per_sync`` (the controller process' CPU time in round 2 per sync; both rounds on
stderr); with ``--api real`` also ``apiserver_cpu_ms_per_sync`` (kube-apiserver's CPU time in round 2 per sync, from
/proc; each component's, both rounds, on stderr), and, measured on the same control plane just before,
kube-apiserver's floor for the same number of first status writes (``floor_seconds``: ``benchmarks/apiserver_floor.py``'s
case ``object=minimal request=update``, 8 in flight) and ``first_round_over_floor`` (``first_round_seconds`` /
``floor_seconds``; the goal is at most 1.5).

The replicas run starts the double — every autoscaler with a fallback (``failureThreshold: 3``, 10 replicas),
one in ten without pod metrics, so its metric fails at every sync and it holds at its fallback — and one
``pyhpa run --shards auto`` process (``bench-0``); once every autoscaler synced and things settled (6 periods),
``rss_mb`` (its resident memory, /proc) and ``status_writes_per_round`` / ``events_per_round`` (status PUTs and
Event creates and patches the double received during one period). Then it restarts: SIGTERM, and a new process
(a new identity, as a restarted pod has): ``restart=1 caches_synced_seconds`` (start to ``/readyz``: its lists),
``first_round_seconds`` (from then until it has synced every autoscaler: the goal is one period) and the
``status_writes`` and ``events`` the double received meanwhile (the goal is none: memory and warnings said are
in the status). Then a second replica joins; once it has its share and settled: ``rss_mb`` (the larger of the
two), over ``--shard-seconds`` (default 30) ``syncs_per_second`` (both replicas' ``/metrics``; the period asks for
hpas / period) and the percentiles of ``pyhpa_sync_lag_seconds`` (due time to start), and a steady round's
writes. Then the first replica stops (SIGTERM). Each replica logs every sync it completed (this script's
``--replica-sync-log``, which wraps ``pyhpa run``); ``max_sync_gap_seconds`` is the longest time any
autoscaler went without a sync during the join (from the second replica's start to the end of its settling)
and during the leave (from SIGTERM to 6 periods later): the goal is at most 2 periods. CPU seconds per
process go to stderr. ``--hpas``/``--workers``/``--api``/``--replicas`` narrow the run (``--replicas 1``: the first
replica and its restart only; ``--replicas 0``: none); ``--shard-period 3`` is the stress run of earlier releases
(10,000 autoscalers at 3 s need 3,333 syncs/s: more than two replicas and the double get from this 2-core
machine).

With ``--api real --replicas 1`` (or 2) the replicas run follows the in-process run on the same kube-apiserver
(``RealApi``; lines ``api=real``): the autoscalers are the world's, without fallbacks, their statuses written by
the in-process controller's first round, so the first replica's own first round is already a restart (another
process, another identity); then it restarts as above. Status and Event writes are kube-apiserver's own counts
(``apiserver_request_total``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from world import (  # noqa: E402  (the world both the double and the real API server are filled with)
    PODS_PER_HPA,
    autoscaler,
    deployment,
    failing,
    names,
    pod,
)


def pod_metrics_list(i: int, stamp: str) -> dict:
    ns, name = names(i)
    items = [{"metadata": {"name": f"{name}-{j}", "namespace": ns}, "timestamp": stamp, "window": "30s",
              "containers": [{"name": "app", "usage": {"cpu": "100m"}}]} for j in range(PODS_PER_HPA)]
    return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}


# ----- measurement -----------------------------------------------------------------------------------------
class Rounds:
    """What ``measure`` found: seconds, controller CPU seconds and API requests of round 1 and round 2."""

    def __init__(self) -> None:
        self.first = self.second = self.cpu1 = self.cpu2 = self.listing = 0.0
        self.requests1 = self.requests2 = 0


async def measure(controller, n: int, stop: asyncio.Event, at=None) -> Rounds:
    """Round 1 (first syncs) and round 2 (all due again at once) once caches are synced; ``at(label)`` is called
    when round 1 starts ("start") and each round ends ("round1", "round2")."""
    done = {"count": 0}
    round_done = asyncio.Event()
    target = {"count": n}

    def synced(result) -> None:
        done["count"] += 1
        if done["count"] >= target["count"]:
            round_done.set()

    controller.reconciler.on_synced = synced
    listed = time.perf_counter()
    task = asyncio.create_task(controller.run(stop))
    scales = getattr(controller, "scales", None)
    while not controller.ready or (scales is not None and not scales.synced):
        if task.done():
            task.result()
        await asyncio.sleep(0.001)
    r = Rounds()
    r.listing = time.perf_counter() - listed
    load = controller.load
    if at:
        at("start")
    t0, c0, q0 = time.perf_counter(), time.process_time(), load.requests_total
    await round_done.wait()
    if at:
        at("round1")
    r.first, r.cpu1, r.requests1 = time.perf_counter() - t0, time.process_time() - c0, load.requests_total - q0
    round_done.clear()
    target["count"] = done["count"] + n
    t1, c1, q1 = time.perf_counter(), time.process_time(), load.requests_total
    for key in list(controller.autoscalers):
        controller.queue.add(key)
    await round_done.wait()
    if at:
        at("round2")
    r.second, r.cpu2, r.requests2 = time.perf_counter() - t1, time.process_time() - c1, load.requests_total - q1
    stop.set()
    await task
    print(f"  caches listed in {r.listing:.1f}s (not timed); "
          f"controller CPU per sync: round 1 {r.cpu1 / n * 1e3:.2f} ms, round 2 {r.cpu2 / n * 1e3:.2f} ms; "
          f"API requests per sync: round 1 {r.requests1 / n:.2f}, round 2 {r.requests2 / n:.2f}", file=sys.stderr)
    return r


def report(api: str, workers: int, n: int, r: Rounds, extra: str = "") -> None:
    prefix = f"api={api} workers={workers} hpas={n}"
    print(f"{prefix} reconciles_per_second={n / r.second:.0f}", flush=True)
    if api in ("http", "real"):
        print(f"{prefix} first_round_seconds={r.first:.3f}", flush=True)
        print(f"{prefix} steady_round_seconds={r.second:.3f}", flush=True)
        print(f"{prefix} requests_per_sync={r.requests2 / n:.2f}", flush=True)
        print(f"{prefix} controller_cpu_ms_per_sync={r.cpu2 / n * 1e3:.3f}", flush=True)
    print(f"  [{api} workers={workers}] round 1 (first syncs, status written): {r.first:.2f}s = {n / r.first:.0f}/s; "
          f"round 2 (steady resync): {r.second:.2f}s = {n / r.second:.0f}/s{extra}", file=sys.stderr, flush=True)


# ----- stub API ----------------------------------------------------------------------------------------------
def stub_world(n: int):
    from lightkube.resources.core_v1 import Pod

    from pyhpa.controller.kube.stubs import StubCluster, StubMetrics

    cluster, metrics = StubCluster(), StubMetrics()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for i in range(n):
        ns, name = names(i)
        cluster.put_autoscaler(autoscaler(i))
        cluster.put_scale(ns, "Deployment", name, PODS_PER_HPA, f"app={name}")
        for j in range(PODS_PER_HPA):
            cluster.put_pod(Pod.from_dict(pod(i, j)))
        metrics.resource[(ns, f"app={name}")] = pod_metrics_list(i, stamp)
    return cluster, metrics


async def run_stub(workers: int, n: int, world) -> None:
    from pyhpa.controller import Controller, Settings

    cluster, metrics = world
    controller = Controller(Settings(workers=workers, health_port=None), cluster, metrics)
    r = await measure(controller, n, asyncio.Event())
    report("stub", workers, n, r, f"; status writes so far {cluster.status_writes}")


# ----- HTTP API (kubedouble in a child process) -----------------------------------------------------------------
def serve_double(n: int, conn, stop_event, fallback: bool = False) -> None:
    """Child process: a kubedouble seeded with the benchmark objects, until ``stop_event``. Answers "counts" on
    ``conn`` with the status writes and Event writes (creates and patches) since the last "counts".

    Two test-only costs of the double are taken out so the number measures the controller: schema
    validation of written bodies (jsonschema in Python; a real API server does it in microseconds) and
    the metrics API's scan of every stored pod per call (replaced by a per-namespace index).
    """
    import yaml

    from kubedouble import KubeDouble
    from kubedouble.selectors import labels_match, parse_label_selector

    async def main() -> None:
        kd = KubeDouble(validate=False)
        kd.register_crd(yaml.safe_load((Path(__file__).resolve().parent.parent / "deploy" / "crd.yaml").read_text()))
        by_ns: dict[str, list[dict]] = {}
        for i in range(n):
            ns, name = names(i)
            kd.put_object(deployment(i))
            kd.put_object(autoscaler(i, fallback))
            for j in range(PODS_PER_HPA):
                stored = kd.put_object(pod(i, j))
                by_ns.setdefault(ns, []).append(stored)
                if not failing(i, fallback):
                    kd.set_pod_metrics(ns, f"{name}-{j}", {"app": {"cpu": "100m"}})
        store = kd.metrics

        def pod_metrics_list(ns, query):
            reqs = parse_label_selector(query.get("labelSelector"))
            items = [store._pod_metrics_item(p, store.pod_metrics[(ns, p["metadata"]["name"])])
                     for p in by_ns.get(ns, []) if labels_match(reqs, p["metadata"].get("labels"))
                     and (ns, p["metadata"]["name"]) in store.pod_metrics]
            return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}

        store.pod_metrics_list = pod_metrics_list
        async with kd:
            conn.send(kd.url)
            kd.clear_requests()
            while not stop_event.is_set():
                await asyncio.sleep(0.1)
                if conn.poll():
                    conn.recv()
                    status = sum(1 for m, path, _ in kd.requests if m == "PUT" and path.endswith("/status"))
                    events = sum(1 for m, path, _ in kd.requests
                                 if m in ("POST", "PATCH") and path.startswith("/apis/events.k8s.io/"))
                    kd.clear_requests()
                    conn.send((status, events))

    asyncio.run(main())


async def run_http(workers: int, n: int, url: str) -> None:
    from pyhpa.adapters.kubeconfig import load_config
    from pyhpa.controller import Controller, Settings
    from pyhpa.controller.kube.api import HttpMetrics, LightkubeCluster

    settings = Settings(workers=workers, health_port=None, list_chunk_size=0, api_timeout_seconds=60)
    cluster = LightkubeCluster(load_config(server=url), settings.api_timeout_seconds, settings.field_manager,
                               settings.list_chunk_size, http="aiohttp", trust_env=False)
    controller = Controller(settings, cluster, HttpMetrics(cluster.raw, cluster.discovery))
    try:
        r = await measure(controller, n, asyncio.Event())
    finally:
        await cluster.close()
    report("http", workers, n, r, f"; status writes {controller.status.writes}")


class Double:
    """A kubedouble child process seeded with ``n`` autoscalers (``url`` once it serves)."""

    def __init__(self, n: int, fallback: bool = False):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.stop = ctx.Event()
        self.proc = ctx.Process(target=serve_double, args=(n, child, self.stop, fallback), daemon=True)
        self.proc.start()
        if not self.conn.poll(900):
            raise RuntimeError("the kubedouble process did not start within 900 s")
        self.url = self.conn.recv()
        self.connect = ["--server", self.url]  # how a replica (``pyhpa run``) reaches it
        self.name = "double"

    def counts(self) -> tuple[int, int]:
        """(status writes, Event creates and patches) since the previous call."""
        self.conn.send("counts")
        return self.conn.recv()

    def close(self) -> None:
        self.stop.set()
        self.proc.join(30)
        if self.proc.is_alive():
            self.proc.terminate()


# ----- the real API server (kube-apiserver v1.37.2, benchmarks/real_world.py) -------------------------------------
async def run_real(workers: int, n: int, kubeconfig: str, pids: dict[str, int]) -> dict[str, float]:
    from pyhpa.adapters.kubeconfig import load_config
    from pyhpa.controller import Controller, Settings
    from pyhpa.controller.kube.api import HttpMetrics, LightkubeCluster

    settings = Settings(workers=workers, health_port=None, api_timeout_seconds=60)
    cluster = LightkubeCluster(load_config(kubeconfig=kubeconfig), settings.api_timeout_seconds, settings.field_manager,
                               settings.list_chunk_size, http="aiohttp", trust_env=False)
    controller = Controller(settings, cluster, HttpMetrics(cluster.raw, cluster.discovery))
    cpu: dict[str, dict[str, float]] = {}
    try:
        r = await measure(controller, n, asyncio.Event(),
                          at=lambda label: cpu.__setitem__(label, {c: _cpu_seconds(p) for c, p in pids.items()}))
    finally:
        await cluster.close()
    report("real", workers, n, r, f"; status writes {controller.status.writes}")
    rss = _rss_mb(os.getpid())
    for name in pids:  # where the time goes: each component's CPU per sync in each round
        one = (cpu["round1"][name] - cpu["start"][name]) / n * 1e3
        two = (cpu["round2"][name] - cpu["round1"][name]) / n * 1e3
        print(f"  [real] {name}: CPU per sync round 1 {one:.2f} ms, round 2 {two:.2f} ms", file=sys.stderr, flush=True)
    print(f"api=real workers={workers} hpas={n} rss_mb={rss:.0f}", flush=True)
    steady_apiserver = (cpu["round2"]["kube-apiserver"] - cpu["round1"]["kube-apiserver"]) / n * 1e3
    print(f"api=real workers={workers} hpas={n} apiserver_cpu_ms_per_sync={steady_apiserver:.3f}", flush=True)
    return {"first_round_seconds": r.first, "reconciles_per_second": n / r.second,
            "controller_cpu_ms_per_sync": r.cpu2 / n * 1e3, "requests_per_sync": r.requests2 / n, "rss_mb": rss}


class RealApi:
    """The seeded real control plane (``real_world.RealWorld``) as the replicas run's world: replicas reach it by the
    admin kubeconfig; its status writes (PUT and PATCH of ``horizontalautoscalers/status``) and Event writes (POST and
    PATCH of ``events``) are read from kube-apiserver's own ``apiserver_request_total``."""

    name = "kube-apiserver"

    def __init__(self, world):
        from types import SimpleNamespace

        from controlplane import bin_dir

        self.world, self.kubectl = world, bin_dir() / "kubectl"
        self.connect = ["--kubeconfig", world.kubeconfig]
        self.proc = SimpleNamespace(pid=world.pids["kube-apiserver"])
        self._last = self._totals()

    def _totals(self) -> tuple[float, float]:
        from prometheus_client.parser import text_string_to_metric_families

        text = subprocess.run([str(self.kubectl), "--kubeconfig", self.world.kubeconfig, "get", "--raw", "/metrics"],
                              capture_output=True, text=True, check=True, timeout=60).stdout
        writes = events = 0.0
        for family in text_string_to_metric_families(text):
            if family.name != "apiserver_request":
                continue
            for sample in family.samples:
                labels = sample.labels
                if sample.name != "apiserver_request_total" or labels.get("verb") not in ("PUT", "PATCH", "POST",
                                                                                          "APPLY"):
                    continue
                if labels.get("resource") == "horizontalautoscalers" and labels.get("subresource") == "status":
                    writes += sample.value
                elif labels.get("resource") == "events" and labels.get("verb") != "PUT":
                    events += sample.value
        return writes, events

    def counts(self) -> tuple[int, int]:
        """(status writes, Event creates and patches) since the previous call."""
        now = self._totals()
        (w0, e0), self._last = self._last, now
        return round(now[0] - w0), round(now[1] - e0)


#: requests in flight of the floor measured before the real run (``benchmarks/apiserver_floor.py``'s default)
FLOOR_CONCURRENCY = 8


def real_round(workers: int, n: int, versus: str | None = None, steady_seconds: float = 30.0,
               upstream_qps: float | None = None, replicas: int = 0, shard_period: float = 15.0,
               shard_seconds: float = 30.0) -> None:
    """The controller (in this process) against kube-apiserver v1.37.2 seeded with the world (a child process);
    then (``replicas`` 1 or 2) the replicas run on the same API server (``replicas_run``: its first replica starts
    where this controller left, a restart, then it restarts; with 2 a second joins and the first leaves); with
    ``versus="upstream"``, then upstream's HPA controller alone on the same API server (``versus_upstream``)."""
    from real_world import RealWorld

    started = time.monotonic()
    world = RealWorld(n).start()
    print(f"  [real] control plane seeded in {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    try:
        floor = world.call("floor", n, FLOOR_CONCURRENCY)
        prefix = f"api=real workers={workers} hpas={n}"
        print(f"{prefix} floor_seconds={floor['seconds']:.3f}", flush=True)
        print(f"  [floor] object=minimal request=update writes={n} seconds={floor['seconds']:.2f} "
              f"apiserver_cpu_ms_per_write={floor['apiserver_cpu_ms_per_write']:.2f} "
              f"etcd_cpu_ms_per_write={floor['etcd_cpu_ms_per_write']:.2f} (load average {os.getloadavg()[0]:.1f})",
              file=sys.stderr, flush=True)
        ours = asyncio.run(run_real(workers, n, world.kubeconfig, world.pids))
        print(f"{prefix} first_round_over_floor={ours['first_round_seconds'] / floor['seconds']:.2f}", flush=True)
        for name, pid in world.pids.items():
            print(f"  [real] {name}: rss {_rss_mb(pid):.0f} MB", file=sys.stderr, flush=True)
        if replicas:
            replicas_run(n, workers, shard_period, shard_seconds, replicas, world=RealApi(world))
        if versus == "upstream":
            theirs = versus_upstream(world, workers, n, steady_seconds, upstream_qps)
            side_by_side_table(workers, n, ours, theirs)
    finally:
        world.close()


def _kcm_counts(text: str) -> dict[str, float]:
    """Sums of the kube-controller-manager series the race reads."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {"reconciliations": 0.0, "requests": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "horizontal_pod_autoscaler_controller_reconciliations_total":
                out["reconciliations"] += sample.value
            elif sample.name == "rest_client_requests_total":
                out["requests"] += sample.value
    return out


def _kcm_read(world, timeout: float = 60.0) -> dict[str, float]:
    """``_kcm_counts`` of kube-controller-manager's /metrics, asked again while it answers something else (just after
    its restart it may answer a Status: its delegated authorization is not ready yet)."""
    deadline = time.monotonic() + timeout
    while True:
        text = world.call("kcm-metrics")
        try:
            return _kcm_counts(text)
        except ValueError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"kube-controller-manager's /metrics answered no metrics: {text[:200]}") from None
            time.sleep(0.5)


def versus_upstream(world, workers: int, n: int, steady_seconds: float, qps: float | None = None) -> dict[str, float]:
    """Upstream's HPA controller (kube-controller-manager v1.37.2, ``--concurrent-horizontal-pod-autoscaler-syncs``
    = ``workers``, sync period 1 s so its queue stays full: its steady rate is its throughput, as pyhpa's round 2
    is) on native HPA twins of the same autoscalers, same pods and metrics, alone on the API server. Its first
    round is from its first reconciliation to its n-th (its caches listed before, as pyhpa's first round is timed
    after its lists); steady syncs/s, CPU per sync (the kube-controller-manager process) and API requests per sync
    (its client's rest_client_requests_total) over ``steady_seconds``; RSS of the process, and of the same process
    without the HPA controller (``rss_mb_without_hpa``). ``qps``: its ``--kube-api-qps`` (burst twice that); None
    keeps its default (20 requests/s per controller client, which caps it at about 10 syncs/s: 2 requests each)."""
    baseline_rss = _rss_mb(world.pids["kube-controller-manager"])
    print(f"  [upstream] seeding {n} native HPAs and starting kube-controller-manager with its HPA controller",
          file=sys.stderr, flush=True)
    pid = world.call("upstream", workers, "1s", qps)
    first_seen = done_at = None
    deadline = time.monotonic() + 1800
    while done_at is None and time.monotonic() < deadline:
        count = _kcm_read(world)["reconciliations"]
        now = time.monotonic()
        if count > 0 and first_seen is None:
            first_seen = now
        if count >= n:
            done_at = now
        time.sleep(0.2)
    if first_seen is None or done_at is None:
        raise RuntimeError("upstream's HPA controller did not reconcile every HPA within 30 minutes")
    a, cpu_a, t_a = _kcm_read(world), _cpu_seconds(pid), time.monotonic()
    time.sleep(steady_seconds)
    b, cpu_b, t_b = _kcm_read(world), _cpu_seconds(pid), time.monotonic()
    syncs = b["reconciliations"] - a["reconciliations"]
    out = {"first_round_seconds": done_at - first_seen, "reconciles_per_second": syncs / (t_b - t_a),
           "controller_cpu_ms_per_sync": (cpu_b - cpu_a) / max(syncs, 1) * 1e3,
           "requests_per_sync": (b["requests"] - a["requests"]) / max(syncs, 1), "rss_mb": _rss_mb(pid),
           "rss_mb_without_hpa": baseline_rss, "qps": qps or 0}
    prefix = f"api=real controller=upstream workers={workers} hpas={n}" + (f" kube_api_qps={qps:g}" if qps else "")
    for key, value in out.items():
        if key == "qps":
            continue
        print(f"{prefix} {key}={value:.3f}" if key.endswith(("seconds", "sync")) else f"{prefix} {key}={value:.0f}",
              flush=True)
    return out


def side_by_side_table(workers: int, n: int, ours: dict[str, float], theirs: dict[str, float]) -> None:
    """The race's figures in one table (stderr, markdown: docs/controller.md and docs/exactness.md quote it)."""
    rows = [("first round, seconds", "first_round_seconds", "{:.1f}"),
            ("steady syncs/s", "reconciles_per_second", "{:.0f}"),
            ("controller CPU ms per sync", "controller_cpu_ms_per_sync", "{:.2f}"),
            ("API requests per sync", "requests_per_sync", "{:.2f}"), ("RSS, MB", "rss_mb", "{:.0f}")]
    qps = f", --kube-api-qps {theirs['qps']:g}" if theirs.get("qps") else ", its default --kube-api-qps 20"
    print(f"\n| {n} autoscalers x 10 pods, {workers} workers | pyhpa run | upstream HPA controller{qps} |\n|---|---|---|",
          file=sys.stderr)
    for label, key, fmt in rows:
        print(f"| {label} | {fmt.format(ours[key])} | {fmt.format(theirs[key])} |", file=sys.stderr)
    print(f"(upstream's kube-controller-manager without its HPA controller: {theirs['rss_mb_without_hpa']:.0f} MB)",
          file=sys.stderr, flush=True)


def http_round(workers: int, n: int) -> None:
    """One controller run against a freshly seeded double (so every run's round 1 writes every status)."""
    double = Double(n)
    try:
        asyncio.run(run_http(workers, n, double.url))
    finally:
        double.close()


# ----- replicas: pyhpa run processes at a 3 s period, a join and a leave -------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _scrape(port: int) -> dict:
    import httpx2
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx2.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _total(metrics: dict, name: str) -> float:
    return sum(v for (k, _), v in metrics.items() if k == name)


def _lag_quantile(before: list[dict], after: list[dict], q: float) -> float:
    """The q-quantile of pyhpa_sync_lag_seconds between two scrapes of every replica (bucket upper bound)."""
    buckets: dict[float, float] = {}
    for b, a in zip(before, after):
        for (name, labels), value in a.items():
            if name == "pyhpa_sync_lag_seconds_bucket":
                le = float(dict(labels)["le"])
                buckets[le] = buckets.get(le, 0.0) + value - b.get((name, labels), 0.0)
    total = buckets.get(float("inf"), 0.0)
    for le in sorted(buckets):
        if total and buckets[le] >= q * total:
            return le
    return float("nan")


def _replica(root: Path, connect: list[str], i: int, workers: int, period: float, port: int,
             log: Path) -> subprocess.Popen:
    """``pyhpa run --shards auto`` as replica ``bench-<i>`` reaching its API server by ``connect`` (``--server URL``
    or ``--kubeconfig FILE``), each sync logged to ``log`` (``--replica-sync-log``)."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--replica-sync-log", str(log),
         "run", *connect, "--shards", "auto",
         "--leader-elect-identity", f"bench-{i}", "--leader-elect-resource-namespace", "default",
         "--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
         "--leader-elect-retry-period", "1", "--workers", str(workers), "--sync-period", str(period),
         "--api-timeout", "60", "--health-host", "127.0.0.1", "--health-port", str(port), "--log-level", "warning"],
        env=dict(os.environ, PYTHONPATH=str(root)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _replica_main(argv: list[str]) -> None:
    """A replica process: ``pyhpa run`` (argv) with every completed sync logged as "<epoch s> <key>" lines to the
    file that follows ``--replica-sync-log`` (a sync refused by the shard gate is not one)."""
    import atexit

    from pyhpa.controller.sync.reconciler import Reconciler

    out = open(argv[0], "w", buffering=1)  # noqa: SIM115 - closed at exit; line-buffered: the run reads it live
    atexit.register(out.close)
    original = Reconciler.sync

    async def sync(self, key: str):
        result = await original(self, key)
        if result is not None and not result.message.startswith("writes are disabled"):
            out.write(f"{time.time():.3f} {key}\n")
        return result

    Reconciler.sync = sync
    sys.argv = ["pyhpa", *argv[1:]]
    from pyhpa.cli.main import main as cli

    cli()


def _sync_times(logs: list[Path]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    for log in logs:
        for line in log.read_text().splitlines():
            t, _, key = line.partition(" ")
            if key:
                times.setdefault(key, []).append(float(t))
    for ts in times.values():
        ts.sort()
    return times


def max_sync_gap(times: dict[str, list[float]], start: float, end: float) -> tuple[float, str]:
    """The longest time any autoscaler went without a sync within [start, end] (a gap that overlaps the window;
    one still open at ``end`` counts up to ``end``), and whose."""
    worst, who = 0.0, "-"
    for key, ts in times.items():
        prev = None
        for t in ts:
            if prev is not None and t > start and prev < end and t - prev > worst:
                worst, who = t - prev, key
            prev = t
        if prev is not None and prev < end and end - prev > worst:
            worst, who = end - prev, key
    return worst, who


class SyncLog:
    """Reads a replica's sync log (``--replica-sync-log``: "<epoch s> <key>" lines) as it grows."""

    def __init__(self, path: Path):
        self.path, self._offset, self._rest = path, 0, ""

    def new(self) -> list[tuple[float, str]]:
        """The (time, key) of the syncs logged since the last call."""
        if not self.path.exists():
            return []
        with self.path.open() as f:
            f.seek(self._offset)
            text = f.read()
            self._offset = f.tell()
        lines = (self._rest + text).split("\n")
        self._rest = lines.pop()
        out = []
        for line in lines:
            t, _, key = line.partition(" ")
            if key:
                out.append((float(t), key))
        return out


def _wait_synced(log: SyncLog, procs: list, n: int, since: float = 0.0, timeout: float = 1800) -> float:
    """Wait until the replica of ``log`` has synced ``n`` distinct autoscalers after epoch ``since`` (read from its
    sync log: scraping /metrics would cost the replica the rendering of every autoscaler's series); returns
    the epoch time of the sync that completed the round."""
    started, keys = time.monotonic(), set()
    while True:
        for t, key in log.new():
            if t >= since:
                keys.add(key)
                if len(keys) >= n:
                    return t
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a replica exited")
        if time.monotonic() - started > timeout:
            raise RuntimeError("the replicas did not sync every autoscaler in time")
        time.sleep(0.2)


def _steady_round(double: Double, n: int, period: float, prefix: str) -> None:
    """Status writes and Event writes of one steady round (one sync period), per round."""
    double.counts()
    time.sleep(period)
    writes, events = double.counts()
    print(f"{prefix} status_writes_per_round={writes}", flush=True)
    print(f"{prefix} events_per_round={events}", flush=True)


def _ready(port: int) -> bool:
    import httpx2

    try:
        return httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
    except Exception:  # noqa: BLE001 - not serving yet
        return False


def _restart(root: Path, double: Double, procs: list[subprocess.Popen], n: int, workers: int, period: float,
             port: int, log: Path, base: str) -> None:
    """The replica ``procs[0]`` stops (SIGTERM) and a new process (a new identity, as a restarted pod has) takes its
    place on ``port``: prints its caches-synced time, its first round (seconds) and the status writes and events
    of that round (the restart's ``restart=1`` lines)."""
    procs[0].terminate()
    procs[0].wait(60)
    double.counts()
    restarted = time.time()
    procs[0] = _replica(root, double.connect, 2, workers, period, port, log)
    while not _ready(port):
        if procs[0].poll() is not None:
            raise RuntimeError("the restarted replica exited")
        time.sleep(0.05)
    ready = time.time()
    resynced = _wait_synced(SyncLog(log), procs, n)
    writes, events = double.counts()
    prefix = f"{base} restart=1"
    print(f"{prefix} caches_synced_seconds={ready - restarted:.1f}", flush=True)
    # the replica may have synced everything before the poll above saw it ready: then it took no time after
    print(f"{prefix} first_round_seconds={max(0.0, resynced - ready):.1f}", flush=True)
    print(f"{prefix} status_writes={writes}", flush=True)
    print(f"{prefix} events={events}", flush=True)
    print(f"  [restart] caches synced {ready - restarted:.1f}s after start, every autoscaler synced "
          f"{resynced - ready:.1f}s after that ({(resynced - ready) / period:.2f} periods); status writes and "
          f"events until then: {writes}, {events}", file=sys.stderr, flush=True)


def _join(root: Path, double: Double, procs: list[subprocess.Popen], ports: list[int], log: Path, n: int,
          workers: int, period: float, seconds: float, base: str, settle: float) -> tuple[str, float, float]:
    """A second replica joins ``procs`` (on ``ports[1]``) and takes its share: prints the two replicas' resident
    memory, syncs/s, sync lag and steady round over ``seconds`` (the ``replicas=2`` lines); returns the join's
    window (``"join"``, start, end: epoch seconds) for the longest sync gap."""
    joined = time.time()
    procs.append(_replica(root, double.connect, 1, workers, period, ports[1], log))
    _wait_synced(SyncLog(log), procs, 1)  # the new replica has its share
    print(f"  [join] the second replica took its share {time.time() - joined:.1f}s after it started",
          file=sys.stderr, flush=True)
    time.sleep(settle)
    window = ("join", joined, time.time())
    pids = [p.pid for p in procs] + [double.proc.pid]
    live = ports[:2]
    before, cpu0, t0 = [_scrape(p) for p in live], [_cpu_seconds(p) for p in pids], time.monotonic()
    time.sleep(seconds)
    after, cpu1, t1 = [_scrape(p) for p in live], [_cpu_seconds(p) for p in pids], time.monotonic()
    syncs = sum(_total(a, "horizontal_pod_autoscaler_controller_reconciliations_total")
                - _total(b, "horizontal_pod_autoscaler_controller_reconciliations_total")
                for a, b in zip(after, before))
    prefix = f"{base} replicas=2"
    rss = [_rss_mb(p.pid) for p in procs]
    print(f"{prefix} rss_mb={max(rss):.0f}", flush=True)
    print(f"{prefix} syncs_per_second={syncs / (t1 - t0):.0f}", flush=True)
    print(f"{prefix} sync_lag_p50_seconds={_lag_quantile(before, after, 0.5):g}", flush=True)
    print(f"{prefix} sync_lag_p99_seconds={_lag_quantile(before, after, 0.99):g}", flush=True)
    _steady_round(double, n, period, prefix)
    sizes = [a.get(("pyhpa_shard_autoscalers", ()), 0) for a in after]
    used = [round((c1 - c0) / (t1 - t0), 2) for c0, c1 in zip(cpu0, cpu1)]
    print(f"  [replicas=2] needed {n / period:.0f} syncs/s; shard sizes {sizes}; resident memory {[round(r) for r in rss]} MB; "
          f"CPU (cores) over {t1 - t0:.0f}s: replicas {used[:-1]}, {double.name} {used[-1]} (machine: {os.cpu_count()} "
          f"cores, load average {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    return window


def replicas_run(n: int, workers: int, period: float, seconds: float, replicas: int = 2, world=None) -> None:
    """One replica; it restarts; then (``replicas`` 2) a second joins and the first leaves (SIGTERM); against one
    double whose autoscalers all have fallbacks (one in ten failing): resident memory with 1 and 2 replicas,
    status and Event writes of a steady round, the restarted replica's first round (seconds, writes, events),
    syncs/s and lag with 2, the longest sync gap of any autoscaler during the join and the leave. ``world``: instead
    of a double, the real API server already seeded and synced (``RealApi``: lines ``api=real``)."""
    import tempfile

    root = Path(__file__).resolve().parent.parent
    double = Double(n, fallback=True) if world is None else world
    tmp = Path(tempfile.mkdtemp(prefix="pyhpa-bench-"))
    logs = [tmp / f"replica-{i}.log" for i in range(3)]
    ports = [_free_port(), _free_port(), _free_port()]
    procs: list[subprocess.Popen] = []
    base = f"api={'http' if world is None else 'real'} workers={workers} hpas={n} sync_period_seconds={period:g}"
    settle = 6 * period  # fallbacks start after failureThreshold + 1 failed syncs; then nothing changes
    windows: list[tuple[str, float, float]] = []
    try:
        started = time.monotonic()
        procs.append(_replica(root, double.connect, 0, workers, period, ports[0], logs[0]))
        _wait_synced(SyncLog(logs[0]), procs, n)
        print(f"  [replicas=1] every autoscaler synced once {time.monotonic() - started:.0f}s after start "
              "(informers listing included)", file=sys.stderr, flush=True)
        time.sleep(settle)
        print(f"{base} replicas=1 rss_mb={_rss_mb(procs[0].pid):.0f}", flush=True)
        _steady_round(double, n, period, f"{base} replicas=1")

        _restart(root, double, procs, n, workers, period, ports[2], logs[2], base)
        ports[0] = ports[2]
        if replicas < 2:
            return
        time.sleep(2 * period)

        windows.append(_join(root, double, procs, ports, logs[1], n, workers, period, seconds, base,
                             settle))
        left = time.time()
        procs[0].terminate()
        procs[0].wait(60)
        time.sleep(settle)
        windows.append(("leave", left, time.time()))
        print(f"{base} replicas=1 after_leave_rss_mb={_rss_mb(procs[1].pid):.0f}", file=sys.stderr, flush=True)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        if world is None:
            double.close()
    times = _sync_times([log for log in logs if log.exists()])
    for what, start, end in windows:
        gap, who = max_sync_gap(times, start, end)
        print(f"{base} {what}=1 max_sync_gap_seconds={gap:.2f}", flush=True)
        print(f"  [{what}] longest gap {gap:.2f}s = {gap / period:.2f} periods ({who}); window {end - start:.0f}s",
              file=sys.stderr, flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--replica-sync-log"]:  # a replica process of the replicas run
        _replica_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hpas", type=int, default=10000)
    parser.add_argument("--workers", type=int, action="append", help="worker counts (default: 1 and 5)")
    parser.add_argument("--api", choices=("stub", "http", "real"), action="append",
                        help="stub, http (the kubedouble) or real (kube-apiserver v1.37.2 built by python -m controlplane "
                             "build; seeding 10,000 autoscalers takes minutes); default: stub and http")
    parser.add_argument("--versus", choices=("upstream",),
                        help="with --api real: then upstream's HPA controller (kube-controller-manager v1.37.2) alone "
                             "on the same API server, native HPA twins of the same autoscalers; one table of both")
    parser.add_argument("--steady-seconds", type=float, default=30.0,
                        help="seconds upstream's steady rate is measured over (--versus upstream)")
    parser.add_argument("--upstream-qps", type=float,
                        help="upstream's --kube-api-qps (burst twice that) in --versus upstream; default: its own (20)")
    parser.add_argument("--replicas", type=int, choices=(0, 1, 2),
                        help="2: the replicas run (1 replica, it restarts, a second joins, the first leaves); "
                             "1: only the first replica and its restart; 0: none. Default: 2 with --api http, 0 "
                             "with --api real (there it follows the in-process run on the same API server)")
    parser.add_argument("--shard-period", type=float, default=15.0,
                        help="sync period of the replicas run, seconds (default 15: upstream's default period)")
    parser.add_argument("--shard-seconds", type=float, default=30.0,
                        help="seconds syncs/s and lag are measured with 2 replicas")
    args = parser.parse_args()
    args.replicas_given = args.replicas is not None
    if args.replicas is None:
        args.replicas = 2
    logging.basicConfig(level=logging.WARNING)
    from pyhpa.controller.outputs.load import tune_gc

    tune_gc()  # as pyhpa run does
    worker_counts = args.workers or [1, 5]
    apis = args.api or ["stub", "http"]
    if "stub" in apis:
        for workers in worker_counts:
            asyncio.run(run_stub(workers, args.hpas, stub_world(args.hpas)))
    if args.versus and "real" not in apis:
        parser.error("--versus upstream races on the real API server: give --api real")
    if "real" in apis:
        for workers in worker_counts:
            real_round(workers, args.hpas, args.versus, args.steady_seconds, args.upstream_qps,
                       args.replicas if args.replicas_given else 0, args.shard_period, args.shard_seconds)
    if "http" in apis:
        for workers in worker_counts:
            http_round(workers, args.hpas)
        if args.replicas:
            replicas_run(args.hpas, max(worker_counts), args.shard_period, args.shard_seconds, args.replicas)


if __name__ == "__main__":
    main()
