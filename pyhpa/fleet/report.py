"""What ``pyhpa fleet simulate`` writes: ``summary.json`` (the fleet, each node pool, each workload),
``workloads.csv`` (a row per workload), ``timeline.csv`` (a row per node pool a simulated minute) and ``events.csv``
(nodes launched, Ready and deleted, pods that found no node, nodes given up on: ``pyhpa.fleet.engine.EventKind``).

Units: seconds, hours, requests, dollars (``cost``), dollars per hour (``cost_per_hour``), millicores and bytes.
A workload's figures are ``pyhpa simulate``'s (``pyhpa.simulate.report.summarize``) plus what the fleet adds:
``pending_pod_seconds`` (its new pods' time Pending), split into ``scheduling_seconds`` (kube-scheduler's part:
created to bound, or to the first attempt that found no node) and ``node_wait_seconds`` (from the first attempt that
found no node to the bind); ``pods_waited_for_node``; ``evicted_pods`` (drained by the node autoscaler);
``scale_up_lag_seconds`` (the mean of its parts: ``hpa`` the HPA's reaction to an overload, ``scheduling`` and
``node`` per new pod).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Sequence

from ..simulate.report import summarize
from .engine import SAMPLE_COLUMNS, FleetRun, TwinWorkload

WORKLOAD_COLUMNS = ("workload", "pool", "pod_hours", "unserved_requests", "unserved_fraction", "overloaded_seconds",
                    "pending_pod_seconds", "scheduling_seconds", "node_wait_seconds", "pods_waited_for_node",
                    "evicted_pods", "scale_ups", "reaction_time_mean_seconds", "cost_share")


def _r(x, digits: int = 3):
    return None if x is None else round(float(x), digits)


def node_hours(run: FleetRun, pool) -> tuple[float, float]:
    """(node-hours, cost in dollars) of a pool over the fleet's span: each node from its launch to its deletion
    (or the end), at its instance type's price."""
    hours = cost = 0.0
    for n in pool.all:
        seconds = max(min(n.deleted_at, run.end) - max(n.launched, run.start), 0.0)
        hours += seconds / 3600.0
        cost += seconds / 3600.0 * n.price
    return hours, cost


def _allocatable_seconds(run: FleetRun, pool) -> tuple[float, float]:
    """CPU (millicore-seconds) and memory (byte-seconds) of the pool's nodes while Ready."""
    cpu = memory = 0.0
    for n in pool.all:
        seconds = max(min(n.deleted_at, run.end) - max(n.ready_at, run.start), 0.0)
        cpu += n.cpu * seconds
        memory += n.memory * seconds
    return cpu, memory


