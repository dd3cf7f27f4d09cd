"""HPAs reconciled per second by the live controller (``pyhpa run``), 10,000 autoscalers of 10 pods each.

Prints ``name=value`` lines, per API and worker count::

    api=stub workers=1 hpas=10000 reconciles_per_second=1234
    api=http workers=5 hpas=10000 reconciles_per_second=1234
    api=http workers=5 hpas=10000 first_round_seconds=12.3
    api=http workers=5 hpas=10000 steady_round_seconds=6.7
    api=http workers=5 hpas=10000 requests_per_sync=0.1
    api=http workers=5 hpas=10000 controller_cpu_ms_per_sync=0.45

and, for ``--shards 2`` (default), one sharded run at a 3 s period::

    api=http shards=2 workers=5 hpas=10000 sync_period_seconds=3 syncs_per_second=2100
    api=http shards=2 workers=5 hpas=10000 sync_period_seconds=3 sync_lag_p50_seconds=0.01
    api=http shards=2 workers=5 hpas=10000 sync_period_seconds=3 sync_lag_p99_seconds=2.5

``api=stub``: the controller against in-memory API stubs (``pyhpa.controller.stubs``), so the number is
the controller's own cost: queue, caches, metric parsing, the decision core, status comparison.
``api=http``: against the Kubernetes API double (kubedouble) in a separate process over real HTTP
(lightkube's client, aiohttp transport), as ``pyhpa run`` is wired: the targets' Scale from the
Deployment informer (``pyhpa.controller.scalecache``), one metrics.k8s.io list per namespace and tick
(``pyhpa.controller.nsmetrics``).

Each autoscaler has one CPU Utilization metric (50 %), its Deployment 10 pods at exactly 50 % of their
request, so decisions are "no change"; 10 autoscalers per namespace. Caches are synced first (not
timed). Then two timed rounds make every autoscaler due at once: round 1 is each autoscaler's first
sync (its status is written: one more request per sync, once) — ``first_round_seconds`` —, round 2 a
steady-state resync (status unchanged, nothing written), what the controller does every sync period —
``steady_round_seconds``, ``reconciles_per_second`` (10,000 / round 2), ``requests_per_sync`` (API
requests per sync in round 2, counted in the controller's transport) and
``controller_cpu_ms_per_sync`` (the controller process' CPU time in round 2 per sync; both rounds on
stderr).

The sharded run starts the double and two ``pyhpa run --shards auto --sync-period 3`` processes on this
machine, waits until every autoscaler has synced once, then reads both replicas' ``/metrics`` over
``--shard-seconds`` (default 30): ``syncs_per_second`` (both replicas; the period asks for hpas / 3) and
the percentiles of ``pyhpa_sync_lag_seconds`` (from due time to start: 0 when the replicas keep up).
CPU seconds of each process over the window go to stderr. ``--hpas``/``--workers``/``--api``/``--shards``
narrow the run (``--shards 0``: no sharded run).
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

PODS_PER_HPA = 10
HPAS_PER_NAMESPACE = 10
START = "2020-01-01T00:00:00Z"


def names(i: int) -> tuple[str, str]:
    """(namespace, name) of the i-th autoscaler (its Deployment has the same name)."""
    return f"bench-{i // HPAS_PER_NAMESPACE:04d}", f"app-{i}"


def autoscaler(i: int) -> dict:
    ns, name = names(i)
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": 1, "maxReplicas": 100,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}}


def deployment(i: int) -> dict:
    ns, name = names(i)
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": PODS_PER_HPA, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "app"}]}}},
            "status": {"replicas": PODS_PER_HPA}}


def pod(i: int, j: int) -> dict:
    ns, name = names(i)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{j}", "namespace": ns, "labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "200m"}}}]},
            "status": {"phase": "Running", "startTime": START,
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": START}]}}


def pod_metrics_list(i: int, stamp: str) -> dict:
    ns, name = names(i)
    items = [{"metadata": {"name": f"{name}-{j}", "namespace": ns}, "timestamp": stamp, "window": "30s",
              "containers": [{"name": "app", "usage": {"cpu": "100m"}}]} for j in range(PODS_PER_HPA)]
    return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}


# ----- measurement -----------------------------------------------------------------------------------------
class Rounds:
    """What ``measure`` found: seconds, controller CPU seconds and API requests of round 1 and round 2."""

    def __init__(self) -> None:
        self.first = self.second = self.cpu1 = self.cpu2 = 0.0
        self.requests1 = self.requests2 = 0


async def measure(controller, n: int, stop: asyncio.Event) -> Rounds:
    """Round 1 (first syncs) and round 2 (all due again at once) once caches are synced."""
    done = {"count": 0}
    round_done = asyncio.Event()
    target = {"count": n}

    def synced(result) -> None:
        done["count"] += 1
        if done["count"] >= target["count"]:
            round_done.set()

    controller.reconciler.on_synced = synced
    task = asyncio.create_task(controller.run(stop))
    scales = getattr(controller, "scales", None)
    while not controller.ready or (scales is not None and not scales.synced):
        if task.done():
            task.result()
        await asyncio.sleep(0.001)
    r = Rounds()
    load = controller.load
    t0, c0, q0 = time.perf_counter(), time.process_time(), load.requests_total
    await round_done.wait()
    r.first, r.cpu1, r.requests1 = time.perf_counter() - t0, time.process_time() - c0, load.requests_total - q0
    round_done.clear()
    target["count"] = done["count"] + n
    t1, c1, q1 = time.perf_counter(), time.process_time(), load.requests_total
    for key in list(controller.autoscalers):
        controller.queue.add(key)
    await round_done.wait()
    r.second, r.cpu2, r.requests2 = time.perf_counter() - t1, time.process_time() - c1, load.requests_total - q1
    stop.set()
    await task
    print(f"  controller CPU per sync: round 1 {r.cpu1 / n * 1e3:.2f} ms, round 2 {r.cpu2 / n * 1e3:.2f} ms; "
          f"API requests per sync: round 1 {r.requests1 / n:.2f}, round 2 {r.requests2 / n:.2f}", file=sys.stderr)
    return r


def report(api: str, workers: int, n: int, r: Rounds, extra: str = "") -> None:
    prefix = f"api={api} workers={workers} hpas={n}"
    print(f"{prefix} reconciles_per_second={n / r.second:.0f}", flush=True)
    if api == "http":
        print(f"{prefix} first_round_seconds={r.first:.3f}", flush=True)
        print(f"{prefix} steady_round_seconds={r.second:.3f}", flush=True)
        print(f"{prefix} requests_per_sync={r.requests2 / n:.2f}", flush=True)
        print(f"{prefix} controller_cpu_ms_per_sync={r.cpu2 / n * 1e3:.3f}", flush=True)
    print(f"  [{api} workers={workers}] round 1 (first syncs, status written): {r.first:.2f}s = {n / r.first:.0f}/s; "
          f"round 2 (steady resync): {r.second:.2f}s = {n / r.second:.0f}/s{extra}", file=sys.stderr, flush=True)


# ----- stub API ----------------------------------------------------------------------------------------------
def stub_world(n: int):
    from lightkube.resources.core_v1 import Pod

    from pyhpa.controller.stubs import StubCluster, StubMetrics

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
def serve_double(n: int, conn, stop_event) -> None:
    """Child process: a kubedouble seeded with the benchmark objects, until ``stop_event``.

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
            kd.put_object(autoscaler(i))
            for j in range(PODS_PER_HPA):
                stored = kd.put_object(pod(i, j))
                by_ns.setdefault(ns, []).append(stored)
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
            while not stop_event.is_set():
                await asyncio.sleep(0.2)

    asyncio.run(main())


