"""``pyhpa fleet snapshot``: a fleet file from a real cluster and its Prometheus.

Every HorizontalAutoscaler, and every native autoscaling/v2 HPA whose target no HorizontalAutoscaler scales, is read
with its Deployment or StatefulSet, and its workload's CPU history from Prometheus, exactly as ``pyhpa tune``'s live
mode reads one (``pyhpa.tune.live.fetch_workload``: the autoscaler as ``pyhpa snapshot`` reads it, the history with
the query ``spec.prediction`` uses by default, the CPU total as the load). The cluster's nodes become one node pool:
an instance type per ``node.kubernetes.io/instance-type`` (allocatable CPU, memory and pods as the nodes report
them), the labels every node has, the DaemonSet pods' requests on the busiest node as the overhead, ``minNodes``
the nodes there now and ``maxNodes`` three times that (at least 10); prices from ``--price TYPE=DOLLARS`` (0 for a
type without one). Written into the output folder: ``fleet.yaml`` and, per workload, ``workloads/NAMESPACE/NAME/``
with hpa.yaml, target.yaml, profile.yaml and history.csv; ``fleet simulate`` runs it as it is.

An autoscaler that cannot be replayed (its first metric not CPU, a target of another kind, no history) is left out
and listed, with the reason, in the result (``skipped``) and a comment of ``fleet.yaml``.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import yaml

from ..adapters.errors import InputError
from ..adapters.parse import quantity
from .scheduler import DEFAULT_MAX_PODS

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: the most autoscalers one snapshot reads (a fleet file's bound)
MAX_AUTOSCALERS = 10_000
MAX_PRICES = 100


@dataclass(slots=True)
class FleetSnapshot:
    """What ``fleet_snapshot`` wrote: the fleet file, the workloads in it (``namespace/name``), those left out with
    why, and the node pool's instance types with how many nodes of each."""

    fleet_file: Path
    workloads: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    instance_types: dict[str, int] = field(default_factory=dict)


def parse_prices(items: list[str]) -> dict[str, float]:
    """``TYPE=DOLLARS`` items (``--price``): dollars per node-hour by instance type; InputError naming ``--price``."""
    if len(items) > MAX_PRICES:
        raise InputError(f"{len(items)} given; at most {MAX_PRICES}", field="--price")
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = -1.0
        if not sep or not name or not (0 <= price < 1e6) or math.isnan(price):
            raise InputError(f"want TYPE=DOLLARS (dollars per node-hour, e.g. m5.xlarge=0.192), got {item!r}",
                             field="--price")
        if name in out:  # not the last one silently
            raise InputError(f"{name} is given twice ({out[name]:g} and {price:g}): give each instance type once",
                             field="--price")
        out[name] = price
    return out


def fleet_snapshot(*, prometheus_url: str, kubeconfig: str | None, context: str | None, server: str | None,
                   namespaces: tuple[str, ...], history_seconds: float, directory: Path, prices: dict[str, float],
                   now: float | None = None, http: str = "httpx") -> FleetSnapshot:
    """Read the cluster and Prometheus and write the fleet into ``directory`` (see the module's docstring).
    Raises InputError: an unreachable cluster, no autoscaler to replay, a history out of bounds."""
    from ..adapters.kubeconfig import load_config
    from ..controller import Settings
    from ..tune.live import MAX_HISTORY_SECONDS

    if not 2 * 86400 <= history_seconds <= MAX_HISTORY_SECONDS:
        raise InputError(f"must be from 172800 s (two days) to {MAX_HISTORY_SECONDS:.0f} s (90 days), got "
                         f"{history_seconds!r}", field="--history")
    config = load_config(kubeconfig, server, context)
    settings = Settings(namespaces=namespaces or (), health_port=None, prometheus_url=prometheus_url)
    now = time.time() if now is None else now
    return asyncio.run(_snapshot(settings, config, prometheus_url, namespaces, history_seconds, directory, prices,
                                 now, http))


async def _list(client, resource, namespaces: tuple[str, ...]) -> list[dict]:
    """Every object of ``resource`` (of ``namespaces``, all when none; a cluster-scoped one: all) as dicts."""
    from lightkube.core.resource import GlobalResource

    from ..controller.kube.api import as_failure

    out = []
    try:
        if issubclass(resource, GlobalResource):
            async for obj in client.list(resource):
                out.append(obj.to_dict())
            return out
        for ns in namespaces or ("*",):
            async for obj in client.list(resource, namespace=ns):
                out.append(obj.to_dict() if hasattr(obj, "to_dict") else obj)
    except Exception as err:  # noqa: BLE001 - every failure is one line
        raise InputError(f"cannot list {getattr(resource, '__name__', resource)}: {as_failure(err).message}",
                         field="--server") from None
    return out


