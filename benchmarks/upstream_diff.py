"""Differential fuzzing: pyhpa and upstream Kubernetes v1.37.2's own HPA controller decide the same random snapshots.

    python benchmarks/upstream_diff.py --count 10000 --seed 7 [--out DIR] [--batch 500]

Generates ``--count`` random valid snapshots (tests/data/conformance/FORMAT.md) with our own generator, biased to
the edges where an implementation goes wrong: usage ratios exactly at (and one milli-unit beside) the tolerance
band, recommendation and scale-event timestamps exactly at the stabilization-window and policy-period cutoffs
(and a second or a millisecond beside), pod start and readiness times at the CPU initialization period and the
initial readiness delay, replica counts, policy values and metric values at the int32 and int64 limits, missing,
unready, pending, failed and deleted pods, sidecars (restartable init containers) and pod-level requests, every
metric source and target type, behaviors of every shape (no behavior, defaults, Pods/Percent policies, Max/Min/
Disabled, windows, per-direction tolerances), failing metrics APIs, scale from and to zero, and both values of
each feature gate the controller reads. Snapshot ``i`` of seed ``S`` is a function of ``(S, i)`` alone.

Each batch is written to one ``{"cases": [...]}`` file and decided by ``pyhpa explain --lenient -o json`` and by
``tools/upstream/hpa-decide`` (built by ``python -m controlplane build``) at the same time. Compared per snapshot: ``desiredReplicas``,
every proposal's ``replicas``, ``utilization``, ``rawValue`` and ``error``, the conditions (type, status,
reason, message, in order; the pod an error about a missing request names is masked: upstream picks it in Go's
map order, at random), and the whole status the sync leaves and its events (type, reason, message, in order). A disagreement is written to ``--out`` as ``<name>.json``: the snapshot, both
decisions and the differences. One class is not pyhpa's to match (docs/exactness.md): where a float64 that does
not fit an int32 is converted, Go's result is platform-defined (amd64: -2147483648; pyhpa saturates as arm64
does). A disagreement that vanishes when pyhpa's conversion is swapped for amd64's (in this process, for that
snapshot only) is counted as ``platform_defined``, not as a disagreement.

Prints ``snapshots=N agree=M platform_defined=P disagree=D seed=S seconds=T`` (``agree + platform_defined ==
snapshots`` is the goal). Exit code 1 when any snapshot disagrees.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HPA_DECIDE = ROOT / "tools" / "upstream" / "hpa-decide"
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
MIN_INT32 = -(2**31)
EPOCH = datetime(2026, 3, 1, tzinfo=timezone.utc)
NS = "ns"
SELECTOR = "app=web"


# ---------------------------------------------------------------------------------------------------------------
# The generator


def _time(t: datetime) -> str:
    """RFC 3339 UTC with the fraction only when there is one (microseconds: pyhpa reads times to the microsecond)."""
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    return text + (f".{t.microsecond:06d}".rstrip("0") + "Z" if t.microsecond else "Z")


def _milli(m: int) -> str:
    """A milli-value as a quantity string."""
    return f"{m}m" if m % 1000 else str(m // 1000)


class Gen:
    """One snapshot's random choices (``random.Random`` seeded with ``seed:index``)."""

    def __init__(self, seed: int, index: int):
        self.r = random.Random(f"{seed}:{index}")
        self.index = index

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, *options: Any) -> Any:
        return self.r.choice(options)

    def edge_int(self, low: int, high: int, typical: tuple[int, ...] = ()) -> int:
        """An int in [low, high], biased to the bounds, their neighbours and ``typical`` values."""
        roll = self.r.random()
        if roll < 0.15:
            return self.pick(low, min(low + 1, high), high, max(high - 1, low))
        if roll < 0.6 and typical:
            return min(max(self.pick(*typical), low), high)
        return self.r.randint(low, min(high, max(low, low + 100)))

    # -- the pieces

    def controller(self) -> dict:
        c: dict[str, Any] = {}
        if self.chance(0.5):
            c["tolerance"] = self.pick(0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)
        if self.chance(0.4):
            c["cpuInitializationPeriodSeconds"] = self.pick(0, 30, 60, 120, 300)
        if self.chance(0.4):
            c["initialReadinessDelaySeconds"] = self.pick(0, 10, 30, 60)
        if self.chance(0.4):
            c["downscaleStabilizationWindowSeconds"] = self.pick(0, 15, 60, 300)
        if self.chance(0.3):
            c["scaleUpLimitFactor"] = self.pick(1.0, 1.5, 2.0, 3.0, 8.0)
        gates = {}
        if self.chance(0.6):
            gates["HPAScaleToZero"] = self.chance(0.5)
        if self.chance(0.4):
            gates["PodLevelResources"] = self.chance(0.5)
        if self.chance(0.1):
            gates["HPAConfigurableTolerance"] = self.chance(0.5)  # off: upstream emulates v1.36
        if gates:
            c["featureGates"] = gates
        return c

    def tolerance(self) -> float:
        return self.ctl.get("tolerance", 0.1)

    def near_ratio(self, target: int) -> int:
        """A usage (milli, or percent) whose ratio to ``target`` is at a tolerance edge, 1, or anywhere."""
        tol = self.tolerance()
        roll = self.r.random()
        if roll < 0.45:
            base = target * self.pick(1 + tol, 1 - tol, 1.0, 1 + tol / 2)
            return max(0, int(round(base)) + self.pick(-1, 0, 0, 1))
        if roll < 0.55:
            return self.pick(0, 1, MAX_INT32, 10**12, 10**15)
        return int(target * self.r.uniform(0, 4))

    def rules(self, up: bool) -> dict | None:
        if self.chance(0.25):
            return None
        out: dict[str, Any] = {}
        if self.chance(0.6):
            out["stabilizationWindowSeconds"] = self.pick(0, 0, 15, 60, 120, 300, 600, 3600)
        if self.chance(0.5):
            out["selectPolicy"] = self.pick("Max", "Min", "Disabled", "Max")
        if self.chance(0.6):
            out["policies"] = [
                {"type": self.pick("Pods", "Percent"),
                 "value": self.pick(1, 2, 4, 10, 50, 100, 200, 900, MAX_INT32),
                 "periodSeconds": self.pick(1, 15, 30, 60, 300, 1800)}
                for _ in range(self.r.randint(1, 3))]
        if self.chance(0.35):
            out["tolerance"] = self.pick("0", "10m", "50m", "100m", "200m", "1", "1500m")
        return out

    def behavior(self) -> dict | None:
        if self.chance(0.4):
            return None
        b = {}
        for key, up in (("scaleUp", True), ("scaleDown", False)):
            r = self.rules(up)
            if r is not None:
                b[key] = r
        return b

    def container(self, name: str, restart: str | None = None) -> dict:
        c: dict[str, Any] = {"name": name, "image": "web"}
        req = {}
        if self.chance(0.9):
            req["cpu"] = self.pick("100m", "200m", "250m", "500m", "1", "2", "1m", "3")
        if self.chance(0.7):
            req["memory"] = self.pick("64Mi", "128Mi", "256Mi", "1Gi", "100M", "1")
        if req:
            c["resources"] = {"requests": req}
        if restart:
            c["restartPolicy"] = restart
        return c

    def pod(self, i: int, now: datetime) -> dict:
        name = f"web-{i}"
        labels = {"app": "web"} if self.chance(0.93) else {"app": "other"}
        meta: dict[str, Any] = {"name": name, "labels": labels}
        if self.chance(0.85):
            meta["namespace"] = NS if self.chance(0.95) else "elsewhere"
        if self.chance(0.05):
            meta["deletionTimestamp"] = _time(now)
        containers = [self.container("app")]
        if self.chance(0.3):
            containers.append(self.container("proxy"))
        spec: dict[str, Any] = {"containers": containers}
        if self.chance(0.2):
            spec["initContainers"] = [self.container("sidecar", "Always")] + (
                [self.container("setup")] if self.chance(0.5) else [])
        if self.chance(0.2):
            spec["resources"] = {"requests": {k: v for k, v in (("cpu", self.pick("500m", "1", "2", "300m")),
                                                             ("memory", self.pick("256Mi", "1Gi")))
                                              if self.chance(0.7)}}
        if self.chance(0.05):
            spec["overhead"] = {"cpu": "50m"}
        init = self.ctl.get("cpuInitializationPeriodSeconds", 300)
        delay = self.ctl.get("initialReadinessDelaySeconds", 30)
        status: dict[str, Any] = {"phase": self.pick(*(["Running"] * 12), "Pending", "Failed", "Succeeded")}
        start = None
        if self.chance(0.93):
            age = self.pick(0, 5, init - 1, init, init + 1, 3600, 86400, init, 10**6)
            start = now - timedelta(seconds=max(age, 0))
            if self.chance(0.1):
                start = datetime(1, 1, 1, tzinfo=timezone.utc)  # the zero time: long ago
            status["startTime"] = _time(start)
        self.starts[name] = start
        conds = []
        if self.chance(0.9):
            st = self.pick("True", "True", "True", "False", "Unknown")
            base = start or now - timedelta(seconds=600)
            if base.year < 2:  # started at the zero time: ready then too, or lately
                at = self.pick(base, now - timedelta(seconds=120))
            else:
                at = base + timedelta(seconds=self.pick(0, delay - 1, delay, delay + 1, 30, 120))
            conds.append({"type": "Ready", "status": st, "lastTransitionTime": _time(at)})
            self.ready_at[name] = at
            if self.chance(0.05):
                conds.append({"type": "Ready", "status": self.pick("True", "False"), "lastTransitionTime": _time(now)})
        if conds:
            status["conditions"] = conds
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}

    def metric_spec(self, kind: str) -> dict:
        if kind in ("Resource", "ContainerResource"):
            res = self.pick("cpu", "cpu", "memory")
            if self.chance(0.7):
                target = {"type": "Utilization", "averageUtilization": self.pick(1, 10, 50, 60, 80, 100, 150, 300, MAX_INT32)}
            else:
                target = {"type": "AverageValue", "averageValue": self.pick("100m", "200m", "1", "64Mi", "300Mi", "1m")}
            src: dict[str, Any] = {"name": res, "target": target}
            if kind == "ContainerResource":
                src["container"] = self.pick("app", "app", "proxy", "sidecar", "missing")
                return {"type": kind, "containerResource": src}
            return {"type": kind, "resource": src}
        metric: dict[str, Any] = {"name": self.pick("qps", "latency", "queue")}
        if self.chance(0.2):
            metric["selector"] = {"matchLabels": {"tier": "front"}}
        if kind == "Pods":
            return {"type": kind, "pods": {"metric": metric, "target": {
                "type": "AverageValue", "averageValue": self.pick("1", "10", "500m", "100", "1k", "1m")}}}
        if self.chance(0.5):
            target = {"type": "Value", "value": self.pick("1", "10", "100", "1k", "500m", "1m")}
        else:
            target = {"type": "AverageValue", "averageValue": self.pick("1", "10", "100", "1k", "500m", "1m")}
        if kind == "Object":
            return {"type": kind, "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                                                 "name": "main"}, "metric": metric, "target": target}}
        return {"type": kind, "external": {"metric": metric, "target": target}}

    def target_milli(self, spec: dict) -> int:
        from pyhpa.adapters.parse import milli  # the same quantity reading as pyhpa's

        src = spec.get("resource") or spec.get("containerResource") or spec.get("pods") or spec.get("object") \
            or spec.get("external")
        t = src["target"]
        return milli(t.get("averageValue") or t.get("value") or "1")

    # -- the snapshot

    def snapshot(self) -> dict:
        now = EPOCH + timedelta(seconds=self.r.randint(0, 86400 * 30))
        if self.chance(0.2):
            now += timedelta(microseconds=self.pick(1, 250000, 500000, 999999))
        self.ctl = self.controller()
        self.starts: dict[str, datetime | None] = {}
        self.ready_at: dict[str, datetime] = {}
        kinds = [self.pick("Resource", "Resource", "ContainerResource", "Pods", "Object", "External")
                 for _ in range(self.pick(1, 1, 1, 2, 3))]
        metrics = [self.metric_spec(k) for k in kinds]
        has_oe = any(k in ("Object", "External") for k in kinds)
        max_r = self.pick(1, 2, 5, 10, 20, 100, 1000, MAX_INT32)
        min_r = self.pick(None, 1, 1, 2, 3, max_r) if not (has_oe and self.chance(0.3)) else 0
        if min_r is not None:
            min_r = min(min_r, max_r)
        spec: dict[str, Any] = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                                "maxReplicas": max_r, "metrics": metrics}
        if not has_oe and self.chance(0.03):
            del spec["metrics"]  # the API's default: cpu at 80 % utilization
            metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                     "averageUtilization": 80}}}]
        if min_r is not None:
            spec["minReplicas"] = min_r
        behavior = self.behavior()
        if behavior is not None:
            spec["behavior"] = behavior
        lo = 1 if min_r is None else min_r
        current = self.pick(lo, lo + 1, (lo + max_r) // 2, max_r, max_r + 1, max(lo - 1, 0), 0, 3, 5,
                            min(lo + 2, max_r), MAX_INT32)
        current = min(current, MAX_INT32)
        status_r = current if self.chance(0.8) else self.pick(0, max(current - 1, 0), min(current + 1, MAX_INT32))
        selector = SELECTOR if self.chance(0.95) else self.pick("", "app in (web", "app=web,tier!=db", "app")
        hpa: dict[str, Any] = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                               "metadata": {"name": f"hpa-{self.index}", "namespace": NS}, "spec": spec}
        hstatus = self.hpa_status(now, current)
        if hstatus:
            hpa["status"] = hstatus
        n_pods = self.pick(0, 1, 2, 3, 3, 4, 5, 8) if current < 50 else self.pick(1, 3, 6)
        pods = [self.pod(i, now) for i in range(n_pods)]
        snap = {
            "name": f"fuzz-{self.index}",
            "level": "controller",
            "now": _time(now),
            "controller": self.ctl,
            "hpa": hpa,
            "scale": {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "namespace": NS},
                      "spec": {"replicas": current}, "status": {"replicas": status_r, "selector": selector}},
            "pods": pods,
            "metrics": self.answers(metrics, pods, now),
        }
        history = self.history(now, current, behavior)
        if history is not None:
            snap["history"] = history
        return snap

    def hpa_status(self, now: datetime, current: int) -> dict:
        st: dict[str, Any] = {}
        if self.chance(0.4):
            st["desiredReplicas"] = self.pick(0, current, max(current - 1, 0), 7)
            st["currentReplicas"] = current
        conds = []
        if self.chance(0.3):
            conds.append({"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale",
                          "message": "the HPA controller was able to get the target's current scale",
                          "lastTransitionTime": _time(now - timedelta(seconds=600))})
        if self.chance(0.3):
            s = self.pick("True", "False")
            conds.append({"type": "ScaledToZero", "status": s, "reason": "ScaledToZero" if s == "True" else "NotScaledToZero",
                          "message": "set earlier", "lastTransitionTime": _time(now - timedelta(seconds=900))})
        if self.chance(0.15):
            conds.append({"type": "ScalingActive", "status": "False", "reason": "ScalingDisabled",
                          "message": "scaling is disabled since the replica count of the target is zero",
                          "lastTransitionTime": _time(now - timedelta(seconds=300))})
        if conds:
            self.r.shuffle(conds)
            st["conditions"] = conds
        if self.chance(0.2):
            st["lastScaleTime"] = _time(now - timedelta(seconds=120))
        return st

    def sample_time(self, name: str, now: datetime, window_s: int) -> datetime:
        """A metric timestamp, often at the edge of one window after the pod became ready."""
        ready = self.ready_at.get(name)
        if ready is not None and ready.year > 1 and self.chance(0.4):
            return ready + timedelta(seconds=window_s + self.pick(-1, 0, 0, 1))
        return now - timedelta(seconds=self.pick(0, 5, 15, 30, 60))

    def value_for(self, target_milli: int, spread: bool = True) -> int:
        if self.chance(0.08):
            return self.pick(0, 1, MAX_INT64 // 8, MAX_INT64 // 4, 10**15)
        v = self.near_ratio(target_milli)
        return v + (self.r.randint(-2, 2) if spread and v > 2 else 0)

    def answers(self, metrics: list[dict], pods: list[dict], now: datetime) -> dict:
        out: dict[str, Any] = {}
        errors = []
        names = [p["metadata"]["name"] for p in pods]
        for spec in metrics:
            kind = spec["type"]
            if kind in ("Resource", "ContainerResource"):
                if self.chance(0.05):
                    errors.append("resource")
                if "resource" in out:
                    continue
                if self.chance(0.04):
                    continue  # no answer: no metrics returned
                src = spec.get("resource") or spec.get("containerResource")
                out["resource"] = self.pod_metrics(pods, src, now)
                continue
            name = spec[kind.lower()]["metric"]["name"]
            key = kind.lower()
            if self.chance(0.06):
                errors.append(f"{key}:{name}")
                continue
            if name in out.get(key, {}):
                continue
            target = self.target_milli(spec)
            if kind == "Pods":
                items = []
                for n in names + (["ghost"] if self.chance(0.05) else []):
                    if self.chance(0.1):
                        continue
                    item = {"describedObject": {"kind": "Pod", "namespace": NS, "name": n, "apiVersion": "/v1"},
                            "metric": {"name": name}, "timestamp": _time(self.sample_time(n, now, 60)),
                            "value": _milli(self.value_for(target))}
                    if self.chance(0.3):
                        item["windowSeconds"] = self.pick(15, 30, 60)
                    items.append(item)
                out.setdefault("pods", {})[name] = {"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2",
                                                    "items": items}
            elif kind == "Object":
                t = spec["object"]["target"]
                scale = 1 if t["type"] == "Value" else self.pick(1, 2, 3, 5)
                out.setdefault("object", {})[name] = {
                    "describedObject": {"kind": "Ingress", "namespace": NS, "name": "main", "apiVersion": "networking.k8s.io/v1"},
                    "metric": {"name": name}, "timestamp": _time(now), "value": _milli(self.value_for(target) * scale)}
            else:
                t = spec["external"]["target"]
                n_items = self.pick(1, 1, 2, 3)
                values = [self.value_for(target) // n_items for _ in range(n_items)]
                if self.chance(0.05):
                    values.append(-self.pick(1, 1000, MAX_INT64))
                if self.chance(0.05):
                    values = []
                out.setdefault("external", {})[name] = {"kind": "ExternalMetricValueList",
                                                        "apiVersion": "external.metrics.k8s.io/v1beta1", "items": [
                    {"metricName": name, "metricLabels": {"tier": "front"}, "timestamp": _time(now), "value": _milli(v)}
                    for v in values]}
        if errors:
            out["errors"] = sorted(set(errors))
        return out

    def pod_metrics(self, pods: list[dict], src: dict, now: datetime) -> dict:
        """A PodMetricsList of ``pods`` (metrics.k8s.io/v1beta1) for a Resource or ContainerResource metric source
        ``src``: some pods or containers missing, windows of 15-60 s, sometimes a pod that does not exist."""
        items = []
        for p in pods:
            if self.chance(0.12):
                continue  # a missing pod
            window = self.pick(15, 30, 60)
            conts = []
            for c in p["spec"]["containers"] + [c for c in p["spec"].get("initContainers", [])
                                                if c.get("restartPolicy") == "Always"]:
                if self.chance(0.04):
                    continue
                usage = {}
                req = (c.get("resources") or {}).get("requests") or {}
                if self.chance(0.97):
                    usage["cpu"] = _milli(self.usage("cpu", req.get("cpu"), src))
                if self.chance(0.95):
                    usage["memory"] = str(self.usage("memory", req.get("memory"), src) // 1000) \
                        if self.chance(0.8) else _milli(self.usage("memory", req.get("memory"), src))
                conts.append({"name": c["name"], "usage": usage})
            items.append({"metadata": {"name": p["metadata"]["name"], "namespace": NS},
                          "timestamp": _time(self.sample_time(p["metadata"]["name"], now, window)),
                          "window": f"{window}s", "containers": conts})
        if self.chance(0.05):
            items.append({"metadata": {"name": "ghost", "namespace": NS}, "timestamp": _time(now),
                          "window": "30s", "containers": [{"name": "app", "usage": {"cpu": "100m", "memory": "10Mi"}}]})
        return {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetricsList", "items": items}

    def usage(self, resource: str, request: str | None, src: dict) -> int:
        """A container's usage (milli): near its request times the target utilization, at the edges, or random."""
        from pyhpa.adapters.parse import milli

        req = milli(request) if request else (200 if resource == "cpu" else 128 * 2**20 * 1000)
        t = src["target"]
        if t["type"] == "Utilization":
            goal = req * min(t["averageUtilization"], 10**6) // 100
        else:
            goal = milli(t["averageValue"])
        if self.chance(0.03):
            return self.pick(0, MAX_INT64 // 2, 10**15)
        return max(0, self.near_ratio(max(goal, 1)))

    def history(self, now: datetime, current: int, behavior: dict | None) -> dict | None:
        if self.chance(0.3):
            return None
        windows = [self.ctl.get("downscaleStabilizationWindowSeconds", 300)]
        periods = [15]
        for key in ("scaleUp", "scaleDown"):
            rules = (behavior or {}).get(key) or {}
            if "stabilizationWindowSeconds" in rules:
                windows.append(rules["stabilizationWindowSeconds"])
            periods += [p["periodSeconds"] for p in rules.get("policies", [])]

        def at(cuts: list[int]) -> str:
            offset = self.pick(*cuts) + self.pick(0, 0, 1, -1, 0.001, -0.001, 30, 1000)
            if self.chance(0.03):
                offset = -self.pick(1, 60)  # a clock that went back: memory from the future
            return _time(now - timedelta(seconds=offset if offset < 0 else max(offset, 0)))

        out: dict[str, Any] = {}
        if self.chance(0.85):
            out["recommendations"] = [
                {"timestamp": at(windows), "replicas": max(0, min(MAX_INT32, current + self.pick(-5, -2, -1, 0, 1, 2, 5, 100)))}
                for _ in range(self.pick(0, 1, 2, 3, 5))]
        for key in ("scaleUpEvents", "scaleDownEvents"):
            if self.chance(0.5):
                out[key] = [{"timestamp": at(periods), "replicaChange": self.pick(1, 2, 3, 10, 1000)}
                            for _ in range(self.pick(1, 2, 3))]
        return out


def generate(seed: int, index: int) -> dict:
    """Snapshot ``index`` of ``seed``."""
    return Gen(seed, index).snapshot()


# ---------------------------------------------------------------------------------------------------------------
# Running both and comparing

PROPOSAL_KEYS = ("replicas", "utilization", "rawValue", "error")
CONDITION_KEYS = ("type", "status", "reason", "message")


#: The errors calculateRequests returns for the first pod it finds without the request. Upstream lists the pods
#: from its informer's index, a Go map: which pod is first differs from one run to the next (two computations of
#: the same sync in one process name different pods). The pod (and container) it names is masked.
_POD_REQUEST_ERROR = re.compile(r"(missing (?:pod-level )?(?:request|limit) for \S+ in (?:container \S+ of )?Pod \S+"
                                r"|container \S+ not found in Pod \S+)")


def _mask(text):
    return _POD_REQUEST_ERROR.sub("<the first pod without the request>", text) if isinstance(text, str) else text


def _masked_status(status: dict | None) -> dict | None:
    """The whole status with its conditions' messages masked (``_mask``)."""
    if status is None:
        return None
    out = dict(status)
    if isinstance(out.get("conditions"), list):
        out["conditions"] = [{**c, "message": _mask(c.get("message"))} for c in out["conditions"]]
    return out


def comparable(line: dict) -> dict:
    """The keys both print, in the shape compared (``_mask`` applied to errors and messages): the decision, and
    the whole status the sync leaves and its events (issue 58; None where a line has none: a normalization
    alone)."""
    return {
        "desiredReplicas": line["desiredReplicas"],
        "proposals": [{k: _mask(p.get(k)) for k in PROPOSAL_KEYS} for p in line["proposals"]],
        "conditions": [{k: _mask(c.get(k)) for k in CONDITION_KEYS} for c in line["conditions"]],
        "status": _masked_status(line.get("status")),
        "events": [{**e, "message": _mask(e.get("message"))} for e in line.get("events", [])],
    }


def differences(ours: dict, theirs: dict) -> list[str]:
    """What differs between pyhpa's line and upstream's (empty: they agree)."""
    a, b = comparable(ours), comparable(theirs)
    out = []
    if a["desiredReplicas"] != b["desiredReplicas"]:
        out.append(f"desiredReplicas: pyhpa {a['desiredReplicas']}, upstream {b['desiredReplicas']}")
    if len(a["proposals"]) != len(b["proposals"]):
        out.append(f"proposals: pyhpa {len(a['proposals'])}, upstream {len(b['proposals'])}")
    else:
        for i, (p, q) in enumerate(zip(a["proposals"], b["proposals"])):
            for k in PROPOSAL_KEYS:
                if p[k] != q[k]:
                    out.append(f"proposals[{i}].{k}: pyhpa {p[k]!r}, upstream {q[k]!r}")
    if a["conditions"] != b["conditions"]:
        out.append(f"conditions: pyhpa {a['conditions']}, upstream {b['conditions']}")
    if b["status"] is not None:  # upstream ran a sync (not a normalization alone)
        mine = dict(a["status"] or {})
        if theirs.get("emulationVersion") and "observedGeneration" not in b["status"]:
            mine.pop("observedGeneration", None)  # an emulated older version has no HPAGeneration (docs/exactness.md)
        for key in sorted(set(mine) | set(b["status"])):
            if mine.get(key, "<absent>") != b["status"].get(key, "<absent>"):
                out.append(f"status.{key}: pyhpa {mine.get(key, '<absent>')!r}, upstream "
                           f"{b['status'].get(key, '<absent>')!r}")
        if a["events"] != b["events"]:
            out.append(f"events: pyhpa {a['events']}, upstream {b['events']}")
    return out


def _amd64_int32(x: float) -> int:
    """Go's int32(float64) as amd64 computes it: out of range or NaN gives -2^31."""
    if x != x or x >= 2147483648.0 or x <= -2147483649.0:
        return MIN_INT32
    return int(x)


def platform_defined(snap: dict, theirs: dict) -> bool:
    """Whether pyhpa, with its float64 -> int32 conversions made amd64's (``pyhpa.core.calculator.go_int32``
    swapped for ``_amd64_int32``; pyhpa saturates, docs/exactness.md), decides ``snap`` exactly as upstream
    did: then the disagreement is Go's platform-defined conversion, nothing else."""
    from pyhpa.adapters.snapshot import decision_json, run_snapshot, snapshot_from_dict
    from pyhpa.core import calculator

    original = calculator.go_int32
    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("pyhpa.core") and getattr(m, "go_int32", None) is original]
    for m in modules:
        m.go_int32 = _amd64_int32
    try:
        s = snapshot_from_dict(snap, "upstream_diff", lenient=True)
        return not differences(decision_json(s.name, run_snapshot(s)), theirs)
    finally:
        for m in modules:
            m.go_int32 = original


def _run(cmd: list[str], path: Path) -> tuple[subprocess.Popen, Path]:
    out = path.with_suffix(path.suffix + "." + Path(cmd[0]).name + ".out")
    fh = open(out, "w")
    proc = subprocess.Popen(cmd + [str(path)], stdout=fh, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    fh.close()
    return proc, out


def decide_both(path: Path, pyhpa: list[str], upstream: list[str]) -> tuple[list[dict] | str, list[dict] | str]:
    """Run both deciders on one batch file at once; each result is the lines, or the error text."""
    results = []
    procs = [_run(pyhpa, path), _run(upstream, path)]
    for proc, out in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            results.append(f"exit {proc.returncode}: {err.strip()[-2000:]}")
        else:
            results.append([json.loads(x) for x in out.read_text().splitlines() if x.strip()])
    return results[0], results[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000, help="snapshots to generate (1..1000000)")
    ap.add_argument("--seed", type=int, default=None, help="seed (default: from the clock; printed)")
    ap.add_argument("--batch", type=int, default=500, help="snapshots per file given to each decider (1..10000)")
    ap.add_argument("--out", type=Path, default=Path("upstream-diff-repros"),
                    help="folder for the repros of the disagreements (created when there is one)")
    args = ap.parse_args(argv)
    if not 1 <= args.count <= 1_000_000:
        ap.error("--count must be within 1..1000000")
    if not 1 <= args.batch <= 10_000:
        ap.error("--batch must be within 1..10000")
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 2**31
    pyhpa = [sys.executable, "-c", "from pyhpa.cli.main import app; app()", "explain", "--lenient", "-o", "json"]
    started = time.monotonic()
    built = subprocess.run([str(HPA_DECIDE), "--gates"], capture_output=True, text=True, cwd=ROOT)
    if built.returncode != 0:
        print(f"error: tools/upstream/hpa-decide: {built.stderr.strip()[-1000:]}", file=sys.stderr)
        return 2
    upstream = [str(HPA_DECIDE)]
    agree = platform = disagree = 0
    tmp = Path(tempfile.mkdtemp(prefix="upstream-diff-"))
    try:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("upstream diff"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[note]}"),
                      TimeElapsedColumn(), transient=True, disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("diff", total=args.count, note="")
            for first in range(0, args.count, args.batch):
                snaps = [generate(seed, i) for i in range(first, min(first + args.batch, args.count))]
                ours, theirs = decide_batch(snaps, tmp, pyhpa, upstream)
                for snap, o, t in zip(snaps, ours, theirs):
                    diff = [o] if isinstance(o, str) else [t] if isinstance(t, str) else differences(o, t)
                    if not diff:
                        agree += 1
                    elif not isinstance(o, str) and not isinstance(t, str) and platform_defined(snap, t):
                        platform += 1
                    else:
                        disagree += 1
                        args.out.mkdir(parents=True, exist_ok=True)
                        (args.out / f"{snap['name']}.json").write_text(json.dumps(
                            {"seed": seed, "differences": diff, "pyhpa": o, "upstream": t, "snapshot": snap}, indent=1))
                bar.update(task, advance=len(snaps), note=f"disagree={disagree}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.monotonic() - started
    print(f"snapshots={args.count} agree={agree} platform_defined={platform} disagree={disagree} seed={seed} "
          f"seconds={seconds:.0f}")
    if disagree:
        print(f"repros: {args.out}/", file=sys.stderr)
    return 1 if disagree else 0


def decide_batch(snaps: list[dict], tmp: Path, pyhpa: list[str], upstream: list[str]) -> tuple[list, list]:
    """Both deciders' lines for ``snaps`` (one file); a batch one of them refuses is halved until the refused
    snapshot stands alone (its entry is then the error text)."""
    path = tmp / f"{snaps[0]['name']}-{len(snaps)}.json"
    path.write_text(json.dumps({"cases": snaps}))
    ours, theirs = decide_both(path, pyhpa, upstream)
    if not isinstance(ours, str) and not isinstance(theirs, str):
        return ours, theirs
    if len(snaps) == 1:
        return [ours if isinstance(ours, str) else ours[0]], [theirs if isinstance(theirs, str) else theirs[0]]
    half = len(snaps) // 2
    a, b = decide_batch(snaps[:half], tmp, pyhpa, upstream), decide_batch(snaps[half:], tmp, pyhpa, upstream)
    return a[0] + b[0], a[1] + b[1]

if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
