"""The compiled workload (``pyhpa.simulate.compiled.CompiledCluster``, ``native/src/workload.rs``) gives what the
Python ``Cluster`` gives, to the last bit: on random workloads (Deployment or StatefulSet, probes, limits, start-up
boost and jitter, even or imbalanced traffic, CPU, memory, served-requests and container metrics, behaviors, a
binder or none, loads that scale to the simulator's bound), on the example fleet and on the benchmark's fleet;
and it covers only what it runs (issue 55: the Python core stays the reference, the compiled path is checked
against it on every test run)."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from native_gate import require_compiled_path

from pyhpa.adapters.autoscaler import find_autoscaler
from pyhpa.adapters.errors import InputError
from pyhpa.adapters.snapshot import read_document
from pyhpa.simulate import Settings, WorkloadFiles, load_autoscaler, read_load, read_workload
from pyhpa.simulate.clock import ATTEMPT, Clock
from pyhpa.simulate.cluster import Cluster
from pyhpa.simulate.compiled import CompiledCluster, uncovered

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "pyhpa" / "data" / "traces" / "nasa_http_1995-07-12_13_per_minute.csv"

require_compiled_path()


class DelayBinder:
    """Binds each new pod after ``delay`` seconds times its jitter (an actor on the workload's clock); a pod
    deleted while Pending is not bound; every ``evict_every``-th bind also evicts the oldest bound pod (a node
    drained), so that replacement pods come from outside the workload's own instants."""

    def __init__(self, delay: float, evict_every: int = 0):
        self.delay, self.evict_every = delay, evict_every
        self.clock: Clock | None = None
        self.gone: set[str] = set()
        self.bound: list = []
        self.removed_names: list[str] = []

    def created(self, cluster, pod, t):
        self.clock.at(t + self.delay * pod.factors[0], ATTEMPT, self._bind, (cluster, pod))

    def removed(self, cluster, pod):
        self.gone.add(pod.name)
        self.removed_names.append(pod.name)

    def _bind(self, t, payload):
        cluster, pod = payload
        if pod.name in self.gone:
            return
        cluster.bind(pod, t)
        self.bound.append(pod)
        if self.evict_every and len(self.bound) % self.evict_every == 0:
            victim = next((p for p in self.bound if p.name not in self.gone), None)
            if victim is not None:
                cluster.evict(victim, t)


def _files(tmp: Path, w: dict) -> WorkloadFiles:
    labels = "{app: web}"
    probe = ("        readinessProbe: {exec: {command: [/bin/check]}, initialDelaySeconds: %d, periodSeconds: %d}\n"
             % (w["probe_delay"], w["probe_period"])) if w["probe"] else ""
    limit = f"          limits: {{cpu: {w['limit']}m}}\n" if w["limit"] else ""
    sidecar = ("      - name: proxy\n        image: envoy\n        resources:\n          requests: {cpu: 100m}\n"
               if w["sidecar"] else "")
    kind = w["kind"]
    extra = "  serviceName: web\n" if kind == "StatefulSet" else ""
    if kind == "StatefulSet" and w["parallel"]:
        extra += "  podManagementPolicy: Parallel\n"
    (tmp / "target.yaml").write_text(
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: web}}\nspec:\n{extra}  replicas: {w['replicas']}\n"
        f"  selector:\n    matchLabels: {labels}\n  template:\n    metadata:\n      labels: {labels}\n    spec:\n"
        f"      containers:\n      - name: app\n        image: web\n        resources:\n"
        f"          requests: {{cpu: {w['request']}m, memory: 512Mi}}\n{limit}{probe}{sidecar}")
    metrics = []
    for m in w["metrics"]:
        if m == "cpu":
            metrics.append("  - type: Resource\n    resource: {name: cpu, target: {type: Utilization, "
                           f"averageUtilization: {w['util']}}}}}\n")
        elif m == "cpu-average":
            metrics.append("  - type: Resource\n    resource: {name: cpu, target: {type: AverageValue, "
                           f"averageValue: {w['average']}m}}}}\n")
        elif m == "memory":
            metrics.append("  - type: Resource\n    resource: {name: memory, target: {type: AverageValue, "
                           "averageValue: 300Mi}}\n")
        elif m == "container":
            name = "proxy" if w["sidecar"] and w["idle"] else "app"
            metrics.append("  - type: ContainerResource\n    containerResource: {name: cpu, container: "
                           f"{name}, target: {{type: Utilization, averageUtilization: {w['util']}}}}}\n")
        else:
            metrics.append("  - type: Pods\n    pods:\n      metric: {name: served}\n"
                           f"      target: {{type: AverageValue, averageValue: '{w['served']}'}}\n")
    behavior = ""
    if w["behavior"] == "policies":
        behavior = ("  behavior:\n    scaleUp:\n      stabilizationWindowSeconds: 0\n      policies:\n"
                    "      - {type: Percent, value: 100, periodSeconds: 15}\n      - {type: Pods, value: 4, periodSeconds: 60}\n"
                    f"      selectPolicy: {w['select']}\n    scaleDown:\n      stabilizationWindowSeconds: {w['down_window']}\n"
                    "      policies:\n      - {type: Percent, value: 20, periodSeconds: 60}\n")
    elif w["behavior"] == "window":
        behavior = f"  behavior:\n    scaleDown: {{stabilizationWindowSeconds: {w['down_window']}}}\n"
    sections = ""
    if w.get("prediction"):
        sections += f"  prediction: {w['prediction']}\n"
    if w.get("saturation"):
        sections += f"  saturation: {w['saturation']}\n"
    api = ("pyhpa.dev/v1alpha1\nkind: HorizontalAutoscaler" if sections else
           "autoscaling/v2\nkind: HorizontalPodAutoscaler")
    (tmp / "hpa.yaml").write_text(
        f"apiVersion: {api}\nmetadata: {{name: web}}\nspec:\n"
        f"  scaleTargetRef: {{apiVersion: apps/v1, kind: {kind}, name: web}}\n  minReplicas: {w['min']}\n"
        f"  maxReplicas: {w['max']}\n  metrics:\n{''.join(metrics)}{behavior}{sections}")
    p = w["profile"]
    (tmp / "profile.yaml").write_text(
        "load_unit: requests_per_second\n" + "".join(f"{k}: {v}\n" for k, v in p.items())
        + "metrics:\n  served: {source: served_requests_per_second}\n")
    return WorkloadFiles((tmp / "hpa.yaml",), tmp / "target.yaml", _daily_trace(tmp) if w.get("prediction") else TRACE,
                         "requests_per_second", tmp / "profile.yaml")


