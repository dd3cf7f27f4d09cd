"""The benchmark world on a real Kubernetes v1.37.2 control plane (``controlplane``), for
``benchmarks/controller.py --api real``.

``RealWorld(n, fallback).start()`` runs, in a child process: etcd, kube-apiserver and kube-controller-manager
(serviceaccount, serviceaccount-token, namespace and garbage-collector controllers: no deployment controller, so
the seeded pods are the only ones), the HorizontalAutoscaler CRD, and ``n`` autoscalers of
``benchmarks/controller.py``'s world (10 per namespace, a Deployment of 10 pods each, every pod Running and Ready
at 50 % of its CPU request), written through the API over TLS with the admin certificate, many requests in
flight (aiohttp); then the metrics fixture serves metrics.k8s.io for those pods through the aggregation layer.
``kubeconfig`` is the admin kubeconfig once seeded. Seeding progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import ssl
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONCURRENCY = 48
STARTED = "2020-01-01T00:00:00Z"


def _running_status() -> dict:
    cond = lambda kind: {"type": kind, "status": "True", "lastTransitionTime": STARTED}  # noqa: E731
    return {"phase": "Running", "startTime": STARTED,
            "conditions": [cond("Initialized"), cond("ContainersReady"), cond("Ready"), cond("PodScheduled")],
            "containerStatuses": [{"name": "app", "image": "app", "imageID": "", "ready": True, "started": True,
                                   "restartCount": 0, "state": {"running": {"startedAt": STARTED}}}]}


class _Writer:
    """Requests to kube-apiserver with at most CONCURRENCY in flight; counts and reports progress."""

    def __init__(self, plane):
        from aiohttp import ClientSession, TCPConnector

        tls = ssl.create_default_context(cafile=str(plane.pki.ca_crt))
        tls.load_cert_chain(str(plane.pki.admin_crt), str(plane.pki.admin_key))
        self.url = plane.url
        self.session = ClientSession(connector=TCPConnector(ssl=tls, limit=CONCURRENCY))
        self.sem = asyncio.Semaphore(CONCURRENCY)
        self.done = 0

    async def send(self, method: str, path: str, body: dict, patch: bool = False) -> None:
        headers = {"Content-Type": "application/merge-patch+json" if patch else "application/json"}
        async with self.sem:
            for attempt in range(60):
                async with self.session.request(method, self.url + path, data=json.dumps(body),
                                                headers=headers) as resp:
                    if resp.status < 300 or resp.status == 409 and not patch:
                        self.done += 1
                        return
                    text = await resp.text()
                    # a namespace's default ServiceAccount is made by its controller a moment after the namespace
                    if resp.status in (403, 429, 500, 503) and attempt < 59:
                        await asyncio.sleep(0.5)
                        continue
                    raise RuntimeError(f"{method} {path}: {resp.status} {text[:300]}")

    async def all(self, what: str, calls) -> None:
        started = time.monotonic()
        calls = list(calls)
        before = self.done
        await asyncio.gather(*calls)
        took = time.monotonic() - started
        print(f"  seeded {self.done - before} {what} in {took:.0f}s ({(self.done - before) / max(took, 1e-9):.0f}/s)",
              file=sys.stderr, flush=True)

    async def close(self) -> None:
        await self.session.close()


def _pod(i: int, j: int) -> dict:
    import world as bench  # benchmarks/controller.py: the same objects as the double's world

    p = bench.pod(i, j)
    p.pop("status")
    p["spec"].update(nodeName="pyhpa-node", automountServiceAccountToken=False)
    return p


def world_pods(n: int) -> dict[str, list[dict]]:
    """The seeded pods by namespace (what the metrics fixture serves)."""
    import world as bench

    out: dict[str, list[dict]] = {}
    for i in range(n):
        for j in range(bench.PODS_PER_HPA):
            p = _pod(i, j)
            out.setdefault(p["metadata"]["namespace"], []).append(p)
    return out


async def seed(plane, n: int, fallback: bool) -> None:
    """Write the world of ``n`` autoscalers through the API."""
    import world as bench

    w = _Writer(plane)
    namespaces = sorted({bench.names(i)[0] for i in range(n)})
    try:
        await w.all("namespaces", (w.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                          "metadata": {"name": ns}})
                                   for ns in namespaces))
        deployments = []
        for i in range(n):
            d = bench.deployment(i)
            d.pop("status")
            d["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "200m"}}
            deployments.append(d)
        await w.all("deployments", (w.send("POST", f"/apis/apps/v1/namespaces/{d['metadata']['namespace']}/deployments", d)
                                    for d in deployments))
        await w.all("deployment statuses", (w.send(
            "PATCH", f"/apis/apps/v1/namespaces/{d['metadata']['namespace']}/deployments/{d['metadata']['name']}/status",
            {"status": {"replicas": bench.PODS_PER_HPA, "readyReplicas": bench.PODS_PER_HPA,
                        "availableReplicas": bench.PODS_PER_HPA, "updatedReplicas": bench.PODS_PER_HPA,
                        "observedGeneration": 1}}, patch=True) for d in deployments))
        bodies = [p for ps in world_pods(n).values() for p in ps]
        await w.all("pods", (w.send("POST", f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", p) for p in bodies))
        status = {"status": _running_status()}
        await w.all("pod statuses", (w.send(
            "PATCH", f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}/status", status,
            patch=True) for p in bodies))
        await w.all("autoscalers", (w.send(
            "POST", f"/apis/pyhpa.dev/v1alpha1/namespaces/{bench.names(i)[0]}/horizontalautoscalers",
            bench.autoscaler(i, fallback)) for i in range(n)))
    finally:
        await w.close()


def _apply_crd(plane) -> None:
    """Apply ``deploy/crd.yaml`` (server-side, forced: it may replace the CRD a saved world was seeded with) and wait
    until it is Established."""
    plane.run_kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crd.yaml"))
    plane.run_kubectl("wait", "--for=condition=Established", "crd/horizontalautoscalers.pyhpa.dev", "--timeout=120s")


def _crd_hash() -> str:
    import hashlib

    return hashlib.sha256((ROOT / "deploy" / "crd.yaml").read_bytes()).hexdigest()[:16]


class _StaticPods:
    """The seeded pods, for the metrics fixture (a PodWatch's interface: ``pods(ns)``, ``listeners``)."""

    def __init__(self, pods: dict[str, list[dict]]):
        self._pods = pods
        self.listeners: list = []

    def pods(self, namespace=None):
        if namespace is None:
            return [p for ps in self._pods.values() for p in ps]
        return self._pods.get(namespace, [])

    def stop(self) -> None:
        pass


def serve(n: int, conn, stop_event, fallback: bool, home: str, extra_controllers: tuple[str, ...],
          controller_manager_args: tuple[str, ...]) -> None:
    """Child process: the control plane with the seeded world, until ``stop_event``."""
    import world as bench

    from controlplane import ControlPlane, cache_dir
    from controlplane.metrics import MetricsFixture

    saved = cache_dir() / f"bench-world-{n}{'-fallback' if fallback else ''}"
    meta = saved / "meta.json"
    reuse = meta.is_file() and (saved / "etcd").is_dir()
    plane = ControlPlane(Path(home), controllers=("serviceaccount", "serviceaccount-token", "namespace",
                                                  "garbagecollector", *extra_controllers),
                         controller_manager_args=controller_manager_args, audit=False, start_timeout=600,
                         service_cidr=json.loads(meta.read_text())["service_cidr"] if reuse else None,
                         etcd_seed=saved / "etcd" if reuse else None)
    try:
        started = time.monotonic()
        plane.start(data_plane=False)
        if reuse:
            if json.loads(meta.read_text()).get("crd") != _crd_hash():  # the objects were seeded under another CRD
                _apply_crd(plane)  # the same objects, served and written under today's (its status is empty)
            print(f"  control plane up in {time.monotonic() - started:.0f}s with the world seeded before ({saved})",
                  file=sys.stderr, flush=True)
        else:
            _apply_crd(plane)
            print(f"  control plane up in {time.monotonic() - started:.0f}s; seeding {n} autoscalers (once: etcd's "
                  f"data is kept in {saved} for the next runs)", file=sys.stderr, flush=True)
            asyncio.run(seed(plane, n, fallback))
            saved.mkdir(parents=True, exist_ok=True)
            plane.save_etcd(saved / "etcd")
            meta.write_text(json.dumps({"service_cidr": plane.service_cidr, "crd": _crd_hash()}))
        source = _StaticPods(world_pods(n))
        metrics = MetricsFixture(plane, source)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for i in range(n):
            if bench.failing(i, fallback):
                continue
            ns, name = bench.names(i)
            for j in range(bench.PODS_PER_HPA):
                metrics.set_pod_metrics(ns, f"{name}-{j}", {"app": {"cpu": "100m"}}, timestamp=stamp)
        metrics.start()
        plane.fixture = metrics
        conn.send((str(plane.admin_kubeconfig), plane.url, {c: comp.proc.pid for c, comp in plane.components.items()}))
        while not stop_event.wait(0.05):
            if conn.poll():
                conn.send(_command(plane, n, conn.recv()))
    except BaseException as err:  # noqa: BLE001 - said to the parent, which waits for one message
        conn.send(err if isinstance(err, Exception) else RuntimeError(str(err)))
        raise
    finally:
        plane.stop()


def _command(plane, n: int, msg: tuple):
    """What the parent asks of the child: ("upstream", workers, sync_period, qps or None) seeds a native autoscaling/v2 HPA
    twin of every autoscaler and restarts kube-controller-manager with upstream's HPA controller (returns its
    pid); ("kcm-metrics",) returns kube-controller-manager's /metrics text."""
    try:
        if msg[0] == "upstream":
            _, workers, period, qps = msg
            asyncio.run(_seed_native(plane, n))
            limits = (f"--kube-api-qps={qps:g}", f"--kube-api-burst={2 * qps:g}") if qps else ()
            return plane.restart_controller_manager(
                plane.controllers + ("horizontalpodautoscaling",),
                (f"--concurrent-horizontal-pod-autoscaler-syncs={workers}",
                 f"--horizontal-pod-autoscaler-sync-period={period}", *limits))
        if msg[0] == "kcm-metrics":
            return plane.controller_manager_metrics()
        if msg[0] == "floor":
            _, writes, concurrency = msg
            return _floor(plane, writes, concurrency)
        return RuntimeError(f"unknown command {msg!r}")
    except Exception as err:  # noqa: BLE001 - answered to the parent
        return err


def _floor(plane, writes: int, concurrency: int) -> dict:
    """kube-apiserver's floor on this control plane (``benchmarks/apiserver_floor.py``, case ``minimal``
    ``update``): ``writes`` first status writes of a minimal custom resource, with the status pyhpa writes,
    ``concurrency`` in flight; its result (``seconds``, ``apiserver_cpu_ms_per_write``, ...)."""
    import apiserver_floor as floor

    floor.apply_crds(plane, [floor.MINIMAL_CRD])
    pids = floor.measured_pids(plane)
    status = floor.pyhpa_status()

    async def run() -> dict:
        api = floor.Api(plane, concurrency)
        try:
            ns = f"floor-{int(time.time())}"
            await api.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": ns}})
            return await floor.run_case(api, pids, "minimal", "update", writes, status, ns, None,
                                        plane)
        finally:
            await api.http.aclose()

    return asyncio.run(run())


async def _seed_native(plane, n: int) -> None:
    import world as bench

    w = _Writer(plane)
    try:
        def hpa(i: int) -> dict:
            obj = bench.autoscaler(i)
            obj.update(apiVersion="autoscaling/v2", kind="HorizontalPodAutoscaler")
            return obj
        await w.all("native HPAs", (w.send("POST", f"/apis/autoscaling/v2/namespaces/{bench.names(i)[0]}/"
                                                   "horizontalpodautoscalers", hpa(i)) for i in range(n)))
    finally:
        await w.close()


class RealWorld:
    """The seeded control plane in a child process; ``kubeconfig`` and ``url`` once ``start()`` returned."""

    def __init__(self, n: int, fallback: bool = False, extra_controllers: tuple[str, ...] = (),
                 controller_manager_args: tuple[str, ...] = ()):
        self.n, self.fallback = n, fallback
        self.extra_controllers, self.controller_manager_args = extra_controllers, controller_manager_args
        self._home = tempfile.TemporaryDirectory(prefix="pyhpa-bench-plane-")
        self.kubeconfig = self.url = ""
        self.pids: dict[str, int] = {}

    def start(self) -> "RealWorld":
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.stop_event = ctx.Event()
        self.proc = ctx.Process(target=serve, args=(self.n, child, self.stop_event, self.fallback, self._home.name,
                                                    self.extra_controllers, self.controller_manager_args), daemon=True)
        self.proc.start()
        if not self.conn.poll(3600):
            raise RuntimeError("the control plane was not seeded within an hour")
        answer = self.conn.recv()
        if isinstance(answer, Exception):
            raise answer
        self.kubeconfig, self.url, self.pids = answer
        return self

    def call(self, *msg, timeout: float = 3600):
        """Ask the child (``_command``); raises what it answered as an error."""
        self.conn.send(msg)
        if not self.conn.poll(timeout):
            raise RuntimeError(f"no answer to {msg[0]} within {timeout:.0f} s")
        answer = self.conn.recv()
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self) -> None:
        self.stop_event.set()
        self.proc.join(60)
        if self.proc.is_alive():
            self.proc.terminate()
        self._home.cleanup()
