"""Live, side by side: upstream's HPA controller (kube-controller-manager v1.37.2, sync period 1 s) and
``pyhpa run`` (sync period 1 s) on the same API server, each scaling its own twin Deployment under the same load.

Every scenario has a namespace with two identical Deployments, ``up`` (a native autoscaling/v2 HPA: upstream
decides) and ``py`` (a HorizontalAutoscaler with the same spec: pyhpa decides). The load is a total demand per
step, spread evenly over each twin's running pods as its metrics (so each controller's scaling feeds back into its
own per-pod usage, as real load does); external metrics are one value both twins read. The scenarios are those of
upstream's test/integration/podautoscaler and test/e2e/autoscaling (scale 1 -> 3 -> 5 and back, stabilization
windows, Pods and Percent policies, Disabled, tolerance, scale to zero, several metrics, unready and missing pods,
every target type), all running at once.

Compared per sync, not per second: the sequence of replica counts each controller set during a step, and at the
end of each step the conditions (type, status, reason, message) each wrote. ``pyhpa run --preview`` watches
upstream's own HPAs meanwhile: at the end of every step it must report agreement on each.

Each controller decides only on what its settled twin shows, whatever the machine's load: while a twin's pods
start or stop (its Deployment's replicas, status and pods disagree, or its pods or Deployment changed less than
``QUIET`` seconds ago), the metrics APIs answer the reads of that twin with 503, as a metrics pipeline that is down
(``Load.gate``). A sync that reads then fails for both controllers alike (upstream records no recommendation and
does not rescale on a failed metrics read; pyhpa the same) and the next one decides. So the paths compared are what
each controller decided from the same settled inputs, not how the two controllers' sync instants fell against a
pod's start on a busy machine (which made this test fail under load before).

The gate is per twin, not per namespace: a read names its twin by its ``labelSelector`` (the Deployment's
``app=<twin>`` for pod metrics; the external metric's selector ``twin=<twin>``, which each twin's spec carries).
Gated per namespace, one controller's scale-up could land between two reads of the other's sync (a CPU read
answered, the external read refused): a sync with one of its metrics missing still scales up on the others
(``computeReplicasForMetrics``), so one twin went 1 -> 2 -> 5 where the other went 1 -> 5 (a CI run, 2026-11-28).
A twin's own state changes between two reads of one sync only by that sync's own write, which comes after them.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

from lightkube import codecs
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
from lightkube.resources.core_v1 import Namespace, Pod, PodStatus
from lightkube.types import PatchType

from kubedouble.errors import KubeError
from kubedouble.selectors import labels_match, parse_label_selector

from .util import HA, Pending, apply, deployment, has_default_sa, wait_until

QUIET = 2.0
"""Seconds a namespace must have been settled, with no event of its pods or Deployments, before its metrics are
served: longer than the controllers' informers lag behind the API server on a loaded machine, shorter than a step."""
STARTED = "2026-01-01T00:00:00Z"  # every pod started long ago: outside the CPU initialization period
TWINS = ("up", "py")


@dataclass
class Step:
    """Load held for ``hold`` seconds: ``cpu`` total millicores over a twin's pods, ``external`` the metric's
    value, ``per_pod`` a Pods metric's total spread over the pods."""

    hold: float
    cpu: Optional[int] = None
    external: Optional[str] = None
    per_pod: Optional[int] = None


@dataclass
class Scenario:
    name: str
    metrics: list
    steps: list
    replicas: int = 1
    min_replicas: int = 1
    max_replicas: int = 10
    behavior: Optional[dict] = None
    request: str = "100m"
    unready: int = 0  # the first N pods (by name) at the start are Running but never Ready
    missing: int = 0  # the next N pods (by name) at the start have no metrics (their names in ``no_metrics``)
    ns: str = ""
    changed_at: float = 0.0
    touched_at: dict = field(default_factory=lambda: {t: 0.0 for t in TWINS})  # twin -> its last event (monotonic)
    deployments: dict = field(default_factory=dict)  # twin -> the Deployment as last watched (dict)
    gated: int = 0  # metrics reads answered 503 while the namespace was not settled
    seen: dict = field(default_factory=lambda: {t: [] for t in TWINS})
    conditions: dict = field(default_factory=dict)
    no_metrics: set = field(default_factory=set)


