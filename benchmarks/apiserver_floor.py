"""kube-apiserver's own floor for a status write: its CPU per write of three kinds of object, by three kinds of request,
on one real control plane (``controlplane``: etcd and kube-apiserver v1.37.2, built by ``python -m controlplane
build``), in one run::

    python benchmarks/apiserver_floor.py [--writes 2000] [--concurrency 8] [--profile DIR]

The objects (``OBJECTS``), each written with the same status content where the kind allows it:

- ``minimal``: a custom resource whose CRD has no schema beyond ``x-kubernetes-preserve-unknown-fields`` and no CEL
  rule (its status subresource on), carrying the status pyhpa writes;
- ``pyhpa``: a HorizontalAutoscaler (``deploy/crd.yaml``: its structural schema, CEL rules, printer columns)
  carrying the status pyhpa writes at an autoscaler's first sync (taken from pyhpa's own controller on the
  benchmark world of ``benchmarks/controller.py``: one CPU metric, 10 pods at 50 % of their request);
- ``hpa``: a native autoscaling/v2 HorizontalPodAutoscaler carrying the autoscaling/v2 part of that status (what
  upstream's controller writes).

The requests (``REQUESTS``): ``update`` (PUT ``/status`` with the resourceVersion, as pyhpa's controller writes),
``merge-patch`` (PATCH, ``application/merge-patch+json``) and ``apply`` (server-side apply,
``application/apply-patch+yaml``, ``force=true``). Each case creates ``--writes`` objects first (not measured),
then writes each one's first status (measured: as the first round of a fleet), ``--concurrency`` requests in
flight, over TLS with the admin certificate. kube-apiserver's and etcd's CPU are read from ``/proc/<pid>/stat``
before and after. One line per case::

    object=pyhpa request=update writes=2000 seconds=S apiserver_cpu_ms_per_write=X etcd_cpu_ms_per_write=Y

``--profile DIR`` (kube-apiserver started with ``--profiling``): a 20 s CPU profile of each case from
``/debug/pprof/profile``, written as ``DIR/<object>-<request>.pprof`` (read with ``go tool pprof -top``), and the
share of kube-apiserver's CPU by where it goes (``SPLIT``: JSON, schema validation, CEL, managedFields, etcd
client, watch cache, TLS and HTTP, ...) printed to stderr per case. The audit log is off, as in
``benchmarks/controller.py --api real``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from world import autoscaler  # noqa: E402  (the benchmarks' world, beside this script)

OBJECTS = ("minimal", "pyhpa", "hpa")
#: measured only when asked (``--object pyhpa-open-status``): pyhpa's CRD with its status schema replaced by
#: ``x-kubernetes-preserve-unknown-fields`` (what the status schema costs a status write)
VARIANTS = ("pyhpa-open-status",)
REQUESTS = ("update", "merge-patch", "apply")
FIELD_MANAGER = "pyhpa-floor"
#: the minimal custom resource's CRD: no schema but "keep every field", no CEL, a status subresource
MINIMAL_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "minimals.floor.pyhpa.dev"},
    "spec": {"group": "floor.pyhpa.dev", "scope": "Namespaced",
             "names": {"plural": "minimals", "singular": "minimal", "kind": "Minimal", "listKind": "MinimalList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}
#: (apiVersion, kind, path of the collection below /apis) of each object
KINDS = {"minimal": ("floor.pyhpa.dev/v1", "Minimal", "floor.pyhpa.dev/v1/namespaces/{ns}/minimals"),
         "pyhpa": ("pyhpa.dev/v1alpha1", "HorizontalAutoscaler",
                   "pyhpa.dev/v1alpha1/namespaces/{ns}/horizontalautoscalers"),
         "hpa": ("autoscaling/v2", "HorizontalPodAutoscaler",
                 "autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"),
         "pyhpa-open-status": ("floor.pyhpa.dev/v1", "OpenStatus", "floor.pyhpa.dev/v1/namespaces/{ns}/openstatuses")}
#: the status fields of autoscaling/v2 (a native HPA's status carries only these)
V2_STATUS = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas", "currentMetrics",
             "conditions")
#: where kube-apiserver's CPU goes: each CPU sample counts for the group of the leaf-most frame of its stack, outside
#: Go's runtime, that one of a group's patterns matches (allocation in JSON decoding counts as JSON); a stack with no
#: such frame is the runtime's own work ("garbage collection and runtime": the background GC, the scheduler)
SPLIT = (
    ("CEL", ("cel-go", "/cel.", "apiserver/pkg/cel")),
    ("schema validation and defaulting", ("kube-openapi/pkg/validation", "apiextensions-apiserver/pkg/apiserver/schema",
                                          "structuralschema", "apiserver/validation")),
    ("managedFields", ("managedfields", "fieldmanager", "structured-merge-diff")),
    ("JSON", ("encoding/json", "sigs.k8s.io/json", "json-iterator", "k8s.io/apimachinery/pkg/util/json",
              "runtime/serializer/json", "yaml")),
    ("protobuf", ("gogo/protobuf", "runtime/serializer/protobuf", "google.golang.org/protobuf")),
    ("etcd client and storage", ("go.etcd.io", "apiserver/pkg/storage/etcd3", "google.golang.org/grpc")),
    ("watch cache and fan-out", ("cacher", "watch")),
    ("TLS and HTTP", ("crypto/", "net/http", "golang.org/x/net/http2", "net.", "syscall")),
    ("authentication, authorization, admission", ("authentication", "authorization", "admission")),
    ("audit, metrics and logging", ("audit", "prometheus", "klog")),
)
RUNTIME = "garbage collection and runtime"


def open_status_crd() -> dict:
    """``deploy/crd.yaml`` as kind OpenStatus of group floor.pyhpa.dev, its status schema an open object."""
    import yaml

    crd = yaml.safe_load((ROOT / "deploy" / "crd.yaml").read_text())
    crd["metadata"]["name"] = "openstatuses.floor.pyhpa.dev"
    crd["spec"]["group"] = "floor.pyhpa.dev"
    crd["spec"]["names"] = {"plural": "openstatuses", "singular": "openstatus", "kind": "OpenStatus",
                            "listKind": "OpenStatusList"}
    version = crd["spec"]["versions"][0]
    version["name"] = "v1"
    version["schema"]["openAPIV3Schema"]["properties"]["status"] = {"type": "object",
                                                                    "x-kubernetes-preserve-unknown-fields": True}
    return crd


def pyhpa_status() -> dict:
    """The status pyhpa's controller writes at the first sync of the benchmark world's first autoscaler
    (``benchmarks/controller.py``'s stub world): run for one sync, read back."""
    from controller import stub_world

    from pyhpa.controller import Controller, Settings

    async def one_sync() -> dict:
        cluster, metrics = stub_world(1)
        controller = Controller(Settings(workers=1, health_port=None), cluster, metrics)
        done, stop = asyncio.Event(), asyncio.Event()
        controller.reconciler.on_synced = lambda result: done.set()
        task = asyncio.create_task(controller.run(stop))
        await asyncio.wait_for(done.wait(), 60)
        stop.set()
        await task
        (obj,) = cluster.autoscaler_objects.values()
        return obj["status"]

    return asyncio.run(one_sync())


def admin_tls(plane) -> ssl.SSLContext:
    """TLS to ``plane``'s kube-apiserver as its admin (``system:masters``)."""
    tls = ssl.create_default_context(cafile=str(plane.pki.ca_crt))
    tls.load_cert_chain(str(plane.pki.admin_crt), str(plane.pki.admin_key))
    return tls


def apply_crds(plane, crds: list[dict]) -> None:
    """Apply ``crds`` (server-side) to ``plane`` and wait until each is Established."""
    for crd in crds:
        plane.run_kubectl("apply", "--server-side", "-f", "-", input=json.dumps(crd))
    for crd in crds:
        plane.run_kubectl("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=120s")


def measured_pids(plane) -> dict[str, int]:
    """The pids whose CPU a case measures: kube-apiserver's and etcd's."""
    return {c: comp.proc.pid for c, comp in plane.components.items() if c in ("kube-apiserver", "etcd")}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Api:
    """kube-apiserver over TLS with the admin certificate, ``concurrency`` requests in flight (httpx)."""

    def __init__(self, plane, concurrency: int):
        import httpx2

        tls = admin_tls(plane)
        limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self.http = httpx2.AsyncClient(base_url=plane.url, verify=tls, limits=limits, timeout=60, trust_env=False)
        self.sem = asyncio.Semaphore(concurrency)

    async def send(self, method: str, path: str, body: dict, content_type: str = "application/json",
                   params: dict | None = None) -> dict:
        async with self.sem:
            resp = await self.http.request(method, path, content=json.dumps(body), params=params,
                                           headers={"Content-Type": content_type})
        if resp.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
        return resp.json()

    async def all(self, calls) -> list[dict]:
        return await asyncio.gather(*calls)


def _object(kind: str, ns: str, name: str) -> dict:
    """An object of ``kind`` with the benchmark world's autoscaler spec (a fresh dict each: ``world.autoscaler``)."""
    api_version, kind_name, _ = KINDS[kind]
    return {"apiVersion": api_version, "kind": kind_name, "metadata": {"name": name, "namespace": ns},
            "spec": autoscaler(0)["spec"]}


def v2_status(status: dict) -> dict:
    """The autoscaling/v2 part of ``status`` (``V2_STATUS``): what a native HPA carries."""
    return {k: status[k] for k in V2_STATUS if k in status}


def _status_request(kind: str, request: str, created: dict, status: dict) -> tuple[str, dict, str, dict | None]:
    """(method, body, content type, query) of one status write of ``request`` kind to the object ``created``."""
    api_version, kind_name, _ = KINDS[kind]
    meta = created["metadata"]
    if request == "update":
        return "PUT", {**created, "status": status}, "application/json", None
    if request == "merge-patch":
        return "PATCH", {"status": status}, "application/merge-patch+json", None
    body = {"apiVersion": api_version, "kind": kind_name,
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]}, "status": status}
    return "PATCH", body, "application/apply-patch+yaml", {"fieldManager": FIELD_MANAGER, "force": "true"}


