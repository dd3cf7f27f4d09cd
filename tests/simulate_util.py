"""Helpers for the simulator tests: synthetic manifests, profiles and step traces in a tmp dir.

The default test workload makes arithmetic easy: 100m CPU request, 100 millicore-seconds per
request, no baseline, so 1 request/s per pod is exactly 100 % utilization.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from pyhpa.simulate import Settings, Simulation, run_simulation

T0 = 1_000_000_000  # trace start, epoch seconds

PROFILE = {
    "cpu_millicore_seconds_per_request": 100,
    "cpu_baseline_millicores": 0,
    "pod_capacity_rps": 1000,
    "pod_scheduling_seconds": 1,
    "container_start_seconds": 2,
    "app_startup_seconds": 2,
    "metrics_scrape_offset_seconds": 5,
}


def write_yaml(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def hpa_doc(min_replicas=1, max_replicas=100, metrics=None, behavior=None, name="web", kind="Deployment") -> dict:
    metrics = metrics or [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name},
            "minReplicas": min_replicas, "maxReplicas": max_replicas, "metrics": metrics}
    if behavior is not None:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name}, "spec": spec}


def target_doc(replicas=1, cpu="100m", limit=None, readiness=None, kind="Deployment", name="web", memory=None) -> dict:
    resources = {"requests": {"cpu": cpu}}
    if memory:
        resources["requests"]["memory"] = memory
    if limit:
        resources["limits"] = {"cpu": limit}
    container = {"name": "app", "image": "example/app", "resources": resources}
    if readiness:
        container["readinessProbe"] = {"httpGet": {"port": 8080}, **readiness}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def step_trace(path: Path, steps: list[tuple[float, float]], step: float = 60.0, extra: dict | None = None) -> Path:
    """A trace in seconds: each (duration s, requests/s) holds for its duration, one row per ``step``."""
    rows, t = [], T0
    for i, (duration, rps) in enumerate(steps):
        for _ in range(int(duration // step)):
            row = {"time": t, "rps": rps}
            for name, values in (extra or {}).items():
                row[name] = values[i]
            rows.append(row)
            t += step
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def simulate(tmp: Path, steps, *, hpas=None, target=None, profile=None, settings=None, extra=None, **kwargs) -> Simulation:
    """Run the simulator on a step trace with the test workload (overrides merge into PROFILE)."""
    hpas = hpas or [hpa_doc()]
    files = [write_yaml(tmp / f"hpa{i}.yaml", h) for i, h in enumerate(hpas)]
    tfile = write_yaml(tmp / "target.yaml", target or target_doc())
    pfile = write_yaml(tmp / "profile.yaml", {**PROFILE, **(profile or {})})
    trace = step_trace(tmp / "trace.csv", steps, extra=extra)
    return run_simulation(files, tfile, trace, "rps", profile=pfile, settings=settings or Settings(), **kwargs)


def timeline(sim: Simulation, i: int = 0) -> pd.DataFrame:
    """Run ``i``'s sync rows with epoch-second times (seconds since T0 in column ``t``)."""
    c = sim.runs[i].cluster
    df = pd.DataFrame(c.timeline.rows, columns=c.timeline.header)
    df["t"] = df["time"] - T0
    return df