def cpu(percent: int) -> dict:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": percent}}}


def cpu_value(average: str) -> dict:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": average}}}


def container_cpu(percent: int) -> dict:
    return {"type": "ContainerResource", "containerResource": {
        "name": "cpu", "container": "app", "target": {"type": "Utilization", "averageUtilization": percent}}}


def external(target_type: str, value: str) -> dict:
    key = "value" if target_type == "Value" else "averageValue"
    return {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": target_type, key: value}}}


def pods_metric(average: str) -> dict:
    return {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue",
                                                                          "averageValue": average}}}


DOWN_5 = {"scaleDown": {"stabilizationWindowSeconds": 5}}
UP_DOWN = [Step(8, cpu=150), Step(8, cpu=250), Step(10, cpu=100), Step(10, cpu=40)]

SCENARIOS = [
    Scenario("cpu-1-3-5-and-back", [cpu(50)], UP_DOWN, behavior=DOWN_5),
    Scenario("cpu-default-behavior", [cpu(50)], [Step(8, cpu=600), Step(8, cpu=1000)]),
    Scenario("cpu-average-value", [cpu_value("50m")], UP_DOWN, behavior=DOWN_5),
    Scenario("container-resource", [container_cpu(50)], UP_DOWN, behavior=DOWN_5),
    Scenario("down-window", [cpu(50)], [Step(6, cpu=250), Step(12, cpu=40)],
             behavior={"scaleDown": {"stabilizationWindowSeconds": 8}}),
    Scenario("up-window", [cpu(50)], [Step(12, cpu=300)], behavior={"scaleUp": {"stabilizationWindowSeconds": 5}}),
    Scenario("pods-policy", [cpu(50)], [Step(14, cpu=500)],
             behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 3}]}}),
    Scenario("percent-policy", [cpu(50)], [Step(14, cpu=800)], replicas=2,
             behavior={"scaleUp": {"policies": [{"type": "Percent", "value": 50, "periodSeconds": 3}]}}),
    Scenario("min-select-policy", [cpu(50)], [Step(14, cpu=800)], replicas=2,
             behavior={"scaleUp": {"selectPolicy": "Min", "policies": [
                 {"type": "Pods", "value": 4, "periodSeconds": 3}, {"type": "Percent", "value": 50, "periodSeconds": 3}]}}),
    Scenario("scale-down-disabled", [cpu(50)], [Step(6, cpu=250), Step(8, cpu=20)],
             behavior={"scaleDown": {"selectPolicy": "Disabled"}}),
    Scenario("down-pods-policy", [cpu(50)], [Step(6, cpu=450), Step(12, cpu=20)],
             behavior={"scaleDown": {"stabilizationWindowSeconds": 0,
                                     "policies": [{"type": "Pods", "value": 2, "periodSeconds": 3}]}}),
    Scenario("tolerance-per-direction", [external("AverageValue", "100")],
             [Step(8, external="3700"), Step(8, external="3800"), Step(8, external="1000"), Step(8, external="800")],
             replicas=35, max_replicas=1000,
             behavior={"scaleUp": {"tolerance": "0.05"}, "scaleDown": {"tolerance": "0.5", "stabilizationWindowSeconds": 0}}),
    Scenario("tolerance-default-band", [cpu(50)], [Step(8, cpu=210), Step(8, cpu=230)], replicas=4),
    # the Value target's replicas are the ratio times the ready pods: a sync while only some new pods are ready
    # would make the path hinge on timing; capped at 3, the scale-up is one step (1 -> 3) whatever a sync sees
    Scenario("external-value", [external("Value", "20")], [Step(8, external="60"), Step(8, external="10")],
             max_replicas=3,
             behavior={**DOWN_5, "scaleUp": {"policies": [{"type": "Percent", "value": 1000, "periodSeconds": 1}]}}),
    Scenario("external-average", [external("AverageValue", "20")], [Step(8, external="90"), Step(10, external="15")],
             behavior=DOWN_5),
    Scenario("scale-to-zero", [external("AverageValue", "100")],
             [Step(8, external="500"), Step(8, external="0"), Step(8, external="400")], min_replicas=0,
             behavior={"scaleDown": {"stabilizationWindowSeconds": 0}}),
    Scenario("pods-metric", [pods_metric("10")], [Step(8, per_pod=45), Step(10, per_pod=12)], behavior=DOWN_5),
    Scenario("several-metrics-max", [cpu(50), external("AverageValue", "20")],
             [Step(8, cpu=100, external="100"), Step(8, cpu=350, external="20")], behavior=DOWN_5),
    Scenario("max-replicas-cap", [cpu(50)], [Step(10, cpu=2000)], max_replicas=4),
    Scenario("min-replicas-floor", [cpu(50)], [Step(8, cpu=10)], replicas=3, min_replicas=2, behavior=DOWN_5),
    Scenario("unready-pods", [cpu(50)], [Step(8, cpu=400), Step(8, cpu=150)], replicas=4, unready=1, behavior=DOWN_5),
    Scenario("missing-metrics-up", [cpu(50)], [Step(8, cpu=300)], replicas=3, missing=1),
    Scenario("missing-metrics-down", [cpu(50)], [Step(10, cpu=30)], replicas=4, missing=1, behavior=DOWN_5),
]


