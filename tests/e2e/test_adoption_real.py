"""``pyhpa adopt`` and ``pyhpa release`` (issue 42) on the real control plane, with upstream's own HPA controller
(kube-controller-manager v1.37.2, sync period 1 s) and ``pyhpa run --sync-period 1`` on the same API server.

Ten HPAs of different kinds (CPU Utilization and AverageValue, ContainerResource, memory, External Value and
AverageValue, a Pods metric, two metrics at once; with and without ``behavior``; different min/max) each scale a
Deployment in the adopted namespace, and each has a TWIN in a namespace of its own: the same Deployment, the same
HPA, the same demand, never adopted. The demand changes in four phases; between them the ten are adopted one by one
(``pyhpa adopt NS/NAME``), released (``pyhpa release NS/NAME``, then ``pyhpa release --all -n NS``) and adopted all at
once (``pyhpa adopt --all -n NS``), each command run as a subprocess with the admin's kubeconfig.

A demand is a total (millicores, MiB, requests per second) spread over the running pods of each Deployment, so a
controller's scaling feeds back into the per-pod usage as real load does. Each demand is chosen so that it has ONE
settled replica count (the tolerance band holds one integer at most), whatever path a controller took to it: a
controller that lost upstream's in-memory stabilization window and policy events at the hand-over (which no object
carries, docs/adoption.md) may get there later, never elsewhere. So "same settled load, same replicas" is checked
as equality with the twin and with the count written in the table.

What is checked comes from the API server, not from sleeps or durations measured by the test: kube-apiserver's
audit log (``requestReceivedTimestamp`` and ``stageTimestamp`` of every request, the caller's user and agent; the
commands' requests are picked by the window in which each ran, this host's clock being the server's) and the
objects it serves. Upstream's HPA controller reads the target's ``/scale`` at each of its syncs; pyhpa writes the
HorizontalAutoscaler's status when a sync changes it (its scale comes from an informer, its pod metrics in one list
per namespace). For each hand-over:

(a) its steps are ordered on the server: HorizontalAutoscaler created, synced by pyhpa (a status write), the HPA
    deleted, the pause lifted, pyhpa's unpaused sync seen by the command; and the time from upstream's last sync of
    the target to the command's read of pyhpa's unpaused status (an upper bound of the time no controller synced
    it) stays within ``GAP_BOUND``;
(b) no replica change at the hand-over: no write of the target's scale by anyone from the HorizontalAutoscaler's
    creation until the demand changes next, and the replicas are the twin's;
(c) after the HPA's deletion upstream's controller never writes the target's scale, stops reading it before the
    demand changes next, and every later scale write is pyhpa's; its status follows the new demand (the twin's
    ``currentMetrics``, pyhpa's own fields);
(d) ``release`` hands back the same way: paused, the HPA created and synced by upstream (a status write;
    ``observedGeneration``) before the HorizontalAutoscaler is deleted, pyhpa's last sync to upstream's first
    within ``GAP_BOUND``, replicas unchanged, ``lastScaleTime`` carried, and the scale writes after it upstream's.

The faults, on the real server: ``pyhpa adopt`` without pyhpa running (``--timeout 3``) and as a ServiceAccount whose
Role lacks ``delete`` on HPAs: exit code 2, one line naming the step and the state left, the HPA still there (and
still synced by upstream), the HorizontalAutoscaler paused; the admin's run continues both.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, urlsplit

from lightkube import ApiError, codecs
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
from lightkube.resources.core_v1 import Namespace

from .test_preview_snapshot_explain import native_hpa
from .test_side_by_side import container_cpu, cpu, cpu_value, external, pods_metric
from .util import (
    HA,
    ROOT,
    Pending,
    apply,
    deployment,
    new_namespace,
    running_pods,
    service_account_token,
    set_pod_cpu,
    wait_until,
)

LONG_AGO = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}  # outside the CPU initialization period
UPSTREAM = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"  # upstream's HPA controller's user
DOWN_3 = {"scaleDown": {"stabilizationWindowSeconds": 3}}
PHASES = ("before", "adopted one by one", "released", "adopted all at once")
SYNC_PERIOD = 1.0
#: the end of the User-Agent of pyhpa adopt's and pyhpa release's requests (pyhpa run's ends with its identity)
COMMANDS = ("(adopt)", "(release)")
GAP_BOUND = 6.0
"""Seconds from upstream's last sync of a target to the command's read of pyhpa's unpaused status (adopt), or from
pyhpa's last sync to upstream's first (release). It is at most one sync period of the controller that lets go (it
would have synced again), the hand-over's requests (a DELETE and a PATCH, or a POST), one sync of the controller
that takes over (each syncs a new or changed autoscaler at once) and the command's 0.25 s poll: about 2.5 s. The
test measured at most 1.4 s at load average 5 on 2 cores; the bound leaves each process room to run three times
slower, as at load average 15."""
METRICS_GROUPS = ("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")


def memory(percent: int) -> dict:
    return {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization",
                                                                          "averageUtilization": percent}}}


@dataclass(frozen=True)
class Demand:
    """A phase's load: ``cpu`` millicores and ``memory`` MiB in all (spread over the pods), ``rps`` the Pods metric's
    total (spread likewise), ``queue`` the External metric's value."""

    cpu: Optional[int] = None
    memory: Optional[int] = None
    rps: Optional[int] = None
    queue: Optional[int] = None