def _daily_trace(tmp: Path) -> Path:
    """Four days of minutes (from 1995-07-09, so that ``start`` leaves three of them before it: a forecaster's
    history) of a daily cycle with noise and a burst every few hours, the NASA trace's scale."""
    from datetime import datetime, timezone

    import numpy as np

    rng = np.random.default_rng(7)
    t0 = 805248000  # 1995-07-09T00:00Z
    rows = ["timestamp,requests_per_second"]
    for k in range(4 * 1440 + 1):
        day = (k % 1440) / 1440
        v = 1.5 * (1 + 0.7 * math.sin(2 * math.pi * (day - 0.3))) * (1 + 0.15 * rng.standard_normal())
        if k % 317 < 12:
            v *= 3
        when = datetime.fromtimestamp(t0 + 60 * k, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows.append(f"{when},{max(v, 0.0):.4f}")
    path = tmp / "daily.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def _pair(files: WorkloadFiles, w: dict, binder_of=None) -> tuple[Cluster, CompiledCluster]:
    profile, target = read_workload(files)
    s = Settings(seed=w["seed"])
    hpa_file = str(files.hpa[0])
    h = load_autoscaler(find_autoscaler(read_document(hpa_file), hpa_file), hpa_file, target, s)
    load = read_load(files, [h], profile, target, start=w["start"], end=w["end"], load_scale=w["load_scale"])
    tr = load.trace
    out = []
    for cls in (Cluster, CompiledCluster):
        out.append(cls(h.hpa, target, profile, h.config, tr.times, load.rps, tr.values, tr.start, tr.end,
                       h.sync_period_seconds, s.seed, (), history=load.history,
                       binder=None if binder_of is None else binder_of(),
                       summary_only=not w.get("full", False)))
    return out[0], out[1]


def _run(c: Cluster, stop_pod_seconds: float | None = None, progress=None) -> tuple:
    """Run ``c`` (on a clock with its binder, when it has one; without one, ended early once it has run
    ``stop_pod_seconds``, when given, and telling ``progress``); its outcome, or the error it raised."""
    try:
        if c.binder is None:
            c.run(progress, stop=None if stop_pod_seconds is None else (lambda c: c.stats.pod_seconds > stop_pod_seconds))
        else:
            clock = Clock(c.t_begin, c.end)
            c.binder.clock = clock
            c.attach(clock)
            clock.run()
            c.finish()
    except InputError as err:
        return ("error", str(err))
    tl = c.timeline
    if c.summary_only:
        columns = {name: tl.column(name) for name in ("current_replicas", "desired_replicas", *tl.metrics)}
    else:  # every value of every row, its type too (timeline.csv writes 3 and 3.0 differently)
        columns = [tl.header, [tuple((type(v).__name__, v) for v in row) for row in tl.rows]]
    # what summary.json says of prediction and saturation (``pyhpa.simulate.report``)
    sources = (None if c.prediction is None else c.prediction.summary(),
               {name: record.summary(getattr(c.hpa, name)) for name, record in c.sources.items()})
    return (asdict(c.stats), c.scale_events, c.failed_syncs, c.decided_by, c.unserved_by_minute, c.t,
            c.spec_replicas, columns, [p.name for p in c.pods], c.end, c.stopped, sources)


workloads = st.fixed_dictionaries({
    "kind": st.sampled_from(["Deployment", "StatefulSet"]),
    "parallel": st.booleans(),
    "replicas": st.integers(1, 4),
    "request": st.sampled_from([100, 250, 500, 1000]),
    "limit": st.sampled_from([0, 0, 600, 1500]),
    "probe": st.booleans(),
    "probe_delay": st.integers(0, 20),
    "probe_period": st.sampled_from([1, 5, 10]),
    "sidecar": st.booleans(),
    "idle": st.booleans(),
    "metrics": st.lists(st.sampled_from(["cpu", "cpu-average", "memory", "container", "served"]), min_size=1,
                        max_size=3),
    "util": st.integers(30, 90),
    "average": st.sampled_from([50, 150, 400]),
    "served": st.sampled_from([2, 5, 12]),
    "behavior": st.sampled_from(["none", "policies", "window"]),
    "select": st.sampled_from(["Max", "Min", "Disabled"]),
    "down_window": st.sampled_from([0, 60, 300]),
    "min": st.integers(1, 3),
    "max": st.sampled_from([4, 12, 40, 5000]),
    "profile": st.fixed_dictionaries({
        "cpu_millicore_seconds_per_request": st.sampled_from([8, 40, 120]),
        "cpu_baseline_millicores": st.sampled_from([0, 10, 30]),
        "pod_capacity_rps": st.sampled_from([5, 15, 60]),
        "memory_baseline_mebibytes": st.sampled_from([64, 180]),
        "memory_mebibytes_per_rps": st.sampled_from([0, 2, 9]),
        "pod_scheduling_seconds": st.sampled_from([0, 2, 40]),
        "container_start_seconds": st.sampled_from([0, 8, 20]),
        "app_startup_seconds": st.sampled_from([0, 10, 30]),
        "startup_cpu_boost_millicores": st.sampled_from([0, 300]),
        "startup_cpu_boost_seconds": st.sampled_from([0, 45]),
        "startup_jitter_fraction": st.sampled_from([0, 0.2, 0.5]),
        "traffic_spread": st.sampled_from(["even", "imbalanced"]),
        "traffic_imbalance_cv": st.sampled_from([0.1, 0.4]),
        "metric_resolution_seconds": st.sampled_from([15, 30, 60]),
    }),
    "seed": st.integers(0, 2**31),
    "start": st.sampled_from(["1995-07-12T06:00:00Z", "1995-07-12T14:00:00Z", "1995-07-13T08:00:00Z"]),
    "end_hours": st.sampled_from([2, 6]),
    "load_scale": st.sampled_from([0.5, 1, 4, 30]),
    "binder": st.sampled_from(["none", "delay", "evict"]),
    "full": st.booleans(),
    "stop": st.sampled_from([None, None, 3000.0, 30000.0]),
    "progress": st.booleans(),
    "prediction": st.just(None),
    "saturation": st.just(None),
})


@settings(max_examples=int(os.environ.get("PYHPA_COMPILED_EXAMPLES", 60)), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(w=workloads)
def test_a_compiled_workload_runs_as_the_python_one(tmp_path_factory, w):
    """Every figure a fleet's workload keeps, and every row of the whole timeline ``pyhpa simulate`` keeps (its
    conditions and errors too), the same to the last bit (or the same error, naming the same)."""
    from datetime import datetime, timedelta

    tmp = tmp_path_factory.mktemp("w")
    start = datetime.fromisoformat(w["start"].replace("Z", "+00:00"))
    w = {**w, "end": (start + timedelta(hours=w["end_hours"])).isoformat().replace("+00:00", "Z")}
    if w["profile"]["cpu_baseline_millicores"] >= (w["limit"] or 10**9):
        return
    if not {"cpu", "cpu-average", "container"} & set(w["metrics"]):
        w["saturation"] = None  # it watches a cpu metric: the adapter refuses it without one
    if w["prediction"] or w["saturation"]:  # compiled for a summary's timeline (a fleet's workload)
        w["full"] = False
        if w["prediction"]:
            w["start"] = "1995-07-12T" + w["start"][11:]  # three days of history in the daily trace before it
    files = _files(tmp, w)
    binder_of = {"none": None, "delay": lambda: DelayBinder(7.0), "evict": lambda: DelayBinder(3.0, evict_every=3)}[
        w["binder"]]
    python, compiled = _pair(files, w, binder_of)
    assert compiled.compiled, compiled.why_not_compiled
    assert not getattr(python, "compiled", False)
    told: list[float] = []
    want, got = _run(python, w["stop"]), _run(compiled, w["stop"], told.append if w["progress"] else None)
    assert told == sorted(told) and (not told or told[-1] == compiled.end - compiled.t0)
    event("an error" if want[0] == "error" else "scaled" if want[1] else "did not scale")
    event("whole timeline" if w["full"] else "summary timeline")
    event("some syncs by the core" if compiled.core_syncs else "no sync by the core")
    event("stopped early" if python.stopped else "ran to the end")
    if w["prediction"] or w["saturation"]:
        event("sources: " + ", ".join(f"{k} {v}" for k, v in sorted(python.decided_by.items())))
    assert got == want
    if binder_of is not None and want[0] != "error":
        assert [p.name for p in compiled.binder.bound] == [p.name for p in python.binder.bound]
        assert compiled.binder.removed_names == python.binder.removed_names


_PREDICTIONS = ["{}", "{leadSeconds: 900, historySeconds: 172800, refreshSeconds: 1800}",
                "{mode: Observe, quantile: 0.6, historySeconds: 86400}",
                "{leadSeconds: 120, historySeconds: 7200, refreshSeconds: 600, quantile: 0.99}"]
_SATURATIONS = ["{}", "{pinnedPercent: 60, demandFactor: 3}", "{mode: Observe}", "{pinnedPercent: 50, demandFactor: 1.5}"]


@settings(max_examples=int(os.environ.get("PYHPA_COMPILED_EXAMPLES", 60)) // 2 or 1, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(w=workloads, prediction=st.sampled_from([None, *_PREDICTIONS]), saturation=st.sampled_from([None, *_SATURATIONS]),
       limit=st.sampled_from([600, 1500]), load_scale=st.sampled_from([4, 10, 30]),
       first=st.sampled_from(["cpu", "container", "cpu-average"]))
def test_a_compiled_workload_with_prediction_and_saturation_runs_as_the_python_one(tmp_path_factory, w, prediction,
                                                                                   saturation, limit, load_scale, first):
    """The same with ``spec.prediction`` (its forecaster refitted in Python from the daily trace's history) and
    ``spec.saturation`` (CPU limits the load reaches) on a cpu metric first: the decisions the sources win too."""
    if prediction is None and saturation is None:
        saturation = "{}"
    test_a_compiled_workload_runs_as_the_python_one.hypothesis.inner_test(
        tmp_path_factory, {**w, "prediction": prediction, "saturation": saturation, "limit": limit,
                           "load_scale": load_scale, "metrics": [first, *w["metrics"]][:3]})


@pytest.mark.parametrize("prediction,saturation,scale,util,cpu_request,winner", [
    ("{}", None, 10, 60, 250, "Prediction"),
    ("{leadSeconds: 120, historySeconds: 172800, refreshSeconds: 1800}", "{pinnedPercent: 60, demandFactor: 3}", 30,
     90, 500, "Saturation"),
])
def test_the_sources_win_syncs_in_a_compiled_workload_as_in_python(tmp_path, prediction, saturation, scale, util,
                                                                   cpu_request, winner):
    """A forecast that asks for more than the metric, and pods pinned at their CPU limit: the source sets the
    final number at some syncs, the same syncs compiled as in Python."""
    w = {"kind": "Deployment", "parallel": False, "replicas": 2, "request": cpu_request, "limit": 600, "probe": False,
         "probe_delay": 0, "probe_period": 5, "sidecar": False, "idle": False, "metrics": ["cpu"], "util": util,
         "average": 150, "served": 5, "behavior": "none", "select": "Max", "down_window": 300, "min": 1, "max": 400,
         "profile": {"cpu_millicore_seconds_per_request": 40, "pod_capacity_rps": 15, "app_startup_seconds": 30},
         "seed": 1, "start": "1995-07-12T06:00:00Z", "end": "1995-07-12T12:00:00Z", "load_scale": scale,
         "prediction": prediction, "saturation": saturation}
    python, compiled = _pair(_files(tmp_path, w), w)
    assert compiled.compiled, compiled.why_not_compiled
    want = _run(python)
    assert python.decided_by.get(winner, 0) > 0, python.decided_by
    assert _run(compiled) == want


def test_it_runs_what_it_covers_and_the_python_cluster_the_rest(tmp_path, monkeypatch):
    """A workload with a metrics outage runs in Python (the same class, its reason said); so does everything with
    ``PYHPA_COMPILED=0``."""
    w = {"kind": "Deployment", "parallel": False, "replicas": 2, "request": 250, "limit": 0, "probe": False,
         "probe_delay": 0, "probe_period": 5, "sidecar": False, "idle": False, "metrics": ["cpu"], "util": 60,
         "average": 150, "served": 5, "behavior": "none", "select": "Max", "down_window": 300, "min": 1, "max": 12,
         "profile": {"cpu_millicore_seconds_per_request": 40}, "seed": 1, "start": "1995-07-12T10:00:00Z",
         "end": "1995-07-12T12:00:00Z", "load_scale": 1}
    files = _files(tmp_path, w)
    python, compiled = _pair(files, w)
    assert compiled.compiled and uncovered(compiled) == ""
    outage = CompiledCluster(compiled.hpa, compiled.target, compiled.profile, compiled.config, compiled.times,
                             compiled.rps_values, {}, compiled.t0, compiled.end, compiled.sync_period, 1,
                             ((compiled.t0, compiled.t0 + 60),), summary_only=True)
    assert not outage.compiled and "outage" in outage.why_not_compiled
    assert _run(outage)[0]["pod_seconds"] > 0
    monkeypatch.setenv("PYHPA_COMPILED", "0")
    off = _pair(files, w)[1]
    assert not off.compiled and "turned off" in off.why_not_compiled
    assert _run(off) == _run(python)


def _fleet_outcome(run) -> tuple:
    from pyhpa.fleet.report import summarize_fleet

    summary = summarize_fleet(run)
    summary["fleet"].pop("file", None)
    return (summary, run.events, run.samples, [asdict(s) for s in run.stats],
            [(asdict(c.stats), c.scale_events, c.decided_by, c.unserved_by_minute) for c in run.clusters])


@pytest.mark.parametrize("model,predictive", [("cluster-autoscaler", False), ("karpenter", False),
                                              ("cluster-autoscaler", True)])
def test_the_benchmark_fleet_runs_compiled_as_in_python(tmp_path, monkeypatch, model, predictive):
    """``benchmarks/fleet.py``'s fleet (Bitbrains StatefulSets, NASA and WorldCup98 Deployments on one pool), 16
    workloads for 12 hours, reactive or with prediction and saturation on every autoscaler (``--predictive``): every
    workload compiled, every figure, event and sample of the fleet and every workload's summary (the sources' too)
    the Python run's."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import fleet as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from pyhpa.fleet.engine import FleetRun
    from pyhpa.fleet.spec import load_fleet

    path = bench.make_fleet(16, tmp_path, 0, model, predictive)
    runs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("PYHPA_COMPILED", flag)
        fleet = load_fleet(path, Settings(seed=0), bench.START, "2013-08-05T12:00:00Z")
        run = FleetRun(fleet, Settings(seed=0)).run()
        runs.append(run)
    compiled, python = runs
    assert all(c.compiled for c in compiled.clusters) and not any(c.compiled for c in python.clusters)
    assert any(c.scale_events for c in python.clusters) and python.events
    assert _fleet_outcome(compiled) == _fleet_outcome(python)