def _pods(plane, s: Scenario, twin: str) -> list[dict]:
    return sorted((p for p in plane.pods.pods(s.ns) if (p["metadata"].get("labels") or {}).get("app") == twin
                   and (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")),
                  key=lambda p: p["metadata"]["name"])


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions") or [])


class Load(threading.Thread):
    """Applies each scenario's current step to both twins every second, to a pod's scenario when that pod changes (in
    the pod watch's thread, one scenario only, so the watch keeps up with the pods), and to a namespace's
    scenario just before the metrics fixture answers a read of it: no controller reads values older than the pods.
    A read of a namespace that is not settled is refused (``gate``)."""

    def __init__(self, plane, scenarios):
        super().__init__(daemon=True)
        self.plane, self.scenarios = plane, scenarios
        self.by_ns = {s.ns: s for s in scenarios}
        self.step: dict[str, Step] = {}
        self.halt = threading.Event()
        self.lock = threading.Lock()
        plane.pods.listeners.append(self._pod_changed)
        plane.fixture.before_read.append(self._before_read)

    def run(self) -> None:
        try:
            while not self.halt.wait(1.0):
                self.apply_all()
        finally:
            self.plane.pods.listeners.remove(self._pod_changed)
            self.plane.fixture.before_read.remove(self._before_read)

    def _before_read(self, ns, query: dict) -> None:
        """A controller reads metrics: its scenario's values follow the pods as they are at this instant; a read of
        a twin that is not settled answers 503 (``gate``)."""
        if ns is None:
            self.apply_all()
            return
        self.gate(ns, _twins_read(query))
        self.apply_namespace(ns)

    def gate(self, ns: str, twins: tuple = TWINS) -> None:
        """Raise a 503 unless the ``twins`` of scenario ``ns`` are settled: each one's Deployment has observed its
        spec and reports as many replicas as its spec asks, as many pods run (none pending or terminating), and
        nothing of the twin (its pods, its Deployment) changed in the last ``QUIET`` seconds."""
        s = self.by_ns.get(ns)
        if s is None:
            return
        why = None
        now = time.monotonic()
        for twin in twins:
            d = s.deployments.get(twin)
            status = (d or {}).get("status") or {}
            if why is not None:
                break
            if now - s.touched_at[twin] < QUIET:
                why = f"{twin}: changed less than {QUIET} s ago"
            elif d is None or status.get("observedGeneration") != d["metadata"].get("generation"):
                why = f"{twin}: the Deployment's spec is not observed yet"
            elif status.get("replicas", 0) != d["spec"].get("replicas"):
                why = f"{twin}: status.replicas {status.get('replicas', 0)} for {d['spec'].get('replicas')}"
            elif any(p["metadata"].get("deletionTimestamp") or (p.get("status") or {}).get("phase") != "Running"
                     for p in self.plane.pods.pods(ns) if (p["metadata"].get("labels") or {}).get("app") == twin):
                why = f"{twin}: pods starting or stopping"
            elif len(_pods(self.plane, s, twin)) != d["spec"].get("replicas"):
                why = f"{twin}: {len(_pods(self.plane, s, twin))} pods for {d['spec'].get('replicas')} replicas"
        if why is not None:
            s.gated += 1
            raise KubeError(503, f"side-by-side test: namespace {ns} is not settled ({why})")

    def touched(self, ns: str, twin: Optional[str]) -> None:
        s = self.by_ns.get(ns)
        if s is not None and twin in TWINS:
            s.touched_at[twin] = time.monotonic()

    def _pod_changed(self, event: str, pod: dict) -> None:
        self.touched(pod["metadata"]["namespace"], (pod["metadata"].get("labels") or {}).get("app"))
        self.apply_namespace(pod["metadata"]["namespace"])

    def apply_namespace(self, ns: str) -> None:
        """The current step of the scenario in namespace ``ns`` (none: nothing)."""
        s = self.by_ns.get(ns)
        step = self.step.get(s.name) if s is not None else None
        if step is not None:
            with self.lock:
                self._apply(s, step)

    def apply_all(self) -> None:
        with self.lock:
            for s in self.scenarios:
                step = self.step.get(s.name)
                if step is not None:
                    self._apply(s, step)

    def _apply(self, s: Scenario, step: Step) -> None:
        m = self.plane.fixture
        if step.external is not None:  # one value, a series per twin (each twin's spec selects ``twin=<twin>``)
            m.set_external_metric(s.ns, "queue", [({"twin": t}, step.external) for t in TWINS])
        per_pod: dict[str, str] = {}  # one Pods metric series for the namespace: both twins' pods
        usage: dict[str, dict] = {}  # every pod's CPU of the namespace, set at once (no reader sees half a step)
        for twin in TWINS:
            pods = _pods(self.plane, s, twin)
            unready = [p for p in pods if not _ready(p)]  # made unready at the start (a scale-down removes them first)
            counted = [p for p in pods if _ready(p)]  # the demand is spread over the ready pods
            reporting = [p for p in counted if p["metadata"]["name"] not in s.no_metrics]
            n = max(len(counted), 1)
            if step.cpu is not None:
                usage.update({p["metadata"]["name"]: {"app": {"cpu": f"{math.ceil(step.cpu / n)}m"}}
                              for p in unready + reporting})
            for p in counted:
                if p["metadata"]["name"] in s.no_metrics:
                    m.clear_pod_metrics(s.ns, p["metadata"]["name"])
            if step.per_pod is not None:
                per_pod.update({p["metadata"]["name"]: str(math.ceil(step.per_pod / n)) for p in reporting})
        if usage:
            m.set_many_pod_metrics(s.ns, usage)
        if step.per_pod is not None:
            m.set_pods_metric(s.ns, "rps", per_pod)


def _twins_read(query: dict) -> tuple:
    """The twins a metrics read can pick by its ``labelSelector`` (``app=<twin>`` of pods, ``twin=<twin>`` of the
    external metric; none: both)."""
    reqs = parse_label_selector(query.get("labelSelector"))
    return tuple(t for t in TWINS if labels_match(reqs, {"app": t, "twin": t})) or TWINS


def _spec(s: Scenario, twin: str) -> dict:
    """The twin's autoscaler spec: the scenario's, its External metrics selecting the twin's series."""
    metrics = [{**m, "external": {**m["external"], "metric": {**m["external"]["metric"],
                                                              "selector": {"matchLabels": {"twin": twin}}}}}
               if m["type"] == "External" else m for m in s.metrics]
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": twin},
            "minReplicas": s.min_replicas, "maxReplicas": s.max_replicas, "metrics": metrics}
    if s.behavior:
        spec["behavior"] = s.behavior
    return spec


def _setup(plane, client, s: Scenario) -> None:
    s.ns = f"sbs-{s.name[:40]}-{uuid.uuid4().hex[:4]}"
    client.create(Namespace(metadata={"name": s.ns}))
    wait_until(lambda: has_default_sa(client, s.ns), what=f"the default ServiceAccount of {s.ns}")
    for twin in TWINS:
        apply(client, deployment(twin, s.ns, replicas=s.replicas, cpu=s.request,
                                 annotations={"kwok.pyhpa.dev/start-time": STARTED}))


def _mark_pods(plane, client, s: Scenario) -> None:
    """The first ``unready`` pods of each twin turn unready; the next ``missing`` report no metrics from now on and
    carry a high ``controller.kubernetes.io/pod-deletion-cost``, so a scale-down removes other pods first and the
    pods without metrics stay the same ones (both twins alike, whenever each controller reads)."""
    for twin in TWINS:
        pods = _pods(plane, s, twin)
        for p in pods[:s.unready]:
            status = dict(p["status"])
            status["conditions"] = [dict(c, status="False") if c["type"] in ("Ready", "ContainersReady") else c
                                    for c in status["conditions"]]
            client.patch(PodStatus, p["metadata"]["name"], {"status": status}, namespace=s.ns,
                         patch_type=PatchType.MERGE)
        for p in pods[s.unready:s.unready + s.missing]:
            client.patch(Pod, p["metadata"]["name"],
                         {"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "1000"}}},
                         namespace=s.ns, patch_type=PatchType.MERGE)
            s.no_metrics.add(p["metadata"]["name"])


def _autoscalers(client, s: Scenario) -> None:
    client.create(codecs.from_dict({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                                    "metadata": {"name": "up", "namespace": s.ns}, "spec": _spec(s, "up")}))
    apply(client, {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
                   "metadata": {"name": "py", "namespace": s.ns}, "spec": _spec(s, "py")})


def _observe(client, load: Load, halt: threading.Event, watching: threading.Event) -> None:
    """Record every change of each twin's Deployment replica count (a watch: no change is missed), and keep each
    twin's Deployment for the metrics gate (``Load.gate``); ``watching`` is set once the watch's first list is in."""
    by_ns = load.by_ns
    while not halt.is_set():
        try:
            for _, d in client.watch(Deployment, namespace="*"):
                if halt.is_set():
                    return
                s = by_ns.get(d.metadata.namespace)
                twin = d.metadata.name
                if s is None or twin not in TWINS:
                    continue
                known = s.deployments.get(twin)
                s.deployments[twin] = d.to_dict()
                if known is None or known["metadata"]["resourceVersion"] != d.metadata.resourceVersion:
                    load.touched(s.ns, twin)  # a watch listed again replays what is known: no change
                if all(len(x.deployments) == len(TWINS) for x in by_ns.values()):
                    watching.set()
                if s.seen[twin][-1] != d.spec.replicas:
                    s.seen[twin].append(d.spec.replicas)
                    s.changed_at = time.monotonic()
        except Exception:  # noqa: BLE001 - a watch cut: watch again (the list replays current values)
            time.sleep(0.2)


def _settled(plane, scenarios, since: float, quiet: float):
    """True when ``since`` is past, no twin's replica count changed in the last ``quiet`` seconds, and every twin
    has as many running pods as its replica count (the next step starts from settled pods, as the controllers see
    them); else a falsy ``Pending`` naming what is not settled yet."""
    now = time.monotonic()
    why = [] if now >= since else ["the step's hold"]
    why += [f"{s.name} changed {now - s.changed_at:.1f} s ago" for s in scenarios if now - s.changed_at < quiet]
    why += [f"{s.name}/{t}: {n} running pods for {s.seen[t][-1]} replicas" for s in scenarios for t in TWINS
            if (n := len(_pods(plane, s, t))) != s.seen[t][-1]]
    return True if not why else Pending(why)


def _conditions(client, s: Scenario) -> dict:
    up = client.get(HorizontalPodAutoscaler, "up", namespace=s.ns).status
    py = client.get(HA, "py", namespace=s.ns).status or {}
    # an External metric's messages name its selector, each twin's own (``_spec``): compared with the twin left out
    same = lambda m: m.replace("{twin: up,}", "{twin: <twin>,}").replace("{twin: py,}", "{twin: <twin>,}")  # noqa: E731
    strip = lambda cs: sorted((c["type"], c["status"], c["reason"], same(c["message"])) for c in cs)  # noqa: E731
    return {"up": strip([c.to_dict() for c in (up.conditions or [])]), "py": strip(py.get("conditions") or []),
            "desired": (up.desiredReplicas, py.get("desiredReplicas"))}


def test_upstream_and_pyhpa_scale_their_twins_alike_and_the_preview_agrees(plane, client, pyhpa):
    state = ("seen", "conditions", "ns", "no_metrics", "touched_at", "deployments")  # each run's own, not copied
    scenarios = [Scenario(**{k: v for k, v in vars(s).items() if k not in state})
                 for s in SCENARIOS]
    for s in scenarios:
        _setup(plane, client, s)
    for s in scenarios:
        wait_until(lambda: all(len(_pods(plane, s, t)) == s.replicas for t in TWINS), timeout=180,
                   what=f"the pods of {s.name}")
        _mark_pods(plane, client, s)
    load = Load(plane, scenarios)
    for s in scenarios:
        load.step[s.name] = s.steps[0]
    load.apply_all()
    load.start()
    halt, watching = threading.Event(), threading.Event()
    for s in scenarios:
        s.seen = {t: [s.replicas] for t in TWINS}
    watcher = threading.Thread(target=_observe, args=(client, load, halt, watching), daemon=True)
    watcher.start()
    assert watching.wait(120), "the Deployments' watch did not list every twin"
    run = pyhpa("--sync-period", "1", name="pyhpa")
    preview = pyhpa("--preview", "--sync-period", "1", "--health-port", "-1", name="preview")
    try:
        step_ends: dict[str, list[float]] = {s.name: [] for s in scenarios}
        results: dict[str, list] = {s.name: [] for s in scenarios}
        longest = max(len(s.steps) for s in scenarios)
        for k in range(longest):
            marks = {s.name: {t: len(s.seen[t]) for t in TWINS} for s in scenarios}
            active = [s for s in scenarios if k < len(s.steps)]
            for s in active:
                load.step[s.name] = s.steps[k]
            load.apply_all()
            if k == 0:
                for s in scenarios:
                    _autoscalers(client, s)
            started = time.monotonic()
            hold = max(s.steps[k].hold for s in active)
            # held at least ``hold``, then until no twin changed for 8 s: longer than any window here (5 s) plus a
            # sync period and a pod's start, so a decision held by a window is not taken for the settled one
            wait_until(lambda: _settled(plane, active, started + hold, 8.0), timeout=hold + 300, every=0.5,
                       what=f"step {k} to settle")
            for s in active:
                paths = {t: s.seen[t][max(marks[s.name][t] - 1, 0):] for t in TWINS}
                results[s.name].append((k, paths, _conditions(client, s)))
                step_ends[s.name].append(time.time())
        preview_lines = [r for r in preview.records() if r.get("msg") == "preview"]
    finally:
        halt.set()
        load.halt.set()
    failures = []
    for s in scenarios:
        for k, paths, conds in results[s.name]:
            if paths["up"] != paths["py"]:
                failures.append(f"{s.name} step {k}: replicas upstream {paths['up']} pyhpa {paths['py']}")
            if conds["up"] != conds["py"] or conds["desired"][0] != conds["desired"][1]:
                failures.append(f"{s.name} step {k}: desired {conds['desired']}, conditions upstream {conds['up']} "
                                f"pyhpa {conds['py']}")
        for end in step_ends[s.name]:  # the preview's last line before each step's end
            before = [r for r in preview_lines if r["hpa"] == f"{s.ns}/up"
                      and _epoch(r["time"]) <= end and _epoch(r["time"]) > end - 3]
            if before and before[-1]["result"] != "agree":
                failures.append(f"{s.name}: preview {before[-1]['result']} at the end of a step: {before[-1]}")
    assert failures == [], "\n".join(failures)
    assert len(scenarios) >= 20
    assert run.proc.poll() is None and preview.proc.poll() is None


def _epoch(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