@dataclass(frozen=True)
class Pair:
    """A Deployment ``name`` and its autoscaling/v2 HPA, in the adopted namespace and (the twin) in the twins';
    ``phases``: per phase, the demand and the one replica count it settles at."""

    name: str
    metrics: tuple
    phases: tuple
    min_replicas: int = 1
    max_replicas: int = 10
    behavior: Optional[dict] = None
    memory_request: Optional[str] = None

    def desired_replicas(self, phase: int) -> int:
        return self.phases[phase][1]

    def deployment(self, ns: str) -> dict:
        d = deployment(self.name, ns, replicas=self.min_replicas, annotations=LONG_AGO)
        if self.memory_request:
            d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = self.memory_request
        return d

    def hpa(self, ns: str) -> dict:
        """The HPA; its External metrics select the series labelled with the Deployment's ``app``."""
        metrics = [{**m, "external": {**m["external"], "metric": {**m["external"]["metric"],
                                                                  "selector": {"matchLabels": {"app": self.name}}}}}
                   if m["type"] == "External" else m for m in self.metrics]
        spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": self.name},
                "minReplicas": self.min_replicas, "maxReplicas": self.max_replicas, "metrics": metrics}
        if self.behavior:
            spec["behavior"] = self.behavior
        return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": self.name, "namespace": ns, "labels": {"pair": self.name}}, "spec": spec}


# Each demand d of a metric with per-pod target t is (k - 1/2) * t: it settles at k pods and at no other count
# (k <= 5 keeps the 10 % tolerance band narrower than one pod); ratios 0.9 fall on k itself, where both branches
# of the tolerance check keep k. Pairs without behavior (scale-down window 300 s) only see their demand rise.
PAIRS = (
    Pair("cpu-utilization", (cpu(50),),
         ((Demand(cpu=75), 2), (Demand(cpu=125), 3), (Demand(cpu=175), 4), (Demand(cpu=225), 5))),
    Pair("cpu-average-value", (cpu_value("50m"),),
         ((Demand(cpu=175), 4), (Demand(cpu=75), 2), (Demand(cpu=225), 5), (Demand(cpu=125), 3)), behavior=DOWN_3),
    Pair("container-resource", (container_cpu(50),),
         ((Demand(cpu=25), 1), (Demand(cpu=75), 2), (Demand(cpu=125), 3), (Demand(cpu=175), 4))),
    Pair("memory-utilization", (memory(50),),
         ((Demand(memory=125), 3), (Demand(memory=225), 5), (Demand(memory=75), 2), (Demand(memory=175), 4)),
         behavior=DOWN_3, memory_request="100Mi"),
    # a Value target scales the ready pods by value / target: 3 runs up to the cap, 1/2 down to the floor
    Pair("external-value", (external("Value", "20"),),
         ((Demand(queue=60), 4), (Demand(queue=10), 1), (Demand(queue=60), 4), (Demand(queue=10), 1)),
         max_replicas=4, behavior=DOWN_3),
    Pair("external-average-value", (external("AverageValue", "20"),),
         ((Demand(queue=50), 3), (Demand(queue=90), 5), (Demand(queue=30), 2), (Demand(queue=70), 4)),
         behavior=DOWN_3),
    Pair("pods-metric", (pods_metric("10"),),
         ((Demand(rps=25), 3), (Demand(rps=15), 2), (Demand(rps=45), 5), (Demand(rps=35), 4)), behavior=DOWN_3),
    Pair("cpu-policies", (cpu(50),),
         ((Demand(cpu=75), 2), (Demand(cpu=175), 4), (Demand(cpu=75), 2), (Demand(cpu=225), 5)),
         behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 2}]},
                   "scaleDown": {"stabilizationWindowSeconds": 0,
                                 "policies": [{"type": "Percent", "value": 50, "periodSeconds": 2}]}}),
    Pair("min-2-max-4", (cpu(50),),
         ((Demand(cpu=25), 2), (Demand(cpu=125), 3), (Demand(cpu=275), 4), (Demand(cpu=325), 4)),
         min_replicas=2, max_replicas=4),
    Pair("cpu-and-external", (cpu(50), external("AverageValue", "20")),
         ((Demand(cpu=75, queue=50), 3), (Demand(cpu=225, queue=30), 5), (Demand(cpu=75, queue=70), 4),
          (Demand(cpu=175, queue=90), 5)), behavior=DOWN_3),
)