async def run_case(api: Api, pids: dict[str, int], kind: str, request: str, writes: int, status: dict,
                   ns: str, profile: Path | None, plane) -> dict:
    """Creates ``writes`` objects of ``kind`` in ``ns`` (not measured), then writes each one's status by ``request``
    (measured: seconds, kube-apiserver's and etcd's CPU)."""
    path = "/apis/" + KINDS[kind][2].format(ns=ns)
    created = await api.all(api.send("POST", path, _object(kind, ns, f"o-{i}")) for i in range(writes))
    profiler = _Profiler(plane, profile / f"{kind}-{request}.pprof") if profile else None
    cpu0 = {c: _cpu_seconds(p) for c, p in pids.items()}
    t0 = time.perf_counter()
    if profiler:
        profiler.start()
    calls = []
    for obj in created:
        method, body, ctype, params = _status_request(kind, request, obj, status)
        calls.append(api.send(method, f"{path}/{obj['metadata']['name']}/status", body, ctype, params))
    await api.all(calls)
    seconds = time.perf_counter() - t0
    cpu = {c: _cpu_seconds(p) - cpu0[c] for c, p in pids.items()}
    if profiler:
        profiler.join()
    return {"object": kind, "request": request, "writes": writes, "seconds": seconds,
            "apiserver_cpu_ms_per_write": cpu["kube-apiserver"] / writes * 1e3,
            "etcd_cpu_ms_per_write": cpu["etcd"] / writes * 1e3, "profile": profiler.path if profiler else None}


