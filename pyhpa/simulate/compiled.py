"""A simulated workload whose instants run compiled: ``CompiledCluster``, a ``pyhpa.simulate.cluster.Cluster`` whose
load, metrics-server scrapes, pod transitions, HPA syncs and workload controller run in ``pyhpa.simulate.rustcore``'s
``Workload`` (``native/src/workload.rs``) with the compiled decision (``pyhpa.simulate.native.decide_upstream``),
for the workloads ``uncovered`` finds nothing against; for any other it is the Python ``Cluster`` itself.

Every figure is the Python class's to the last bit: the compiled actor follows ``Cluster`` method by method, and what
stays in Python is called back (``_c_*``): the workload's random draws (a new pod's traffic weight and start-up
jitter, from its ``random.Random``), a bound pod's transition times (``Cluster._start_up``: its probes), the binder's
``created``/``removed``, the error of a rescale past ``MAX_SIMULATED_PODS`` and the forecaster's fits.
``tests/test_compiled_cluster.py`` runs both on random workloads and on the benchmark's fleet and compares every
output (``tests/test_compiled_forecast.py`` the forecaster); ``tools/byte_identity.py`` compares the files of
simulate, tune and the fleet.

Covered (``uncovered`` returns ""): a workload without metrics outages, an HPA without schedules, fallback or pause
(``spec.prediction`` and ``spec.saturation`` are compiled for a summary's timeline, a fleet's workload: the
forecaster between fits in ``native/src/forecast.rs``, each fit made here by ``pyhpa.forecast.fitting.fit``,
``_c_refit``; the sources' proposals and their place in the recommendation in ``native/src/decide.rs``) and not scaled
to zero, whose metrics are Resource or ContainerResource (Utilization of the request, or AverageValue) and Pods
metrics the simulator answers from the pods (``MetricView.kind`` cpu, memory, served, idle), its selector selecting
the pods, and each Utilization metric's request known; its summary's timeline or the whole one
(``pyhpa simulate``'s: there a sync that stops before normalization or whose metrics fail is decided by the Python core,
``_c_decide``, for its texts). ``PYHPA_COMPILED=0`` in the environment turns the compiled path off (everything then
runs in Python, with the same results, slower: ``benchmarks/fleet.py --no-compiled``).
"""

from __future__ import annotations

import os
import sys
from array import array
from dataclasses import replace

import numpy as np

from ..adapters.errors import InputError
from ..adapters.metric_types import metric_type
from ..core import Condition, Memory, MetricSamples, PodSample, Scale, SyncInputs, decide
from ..core.calculator import MetricError, pod_amount
from ..core.model import (
    ENFORCE,
    ZERO_TIME,
    PredictionReason,
    SaturationReason,
    SourceKind,
)
from ..core.reconcile import tolerances
from ..core.saturation import saturation_metric
from . import native
from .cluster import Cluster, Episode, ScaleEvent, SimPod, Stats
from .target import MAX_SIMULATED_PODS
from .timeline import SummaryTimeline

#: the compiled actor's code of each of a pod's transitions (``Cluster._start_up``'s names)
_TRANSITION = {"app": 0, "boost_end": 1, "bound": 2, "ready": 3, "running": 4}
#: the metric views the compiled actor answers (``pyhpa.simulate.metrics.MetricView.kind``)
_KINDS = ("cpu", "memory", "served", "idle")


def enabled() -> bool:
    """The compiled path is built and not turned off (``PYHPA_COMPILED=0``)."""
    return native.available() and os.environ.get("PYHPA_COMPILED", "1") != "0"


class _Handle(SimPod):
    """A pod of a compiled workload as the binder and the fleet hold it (its name, creation, weight, jitter
    ``factors``); ``pid`` is its index in the compiled actor."""

    __slots__ = ("pid",)