# ----------------------------------------------------------------------------------------------- the load
class Load:
    """Every pair's demand of the current phase, spread over the running pods of each of its Deployments in
    ``namespaces``: applied when the pod watch sees a pod change and just before the metrics fixture answers
    a read, so no controller reads per-pod values of another pod count."""

    def __init__(self, plane, namespaces: tuple[str, ...]):
        self.plane, self.namespaces = plane, namespaces
        self.phase = 0
        self.lock = threading.Lock()

    def __enter__(self) -> "Load":
        self.plane.pods.listeners.append(self._pod_changed)
        self.plane.fixture.before_read.append(self._before_read)
        self.set_phase(0)
        return self

    def __exit__(self, *exc) -> None:
        self.plane.pods.listeners.remove(self._pod_changed)
        self.plane.fixture.before_read.remove(self._before_read)

    def set_phase(self, phase: int) -> None:
        with self.lock:
            self.phase = phase
        for ns in self.namespaces:
            self.apply(ns)

    def _pod_changed(self, event: str, pod: dict) -> None:
        if pod["metadata"]["namespace"] in self.namespaces:
            self.apply(pod["metadata"]["namespace"])

    def _before_read(self, ns: Optional[str], query: dict) -> None:
        for one in self.namespaces if ns is None else (ns,) if ns in self.namespaces else ():
            self.apply(one)

    def apply(self, ns: str) -> None:
        with self.lock:
            pods = defaultdict(list)
            for p in running_pods(self.plane, ns, None):
                pods[(p["metadata"].get("labels") or {}).get("app")].append(p["metadata"]["name"])
            usage: dict = {}
            rps: dict = {}
            queue: list = []
            for pair in PAIRS:
                demand = pair.phases[self.phase][0]
                mine = pods[pair.name]
                n = max(len(mine), 1)
                one = {}
                if demand.cpu is not None:
                    one["cpu"] = f"{math.ceil(demand.cpu / n)}m"
                if demand.memory is not None:
                    one["memory"] = f"{math.ceil(demand.memory / n)}Mi"
                usage.update({name: {"app": one} for name in mine if one})
                if demand.rps is not None:
                    rps.update({name: str(math.ceil(demand.rps / n)) for name in mine})
                if demand.queue is not None:
                    queue.append(({"app": pair.name}, str(demand.queue)))
            metrics = self.plane.fixture
            metrics.set_many_pod_metrics(ns, usage)
            metrics.set_pods_metric(ns, "rps", rps)
            metrics.set_external_metric(ns, "queue", queue)


# ----------------------------------------------------------------------------------------------- the audit log
@dataclass(frozen=True)
class Call:
    """One request as kube-apiserver's audit log recorded it: ``received`` and ``done`` (its
    ``requestReceivedTimestamp`` and ``stageTimestamp``, epoch seconds), ``by`` (``upstream``: upstream's HPA
    controller; ``pyhpa``: pyhpa run; ``other``: the admin's other clients, among them the command), ``app`` the
    ``app=`` of a metrics read's label selector."""

    received: float
    done: float
    by: str
    verb: str
    group: str
    resource: str
    subresource: str
    ns: str
    name: str
    code: int
    app: str

    @property
    def metrics_read(self) -> bool:
        return self.group in METRICS_GROUPS