class _Profiler(threading.Thread):
    """kube-apiserver's ``/debug/pprof/profile`` over the case's first ``SECONDS`` seconds, to ``path``."""

    SECONDS = 20

    def __init__(self, plane, path: Path):
        super().__init__(daemon=True)
        self.plane, self.path = plane, path

    def run(self) -> None:
        import httpx2

        with httpx2.Client(verify=admin_tls(self.plane), trust_env=False) as http:
            resp = http.get(f"{self.plane.url}/debug/pprof/profile", params={"seconds": self.SECONDS},
                            timeout=self.SECONDS + 60)
        resp.raise_for_status()
        self.path.write_bytes(resp.content)


def split(pprof: Path) -> list[tuple[str, float]]:
    """The share of the profile's CPU samples per ``SPLIT`` group (and "other"), by the leaf-most frame a group's
    pattern matches: ``go tool pprof -traces`` read stack by stack."""
    text = subprocess.run(["go", "tool", "pprof", "-traces", str(pprof)], capture_output=True, text=True,
                          check=True).stdout
    totals: dict[str, float] = {}
    for block in text.split("-----------+-------------------------------------------------------")[1:]:
        lines = [line for line in block.strip().splitlines() if line.strip()]
        if not lines:
            continue
        first = lines[0].split()
        try:
            value = _duration(first[0])
        except ValueError:
            continue
        frames = [_frame(first)] + [_frame(line.split()) for line in lines[1:]]
        ours = [f for f in frames if not f.startswith(("runtime.", "sync.", "internal/", "math/", "sort.", "strings.",
                                                          "strconv.", "bytes.", "unicode", "reflect."))]
        group = next((name for frame in ours for name, patterns in SPLIT if any(p in frame for p in patterns)),
                     "other" if ours else RUNTIME)
        totals[group] = totals.get(group, 0.0) + value
    whole = sum(totals.values()) or 1.0
    return sorted(((g, v / whole) for g, v in totals.items()), key=lambda gv: -gv[1])