def uncovered(c: Cluster) -> str:
    """Why workload ``c`` (its ``Cluster.__init__`` done up to ``_init_state``) cannot run compiled; "" when it can
    (and then ``c._requests``: every pod's request of each Utilization metric's resource, milli, 0 for the others;
    ``c._cpu_limit``: every pod's CPU limit of the metric ``spec.saturation`` watches, milli, None: none)."""
    if not enabled():
        return "the compiled path is not built or is turned off"
    hpa, config = c.hpa, c.config
    if c.outages:
        return "metrics outages"
    sources = c.summary_only  # prediction and saturation are compiled for a summary's timeline only
    if (hpa.prediction or hpa.saturation) and not sources:
        return "prediction or saturation with the whole timeline"
    if hpa.prediction and c.prediction is None:
        return "spec.prediction.metric names no metric"
    if set(c.sources) - {"saturation"}:
        return "a source section other than saturation"
    # HPAScaleToZero on or off decides the same here: only an Object or External metric sets ScaledToZero=True
    if not native.hpa_covered(hpa, sources):
        return "pyhpa's extensions, scaled to zero, or a metric the compiled decision does not compute " \
               "(pyhpa.simulate.native.hpa_covered)"
    if c.imbalanced and sys.version_info >= (3, 12):  # sum() of floats is compensated there; the actor's is not
        return "imbalanced traffic on Python 3.12 or later"
    for m, view in zip(hpa.metrics, c.views):
        if view.kind not in _KINDS:
            return f"a metric of kind {view.kind}"
        if view.utilization and m.target_average_milli is not None:
            return "a Utilization metric with an averageValue"
    if not native.selects_all(c.target.selector, [c.target.labels]):
        return "its selector"
    probe = c._core_pod(SimPod("probe", 0.0, 1.0))
    try:
        per_metric = native.metric_requests(hpa, [probe], config)
    except MetricError:
        return "a request that is not known"
    c._requests = [r[0] if r else 0 for r in per_metric]
    c._cpu_limit = None
    if hpa.saturation is not None:
        i = saturation_metric(hpa.saturation, hpa.metrics)
        if i is not None:
            m = hpa.metrics[i]
            try:
                c._cpu_limit = pod_amount(probe, "cpu", metric_type(m.type).container_of(m), limits=True)
            except MetricError:  # the source stays out (NoCPULimit), as the core's
                pass
    return ""