def _time(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _epoch(stamp: str) -> float:
    return _time(stamp).timestamp()


class Audit:
    """The audit log's requests about objects of ``namespaces``, read on from where the last read stopped."""

    def __init__(self, plane, namespaces: tuple[str, ...]):
        """``namespaces`` are new: nothing about them was logged before, so reading starts after the log's last
        complete line (the log holds every request of the tier so far)."""
        self.path = plane.home / "logs" / "audit.log"
        self.namespaces = namespaces
        self.calls: list[Call] = []
        with open(self.path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(size - 65536, 0))
            tail = f.read()
        self.offset = size - len(tail) + tail.rfind(b"\n") + 1

    def read(self) -> list[Call]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        keys = [ns.encode() for ns in self.namespaces]
        for line in data[:end].splitlines():
            if not any(k in line for k in keys):
                continue
            e = json.loads(line)
            ref = e.get("objectRef") or {}
            if e.get("stage") != "ResponseComplete" or ref.get("namespace") not in self.namespaces:
                continue
            agent = e.get("userAgent", "")
            user = (e.get("user") or {}).get("username", "")
            by = ("upstream" if user == UPSTREAM else "command" if agent.endswith(COMMANDS)
                  else "pyhpa" if agent.startswith("pyhpa/") else "other")
            selector = parse_qs(urlsplit(e.get("requestURI", "")).query).get("labelSelector", [""])[0]
            self.calls.append(Call(_epoch(e["requestReceivedTimestamp"]), _epoch(e["stageTimestamp"]), by, e["verb"],
                                   ref.get("apiGroup", ""), ref.get("resource", ""), ref.get("subresource", ""),
                                   ref["namespace"], ref.get("name", ""), (e.get("responseStatus") or {}).get("code", 0),
                                   selector[4:] if selector.startswith("app=") else ""))
        return self.calls

    def of(self, ns: str, name: str, since: float = 0.0, until: float = math.inf) -> list[Call]:
        """The calls about ``ns/name`` received within [since, until]: about the object of that name, or metrics reads
        of its pods (``app=name``) or of every pod of the namespace (pyhpa reads one list for all the autoscalers
        of a namespace that read pod metrics)."""
        return [c for c in self.read() if c.ns == ns and (c.name == name or c.app == name or c.metrics_read
                                                          and c.resource == "pods" and not c.app)
                and since <= c.received <= until]


def scale_reads(calls: list[Call], by: str) -> list[Call]:
    return [c for c in calls if c.by == by and c.resource == "deployments" and c.subresource == "scale"
            and c.verb == "get"]


def scale_writes(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.resource == "deployments" and c.subresource == "scale"
            and c.verb in ("update", "patch") and c.code < 300]


def one(calls: list[Call], what: str, by: str = "command", verb: str = "", resource: str = "", subresource: str = "",
        after: float = 0.0, last: bool = False) -> Call:
    """The first (``last``: the last) successful call of that description received after ``after``."""
    found = [c for c in calls if c.by == by and (not verb or c.verb == verb) and (not resource or c.resource ==
             resource) and c.subresource == subresource and c.code < 300 and c.received > after]
    assert found, f"no {what} in the audit log after {after}"
    return found[-1] if last else found[0]


# ----------------------------------------------------------------------------------------------- helpers
def pyhpa_cli(plane, *args: str, kubeconfig=None) -> subprocess.CompletedProcess:
    """``pyhpa ARGS`` as a subprocess (``python -m pyhpa.cli.main``), as the admin unless ``kubeconfig``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.pop("KUBECONFIG", None)
    return subprocess.run([sys.executable, "-m", "pyhpa.cli.main", *args, "--kubeconfig",
                           str(kubeconfig or plane.admin_kubeconfig)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def _namespace(client, prefix: str) -> str:
    return new_namespace(client, f"{prefix}-{uuid.uuid4().hex[:6]}")


def _statuses(client, ns: str, adopted: bool) -> dict[str, dict]:
    """name -> the status of the autoscaler of each Deployment of ``ns`` (its HorizontalAutoscaler's if
    ``adopted``, else its HPA's)."""
    if adopted:
        return {a.metadata.name: dict(a.status or {}) for a in client.list(HA, namespace=ns)}
    return {h.metadata.name: h.status.to_dict() if h.status else {} for h in
            client.list(HorizontalPodAutoscaler, namespace=ns)}


def settled(plane, client, adopted_ns: str, twins_ns: str, phase: int, adopted: bool):
    """True when every Deployment of both namespaces asks for, has and runs the phase's replica count and its
    autoscaler reports it as current and desired (a HorizontalAutoscaler unpaused); else a falsy ``Pending``."""
    why = []
    for ns, ours in ((adopted_ns, adopted), (twins_ns, False)):
        deployments = {d.metadata.name: d for d in client.list(Deployment, namespace=ns)}
        statuses = _statuses(client, ns, ours)
        running = defaultdict(int)
        for p in running_pods(plane, ns, None):
            running[(p["metadata"].get("labels") or {}).get("app")] += 1
        for pair in PAIRS:
            want = pair.desired_replicas(phase)
            d, status = deployments[pair.name], statuses.get(pair.name, {})
            seen = (d.spec.replicas, d.status.replicas if d.status else None,
                    d.status.readyReplicas if d.status else None, running[pair.name],
                    status.get("currentReplicas"), status.get("desiredReplicas"))
            if seen != (want,) * 6 or "pause" in status:
                why.append(f"{ns}/{pair.name}: spec, status, ready, running, current, desired {seen} for {want}"
                           + (" (paused)" if "pause" in status else ""))
    return True if not why else Pending(why)


@dataclass
class Adoption:
    """The server's record of one adoption: its steps and the figures of (a)."""

    name: str
    created: Call
    synced: Call
    deleted: Call
    lifted: Call
    confirmed: Call
    upstream_last: Call
    pyhpa_first: Call

    @property
    def gap(self) -> float:
        """From upstream's last sync to the command's read of pyhpa's unpaused status (an upper bound of the time
        without a sync: pyhpa's unpaused sync wrote that status before)."""
        return self.confirmed.done - self.upstream_last.received

    @property
    def held(self) -> float:
        """From the HPA's deletion to the pause's lifting: no controller may scale the target meanwhile."""
        return self.lifted.received - self.deleted.received


def adoption(audit: Audit, ns: str, name: str, since: float, until: float) -> Adoption:
    """The steps of the adoption of ``ns/name`` run by a command between ``since`` and ``until`` (epoch seconds,
    this host's clock, which kube-apiserver's shares)."""
    mine = audit.of(ns, name, since, until)
    created = one(mine, "create of the HorizontalAutoscaler", verb="create", resource="horizontalautoscalers")
    synced = one(mine, "pyhpa status write", by="pyhpa", verb="update", resource="horizontalautoscalers",
                 subresource="status", after=created.received)
    deleted = one(mine, "delete of the HPA", verb="delete", resource="horizontalpodautoscalers")
    lifted = one(mine, "lift of the pause", verb="patch", resource="horizontalautoscalers", after=deleted.received)
    confirmed = one(mine, "read of the unpaused status", verb="get", resource="horizontalautoscalers",
                    after=lifted.received, last=True)
    # what reached the server before the command's read was answered (a write is logged when its answer is sent,
    # which may come after a read that already sees it)
    before = [c for c in audit.of(ns, name) if c.received < confirmed.done]
    upstream_last = scale_reads(before, "upstream")[-1]
    pyhpa_first = one(before, "pyhpa status write after the lift", by="pyhpa", verb="update",
                      resource="horizontalautoscalers", subresource="status", after=lifted.received)
    return Adoption(name, created, synced, deleted, lifted, confirmed, upstream_last, pyhpa_first)


def check_adoption(a: Adoption) -> None:
    """(a): the steps in their order of arrival at the server (a request's answer may be logged after the next
    request of the same caller arrived), and the gap within its bound."""
    assert a.created.received < a.synced.received < a.deleted.received < a.lifted.received, (a.name, a)
    assert a.lifted.received < a.pyhpa_first.received < a.confirmed.done, (a.name, a)  # the status the command saw
    assert a.gap <= GAP_BOUND, f"{a.name}: {a.gap:.2f} s from upstream's last sync to pyhpa's unpaused status"


def check_pyhpas(client, audit: Audit, ns: str, twins_ns: str, adoptions: dict[str, Adoption],
                 phase: int, demand_changed: float) -> list[str]:
    """(c) once the phase after an adoption settled: only pyhpa wrote the targets' scale since the HPAs went,
    upstream's controller read them no more once the demand changed, and the HorizontalAutoscalers' status is
    pyhpa's and reports what the twins' HPAs report. Returns a figure per pair."""
    twins = _statuses(client, twins_ns, False)
    figures = []
    for pair in PAIRS:
        a = adoptions[pair.name]
        after = audit.of(ns, pair.name, since=a.deleted.received)
        writes = scale_writes(after)
        assert {w.by for w in writes} <= {"pyhpa"}, (pair.name, writes)
        moved = pair.desired_replicas(phase) != pair.desired_replicas(phase - 1)
        assert writes or not moved, f"{pair.name}: no scale write after the demand changed"
        upstream = [c for c in after if c.by == "upstream"]
        assert all(c.received < demand_changed for c in upstream), (pair.name, upstream)
        ha = client.get(HA, pair.name, namespace=ns)
        status = ha.status
        assert status["observedGeneration"] == ha.metadata.generation and "pause" not in status, status
        assert status["reference"] == f"Deployment/{pair.name}" and status.get("targets"), status  # pyhpa's fields
        assert not [k for k in ha.metadata.annotations or {} if k.startswith("pyhpa.dev/")], ha.metadata.annotations
        assert ha.metadata.labels == {"pair": pair.name}
        # the same demand over the same pods: pyhpa's status reports what upstream's reports for the twin
        assert _measured(status) == _measured(twins[pair.name]), (pair.name, status, twins[pair.name])
        figures.append(f"{pair.name}: {len(writes)} scale writes by pyhpa, {len(upstream)} upstream calls after "
                       "the delete")
    return figures


def _measured(status: dict) -> list:
    """``status.currentMetrics`` without the metric selectors: upstream's controller copies an External, Pods or
    Object metric's ``selector`` from the spec into the status, pyhpa's writes only its name (pyhpa.core.metrics
    ``_value_status``); what was measured is the rest."""
    out = json.loads(json.dumps(status.get("currentMetrics") or []))
    for m in out:
        for source in m.values():
            if isinstance(source, dict) and isinstance(source.get("metric"), dict):
                source["metric"].pop("selector", None)
    return out


def no_scale_write(audit: Audit, ns: str, name: str, since: float, until: float) -> None:
    """(b): nobody wrote the target's scale between ``since`` and ``until``."""
    writes = scale_writes(audit.of(ns, name, since, until))
    assert writes == [], f"{ns}/{name}: replicas changed at the hand-over: {writes}"


def check_release(audit: Audit, ns: str, name: str, since: float, until: float) -> dict:
    """(d): the HorizontalAutoscaler paused, the HPA created and synced by upstream (a status write), then the
    HorizontalAutoscaler deleted; ``gap``: from pyhpa's last sync before the pause (a metrics read of the
    target's pods or series) to upstream's first sync of the target."""
    mine = audit.of(ns, name, since, until)
    paused = one(mine, "pause", verb="patch", resource="horizontalautoscalers")
    created = one(mine, "create of the HPA", verb="create", resource="horizontalpodautoscalers",
                  after=paused.received)
    synced = one(mine, "upstream's status write", by="upstream", verb="update", resource="horizontalpodautoscalers",
                 subresource="status", after=created.received)
    deleted = one(mine, "delete of the HorizontalAutoscaler", verb="delete", resource="horizontalautoscalers")
    assert paused.received < created.received < synced.received < deleted.received, (name, mine)
    pyhpa_last = [c for c in audit.of(ns, name, until=paused.received) if c.by == "pyhpa" and c.metrics_read][-1]
    upstream_first = next(c for c in scale_reads(audit.of(ns, name), "upstream") if c.received > created.received)
    gap = upstream_first.received - pyhpa_last.received
    assert gap <= GAP_BOUND, f"{name}: {gap:.2f} s from pyhpa's last sync to upstream's first"
    return {"paused": paused, "deleted": deleted, "gap": gap}


class Phases:
    """The test's two namespaces under ``Load``, moved from phase to phase once each settled."""

    def __init__(self, plane, client, ns: str, twins: str, load: Load, report: list[str]):
        self.plane, self.client, self.ns, self.twins, self.load = plane, client, ns, twins, load
        self.phase = 0
        self.report = report
        self.started = time.monotonic()

    def settle(self, adopted: bool) -> float:
        """Wait until the phase settled (``settled``); returns the time (epoch s) from which its hand-overs are
        over: a scale write after it may follow the next demand."""
        wait_until(lambda: settled(self.plane, self.client, self.ns, self.twins, self.phase, adopted), timeout=240,
                   every=1.0, what=f"phase {self.phase} ({PHASES[self.phase]}) to settle")
        self.report.append(f"phase {self.phase} ({PHASES[self.phase]}) settled at "
                           f"{time.monotonic() - self.started:.0f} s")
        return time.time()

    def next(self, adopted: bool) -> float:
        """The next phase's demand, once settled; returns the time (epoch s) the demand changed."""
        changed = time.time()
        self.phase += 1
        self.load.set_phase(self.phase)
        self.settle(adopted)
        return changed


def adopt(plane, ns: str, args: tuple[str, ...], pairs: tuple[Pair, ...], phase: int) -> dict[str, tuple]:
    """``pyhpa adopt ARGS``: each of ``pairs`` adopted at the phase's replicas; name -> (start, end) of the
    command (epoch s)."""
    before = time.time()
    run = pyhpa_cli(plane, "adopt", *args)
    after = time.time()
    assert run.returncode == 0, run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(
        f"adopted {ns}/{p.name}: pyhpa holds it at {p.desired_replicas(phase)} replicas" for p in pairs), run.stdout
    return {p.name: (before, after) for p in pairs}


def recorded(read: Callable[[], Any], what: str) -> Any:
    """``read()`` once the audit log holds what it looks for: kube-apiserver logs a request when its answer is
    sent, which may be after the caller (here a command that has exited) got it. A step still missing after the
    wait fails with ``read``'s own message."""
    def attempt():
        try:
            return read()
        except (AssertionError, IndexError, StopIteration) as err:
            return Pending([f"{type(err).__name__}: {err}"])
    return wait_until(attempt, timeout=30, what=what)


def release(plane, ns: str, args: tuple[str, ...], pairs: tuple[Pair, ...], phase: int) -> tuple:
    """``pyhpa release ARGS``: each of ``pairs`` released at the phase's replicas; (start, end, names)."""
    before = time.time()
    run = pyhpa_cli(plane, "release", *args)
    assert run.returncode == 0, run.stderr
    assert sorted(run.stdout.splitlines()) == sorted(
        f"released {ns}/{p.name}: upstream's HPA controller holds it at {p.desired_replicas(phase)} replicas"
        for p in pairs), run.stdout  # and no warning: every field has its autoscaling/v2 place
    return before, time.time(), [p.name for p in pairs]


# ----------------------------------------------------------------------------------------------- the tests
def adopted_phase(phases, audit, client, ns: str, twins: str, windows: dict, label: str, phase: int) -> list[str]:
    """After adoptions (``windows``: their command's (before, after) instants by name): settle the demand, check each
    adoption's steps in the audit log and that nobody wrote the target's scale meanwhile, then pyhpa against the
    twins through the next demand (``phase``); the report's lines."""
    over = phases.settle(adopted=True)
    adoptions = recorded(lambda: {n: adoption(audit, ns, n, *w) for n, w in windows.items()},
                         "the adoptions' steps in the audit log")
    for a in adoptions.values():
        check_adoption(a)
        no_scale_write(audit, ns, a.name, a.created.received, over)
    report = [f"{label}: {a.name} gap {a.gap:.2f} s, held {a.held:.3f} s" for a in adoptions.values()]
    return report + check_pyhpas(client, audit, ns, twins, adoptions, phase, phases.next(adopted=True))


def test_ten_hpas_adopted_one_by_one_released_and_adopted_at_once_scale_as_their_native_twins(plane, client,
                                                                                              pyhpa):
    ns, twins = _namespace(client, "adopt"), _namespace(client, "twins")
    audit = Audit(plane, (ns, twins))
    report = []
    try:
        for where in (ns, twins):
            for pair in PAIRS:
                apply(client, pair.deployment(where))
        with Load(plane, (ns, twins)) as load:
            for where in (ns, twins):
                for pair in PAIRS:
                    client.create(codecs.from_dict(pair.hpa(where)))
            pyhpa("--sync-period", f"{SYNC_PERIOD:g}")
            phases = Phases(plane, client, ns, twins, load, report)
            phases.settle(adopted=False)

            windows: dict[str, tuple] = {}
            for pair in PAIRS:  # one by one
                windows.update(adopt(plane, ns, (f"{ns}/{pair.name}",), (pair,), 0))
            assert list(client.list(HorizontalPodAutoscaler, namespace=ns)) == []
            report += adopted_phase(phases, audit, client, ns, twins, windows, "one by one", 1)

            carried = {p.name: client.get(HA, p.name, namespace=ns).status["lastScaleTime"] for p in PAIRS}
            releases = [release(plane, ns, (f"{ns}/{PAIRS[0].name}",), PAIRS[:1], 1),
                        release(plane, ns, ("--all", "-n", ns), PAIRS[1:], 1)]
            assert list(client.list(HA, namespace=ns)) == []
            for pair in PAIRS:
                hpa = client.get(HorizontalPodAutoscaler, pair.name, namespace=ns)
                assert hpa.status.observedGeneration == hpa.metadata.generation, pair.name
                assert hpa.metadata.labels == {"pair": pair.name}
                assert hpa.status.lastScaleTime == _time(carried[pair.name]), (pair.name, hpa.status.lastScaleTime)
            over = phases.settle(adopted=False)
            released = recorded(lambda: {name: check_release(audit, ns, name, before, after)
                                         for before, after, names in releases for name in names},
                                "the releases' steps in the audit log")
            for name, r in released.items():
                no_scale_write(audit, ns, name, r["paused"].received, over)
                report.append(f"released: {name} gap {r['gap']:.2f} s")
            phases.next(adopted=False)
            for pair in PAIRS:  # upstream's again: every scale write since is its own
                writes = scale_writes(audit.of(ns, pair.name, since=released[pair.name]["deleted"].received))
                assert writes and {w.by for w in writes} == {"upstream"}, (pair.name, writes)

            windows = adopt(plane, ns, ("--all", "-n", ns), PAIRS, 2)  # all at once
            report += adopted_phase(phases, audit, client, ns, twins, windows, "all at once", 3)
    finally:
        print("\n".join(["", *report]))
        for where in (ns, twins):
            try:
                client.delete(Namespace, where)
            except ApiError:
                pass


def paused(client, ns: str, name: str) -> bool:
    annotations = client.get(HA, name, namespace=ns).metadata.annotations or {}
    return annotations.get("pyhpa.dev/paused") == "true" and "pyhpa.dev/handover-paused" in annotations


def test_without_pyhpa_running_or_the_delete_verb_the_hand_over_stops_where_it_is(plane, client, ns, pyhpa,
                                                                                 tmp_path):
    audit = Audit(plane, (ns,))
    for name in ("web", "api"):
        apply(client, deployment(name, ns, replicas=2, annotations=LONG_AGO))
    for name in ("web", "api"):
        wait_until(lambda: len(running_pods(plane, ns, name)) == 2, what=f"2 running pods of {name}")
        set_pod_cpu(plane, ns, name, 38)  # 76 % for a target of 50 %: ceil(2 * 0.76) = 2, held
        client.create(codecs.from_dict(native_hpa(name, ns)))
    hpas = {name: wait_until(lambda: (h := client.get(HorizontalPodAutoscaler, name, namespace=ns)).status
                             and h.status.observedGeneration == h.metadata.generation
                             and h.status.currentReplicas == 2 and h, what=f"upstream's sync of {name}")
            for name in ("web", "api")}
    left = "left: the HorizontalAutoscaler paused (pyhpa.dev/paused) beside the HPA, which still scales the target"

    # pyhpa not running: nothing deleted, the HorizontalAutoscaler paused beside the HPA, which upstream still syncs
    run = pyhpa_cli(plane, "adopt", f"{ns}/web", "--timeout", "3")
    after = time.time()
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: adopt {ns}/web: pyhpa has not synced the HorizontalAutoscaler within 3 s (is "
                               f"pyhpa run running and watching namespace {ns}?); {left}"), lines[0]
    assert client.get(HorizontalPodAutoscaler, "web", namespace=ns).metadata.uid == hpas["web"].metadata.uid
    assert paused(client, ns, "web")
    assert [c for c in audit.of(ns, "web") if c.verb == "delete"] == []
    wait_until(lambda: scale_reads(audit.of(ns, "web", since=after), "upstream"), what="upstream's next sync of web")

    # a Role without delete on HPAs: the command stops before the HPA goes
    pyhpa("--sync-period", "1", "-n", ns)
    apply(client, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "adopter", "namespace": ns}})
    apply(client, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "adopter", "namespace": ns}, "rules": [
                       {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
                        "verbs": ["get", "list"]},
                       {"apiGroups": ["pyhpa.dev"], "resources": ["horizontalautoscalers",
                                                                  "horizontalautoscalers/status"],
                        "verbs": ["get", "list", "create", "patch"]}]})
    apply(client, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "adopter", "namespace": ns},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "adopter"},
                   "subjects": [{"kind": "ServiceAccount", "name": "adopter", "namespace": ns}]})
    token_file = tmp_path / "adopter.token"
    token_file.write_text(service_account_token(client, ns, "adopter", "adopter-token"))
    restricted = plane.kubeconfig(tmp_path / "adopter.kubeconfig", token_file=token_file)
    run = pyhpa_cli(plane, "adopt", f"{ns}/api", kubeconfig=restricted)
    lines = run.stderr.splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: adopt {ns}/api: could not delete the HPA: the API server answered 403 ("), \
        lines[0]
    assert f"system:serviceaccount:{ns}:adopter" in lines[0] and lines[0].endswith(
        f"; {left}; run the command again, or delete the HorizontalAutoscaler"), lines[0]
    assert client.get(HorizontalPodAutoscaler, "api", namespace=ns).metadata.uid == hpas["api"].metadata.uid
    assert paused(client, ns, "api")
    assert client.get(HA, "api", namespace=ns).status["pause"]  # pyhpa synced it, paused
    wait_until(lambda: [c.code for c in audit.of(ns, "api") if c.verb == "delete"] == [403],
               what="the one refused delete in the audit log")

    # the admin runs it again: both continue where they stopped
    for name in ("api", "web"):
        run = pyhpa_cli(plane, "adopt", f"{ns}/{name}")
        assert run.returncode == 0 and run.stdout == f"adopted {ns}/{name}: pyhpa holds it at 2 replicas\n", \
            run.stdout + run.stderr
        assert not paused(client, ns, name)
    assert list(client.list(HorizontalPodAutoscaler, namespace=ns)) == []
    assert {d.metadata.name: d.spec.replicas for d in client.list(Deployment, namespace=ns)} == {"web": 2, "api": 2}
    assert scale_writes(audit.read()) == []
