"""A simulated cluster on a virtual clock: pods, a metrics-server, and the HPA sync loop.

Time advances from one breakpoint to the next (a trace row, an HPA sync, a metrics
scrape, a pod transition); between breakpoints everything is constant, so CPU and
served requests are integrated exactly. Each pod keeps cumulative CPU (millicore-seconds)
as the kubelet does; metrics-server turns two scrapes into a rate. Every sync calls the
decision core ``pyhpa.core.decide`` with plain core types; its memory carries over and a
rescale changes the target's replicas.
"""

from __future__ import annotations

import math
import random
from array import array
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..adapters.errors import InputError
from ..adapters.parse import format_time
from ..core import (
    HPA,
    ControllerConfig,
    Decision,
    Memory,
    MetricSamples,
    Pod,
    PodSample,
    Scale,
    SyncInputs,
    decide,
    with_status,
)
from ..core.model import PREDICTION_SOURCE, ZERO_TIME, SourceKind
from . import native
from .clock import Clock
from .metrics import MetricView, metric_views
from .prediction import SimPrediction, history_totals
from .profile import Profile
from .sections import SHOWN, Shown
from .target import MAX_SIMULATED_PODS, Target
from .timeline import LEADING_COLUMNS, TRAILING_COLUMNS, SummaryTimeline, Timeline, metric_columns, minute_spans

INF = math.inf
LONG_AGO = 86400.0  # initial pods started this many seconds before the simulation
#: what a metrics API call answers during a ``--metrics-outage`` (an aggregated API that is down)
OUTAGE_ERROR = "the server is currently unable to handle the request (simulated metrics outage)"


class Binder(Protocol):
    """What schedules a cluster's new pods when pods share nodes (``Cluster(binder=...)``)."""

    def created(self, cluster: Cluster, pod: SimPod, t: float) -> None:
        """``pod`` was created at ``t`` and is Pending until ``cluster.bind(pod, when)``."""

    def removed(self, cluster: Cluster, pod: SimPod) -> None:
        """``pod`` was deleted (bound or not): its node's room is free again."""


@dataclass(slots=True, frozen=True)
class History:
    """Trace rows before the simulated span (for the forecaster): ``times`` (epoch s), ``rps`` (load in
    requests/s) and the trace ``columns``."""

    times: np.ndarray
    rps: np.ndarray
    columns: dict[str, np.ndarray]


@dataclass(slots=True)
class SourceRecord:
    """What a source with a section of its own did over a run (``shown``: how simulate shows it,
    ``pyhpa.simulate.sections.SHOWN``; its core source is ``Explained``): its status's reason at each sync (``syncs_by_reason``), the
    syncs at which it was active (``ExplainedStatus.active``: pods pinned, ...), its episodes (runs of consecutive
    active syncs) and the syncs whose final number it set."""

    shown: Shown
    active_syncs: int = 0
    decided_syncs: int = 0
    episodes: int = 0
    syncs_by_reason: dict[str, int] = field(default_factory=dict)
    _active: bool = False

    def record(self, d: Decision) -> None:
        """Count one sync's decision."""
        st = getattr(d.status, self.shown.field)
        active = st is not None and st.active
        if st is not None:
            self.syncs_by_reason[st.reason] = self.syncs_by_reason.get(st.reason, 0) + 1
        if active:
            self.active_syncs += 1
            self.episodes += not self._active
        self._active = active
        source = d.source(self.shown.section.source.kind)
        if source is not None and source.won:
            self.decided_syncs += 1

    def columns(self, d: Decision) -> list:
        """The sync's values of the section's ``timeline`` columns (None where the sync has no status of it)."""
        st = getattr(d.status, self.shown.field)
        return [None if st is None else getattr(st, attr) for _, attr in self.shown.timeline]

    def summary(self, spec: Any) -> dict:
        """summary.json ``<field>``: the section's ``summary`` fields of ``spec`` (the HPA's), ``syncs_by_reason``,
        ``<active_key>_syncs``, ``<active_key>_episodes`` and ``syncs_decided_by_<field>``."""
        key = self.shown.active_key
        return {**{name: getattr(spec, name) for name in self.shown.summary},
                "syncs_by_reason": dict(sorted(self.syncs_by_reason.items())), f"{key}_syncs": self.active_syncs,
                f"{key}_episodes": self.episodes, f"syncs_decided_by_{self.shown.field}": self.decided_syncs}


class Episode(NamedTuple):
    """An overload episode: when it began (epoch s), how long it lasted (s), and how long the HPA took to scale up
    in it (s; None when it did not)."""

    start: float
    seconds: float
    reaction_seconds: float | None


class ScaleEvent(NamedTuple):
    """A rescale: when (epoch s), from ``current_replicas`` to ``desired_replicas``."""

    time: float
    current_replicas: int
    desired_replicas: int