class CompiledCluster(Cluster):
    """``Cluster`` with its instants compiled when ``uncovered`` finds nothing (``compiled`` True), else the Python
    ``Cluster`` unchanged. The same constructor; after ``finish`` the same figures (``stats``, ``scale_events``,
    ``failed_syncs``, ``decided_by``, ``unserved_by_minute``, ``timeline``)."""

    def _init_state(self) -> None:
        self.why_not_compiled = uncovered(self)
        self.compiled = not self.why_not_compiled
        if not self.compiled:
            super()._init_state()
            return
        hpa, config, p, t = self.hpa, self.config, self.profile, self.target
        self._handles: dict[int, _Handle] = {}
        self.core_syncs = 0  # syncs the Python core decided (``_c_decide``)
        self.clock = None
        self.queued = float("nan")
        self._progress = self._stop = None
        self.spec_replicas = t.replicas
        self.unserved_by_minute = {}
        self.t = self.t_begin
        down, up = tolerances(hpa, config)
        b = hpa.behavior
        self._w = native.rustcore.Workload(
            (self.t0, self.end, self.sync_period, p.metric_resolution_seconds, self.scrape_offset, self.k_cpu,
             self.base_cpu, self.boost, self.limit, self.cap, p.memory_baseline_mebibytes, p.memory_mebibytes_per_rps),
            (self.need_cpu, self.need_memory, self.need_served, t.kind == "StatefulSet", bool(t.ordered_ready),
             self.binder is not None, t.name, p.pod_scheduling_seconds, float(t.replicas), MAX_SIMULATED_PODS),
            list(self.times), list(self.rps_values), [(v.kind, v.utilization, v.factor) for v in self.views],
            hpa.min_replicas, hpa.max_replicas,
            None if b is None else (native.rules(b.scale_up), native.rules(b.scale_down)),
            [(*m[:4], r) for m, r in zip(native.metric_args(hpa, [[] for _ in hpa.metrics]), self._requests)],
            next((r for r in self._requests if r), 0),
            (config.downscale_stabilization_window_seconds, config.scale_up_limit_factor,
             config.scale_up_limit_minimum, down, up, config.cpu_initialization_period_seconds,
             config.initial_readiness_delay_seconds),
            None if self.summary_only else (config.scale_to_zero, [(str(c.type), c.status, c.reason)
                                                                   for c in hpa.conditions],
                                            [v.target for v in self.views]),
            self._extensions())
        self._w.start(self, self.t_begin)
        self._next = self._w.next_event()
        self.pods = self._live_handles()

    def _extensions(self) -> tuple:
        """``spec.prediction`` and ``spec.saturation`` as the compiled actor takes them (None: not set). The
        forecaster's history moves into the actor, its fits stay here (``_c_refit``); after ``finish``,
        ``prediction`` (``SimPrediction``) holds what its summary reads (each sync's time, total observed, point
        forecast and high band, the syncs per reason, the last fit; not the forecast's upper and low bands nor what
        was provisioned, which only the whole timeline shows) and ``sources["saturation"]`` its counts."""
        hpa = self.hpa
        prediction = saturation = None
        self._forecast_settings = self._fit = None
        if self.prediction is not None:
            spec = hpa.prediction
            s = self._forecast_settings = self.prediction.loop.predictor.settings
            times, values = self.prediction.loop.predictor.history()
            prediction = (spec.metric, spec.mode == ENFORCE,
                          (s.history_seconds, s.lead_seconds, s.refresh_seconds, s.max_error, s.max_bias,
                           s.persistence_factor, s.min_relative_error, s.accuracy_window_seconds, s.min_evaluations,
                           s.stale_seconds), times.tolist(), values.tolist(), self.prediction.factor)
        if hpa.saturation is not None:
            spec = hpa.saturation
            saturation = (saturation_metric(spec, hpa.metrics), spec.mode == ENFORCE, spec.pinned_percent,
                          float(spec.demand_factor), self._cpu_limit)
        return prediction, saturation

    def _c_refit(self, now: float, times: bytes, values: bytes) -> tuple:
        """A fit of the forecaster (``Predictor.refit``) on ``times``/``values`` (C doubles: the history of
        (now - historySeconds, now]): (its reason, the model as the compiled forecaster takes it,
        ``native/src/forecast.rs``, or None when the fit found none)."""
        from ..forecast.fitting import fit  # numpy and scipy: imported by the first predicting workload's first fit

        f = self._fit = fit(np.frombuffer(times), np.frombuffer(values), now=now, settings=self._forecast_settings,
                            previous=self._fit)
        m = f.model
        if m is None:
            return str(f.reason), None
        return str(f.reason), (m.transform == "log", m.offset, m.step, [list(p) for p in m.profiles], m.level_seconds,
                               m.window_error, m.point_low, m.point_high, m.level, list(m.dispersion),
                               m.periods[0] if m.periods else None)

    def _live_handles(self) -> list[SimPod]:
        """The pods that exist now, in order, each handle carrying the compiled actor's state of it."""
        out = []
        for pid in self._w.pod_ids():
            pod = self._handles[pid]
            pod.bound_at, pod.ready_at, pod.bound, pod.running, pod.app_up, pod.ready = self._w.pod_state(pid)
            out.append(pod)
        return out

    # ----------------------------------------------------------------- called back by the compiled actor
    def _c_draw(self, pid: int, name: str, t: float) -> tuple[float, float]:
        """A new pod's draws, as ``Cluster._add_pod`` makes them: (traffic weight, scheduling jitter factor)."""
        pod = self._new_pod(_Handle, name, t)
        pod.pid = pid
        self._handles[pid] = pod
        return pod.weight, pod.factors[0]

    def _c_created(self, pid: int, t: float) -> None:
        self.binder.created(self, self._handles[pid], t)

    def _c_start_up(self, pid: int, bound_at: float) -> list[tuple[float, int]]:
        """Pod ``pid``'s transitions once bound at ``bound_at`` (``Cluster._start_up``), in order."""
        pod = self._handles[pid]
        self._start_up(pod, bound_at)
        return [(when, _TRANSITION[kind]) for when, kind in pod.events]

    def _c_removed(self, pid: int) -> None:
        pod = self._handles.pop(pid)
        if self.binder is not None:
            self.binder.removed(self, pod)

    def _c_too_many(self, t: float, desired: int) -> None:
        self._too_many(t, desired)

    def _c_decide(self, t: float, current: int, live: int, pods: list, samples: list, recommendations, up: list,
                  down: list, conditions: list) -> tuple:
        """A sync the Python core decides (the whole timeline kept: one that stops before normalization or whose
        metrics failed): on the compiled actor's pods ((name, running, start, Ready, Ready since)), samples per
        metric ((0: no scrape yet, 1: none returned, 2: these, [(name, milli, epoch s, window s)])), memory and
        conditions ((type, status, reason)); its figures, timeline values, texts and conditions."""
        self.core_syncs += 1
        hpa = replace(self.hpa, conditions=tuple(Condition(ctype, status, reason, "", ZERO_TIME)
                                                 for ctype, status, reason in conditions))
        core_pods = [self._pod(name, "Running" if running else "Pending", start, ready, ready_t)
                     for name, running, start, ready, ready_t in pods]
        got = []
        for view, (code, items) in zip(self.views, samples):
            if code == 2:
                got.append(MetricSamples(pods={n: PodSample(v, ts, w) for n, v, ts, w in items}, timestamp=t))
            elif code == 0:
                got.append(MetricSamples(error="no metrics returned yet"))
            else:
                api = "resource" if view.kind in ("cpu", "memory", "idle") else "custom"
                got.append(MetricSamples(error=f"no metrics returned from {api} metrics API"))
        memory = Memory(recommendations=None if recommendations is None else list(recommendations),
                        scale_up_events=list(up), scale_down_events=list(down))
        d = decide(SyncInputs(hpa=hpa, scale=Scale(current, live, self.target.selector), pods=core_pods,
                              samples=got, memory=memory, now=t, config=self.config))
        views = self.views
        props = d.proposals if len(d.proposals) == len(views) else [None] * len(views)
        groups = next((p.groups for p in d.proposals if p.groups is not None), None)
        m = d.memory
        return (d.desired_replicas, None if m.recommendations is None else list(m.recommendations),
                list(m.scale_up_events), list(m.scale_down_events),
                [None if p is None else view.value(p) for view, p in zip(views, props)],
                "" if d.decided_by is None else d.decided_by.kind.value, d.prenormalized,
                None if groups is None else len(groups.unready), None if groups is None else len(groups.missing),
                d.error, [(str(c.type), c.status, c.reason) for c in d.conditions])

    # ----------------------------------------------------------------- the clock
    def run(self, progress=None, stop=None) -> None:
        if not self.compiled:
            return super().run(progress, stop)
        if stop is not None:
            self._stop = stop
            self._w.ask_stop()
        if progress is None:
            self._next = self._w.advance_to(self, self.end)
        else:  # in about 200 steps, each told: the same events in the same order (no other actor)
            step, limit = max((self.end - self.t_begin) / 200, self.sync_period), self.t_begin
            while limit < self.end and not self._w.stopped:
                limit = min(limit + step, self.end)
                self._next = self._w.advance_to(self, limit)
                progress(max(min(self._w.t, self.end) - self.t0, 0.0))
        self.end, self.stopped = self._w.end, self._w.stopped
        self.finish(progress)

    def _c_stop(self, stats: tuple) -> bool:
        """``run``'s ``stop(cluster)`` after a sync, on the figures so far (``stats``, as ``Stats`` has them)."""
        self.stats = Stats(*stats)
        return bool(self._stop(self))

    def attach(self, clock, progress=None, stop=None) -> None:
        if not self.compiled:
            return super().attach(clock, progress, stop)
        if stop is not None:
            raise ValueError("a compiled workload runs to its end (no stop predicate)")
        self.clock = clock
        clock.wake(self)

    def next_event(self) -> float:
        if not self.compiled:
            return super().next_event()
        return self._next

    def on_clock(self, t: float, _payload=None) -> None:
        if not self.compiled:
            return super().on_clock(t, _payload)
        if t != self.queued:
            return
        try:
            self._next = self._w.advance_to(self, t)
        except InputError as err:
            raise err.at(obj=self.obj) from None
        self.clock.wake(self)

    def bind(self, pod: SimPod, t: float) -> None:
        if not self.compiled:
            return super().bind(pod, t)
        self._start_up(pod, t)
        self._next = self._w.bind(self, pod.pid, t, [(when, _TRANSITION[kind]) for when, kind in pod.events])
        self.clock.wake(self)

    def evict(self, pod: SimPod, t: float) -> None:
        if not self.compiled:
            return super().evict(pod, t)
        self._next = self._w.evict(self, pod.pid, t)
        self.clock.wake(self)

    def finish(self, progress=None) -> None:
        if not self.compiled:
            return super().finish(progress)
        w = self._w
        w.finish()
        self.t, self.spec_replicas = w.t, w.spec_replicas
        self.stats = Stats(*w.stats(), episodes=[Episode(*e) for e in w.episodes()])
        self.scale_events = [ScaleEvent(*e) for e in w.scale_events()]
        self.failed_syncs = w.failed_syncs
        self.decided_by = dict(w.decided_by())
        self.unserved_by_minute = dict(w.unserved_by_minute())
        rows = w.take_rows()
        if rows is None:
            current, desired, values = w.take_timeline()
            self.timeline = SummaryTimeline.from_columns([v.label for v in self.views], array("d", current),
                                                         array("d", desired), [array("d", v) for v in values])
        else:
            self.timeline.rows = rows
        self._sources_records()
        self.pods = self._live_handles()
        if progress is not None:
            progress(self.end - self.t0)

    def _sources_records(self) -> None:
        """``prediction`` and ``sources["saturation"]`` as the Python cluster leaves them for the summary."""
        w, sim = self._w, self.prediction
        kept = w.take_prediction()
        if sim is not None and kept is not None:
            times, observed, point, high, reasons = kept
            sim.times, sim.observed, sim.point, sim.high = (array("d", x) for x in (times, observed, point, high))
            sim.reasons = {PredictionReason(k): n for k, n in reasons}
            sim.decided = self.decided_by.get(SourceKind.PREDICTION.value, 0)
            sim.loop.predictor.fit = self._fit
        record, counts = self.sources.get("saturation"), w.saturation_record()
        if record is not None and counts is not None:
            reasons, record.active_syncs, record.episodes = counts
            record.syncs_by_reason = {SaturationReason(k): n for k, n in reasons}
            record.decided_syncs = self.decided_by.get(SourceKind.SATURATION.value, 0)