async def run_http(workers: int, n: int, url: str) -> None:
    from pyhpa.controller import Controller, Settings, load_config
    from pyhpa.controller.api import HttpMetrics, LightkubeCluster

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

    def __init__(self, n: int):
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self.stop = ctx.Event()
        self.proc = ctx.Process(target=serve_double, args=(n, child, self.stop), daemon=True)
        self.proc.start()
        if not parent.poll(900):
            raise RuntimeError("the kubedouble process did not start within 900 s")
        self.url = parent.recv()

    def close(self) -> None:
        self.stop.set()
        self.proc.join(30)
        if self.proc.is_alive():
            self.proc.terminate()


def http_round(workers: int, n: int) -> None:
    """One controller run against a freshly seeded double (so every run's round 1 writes every status)."""
    double = Double(n)
    try:
        asyncio.run(run_http(workers, n, double.url))
    finally:
        double.close()


# ----- sharded: two pyhpa run processes at a 3 s period -------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def sharded_run(n: int, shards: int, workers: int, period: float, seconds: float) -> None:
    """``shards`` replica processes of ``pyhpa run --shards auto`` against one double; syncs/s and lag."""
    root = Path(__file__).resolve().parent.parent
    double = Double(n)
    procs, ports = [], []
    try:
        for i in range(shards):
            ports.append(_free_port())
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "pyhpa.cli.main", "run", "--server", double.url, "--shards", "auto",
                 "--leader-elect-identity", f"bench-{i}", "--leader-elect-resource-namespace", "default",
                 "--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
                 "--leader-elect-retry-period", "1", "--workers", str(workers), "--sync-period", str(period),
                 "--api-timeout", "60", "--health-host", "127.0.0.1", "--health-port", str(ports[-1]),
                 "--log-level", "warning"],
                env=dict(os.environ, PYTHONPATH=str(root)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        started = time.monotonic()
        while True:  # every autoscaler synced once by one of the replicas (each counts its own syncs)
            time.sleep(2)
            if any(p.poll() is not None for p in procs):
                raise RuntimeError("a replica exited")
            try:
                scraped = [_scrape(p) for p in ports]
            except Exception:  # noqa: BLE001 - not serving yet
                continue
            if sum(_total(m, "horizontal_pod_autoscaler_controller_reconciliations_total") for m in scraped) >= n:
                break
            if time.monotonic() - started > 1800:
                raise RuntimeError("the replicas did not sync every autoscaler within 30 minutes")
        print(f"  [shards={shards}] every autoscaler synced once {time.monotonic() - started:.0f}s after start "
              "(informers listing included)", file=sys.stderr)
        time.sleep(2 * period)
        pids = [p.pid for p in procs] + [double.proc.pid]
        before, cpu0, t0 = [_scrape(p) for p in ports], [_cpu_seconds(p) for p in pids], time.monotonic()
        load0 = os.getloadavg()[0]
        time.sleep(seconds)
        after, cpu1, t1 = [_scrape(p) for p in ports], [_cpu_seconds(p) for p in pids], time.monotonic()
        syncs = sum(_total(a, "horizontal_pod_autoscaler_controller_reconciliations_total")
                    - _total(b, "horizontal_pod_autoscaler_controller_reconciliations_total")
                    for a, b in zip(after, before))
        requests = sum(_total(a, "pyhpa_sync_api_requests_sum") - _total(b, "pyhpa_sync_api_requests_sum")
                       for a, b in zip(after, before))
        prefix = f"api=http shards={shards} workers={workers} hpas={n} sync_period_seconds={period:g}"
        print(f"{prefix} syncs_per_second={syncs / (t1 - t0):.0f}", flush=True)
        print(f"{prefix} sync_lag_p50_seconds={_lag_quantile(before, after, 0.5):g}", flush=True)
        print(f"{prefix} sync_lag_p99_seconds={_lag_quantile(before, after, 0.99):g}", flush=True)
        sizes = [a.get(("pyhpa_shard_autoscalers", ()), 0) for a in after]
        used = [round((c1 - c0) / (t1 - t0), 2) for c0, c1 in zip(cpu0, cpu1)]
        print(f"  [shards={shards}] needed {n / period:.0f} syncs/s; shard sizes {sizes}; requests per sync "
              f"{requests / max(syncs, 1):.2f}; CPU (cores) over {t1 - t0:.0f}s: replicas {used[:-1]}, double "
              f"{used[-1]} (machine: {os.cpu_count()} cores, load average {load0:.1f} -> {os.getloadavg()[0]:.1f}); "
              f"controller CPU per sync {sum(c1 - c0 for c0, c1 in zip(cpu0[:-1], cpu1[:-1])) / max(syncs, 1) * 1e3:.2f} ms",
              file=sys.stderr, flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        double.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hpas", type=int, default=10000)
    parser.add_argument("--workers", type=int, action="append", help="worker counts (default: 1 and 5)")
    parser.add_argument("--api", choices=("stub", "http"), action="append", help="default: both")
    parser.add_argument("--shards", type=int, default=2, help="replicas of the sharded run (0: none)")
    parser.add_argument("--shard-period", type=float, default=3.0, help="sync period of the sharded run, seconds")
    parser.add_argument("--shard-seconds", type=float, default=30.0, help="seconds the sharded run is measured")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from pyhpa.controller.load import tune_gc

    tune_gc()  # as pyhpa run does
    worker_counts = args.workers or [1, 5]
    apis = args.api or ["stub", "http"]
    if "stub" in apis:
        for workers in worker_counts:
            asyncio.run(run_stub(workers, args.hpas, stub_world(args.hpas)))
    if "http" in apis:
        for workers in worker_counts:
            http_round(workers, args.hpas)
        if args.shards:
            sharded_run(args.hpas, args.shards, max(worker_counts), args.shard_period, args.shard_seconds)


if __name__ == "__main__":
    main()