@dataclass(slots=True)
class Stats:
    """Accumulated over the simulated span (seconds, requests, millicore-seconds)."""

    pod_seconds: float = 0.0
    ready_pod_seconds: float = 0.0
    requested_requests: float = 0.0
    unserved_requests: float = 0.0
    overloaded_seconds: float = 0.0
    cpu_millicore_seconds: float = 0.0
    running_pod_seconds: float = 0.0
    episodes: list[Episode] = field(default_factory=list)


class _Group:
    """Steady pods of one traffic weight share one CPU and served-requests integral."""

    __slots__ = ("count", "cpu", "served", "sample")

    def __init__(self):
        self.count = 0
        self.cpu = 0.0
        self.served = 0.0
        self.sample = None


class SimPod:
    """One simulated pod: its transition times (epoch s), state flags and integrals.

    ``cpu``/``served`` are cumulative CPU (millicore-seconds) and served requests; a
    steady pod (running, serving, Ready, start-up boost over) reads them from its group.
    """

    __slots__ = ("name", "created", "bound_at", "weight", "events", "bound", "running", "app_up", "ready",
                 "boosting", "steady_since", "core", "cpu", "served", "group", "g_cpu", "g_served",
                 "prev_t", "prev_cpu", "prev_served", "ready_at", "factors")

    def __init__(self, name: str, created: float, weight: float):
        self.name = name
        self.created = created
        self.bound_at = INF
        self.weight = weight
        self.events: list[tuple[float, str]] = []
        self.bound = self.running = self.app_up = self.ready = self.boosting = False
        self.steady_since = INF
        self.core: Pod | None = None
        self.cpu = self.served = 0.0
        self.group: _Group | None = None
        self.g_cpu = self.g_served = 0.0
        self.prev_t: float | None = None
        self.prev_cpu = self.prev_served = 0.0
        self.ready_at = INF
        self.factors = (1.0, 1.0, 1.0)  # the start-up jitter of its scheduling, container start and app start

    def totals(self) -> tuple[float, float]:
        """Cumulative (CPU millicore-seconds, served requests) now."""
        g = self.group
        if g is None:
            return self.cpu, self.served
        return self.cpu + g.cpu - self.g_cpu, self.served + g.served - self.g_served


def _cpu_limit_error(target: Target, baseline: float) -> None:
    raise InputError(f"the CPU limit of container {target.container!r} ({target.cpu_limit_millicores:g}m) is not above "
                     f"the profile's cpu_baseline_millicores ({baseline:g}): pods could serve nothing",
                     obj=target.label, field="resources.limits.cpu")


def _doubles(values: np.ndarray) -> array:
    """``values`` as a compact ``array('d')`` (float64, the same numbers)."""
    return array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


class ShadowMismatch(AssertionError):
    """The compiled decision differs from the core's at a sync (``Cluster(shadow=True)``): the compiled path's bug."""