async def _snapshot(settings, config, prometheus_url: str, namespaces: tuple[str, ...], history_seconds: float,
                    directory: Path, prices: dict[str, float], now: float, http: str) -> FleetSnapshot:
    from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
    from lightkube.resources.core_v1 import Node, Pod

    from ..controller.kube.api import LightkubeCluster
    from ..controller.kube.resources import HorizontalAutoscaler
    from ..tune.live import fetch_workload

    cluster = LightkubeCluster(config, settings.api_timeout_seconds, settings.field_manager, settings.list_chunk_size,
                               settings.watch_timeout_seconds, http)
    try:
        has = await _list(cluster.client, HorizontalAutoscaler, namespaces)
        hpas = await _list(cluster.client, HorizontalPodAutoscaler, namespaces)
        nodes = await _list(cluster.client, Node, ())
        pods = await _list(cluster.client, Pod, ())
    finally:
        await cluster.close()
    scaled = {(a["metadata"]["namespace"], (a["spec"].get("scaleTargetRef") or {}).get("name")) for a in has}
    chosen = [("horizontalautoscaler", a) for a in has] + [
        ("hpa", h) for h in hpas
        if (h["metadata"]["namespace"], (h["spec"].get("scaleTargetRef") or {}).get("name")) not in scaled]
    if len(chosen) > MAX_AUTOSCALERS:
        raise InputError(f"{len(chosen):,} autoscalers; a fleet holds at most {MAX_AUTOSCALERS:,}: narrow it with -n",
                         field="-n")
    result = FleetSnapshot(directory / "fleet.yaml")
    workloads = []
    for kind, obj in sorted(chosen, key=lambda x: (x[1]["metadata"]["namespace"], x[1]["metadata"]["name"])):
        ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        folder = directory / "workloads" / ns / name
        try:
            live = await fetch_workload(settings, config, ns, name, prometheus_url, history_seconds, folder, None,
                                        now, http, kinds=(kind,))
        except InputError as err:
            result.skipped.append((f"{ns}/{name}", err.message if not err.field else f"{err.field}: {err.message}"))
            continue
        rel = Path("workloads") / ns / name
        workloads.append({"name": f"{ns}-{name}" if len(namespaces) != 1 else name,
                          "autoscaler": str(rel / "hpa.yaml"), "target": str(rel / "target.yaml"),
                          "profile": str(rel / "profile.yaml"),
                          # Prometheus's history has holes where the workload had no samples: held, as forecast
                          # holds them (docs/cli.md), and said in the file
                          "trace": {"file": str(rel / "history.csv"), "column": live.column, "gaps": "hold"}})
        result.workloads.append(f"{ns}/{name}")
    if not workloads:
        why = "; ".join(f"{k}: {v}" for k, v in result.skipped[:3]) or "none found"
        raise InputError(f"no autoscaler to replay ({why})", field="--prometheus-url" if result.skipped else "-n")
    pool, result.instance_types = _pool(nodes, pods, prices)
    doc = {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "snapshot"},
           "spec": {"nodeAutoscaler": {"model": "cluster-autoscaler"}, "nodePools": [pool], "workloads": workloads}}
    head = [f"# pyhpa fleet snapshot at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))}: "
            f"{len(workloads)} workloads, {history_seconds / 86400:g} days of history from {prometheus_url}"]
    head += [f"# left out: {k}: {v}" for k, v in result.skipped]
    unpriced = [t for t in result.instance_types if t not in prices]
    if unpriced:
        head.append(f"# no --price for {', '.join(unpriced)}: priced 0 dollars per node-hour")
    directory.mkdir(parents=True, exist_ok=True)
    result.fleet_file.write_text("\n".join(head) + "\n" + yaml.safe_dump(doc, sort_keys=False))
    return result


def _requests(pod: dict) -> tuple[Decimal, Decimal]:
    cpu = memory = Decimal(0)
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = ((c.get("resources") or {}).get("requests")) or {}
        cpu += quantity(req["cpu"]) if "cpu" in req else Decimal(0)
        memory += quantity(req["memory"]) if "memory" in req else Decimal(0)
    return cpu, memory


def _pool(nodes: list[dict], pods: list[dict], prices: dict[str, float]) -> tuple[dict, dict[str, int]]:
    """The cluster's nodes as one node pool (see the module's docstring), and how many nodes of each type."""
    kinds: dict[str, dict] = {}
    counts: dict[str, int] = {}
    common: dict[str, str] | None = None
    for n in nodes:
        labels = (n.get("metadata") or {}).get("labels") or {}
        alloc = (n.get("status") or {}).get("allocatable") or {}
        cpu, memory = quantity(alloc.get("cpu", "0")), quantity(alloc.get("memory", "0"))
        kind = labels.get(INSTANCE_TYPE_LABEL) or f"{cpu:g}cpu-{math.ceil(memory / 2**20)}Mi"
        counts[kind] = counts.get(kind, 0) + 1
        kinds.setdefault(kind, {"name": kind, "cpu": f"{int(math.ceil(cpu * 1000))}m", "memory": str(math.ceil(memory)),
                                "pricePerHour": prices.get(kind, 0.0),
                                "pods": int(alloc.get("pods", DEFAULT_MAX_PODS))})
        items = {k: v for k, v in labels.items() if k != "kubernetes.io/hostname"}
        common = dict(items) if common is None else {k: v for k, v in common.items() if items.get(k) == v}
    overhead = {}
    for p in pods:
        owners = (p.get("metadata") or {}).get("ownerReferences") or []
        node = (p.get("spec") or {}).get("nodeName")
        if node and any(o.get("kind") == "DaemonSet" for o in owners):
            cpu, memory = _requests(p)
            c, m = overhead.get(node, (Decimal(0), Decimal(0)))
            overhead[node] = (c + cpu, m + memory)
    cpu, memory = max(overhead.values(), default=(Decimal(0), Decimal(0)), key=lambda x: (x[0], x[1]))
    count = max(len(nodes), 1)
    pool = {"name": "cluster", "labels": common or {}, "instanceTypes": list(kinds.values()) or [
                {"name": "unknown", "cpu": "4", "memory": "16Gi", "pricePerHour": 0.0}],
            "daemonSetOverhead": {"cpu": f"{int(math.ceil(cpu * 1000))}m", "memory": str(math.ceil(memory))},
            "minNodes": len(nodes), "maxNodes": max(3 * count, 10)}
    return pool, counts