def _frame(tokens: list[str]) -> str:
    """The function of one line of ``pprof -traces`` (an inlined one ends with ``(inline)``)."""
    return tokens[-2] if tokens[-1] == "(inline)" and len(tokens) > 1 else tokens[-1]


def _duration(text: str) -> float:
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)


async def run_all(plane, pids: dict[str, int], args, status: dict) -> list[dict]:
    api = Api(plane, args.concurrency)
    v2 = v2_status(status)
    results = []
    try:
        for case, kind in enumerate(args.object or OBJECTS):  # an object given twice runs twice (alternating)
            for request in args.request or REQUESTS:
                ns = f"floor-{case}-{kind}-{request}"
                await api.send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": ns}})
                r = await run_case(api, pids, kind, request, args.writes, v2 if kind == "hpa" else status, ns,
                                   args.profile, plane)
                results.append(r)
                print(f"object={kind} request={request} writes={r['writes']} seconds={r['seconds']:.2f} "
                      f"apiserver_cpu_ms_per_write={r['apiserver_cpu_ms_per_write']:.2f} "
                      f"etcd_cpu_ms_per_write={r['etcd_cpu_ms_per_write']:.2f}", flush=True)
                if r["profile"] is not None:
                    shares = ", ".join(f"{g} {s:.0%}" for g, s in split(r["profile"]))
                    print(f"  [{kind} {request}] kube-apiserver CPU: {shares}", file=sys.stderr, flush=True)
    finally:
        await api.http.aclose()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=2000, help="status writes per case (1..100000)")
    ap.add_argument("--concurrency", type=int, default=8, help="requests in flight (1..256)")
    ap.add_argument("--object", choices=OBJECTS + VARIANTS, action="append",
                    help="only these objects (default: minimal, pyhpa and hpa)")
    ap.add_argument("--request", choices=REQUESTS, action="append", help="only these requests (default: all)")
    ap.add_argument("--profile", type=Path, metavar="DIR", help="CPU profiles of kube-apiserver per case, to DIR")
    args = ap.parse_args(argv)
    if not 1 <= args.writes <= 100_000:
        ap.error("--writes: 1 to 100000")
    if not 1 <= args.concurrency <= 256:
        ap.error("--concurrency: 1 to 256")
    from controlplane import ControlPlane

    status = pyhpa_status()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pyhpa-floor-") as home:
        plane = ControlPlane(Path(home), controllers=("serviceaccount", "serviceaccount-token", "namespace"),
                             audit=False, apiserver_args=("--profiling=true",) if args.profile else ())
        plane.start(data_plane=False)
        try:
            plane.run_kubectl("apply", "--server-side", "-f", str(ROOT / "deploy" / "crd.yaml"))
            plane.run_kubectl("wait", "--for=condition=Established", "crd/horizontalautoscalers.pyhpa.dev",
                              "--timeout=120s")
            apply_crds(plane, [MINIMAL_CRD, open_status_crd()])
            pids = measured_pids(plane)
            print(f"  status of {len(json.dumps(status))} bytes (pyhpa, minimal), "
                  f"{len(json.dumps(v2_status(status)))} (hpa); "
                  f"{plane.version_line()}; load average {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
            asyncio.run(run_all(plane, pids, args, status))
        finally:
            plane.stop()
    print(f"load_average={os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
