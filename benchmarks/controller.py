"""HPAs reconciled per second by the live controller (``pyhpa run``), 10,000 autoscalers of 10 pods each.

Prints one line per API and worker count::

    api=stub workers=1 hpas=10000 reconciles_per_second=1234

``api=stub``: the controller against in-memory API stubs (``pyhpa.controller.stubs``), so the number is
the controller's own cost: queue, caches, metric parsing, the decision core, status comparison.
``api=http``: against the Kubernetes API double (kubedouble) in a separate process over real HTTP
(lightkube's client, aiohttp transport): Scale GET and metrics.k8s.io GET per sync.

Each autoscaler has one CPU Utilization metric (50 %), its Deployment 10 pods at exactly 50 % of their
request, so decisions are "no change". Caches are synced first (not timed). Then two timed rounds
make every autoscaler due at once: round 1 is each autoscaler's first sync (its status is written: one
more request per sync, once), round 2 a steady-state resync (status unchanged, nothing written), what
the controller does every sync period. The printed rate is round 2's; both rounds, and the
controller's CPU time per sync, go to stderr. ``--hpas``/``--workers``/``--api`` narrow the run.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
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
async def measure(controller, n: int, stop: asyncio.Event) -> tuple[float, float]:
    """Seconds of round 1 (first syncs) and round 2 (all due again at once) once caches are synced."""
    done = {"count": 0}
    round_done = asyncio.Event()
    target = {"count": n}

    def synced(result) -> None:
        done["count"] += 1
        if done["count"] >= target["count"]:
            round_done.set()

    controller.reconciler.on_synced = synced
    task = asyncio.create_task(controller.run(stop))
    while not controller.ready:
        if task.done():
            task.result()
        await asyncio.sleep(0.001)
    t0, c0 = time.perf_counter(), time.process_time()
    await round_done.wait()
    first = time.perf_counter() - t0
    cpu1 = time.process_time() - c0
    round_done.clear()
    target["count"] = done["count"] + n
    t1, c1 = time.perf_counter(), time.process_time()
    for key in list(controller.autoscalers):
        controller.queue.add(key)
    await round_done.wait()
    second = time.perf_counter() - t1
    cpu2 = time.process_time() - c1
    stop.set()
    await task
    print(f"  controller CPU per sync: round 1 {cpu1 / n * 1e3:.2f} ms, round 2 {cpu2 / n * 1e3:.2f} ms",
          file=sys.stderr)
    return first, second


def report(api: str, workers: int, n: int, first: float, second: float, extra: str = "") -> None:
    rate = n / second
    print(f"api={api} workers={workers} hpas={n} reconciles_per_second={rate:.0f}", flush=True)
    print(f"  [{api} workers={workers}] round 1 (first syncs, status written): {first:.2f}s = {n / first:.0f}/s; "
          f"round 2 (steady resync): {second:.2f}s = {n / second:.0f}/s{extra}", file=sys.stderr, flush=True)


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
    first, second = await measure(controller, n, asyncio.Event())
    report("stub", workers, n, first, second, f"; status writes so far {cluster.status_writes}")


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
        first, second = await measure(controller, n, asyncio.Event())
    finally:
        await cluster.close()
    report("http", workers, n, first, second, f"; status writes {controller.status.writes}")


def http_round(workers: int, n: int) -> None:
    """One controller run against a freshly seeded double (so every run's round 1 writes every status)."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    stop = ctx.Event()
    proc = ctx.Process(target=serve_double, args=(n, child, stop), daemon=True)
    proc.start()
    try:
        if not parent.poll(900):
            raise RuntimeError("the kubedouble process did not start within 900 s")
        asyncio.run(run_http(workers, n, parent.recv()))
    finally:
        stop.set()
        proc.join(30)
        if proc.is_alive():
            proc.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hpas", type=int, default=10000)
    parser.add_argument("--workers", type=int, action="append", help="worker counts (default: 1 and 5)")
    parser.add_argument("--api", choices=("stub", "http"), action="append", help="default: both")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    worker_counts = args.workers or [1, 5]
    apis = args.api or ["stub", "http"]
    if "stub" in apis:
        for workers in worker_counts:
            asyncio.run(run_stub(workers, args.hpas, stub_world(args.hpas)))
    if "http" in apis:
        for workers in worker_counts:
            http_round(workers, args.hpas)


if __name__ == "__main__":
    main()