def summarize_fleet(run: FleetRun, twin: Sequence[TwinWorkload] | None = None) -> dict:
    """summary.json: ``fleet`` (totals), ``node_pools`` and ``workloads`` (``pyhpa simulate``'s figures of each,
    with the fleet's own under ``fleet``). With the fleet's instant-nodes ``twin`` (``pyhpa.fleet.engine.instant_twin``)
    each workload's ``fleet`` and the fleet's totals say how much of the overload is the node pool's: under
    ``instant_nodes``, the overloaded seconds and unserved requests with nodes always there, and
    ``overload_from_node_pool_seconds`` (the run's overloaded seconds less the twin's: waiting for nodes, evictions)
    with its ``overload_from_node_pool_fraction`` of the run's (None when it had none)."""
    fleet, span = run.fleet, run.end - run.start
    workloads = []
    requested_by_pool: dict[str, float] = {}
    used_by_pool: dict[str, float] = {}
    for w, c, s in zip(fleet.workloads, run.clusters, run.stats):
        out = summarize(w.spec.name, w.spec.autoscaler, c, w.trace, run.settings)
        reactions = [e.reaction_seconds for e in c.stats.episodes if e.reaction_seconds is not None]
        bound = max(s.pods_bound, 1)
        out["fleet"] = {
            "pool": w.pool.name,
            "pods_created": s.pods_created,
            "pods_bound": s.pods_bound,
            "pending_pod_seconds": _r(s.pending_pod_seconds),
            "scheduling_seconds": _r(s.scheduling_seconds),
            "node_wait_seconds": _r(s.node_wait_seconds),
            "pods_waited_for_node": s.pods_waited_for_node,
            "evicted_pods": s.evicted_pods,
            "scale_up_lag_seconds": {
                "hpa": _r(sum(reactions) / len(reactions)) if reactions else None,
                "scheduling": _r(s.scheduling_seconds / bound) if s.pods_bound else None,
                "node": _r(s.node_wait_seconds / bound) if s.pods_bound else None,
            },
            "requests": {"cpu_millicores": w.requests.cpu, "memory_bytes": w.requests.memory},
        }
        used_by_pool[w.pool.name] = used_by_pool.get(w.pool.name, 0.0) + c.stats.cpu_millicore_seconds
        requested_by_pool[w.pool.name] = requested_by_pool.get(w.pool.name, 0.0) + \
            c.stats.pod_seconds * w.requests.cpu
        if twin is not None:
            out["fleet"]["instant_nodes"] = _twin_figures(twin[len(workloads)], c.stats.overloaded_seconds)
        workloads.append(out)
    pools = []
    total_hours = total_cost = 0.0
    cost_of: dict[str, float] = {}
    for pool in run.pools.values():
        hours, cost = node_hours(run, pool)
        cost_of[pool.spec.name] = cost
        total_hours += hours
        total_cost += cost
        cpu_s, _ = _allocatable_seconds(run, pool)
        samples = [r for r in run.samples if r.pool == pool.spec.name]
        requested = [r.requested_cpu_millicores / r.allocatable_cpu_millicores for r in samples
                     if r.allocatable_cpu_millicores]
        pools.append({
            "name": pool.spec.name,
            "node_hours": _r(hours, 4),
            "cost": _r(cost, 4),
            "nodes_launched": sum(1 for n in pool.all if n.launched > run.start),
            "nodes_removed": sum(1 for n in pool.all if n.deleted_at < math.inf),
            "max_nodes_seen": max((r.nodes + r.nodes_launching for r in samples), default=0),
            "mean_nodes": _r(hours * 3600.0 / span if span else 0.0, 4),
            "requested_cpu_utilization": _r(sum(requested) / len(requested), 4) if requested else None,
            "used_cpu_utilization": _r(used_by_pool.get(pool.spec.name, 0.0) / cpu_s, 4) if cpu_s else None,
            "workloads": [fleet.workloads[i].spec.name for i in pool.workloads],
        })
    for w, c, out in zip(fleet.workloads, run.clusters, workloads):  # its share of its pool's bill, by requested CPU
        req = requested_by_pool.get(w.pool.name, 0.0)
        share = c.stats.pod_seconds * w.requests.cpu / req if req else 0.0
        out["fleet"]["cost_share"] = _r(share * cost_of[w.pool.name], 4)
    requested = sum(w["requests"] for w in workloads)
    unserved = sum(w["unserved_requests"] for w in workloads)
    return {
        "fleet": {
            "file": fleet.file,
            "node_autoscaler": fleet.spec.node_autoscaler.model.value,
            "scoring_strategy": fleet.spec.scheduler.scoring_strategy.value,
            "start": _iso(run.start),
            "end": _iso(run.end),
            "simulated_seconds": _r(span),
            "workloads": len(workloads),
            "node_hours": _r(total_hours, 4),
            "cost": _r(total_cost, 4),
            "pod_hours": _r(sum(w["pod_hours"] for w in workloads), 4),
            "requests": _r(requested, 1),
            "unserved_requests": _r(unserved, 1),
            "unserved_fraction": _r(unserved / requested if requested else 0.0, 6),
            "overloaded_seconds": _r(sum(w["overloaded_seconds"] for w in workloads)),
            "pending_pod_seconds": _r(sum(w["fleet"]["pending_pod_seconds"] for w in workloads)),
            "node_wait_seconds": _r(sum(w["fleet"]["node_wait_seconds"] for w in workloads)),
            "evicted_pods": sum(w["fleet"]["evicted_pods"] for w in workloads),
            "seed": run.settings.seed,
            **({} if twin is None else {"instant_nodes": _twin_figures(
                TwinWorkload(sum(x.overloaded_seconds for x in twin), sum(x.unserved_requests for x in twin)),
                sum(c.stats.overloaded_seconds for c in run.clusters))}),
        },
        "node_pools": pools,
        "workloads": workloads,
    }


def _twin_figures(twin: TwinWorkload, overloaded: float) -> dict:
    """The instant-nodes twin's figures beside the run's ``overloaded`` seconds (unrounded)."""
    from_pool = overloaded - twin.overloaded_seconds
    return {"overloaded_seconds": _r(twin.overloaded_seconds), "unserved_requests": _r(twin.unserved_requests, 1),
            "overload_from_node_pool_seconds": _r(from_pool),
            "overload_from_node_pool_fraction": _r(from_pool / overloaded, 4) if overloaded > 0 else None}


def workload_rows(summary: dict) -> list[list]:
    """workloads.csv's rows (``WORKLOAD_COLUMNS``)."""
    rows = []
    for w in summary["workloads"]:
        f = w["fleet"]
        rows.append([w["label"], f["pool"], w["pod_hours"], w["unserved_requests"], w["unserved_fraction"],
                     w["overloaded_seconds"], f["pending_pod_seconds"], f["scheduling_seconds"],
                     f["node_wait_seconds"], f["pods_waited_for_node"], f["evicted_pods"], w["scale_ups"],
                     w["reaction_time_mean_seconds"], f["cost_share"]])
    return rows


def write_fleet(run: FleetRun, out: str | Path, plot: bool = False, twin: Sequence[TwinWorkload] | None = None) -> dict:
    """Write summary.json, workloads.csv, timeline.csv and events.csv into the folder ``out`` (created), and with
    ``plot`` nodes.png, cpu.png, pending.png, overload.png, worst.png and report.html (``pyhpa.fleet.plots``); returns the summary."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    summary = summarize_fleet(run, twin)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    with open(folder / "workloads.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(WORKLOAD_COLUMNS)
        w.writerows(workload_rows(summary))
    with open(folder / "events.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("time", "kind", "pool", "name", "detail", "reason"))
        w.writerows([_iso(e.time), e.kind, e.pool, e.name, e.detail, e.reason] for e in run.events)
    with open(folder / "timeline.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(SAMPLE_COLUMNS)
        for row in run.samples:
            w.writerow([_iso(row.time), *row[1:-1], round(row.cost_per_hour, 6)])
    if plot:
        from .plots import write_plots_and_report

        write_plots_and_report(run, summary, folder)
    return summary


def _iso(t: float) -> str:
    from ..adapters.parse import format_time

    return format_time(t) or ""