class Cluster:
    """One target, its pods and metrics-server, and one HPA syncing every ``sync_period`` s.

    ``times``/``rps`` is the load step function (epoch s, requests/s); ``columns`` holds
    the trace columns the metric sources read; the HPA syncs from ``start`` (its first
    sync) to ``end``. Before ``start`` the cluster warms up for two metric resolutions
    at the first load value so that metrics exist at the first sync. In each of ``outages``
    ((start, end) epoch s) every metrics API call of the HPA fails (``OUTAGE_ERROR``); metrics-server
    keeps scraping, so the first sync after an outage sees fresh metrics. With ``shadow``, every sync the compiled
    decision covers (``pyhpa.simulate.native.covers``) is decided by it too and compared with the core's decision
    (``shadow_checks`` counts them; a difference raises ``ShadowMismatch``): issue 55's shadow mode, for the tests.
    """

    def __init__(self, hpa: HPA, target: Target, profile: Profile, config: ControllerConfig, times: np.ndarray,
                 rps: np.ndarray, columns: dict[str, np.ndarray], start: float, end: float, sync_period: float,
                 seed: int, outages: tuple[tuple[float, float], ...] = (), history: History | None = None,
                 binder: Binder | None = None, obj: str = "", summary_only: bool = False, shadow: bool = False):
        self.hpa, self.target, self.profile, self.config = hpa, target, profile, config
        self.shadow, self.shadow_checks = shadow, 0
        self.rng = random.Random(seed)
        # 8 bytes a row (a list of floats takes 32): a fleet holds thousands of these; indexing gives the same floats
        self.times, self.rps_values = _doubles(times), _doubles(rps)
        self.columns = {k: _doubles(v) for k, v in columns.items()}
        self.t0, self.end, self.sync_period = start, end, sync_period
        self.stopped = False  # ``run`` was ended early by its ``stop`` predicate (``end`` is then when)
        self.views = metric_views(hpa, target, profile)
        self._model_constants()
        self.prediction = self._prediction(history)
        res = profile.metric_resolution_seconds
        offset = profile.metrics_scrape_offset_seconds
        self.scrape_offset = self.rng.uniform(0.0, res) if offset is None else offset
        self.t_begin = start - 2 * res
        self.memory = Memory()
        self.stats = Stats()
        self.scale_events: list[ScaleEvent] = []
        self.failed_syncs = 0
        self.outages = outages
        self.outage_syncs = 0
        self.fallback_syncs = 0
        self.schedule_syncs = 0  # syncs with a schedule window active
        self.decided_by: dict[str, int] = {}  # syncs per kind of what set the final number (Metric, Prediction, ...)
        #: the sources with a section of their own that simulate shows by their declarations (``sections.SHOWN``;
        #: prediction has its own code: ``self.prediction``), for those the HPA uses: field -> record
        self.sources = {name: SourceRecord(shown) for name, shown in SHOWN.items() if getattr(hpa, name) is not None}
        self._outage_samples = [MetricSamples(error=OUTAGE_ERROR) for _ in self.views]
        #: the pods' scheduler when they share nodes (a fleet's): told of each pod created after the start
        #: (``created(cluster, pod, t)``: it stays Pending until the binder calls ``bind``) and removed
        #: (``removed(cluster, pod)``); None: every pod is bound after the profile's ``pod_scheduling_seconds``
        self.binder: Binder | None = binder
        #: how this workload's errors name it when they do not already (a fleet's ``workload NAME``)
        self.obj = obj
        #: a row per sync (``pyhpa.simulate.timeline``): every column, or (``summary_only``, a fleet's workload,
        #: whose timeline is not written) only those its summary reads
        self.summary_only = summary_only
        self.timeline: Timeline | SummaryTimeline = (
            SummaryTimeline([v.label for v in self.views]) if summary_only else Timeline(self.columns_header()))
        self._init_state()

    # ----------------------------------------------------------------- set-up
    def _model_constants(self) -> None:
        p, t = self.profile, self.target
        self.k_cpu = p.cpu_millicore_seconds_per_request
        self.base_cpu = p.cpu_baseline_millicores
        self.boost = p.startup_cpu_boost_millicores
        self.limit = INF if t.cpu_limit_millicores is None else t.cpu_limit_millicores
        cap = p.pod_capacity_rps
        if self.limit < INF:
            if self.limit <= self.base_cpu:
                _cpu_limit_error(t, self.base_cpu)
            cap = min(cap, (self.limit - self.base_cpu) / self.k_cpu)
        self.cap = cap
        self.imbalanced = p.traffic_spread == "imbalanced"
        kinds = {v.kind for v in self.views}
        self.need_cpu = bool(kinds & {"cpu", "idle"})
        self.need_memory = "memory" in kinds
        self.need_served = "served" in kinds

    def _prediction(self, history: History | None) -> SimPrediction | None:
        """The forecaster when the HPA has ``spec.prediction``: history rows become the metric's totals."""
        spec = self.hpa.prediction
        if spec is None or not 0 <= spec.metric < len(self.views):
            return None
        view = self.views[spec.metric]
        if history is None or history.times.size == 0:
            return SimPrediction(spec, view, np.empty(0), np.empty(0))
        totals = history_totals(view, self.hpa, self.target, self.profile, self.cap, history.rps, history.columns)
        return SimPrediction(spec, view, history.times, totals)

    def _init_state(self) -> None:
        self.pods: list[SimPod] = []
        self.groups: dict[float, _Group] = {}
        self.starting: list[SimPod] = []
        self.counter = 0
        self.spec_replicas = self.target.replicas
        self.trace_i = 0
        self.rps = self.rps_values[0]
        self.next_trace = self.times[1] if len(self.times) > 1 else INF
        self.sync_k = 0
        self.next_sync = self.t0
        self.scrape_k = -2
        self.next_scrape = self.t0 + self.scrape_offset - 2 * self.profile.metric_resolution_seconds
        self.samples = [MetricSamples(error="no metrics returned yet") for _ in self.views]
        self.samples_stale = False
        self.conditions: dict[str, tuple[str, str]] = {}
        self.episode_start: float | None = None
        self.episode_reaction: float | None = None
        self.unserved_cum = self.unserved_at_sync = 0.0
        #: requests unserved in each minute of the span that had some: minute k covers [t0 + 60 k, t0 + 60 (k + 1))
        self.unserved_by_minute: dict[int, float] = {}
        self.t = self.t_begin  # how far the run has come (its last event's time)
        self.clock: Clock | None = None  # the clock it runs on (``attach``)
        self.queued = math.nan  # the time of its entry on the clock (``Clock.wake``)
        self._progress = self._stop = None
        self._every = 1
        for _ in range(self.spec_replicas):
            self._add_pod(self.t_begin, initial=True)
        self._recount()

    # ----------------------------------------------------------------- pods
    def _pod_name(self) -> str:
        if self.target.kind == "StatefulSet":
            return f"{self.target.name}-{len(self.pods)}"
        self.counter += 1
        return f"{self.target.name}-{self.counter:05d}"

    def _weight(self) -> float:
        if not self.imbalanced:
            return 1.0
        cv = self.profile.traffic_imbalance_cv
        sigma = math.sqrt(math.log(1.0 + cv * cv))
        return math.exp(self.rng.gauss(-sigma * sigma / 2.0, sigma))

    def _new_pod(self, cls: type[SimPod], name: str, t: float) -> SimPod:
        """A pod of class ``cls`` created at ``t`` with the workload's draws: its traffic weight, then the start-up
        jitter of its scheduling, container start and app start (``factors``)."""
        pod = cls(name, t, self._weight())
        jitter = self.profile.startup_jitter_fraction
        pod.factors = tuple(1.0 + jitter * (2.0 * self.rng.random() - 1.0) if jitter else 1.0 for _ in range(3))
        return pod

    def _add_pod(self, t: float, initial: bool = False) -> None:
        """Create a pod at ``t`` (``initial``: one that has run for a day already). It is bound after the profile's
        ``pod_scheduling_seconds``, or, with a ``binder``, stays Pending until the binder's scheduler binds it
        (``bind``)."""
        pod = self._new_pod(SimPod, self._pod_name(), t)
        self.pods.append(pod)
        self.starting.append(pod)
        if self.binder is not None and not initial:
            pod.core = self._core_pod(pod)
            self.binder.created(self, pod, t)
            return
        origin = t - LONG_AGO if initial else t
        self._start_up(pod, origin + self.profile.pod_scheduling_seconds * pod.factors[0])
        self._apply_events(pod, t)

    def _start_up(self, pod: SimPod, bound_at: float) -> None:
        """The pod's transitions once bound at ``bound_at``: Running, the app up, Ready (its probes), the boost's
        end, after the profile's delays times the pod's jitter."""
        p, probe_r, probe_s, f = self.profile, self.target.readiness, self.target.startup, pod.factors
        pod.bound_at = bound_at
        running = bound_at + p.container_start_seconds * f[1]
        able = running + p.app_startup_seconds * f[2]
        started_ok = probe_s.first_pass(running, able) if probe_s else running
        ready = probe_r.first_pass(running, max(able, started_ok)) if probe_r else started_ok
        boost_end = running + (p.startup_cpu_boost_seconds if self.boost > 0 else 0.0)
        pod.events = sorted([(bound_at, "bound"), (running, "running"), (able, "app"), (ready, "ready"),
                             (boost_end, "boost_end")])

    def bind(self, pod: SimPod, t: float) -> None:
        """The ``binder``'s scheduler bound ``pod`` (Pending since its creation) at ``t`` (the clock's time: every
        event of this workload before ``t`` has run): it starts up from then as the profile says."""
        self._catch_up(t)
        self._start_up(pod, t)
        self._apply_events(pod, t)
        if self.target.ordered_ready:  # as a transition of a pod does (``_transitions``)
            self._reconcile(t)
        else:
            self._recount()
        self.clock.wake(self)

    def evict(self, pod: SimPod, t: float) -> None:
        """A node autoscaler drained ``pod``'s node at ``t`` (the clock's time): the pod is deleted (the binder is
        told) and the workload controller replaces it at once, a new pod Pending until the binder binds it."""
        self._catch_up(t)
        self._remove(pod)
        self._reconcile(t)
        self.clock.wake(self)

    def _catch_up(self, t: float) -> None:
        """Integrate to ``t`` (``end`` at most), where something outside changes this workload (``bind``,
        ``evict``, ``finish``); every event of its own before ``t`` has run."""
        t = min(t, self.end)
        if t > self.t:
            self._advance(self.t, t)
            self.t = t

    def _apply_events(self, pod: SimPod, t: float) -> None:
        """Apply the pod's transitions due at ``t`` and refresh what the HPA sees of it."""
        events = pod.events
        while events and events[0][0] <= t:
            when, kind = events.pop(0)
            if kind == "bound":
                pod.bound = True
            elif kind == "running":
                pod.running, pod.boosting = True, self.boost > 0
            elif kind == "app":
                pod.app_up = True
            elif kind == "ready":
                pod.ready, pod.ready_at = True, when
            else:
                pod.boosting = False
        if not events and pod.bound:
            self._make_steady(pod, t)
        pod.core = self._core_pod(pod)

    def _make_steady(self, pod: SimPod, t: float) -> None:
        group = self.groups.get(pod.weight)
        if group is None:
            group = self.groups[pod.weight] = _Group()
        group.count += 1
        pod.steady_since, pod.group = t, group
        pod.g_cpu, pod.g_served = group.cpu, group.served
        self.starting.remove(pod)

    def _core_pod(self, pod: SimPod) -> Pod:
        """The pod as the HPA sees it: phase, ``status.startTime`` and the Ready condition
        (False since the pod was bound, True since it turned Ready)."""
        start = pod.bound_at if pod.bound else None
        ready_t = pod.ready_at if pod.ready else (start if start is not None else ZERO_TIME)
        return self._pod(pod.name, "Running" if pod.running else "Pending", start, pod.ready if pod.bound else None,
                         ready_t)

    def _pod(self, name: str, phase: str, start: float | None, ready: bool | None, ready_t: float) -> Pod:
        """A pod of the target's template as the HPA sees it (``_core_pod``)."""
        t = self.target
        tp = t.pod
        if tp is None:
            return Pod(name, phase, t.labels, False, start, ready, ready_t, t.requests, t.missing_request)
        return Pod(name, phase, t.labels, False, start, ready, ready_t, tp.requests, tp.missing_request,
                   containers=tp.containers, pod_level_requests=tp.pod_level_requests, limits=tp.limits,
                   pod_level_limits=tp.pod_level_limits)

    def _remove(self, pod: SimPod) -> None:
        self.pods.remove(pod)
        self.samples_stale = True
        if self.binder is not None:
            self.binder.removed(self, pod)
        group = pod.group
        if group is None:
            self.starting.remove(pod)
            return
        group.count -= 1
        if group.count == 0:
            del self.groups[pod.weight]

    def _reconcile(self, t: float) -> None:
        """The workload controller: create or delete pods towards ``spec_replicas``.

        Deployment: all at once; deletes unscheduled, then not running, then not Ready,
        then the most recently Ready and newest pods first (ReplicaSet ranking).
        StatefulSet: highest ordinal first; with OrderedReady one pod at a time, each
        after all others are Running and Ready.
        """
        want = self.spec_replicas
        if len(self.pods) > want:
            extra = len(self.pods) - want
            if self.target.kind == "StatefulSet":
                victims = self.pods[-extra:]
            else:
                victims = sorted(self.pods, key=lambda p: (p.bound, p.running, p.ready, -p.ready_at, -p.created))[:extra]
            for pod in victims:
                self._remove(pod)
        while len(self.pods) < want:
            if self.target.ordered_ready and not all(p.running and p.ready for p in self.pods):
                break
            self._add_pod(t)
        self._recount()

    def _recount(self) -> None:
        pods = self.pods
        self.n_live = len(pods)
        self.n_running = sum(1 for p in pods if p.running)
        self.n_ready = sum(1 for p in pods if p.ready)
        self.n_serving = sum(1 for p in pods if p.ready and p.app_up)
        self.w_ready = sum(p.weight for p in pods if p.ready)
        self.core_pods = [p.core for p in pods]
        self.next_pod = min((p.events[0][0] for p in self.starting if p.events), default=INF)

    # ----------------------------------------------------------------- main loop
    def run(self, progress=None, stop=None) -> None:
        """Simulate until ``end``, this workload alone on a clock of its own (``pyhpa simulate``);
        ``progress(simulated_seconds)`` is called now and then. ``stop(cluster)`` (a predicate, checked after each
        sync) ends the run early: ``end`` becomes that sync's time and ``stopped`` is True (every figure then covers
        ``t0`` to that time)."""
        clock = Clock(self.t_begin, self.end)
        self.attach(clock, progress, stop)
        clock.run()
        self.finish(progress)

    def attach(self, clock: Clock, progress=None, stop=None) -> None:
        """Put this workload on ``clock`` (``pyhpa.simulate.clock``, shared with other actors in a fleet): it is
        woken at each of its next events and runs there what it has at that instant. ``progress`` and ``stop`` as
        in ``run``; ``finish`` once the clock has run to ``end``."""
        self.clock = clock
        self._progress, self._stop = progress, stop
        self._every = max(1, int((self.end - self.t0) / self.sync_period / 200))
        clock.wake(self)

    def next_event(self) -> float:
        """When the next thing happens (epoch s): a trace row, an HPA sync, a scrape or a pod transition; ``end``
        when nothing does before it."""
        return min(self.next_trace, self.next_sync, self.next_scrape, self.next_pod, self.end)

    def on_clock(self, t: float, _payload=None) -> None:
        """The clock woke this workload at ``t``: unless its next event has moved since (the entry is passed over),
        integrate to ``t``, run its events there and ask to be woken at its next."""
        if t != self.queued:
            return
        try:
            self._advance_to(t)
        except InputError as err:
            raise err.at(obj=self.obj) from None
        self.clock.wake(self)

    def _advance_to(self, limit: float) -> None:
        """Run every event at ``limit`` or before it, in order (each instant's pod transitions, trace row, scrape,
        sync), integrating the CPU and served requests from event to event; the time simulated so far is
        ``self.t`` (the last event's)."""
        t, end = self.t, self.end
        progress, stop, every = self._progress, self._stop, self._every
        while t < end:
            b = min(self.next_trace, self.next_sync, self.next_scrape, self.next_pod, end)
            if b > limit:
                break
            if b > t:
                self._advance(t, b)
                t = b
            if t >= end:
                break
            if self.next_pod <= t:
                self._transitions(t)
            if self.next_trace <= t:
                self._trace_step()
            if self.next_scrape <= t:
                self._scrape(t)
            if self.next_sync <= t:
                self._sync(t)
                if progress is not None and self.sync_k % every == 0:
                    progress(t - self.t0)
                if stop is not None and stop(self):
                    self.end = end = t
                    self.stopped = True
                    self.clock.stop_at(t)
                    break
        self.t = t

    def finish(self, progress=None) -> None:
        """End the run at ``end``, once the clock has run every event before it: integrate to ``end`` and close an
        overload episode still open."""
        self._catch_up(self.end)
        self._end_episode(self.end)
        if progress is not None:
            progress(self.end - self.t0)

    def _advance(self, a: float, b: float) -> None:
        """Integrate CPU and served requests over [a, b) (everything is constant there)."""
        dt = b - a
        demand, w_ready, cap, k, base, limit = self.rps, self.w_ready, self.cap, self.k_cpu, self.base_cpu, self.limit
        per_w = demand / w_ready if w_ready > 0 else 0.0
        served_total = cpu_total = 0.0
        for w, g in self.groups.items():
            served = per_w * w
            if served > cap:
                served = cap
            cpu = base + k * served
            if cpu > limit:
                cpu = limit
            g.cpu += cpu * dt
            g.served += served * dt
            served_total += served * g.count
            cpu_total += cpu * g.count
        for pod in self.starting:
            if pod.running:
                served = min(per_w * pod.weight, cap) if pod.ready and pod.app_up else 0.0
                cpu = min(base + (self.boost if pod.boosting else 0.0) + k * served, limit)
                pod.cpu += cpu * dt
                pod.served += served * dt
                served_total += served
                cpu_total += cpu
        if a >= self.t0:
            self._account(a, dt, demand, served_total, cpu_total)

    def _account(self, a: float, dt: float, demand: float, served: float, cpu: float) -> None:
        s = self.stats
        s.pod_seconds += self.n_live * dt
        s.ready_pod_seconds += self.n_ready * dt
        s.running_pod_seconds += self.n_running * dt
        s.cpu_millicore_seconds += cpu * dt
        s.requested_requests += demand * dt
        unserved = demand - served
        if unserved > 1e-12 * demand:
            s.unserved_requests += unserved * dt
            self.unserved_cum += unserved * dt
            self._unserved_minutes(a, dt, unserved)
        if demand > self.n_serving * self.cap * (1 + 1e-12):
            s.overloaded_seconds += dt
            if self.episode_start is None:
                self.episode_start, self.episode_reaction = a, None
        elif self.episode_start is not None:
            self._end_episode(a)

    def _unserved_minutes(self, a: float, dt: float, unserved: float) -> None:
        """File ``unserved`` requests/s over [a, a + dt) in the minutes it covers (``unserved_by_minute``)."""
        by = self.unserved_by_minute
        for k, seconds in minute_spans(self.t0, a, a + dt):
            by[k] = by.get(k, 0.0) + unserved * seconds

    def _end_episode(self, t: float) -> None:
        if self.episode_start is not None:
            self.stats.episodes.append(Episode(self.episode_start, t - self.episode_start, self.episode_reaction))
            self.episode_start = None

    def _trace_step(self) -> None:
        i = self.trace_i = self.trace_i + 1
        self.rps = self.rps_values[i]
        self.next_trace = self.times[i + 1] if i + 1 < len(self.times) else INF

    def _transitions(self, t: float) -> None:
        for pod in list(self.starting):
            if pod.events and pod.events[0][0] <= t:
                self._apply_events(pod, t)
        if self.target.ordered_ready:
            self._reconcile(t)
        else:
            self._recount()

    # ----------------------------------------------------------------- metrics-server
    def _scrape(self, t: float) -> None:
        """One metrics-server scrape: per-pod rates over the window since the last scrape."""
        self.scrape_k += 1
        self.next_scrape = self.t0 + self.scrape_offset + self.scrape_k * self.profile.metric_resolution_seconds
        per_w = self.rps / self.w_ready if self.w_ready > 0 else 0.0
        found: list[tuple[SimPod, tuple]] = []
        for pod in self.pods:
            if not pod.running:
                continue
            cpu, served = pod.totals()
            prev = pod.prev_t
            if prev is not None:
                found.append((pod, self._pod_sample(pod, t, prev, cpu, served, per_w)))
            pod.prev_t, pod.prev_cpu, pod.prev_served = t, cpu, served
        self.samples = [self._metric_samples(v, t, found, per_w) for v in self.views]
        self.samples_stale = False

    def _live_samples(self) -> list[MetricSamples]:
        """The last scrape as the metrics APIs answer now: only pods that still exist."""
        if self.samples_stale:
            live = {p.name for p in self.pods}
            self.samples = [self._only(view, s, live) for view, s in zip(self.views, self.samples)]
            self.samples_stale = False
        return self.samples

    @staticmethod
    def _only(view: MetricView, samples: MetricSamples, live: set[str]) -> MetricSamples:
        if not samples.pods:
            return samples
        pods = {n: v for n, v in samples.pods.items() if n in live}
        if not pods:
            api = "resource" if view.kind in ("cpu", "memory", "idle") else "custom"
            return MetricSamples(error=f"no metrics returned from {api} metrics API")
        return MetricSamples(pods=pods, timestamp=samples.timestamp)

    def _pod_sample(self, pod: SimPod, t: float, prev: float, cpu: float, served: float, per_w: float) -> tuple:
        """(cpu, memory, served) PodSamples of one pod; steady pods of one weight share them."""
        g = pod.group
        shared = g is not None and pod.steady_since <= prev
        if shared and g.sample is not None and g.sample[0] == t and g.sample[1] == prev:
            return g.sample[2]
        window = t - prev
        cpu_s = mem_s = served_s = None
        if self.need_cpu:
            nanocores = int((cpu - pod.prev_cpu) / window * 1e6)
            cpu_s = PodSample(-(-nanocores // 1_000_000), t, window)
        if self.need_memory:
            now_served = min(per_w * pod.weight, self.cap) if pod.ready and pod.app_up else 0.0
            mib = self.profile.memory_baseline_mebibytes + self.profile.memory_mebibytes_per_rps * now_served
            mem_s = PodSample(int(mib * 1048576) * 1000, t, window)
        if self.need_served:
            served_s = PodSample(round((served - pod.prev_served) / window * 1000), t, window)
        out = (cpu_s, mem_s, served_s, window)
        if shared:
            g.sample = (t, prev, out)
        return out

    def _metric_samples(self, view: MetricView, t: float, found: list, per_w: float) -> MetricSamples:
        kind = view.kind
        if kind == "column":
            value = self.columns[view.column][self.trace_i] * view.scale
            return MetricSamples(values=[math.ceil(value * 1000 - 1e-6)], timestamp=t)
        if kind == "cpu":
            pods = {p.name: s[0] for p, s in found}
        elif kind == "memory":
            pods = {p.name: s[1] for p, s in found}
        elif kind == "served":
            pods = {p.name: s[2] for p, s in found}
        elif kind == "idle":
            pods = {p.name: PodSample(0, t, s[3]) for p, s in found}
        else:
            total = self.columns[view.column][self.trace_i] * view.scale
            per = total / self.w_ready if self.w_ready > 0 else 0.0
            pods = {p.name: PodSample(round(per * p.weight * 1000) if p.ready else 0, t, s[3]) for p, s in found}
        if not pods:
            api = "resource" if kind in ("cpu", "memory", "idle") else "custom"
            return MetricSamples(error=f"no metrics returned from {api} metrics API")
        return MetricSamples(pods=pods, timestamp=t)

    # ----------------------------------------------------------------- HPA
    def _sync(self, t: float) -> None:
        """One HPA sync: ``decide`` on what the controller sees, then rescale."""
        self.sync_k += 1
        self.next_sync = self.t0 + self.sync_k * self.sync_period
        scale = Scale(self.spec_replicas, self.n_live, self.target.selector)
        samples = self._live_samples()
        if self.outages and any(a <= t < b for a, b in self.outages):
            samples = self._outage_samples
            self.outage_syncs += 1
        forecast = None if self.prediction is None else self.prediction.step(t, samples)
        inputs = SyncInputs(hpa=self.hpa, scale=scale, pods=self.core_pods, samples=samples, memory=self.memory,
                            now=t, config=self.config, forecast=forecast)
        d = decide(inputs)
        if self.shadow:
            self._shadow(inputs, d)
        if self.prediction is not None:
            source = d.source(PREDICTION_SOURCE)
            if source is not None and source.won:
                self.prediction.decided += 1
        self.memory = d.memory
        self.hpa = with_status(self.hpa, d.status)
        if d.error is not None:
            self.failed_syncs += 1
        if d.source(SourceKind.FALLBACK) is not None:
            self.fallback_syncs += 1
        for record in self.sources.values():
            record.record(d)
        if d.active_schedules:
            self.schedule_syncs += 1
        kind = "" if d.decided_by is None else d.decided_by.kind.value
        self.decided_by[kind] = self.decided_by.get(kind, 0) + 1
        self._record(t, d)
        if d.rescale:
            self._rescale(t, d)

    def _shadow(self, inputs: SyncInputs, d: Decision) -> None:
        """The compiled decision beside the core's (``shadow``): the same desired replicas, memory and proposals."""
        if not native.covers(inputs):
            return
        self.shadow_checks += 1
        got = native.decide_upstream(inputs)
        want = (d.desired_replicas, d.memory.recommendations, d.memory.scale_up_events, d.memory.scale_down_events,
                [None if p.error is not None else p.replicas for p in d.proposals])
        if (*got[:4], got[5]) != want:
            raise ShadowMismatch(f"the compiled decision differs from the core's at {format_time(inputs.now)}: "
                                 f"compiled {got}, core {want}")

    def _rescale(self, t: float, d: Decision) -> None:
        if d.desired_replicas > MAX_SIMULATED_PODS:
            self._too_many(t, d.desired_replicas)
        self.scale_events.append(ScaleEvent(t, d.current_replicas, d.desired_replicas))
        if d.desired_replicas > d.current_replicas and self.episode_start is not None and self.episode_reaction is None:
            self.episode_reaction = t - self.episode_start
        self.spec_replicas = d.desired_replicas
        self._reconcile(t)

    @staticmethod
    def _too_many(t: float, desired: int) -> None:
        """Raise the error of a rescale to ``desired`` pods (past ``MAX_SIMULATED_PODS``) at ``t``."""
        raise InputError(f"scales to {desired:,} pods at {format_time(t)}; the simulator runs at most "
                         f"{MAX_SIMULATED_PODS:,} pods: lower maxReplicas or the load (--load-scale)",
                         field="spec.maxReplicas")

    def _record(self, t: float, d: Decision) -> None:
        """The sync's row of the timeline (only the columns a summary reads when ``summary_only``)."""
        views = self.views
        props = d.proposals if len(d.proposals) == len(views) else [None] * len(views)
        if self.summary_only:
            if self.prediction is not None:
                st = d.status.prediction
                self.prediction.record_provisioned(
                    st.provisioned_milli if st is not None and st.replicas is not None else None)
            self.timeline.append(d.current_replicas, d.desired_replicas,
                                 [None if p is None else view.value(p) for view, p in zip(views, props)])
            return
        values: list = []
        for view, p in zip(views, props):
            values.append(None if p is None else view.value(p))
            values.append(view.target)
        groups = next((p.groups for p in d.proposals if p.groups is not None), None)
        unready = len(groups.unready) if groups is not None else None
        missing = len(groups.missing) if groups is not None else None
        unserved = self.unserved_cum - self.unserved_at_sync
        self.unserved_at_sync = self.unserved_cum
        if self.prediction is not None:
            source = d.source(PREDICTION_SOURCE)
            values.append(None if source is None else source.replicas)
            values.append(self.prediction.forecast_value())
            st = d.status.prediction
            values.append(self.prediction.record_provisioned(
                st.provisioned_milli if st is not None and st.replicas is not None else None))
        for record in self.sources.values():
            values.extend(record.columns(d))
        self.timeline.append((t, self.rps, d.current_replicas, self.n_ready, d.desired_replicas, d.prenormalized,
                              *values, unready, missing, self.n_serving * self.cap, unserved, self._changed(d),
                              d.error or "", d.min_replicas_effective, d.max_replicas_effective,
                              ";".join(d.active_schedules)))

    def _changed(self, d: Decision) -> str:
        """Conditions whose status or reason changed at this sync, as ``Type=Status/Reason; ...``."""
        out = []
        for c in d.conditions:
            now = (c.status, c.reason)
            if self.conditions.get(c.type) != now:
                self.conditions[c.type] = now
                out.append(f"{c.type}={c.status}/{c.reason}")
        return "; ".join(out)

    def columns_header(self) -> list[str]:
        """The timeline's column names (timeline.csv's header, ``pyhpa.simulate.timeline``)."""
        metric_cols = metric_columns([v.label for v in self.views])
        if self.prediction is not None:
            metric_cols += ["predicted_replicas", "forecast", "provisioned"]
        for record in self.sources.values():
            metric_cols += [name for name, _ in record.shown.timeline]
        return [*LEADING_COLUMNS, *metric_cols, *TRAILING_COLUMNS]
