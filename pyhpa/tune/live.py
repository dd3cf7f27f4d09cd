"""tune's live mode: the autoscaler, its target and the workload's history from a cluster and Prometheus.

The autoscaler (a HorizontalAutoscaler, else an autoscaling/v2 HorizontalPodAutoscaler) and its pods are
read as ``pyhpa snapshot`` reads them (``pyhpa.controller.snapshot.take_snapshot``: the controller's own
code path), the target (Deployment or StatefulSet) by its ``scaleTargetRef``, and the history of the first
metric's workload total with the query ``spec.prediction`` uses by default
(``pyhpa.controller.sync.prediction.default_history_query``, ``pyhpa.adapters.promql.query_range``). They are
written as the files ``pyhpa tune`` takes offline (hpa.yaml, target.yaml, profile.yaml, history.csv) and
tuned the same way: the CPU total becomes the load (profile ``load_unit: cpu_millicores``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2
import yaml

from ..adapters.errors import InputError
from ..adapters.promql import RangeQueryError, query_range, range_step
from ..simulate import WorkloadFiles

#: the most history read (``--history``): 90 days, which the simulator replays within its bound of syncs
MAX_HISTORY_SECONDS = 90 * 86400.0
#: the history's resolution: Prometheus evaluates the rate every minute, as the traces tune is tested on
STEP_SECONDS = 60.0
TARGET_KINDS = ("Deployment", "StatefulSet")


@dataclass(slots=True, frozen=True)
class LiveInputs:
    """The files written from the cluster (``files``), the load column, the query and how many points it
    returned."""

    files: WorkloadFiles
    column: str
    query: str
    points: int
    key: str
    prometheus_url: str

    def describe(self) -> str:
        return f"{self.key} from the cluster; {self.points} points of {self.query} from {self.prometheus_url}"


def fetch_live(key: str, *, prometheus_url: str, kubeconfig: str | None, context: str | None, server: str | None,
               history_seconds: float, directory: Path, profile: Path | None = None, now: float | None = None,
               http: str = "httpx") -> LiveInputs:
    """Read ``NAMESPACE/NAME`` from the cluster and ``history_seconds`` of its first metric's workload total
    from Prometheus; write the files into ``directory``. Raises InputError: unreachable cluster or Prometheus,
    no such autoscaler, a first metric that is not CPU, an empty history."""
    from ..adapters.kubeconfig import load_config
    from ..controller import Settings
    from ..controller.snapshot import parse_key

    namespace, name = parse_key(key)
    if not 2 * 86400 <= history_seconds <= MAX_HISTORY_SECONDS:
        raise InputError(f"must be from 172800 s (two days) to {MAX_HISTORY_SECONDS:.0f} s (90 days), got "
                         f"{history_seconds!r}", field="--history")
    config = load_config(kubeconfig, server, context)
    settings = Settings(namespaces=(namespace,), health_port=None, prometheus_url=prometheus_url)
    now = time.time() if now is None else now
    return asyncio.run(fetch_workload(settings, config, namespace, name, prometheus_url, history_seconds, directory,
                                      profile, now, http))


async def fetch_workload(settings, config, namespace: str, name: str, prometheus_url: str, history_seconds: float,
                         directory: Path, profile: Path | None, now: float, http: str,
                         kinds: tuple[str, ...] = ("horizontalautoscaler", "hpa")) -> LiveInputs:
    """One autoscaler's files (``fetch_live``'s; also ``pyhpa fleet snapshot``'s, for each autoscaler of a cluster):
    ``kinds`` are tried in order (a HorizontalAutoscaler, else a native HPA of that name). Raises InputError as
    ``fetch_live``."""
    from ..controller.cache.autoscaler import parse_autoscaler
    from ..controller.kube.api import LightkubeCluster
    from ..controller.snapshot import take_snapshot
    from ..controller.sync.prediction import default_history_query

    doc = None
    for kind in kinds:
        try:
            doc = await take_snapshot(settings, config, namespace, name, kind, now, http)
            break
        except InputError as err:
            if "not found" not in err.message or kind == kinds[-1]:
                raise
    hpa_doc = doc["hpa"]
    # a snapshot keeps the status only once the HPA has been synced; the zero value is what the API server shows before
    a = parse_autoscaler(dict(hpa_doc, status=hpa_doc.get("status") or {"desiredReplicas": 0}), settings)
    if a.hpa is None or not a.queries:
        raise InputError(f"the spec is invalid: {a.error}" if a.hpa is None else "has no metrics to tune",
                         obj=f"{namespace}/{name}", field="spec.metrics")
    found = default_history_query(a, 0)
    if found is None or found[1] != "cores":
        raise InputError("live mode replays the history of a CPU metric: spec.metrics[0] is not a Resource or "
                         "ContainerResource cpu metric (tune offline with --trace and --metric-column)",
                         obj=f"{namespace}/{name}", field="spec.metrics[0]")
    query = found[0]
    ref = hpa_doc["spec"]["scaleTargetRef"]
    if ref.get("kind") not in TARGET_KINDS:
        raise InputError(f"the target is a {ref.get('kind')}; tune replays a Deployment or StatefulSet",
                         obj=f"{namespace}/{name}", field="spec.scaleTargetRef.kind")
    cluster = LightkubeCluster(config, settings.api_timeout_seconds, settings.field_manager, settings.list_chunk_size,
                               settings.watch_timeout_seconds, http)
    try:
        target = await _target(cluster, ref, namespace)
    finally:
        await cluster.close()
    start = now - history_seconds
    try:
        async with httpx2.AsyncClient() as client:
            times, values = await query_range(client, prometheus_url, query, start, now,
                                              range_step(start, now, STEP_SECONDS), settings.metrics_timeout_seconds * 6)
    except RangeQueryError as err:
        raise InputError(str(err), field="--prometheus-url") from None
    if not times:
        raise InputError(f"no history: {query} returned no points in the last {history_seconds / 86400:g} days",
                         field="--prometheus-url")
    directory.mkdir(parents=True, exist_ok=True)
    files = WorkloadFiles((directory / "hpa.yaml",), directory / "target.yaml", directory / "history.csv",
                          "cpu_millicores", profile or directory / "profile.yaml")
    meta = {k: v for k, v in (hpa_doc.get("metadata") or {}).items() if k in ("name", "namespace", "labels")}
    files.hpa[0].write_text(yaml.safe_dump({**{k: hpa_doc[k] for k in ("apiVersion", "kind")}, "metadata": meta,
                                            "spec": hpa_doc["spec"]}, sort_keys=False))
    files.target.write_text(yaml.safe_dump(target, sort_keys=False))
    lines = ["timestamp,cpu_millicores"] + [f"{t:.0f},{v * 1000.0:.3f}" for t, v in zip(times, values)]
    files.trace.write_text("\n".join(lines) + "\n")
    if profile is None:
        files.profile.write_text(_profile(target))
    return LiveInputs(files=files, column="cpu_millicores", query=query, points=len(times),
                      key=f"{namespace}/{name}", prometheus_url=prometheus_url)


async def _target(cluster, ref: dict, namespace: str) -> dict:
    from lightkube.resources.apps_v1 import Deployment, StatefulSet

    from ..controller.kube.api import as_failure

    resource = Deployment if ref["kind"] == "Deployment" else StatefulSet
    try:
        obj = (await cluster.client.get(resource, ref["name"], namespace=namespace)).to_dict()
    except Exception as err:  # noqa: BLE001 - every failure is one line
        failure = as_failure(err)
        problem = "not found" if failure.code == 404 else f"cannot read it: {failure.message}"
        raise InputError(problem, obj=f"{ref['kind']} {namespace}/{ref['name']}") from None
    meta = obj.get("metadata") or {}
    return {"apiVersion": "apps/v1", "kind": ref["kind"],
            "metadata": {k: meta[k] for k in ("name", "namespace") if k in meta}, "spec": obj.get("spec") or {}}


def _profile(target: dict) -> str:
    """The workload profile of a CPU history: the load is CPU work (1 millicore-second per "request"), a pod
    serves up to its CPU limit (else twice its request); start-up as the built-in defaults."""
    from ..simulate.target import target_from_dict

    t = target_from_dict(target)
    cap = t.cpu_limit_millicores or 2 * (t.requests.get(("cpu", "")) or 1000.0)
    return ("# written by pyhpa tune (live mode): the history is the pods' CPU total in millicores\n"
            "load_unit: cpu_millicores\ncpu_millicore_seconds_per_request: 1\ncpu_baseline_millicores: 0\n"
            f"pod_capacity_rps: {cap:g}\n")
