"""Reading tune's inputs, the search (Optuna) and the held-out check.

The window (``--start`` to ``--end``, or the whole trace) is split at ``end - held_out_seconds``: the
part before is tuned on, the part after is the held-out check. ``prepare`` reads each part exactly as
``pyhpa simulate --start A --end B`` would (the rows before each part are the forecaster's history), and
``search`` is handed the tuning part only, so nothing it decides can depend on the held-out rows or on
rows after ``--end``.

The search (``search``) is Optuna's TPE sampler with the objective's limit as a constraint, started from the
settings a user would try by hand and refined where that pays: the target of upstream's HPA is bisected to
the highest one that meets the objective, schedule windows are offered where the first replays were late for
a peak that recurs at the same clock time (``pyhpa.tune.windows``), and the best setting's target is
bisected again at the end. A replay stops early (``Stop``) once it has missed the objective beyond doubt or
has spent more pod-hours than the cheapest setting that met it: neither can be the recommendation, and a
setting stopped as costlier is replayed to its end if the held-out check comes to need it
(``check_held_out``). Every figure of a setting that ran to its end is the simulator's, exactly.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import multiprocessing
import os
import signal
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Callable, Iterable, Sequence

import numpy as np

from ..adapters.autoscaler import find_autoscaler
from ..adapters.errors import InputError
from ..adapters.snapshot import read_document
from ..simulate import (
    Autoscaler,
    Load,
    Settings,
    WorkloadFiles,
    check_metric_columns,
    display_path,
    load_autoscaler,
    read_load,
    read_workload,
    replay,
    request_warnings,
)
from ..simulate.profile import Profile
from ..simulate.target import Target
from ..simulate.trace import iso, load_trace, time_bound
from . import space, windows
from .space import Searched, Setting, TargetKind, Window


class Derived(StrEnum):
    """How the held-out check derived a setting (``Evaluation.derived_by``)."""

    #: more robust than every in-sample winner (``robust_variants``)
    ROBUST = "robust"
    #: a target between one that held out and a cheaper one on its line that missed (``_between``)
    BETWEEN = "between"
    #: the one that held out with a lower floor (``_lower_floor``)
    FLOOR = "floor"


#: a setting passes the held-out check when its held-out figure is within this many times the limit
#: (one held-out day is a small sample: the issue's own acceptance allows 2x the asked fraction on the next week)
HELD_OUT_SLACK = 2.0
#: least time to tune on (one daily cycle)
MIN_TUNE_SECONDS = 86400.0
#: when every setting that met the objective in-sample missed it on the held-out part, the check derives more
#: robust ones from the cheapest and the closest (``robust_variants``) for at most this share of --timeout more
ROBUST_SHARE = 0.5
#: once the held-out check found a setting that holds, the targets between it and a cheaper one on its line that
#: missed are bisected (``_between``) for at most this share of --timeout more
BETWEEN_SHARE = 0.15
#: then its floor is lowered (``_lower_floor``) for at most this share of --timeout more
FLOOR_SHARE = 0.1
#: the robust variants lower the target by these many points (or percent of a factor)
ROBUST_TARGET_STEPS = (3, 6, 12)
#: a replay stops as over the limit once its objective figure over the whole tuning part is certain to exceed the
#: limit by this much (summary.json rounds fractions to 6 digits)
STOP_OVER_LIMIT_MARGIN = 1e-6
#: a replay stops as costlier once it has spent ``STOP_COSTLIER_SHARE`` more pod-hours than the cheapest setting
#: that met the objective so far, plus ``STOP_COSTLIER_MARGIN`` (rank_key compares pod-hours to 0.1): the
#: held-out check replays it to its end only when its fallbacks come that far (rare: the margin keeps it cheap)
STOP_COSTLIER_SHARE = 0.25
STOP_COSTLIER_MARGIN = 0.15
#: why a replay stopped early (``Figures.stopped``); ``DEADLINE``: the budget was over (the replay is dropped)
OVER_LIMIT, COSTLIER, DEADLINE = "over_limit", "costlier", "deadline"
#: replays still running when the budget is over are drained while within this share of the budget past it, then
#: they stop themselves (``Stop.deadline``) and are dropped: the search ends at most this much late
DRAIN_SHARE = 0.1
#: a worker pool that lost a process (killed from outside: the OOM killer, a signal) is started anew at most this
#: many times per run; after that the replays run in tune's own process
POOL_RESTARTS = 3
#: the last share of the budget (time and trials) is kept for bisecting the best setting's target
POLISH_SHARE = 0.15
#: TPE searches targets from this many percent (points, or percent of a factor) below the highest one upstream's
#: HPA met the objective at
NARROW = 10
#: seconds of search by default (``--timeout``): with the reading and the held-out check, a week of 1-minute
#: history tunes in about 3 minutes of one core
DEFAULT_TIMEOUT = 170.0
OBJECTIVES = {"overloaded_fraction": "--max-overloaded-fraction", "unserved_fraction": "--max-unserved-fraction"}


@dataclass(slots=True, frozen=True)
class Objective:
    """What tune may spend: ``metric`` (``overloaded_fraction``: share of time overloaded, or
    ``unserved_fraction``: share of requests unserved) at most ``limit`` (a fraction in [0, 1))."""

    metric: str = "overloaded_fraction"
    limit: float = 0.01

    @property
    def option(self) -> str:
        return OBJECTIVES[self.metric]

    def value(self, f: "Figures") -> float:
        return getattr(f, self.metric)

    def at_least(self, f: "Figures", whole: "Figures") -> float:
        """The figure ``f``'s setting has at least over the whole part (``whole``: a replay of it to its end):
        its own when ``f`` is complete, else what it reached over the part's seconds or requests."""
        if not f.stopped:
            return self.value(f)
        if self.metric == "overloaded_fraction":
            return f.overloaded_seconds / max(whole.simulated_seconds, 1e-12)
        return f.unserved_requests / max(whole.requests, 1e-12)

    def met(self, f: "Figures", slack: float = 1.0) -> bool:
        return self.value(f) <= self.limit * slack + 1e-12


@dataclass(slots=True, frozen=True)
class Figures:
    """One replay's figures (summary.json of ``pyhpa simulate``): pod-hours, overloaded seconds and share of
    time, unserved requests and share of requests, scale events (ups + downs), simulated seconds, and
    ``stopped``: "" when the replay ran to the end of its part, else why it stopped early (``OVER_LIMIT``,
    ``COSTLIER``; the figures then cover its first ``simulated_seconds``, ``requests`` the requests there)."""

    pod_hours: float
    overloaded_seconds: float
    overloaded_fraction: float
    requests: float
    unserved_requests: float
    unserved_fraction: float
    scale_events: int
    simulated_seconds: float
    stopped: str = ""
    #: the most replicas the replay had (summary.json ``max_replicas_seen``; 0: none known): a setting that reached its
    #: ``maxReplicas`` on a part it missed needed more pods there than its max allows (candidates.csv, summary.json)
    max_replicas_seen: int = 0

    @classmethod
    def from_summary(cls, s: dict, stopped: str = "") -> "Figures":
        return cls(pod_hours=s["pod_hours"], overloaded_seconds=s["overloaded_seconds"],
                   overloaded_fraction=s["overloaded_fraction"], requests=s["requests"],
                   unserved_requests=s["unserved_requests"], unserved_fraction=s["unserved_fraction"],
                   scale_events=s["scale_ups"] + s["scale_downs"], simulated_seconds=s["simulated_seconds"],
                   stopped=stopped, max_replicas_seen=s.get("max_replicas_seen") or 0)


@dataclass(slots=True)
class Evaluation:
    """One setting tried: its trial ``number`` (-1: the user's current object), figures on the tuning part
    (``in_sample``) and, when checked, on the held-out part; the replay's overload ``episodes`` on the tuning
    part ((start epoch s, seconds)), the Optuna ``params`` it was suggested with, and its ``origin``."""

    number: int
    setting: Setting
    in_sample: Figures
    held_out: Figures | None = None
    episodes: tuple[tuple[float, float], ...] = ()
    params: dict = field(default_factory=dict)
    #: "" (the search found it), or how the held-out check derived it (``robust_variants``, ``_between``,
    #: ``_lower_floor``)
    origin: str = ""
    #: None (the search found it), or how the held-out check derived it
    derived_by: Derived | None = None

    @property
    def complete(self) -> bool:
        """The in-sample replay ran to the end of the tuning part."""
        return not self.in_sample.stopped


@dataclass(slots=True)
class Part:
    """One part of the window, read as ``pyhpa simulate --start ... --end ...`` reads it."""

    start: str | None
    end: str | None
    load: Load


@dataclass(slots=True)
class Prepared:
    """tune's inputs: the user's object (``base`` document and its ``autoscaler`` read), its first metric's
    target (``kind``), the workload (``target``, ``profile``), simulation ``settings``, the ``tuning`` and
    ``held_out`` parts, the searched ranges (``ranges``) and which extensions the object can take: ``sources``, the
    source sections tune searches (``space.TUNING``) that the object accepts, in that order."""

    base: dict
    file: str
    autoscaler: Autoscaler
    kind: TargetKind
    target: Target
    profile: Profile
    settings: Settings
    tuning: Part
    held_out: Part | None
    upstream_only: bool
    sources: tuple[str, ...]
    needed_per_target: Callable[[float], int] | None
    inputs: dict = field(default_factory=dict)
    #: the lowest ``minReplicas`` a setting may have (``pyhpa tune --min-replicas-floor``; 1: any)
    min_replicas_floor: int = 1

    @property
    def can_schedule(self) -> bool:
        """Schedule windows can be offered: a HorizontalAutoscaler may be written and floors sized (a CPU metric)."""
        return not self.upstream_only and self.needed_per_target is not None

    def pods_for(self, rps: float, target: float) -> int:
        """Pods a load of ``rps`` requests/s needs at ``target`` (the first metric's target; CPU metrics)."""
        return _pods_for(self, rps, target)

    def autoscaler_for(self, s: Setting | None) -> Autoscaler:
        doc = space.manifest(self.base, s, self.kind, self.upstream_only, current=s is None)
        return load_autoscaler(doc, self.file, self.target, self.settings)

    def manifest(self, s: Setting) -> dict:
        return space.manifest(self.base, s, self.kind, self.upstream_only)


@dataclass(slots=True)
class TuneResult:
    """What tune found: every evaluation (``evaluations``, trial order), the user's object (``current``), the
    recommendation (``recommended``) and its manifest, the in-sample Pareto frontier (pod-hours against the
    objective's figure), the wall seconds of the search and of the held-out check."""

    objective: Objective
    evaluations: list[Evaluation]
    current: Evaluation
    recommended: Evaluation
    manifest: dict
    frontier: list[Evaluation]
    search_seconds: float
    check_seconds: float
    held_out_tried: int
    notes: list[str] = field(default_factory=list)
    peaks: list[windows.Peak] = field(default_factory=list)

    @property
    def missed(self) -> list[Evaluation]:
        """The settings that met the objective in-sample and missed it on the held-out part (beyond
        ``HELD_OUT_SLACK`` times the limit), cheapest in-sample first."""
        o = self.objective
        return sorted((e for e in _unique([self.current, *self.evaluations]) if e.held_out is not None and e.complete
                       and o.met(e.in_sample) and not o.met(e.held_out, HELD_OUT_SLACK)), key=rank_key)

    def held_out_headroom(self) -> float | None:
        """The share of what the held-out check allows (``HELD_OUT_SLACK`` x the limit) that the recommendation
        left unused there: 1 with no overload at all, 0 at the allowance (None: no held-out part)."""
        h = self.recommended.held_out
        if h is None:
            return None
        allowed = self.objective.limit * HELD_OUT_SLACK
        return 1.0 - self.objective.value(h) / allowed if allowed > 0 else float(self.objective.value(h) == 0)


# ------------------------------------------------------------------------------------------------ inputs
def prepare(files: WorkloadFiles, *, metric_columns: Sequence[str] = (), time_column: str | None = None,
            where: Sequence[str] = (), start: str | None = None, end: str | None = None, load_scale: float = 1.0,
            gaps: str = "error", settings: Settings | None = None, held_out_seconds: float = 86400.0,
            upstream_only: bool = False, warn: Callable[[str], None] | None = None,
            min_replicas_floor: int = 1) -> Prepared:
    """Read the inputs as ``pyhpa simulate`` does (``files``: a ``pyhpa.simulate.WorkloadFiles`` of one ``hpa``)
    and split the window; ``warn(line)`` is called with each of ``pyhpa.simulate.request_warnings``
    (legal input that makes every replayed sync fail), as ``pyhpa simulate`` warns. ``min_replicas_floor``: no
    setting tried or recommended has a lower ``minReplicas`` (redundancy a user keeps), from 1 to the object's
    ``maxReplicas``. Raises InputError: unreadable input, a metric the simulator cannot replay, too little history,
    a flat or empty workload, a floor out of bounds (naming ``--min-replicas-floor``)."""
    settings = settings or Settings()
    file = str(files.hpa[0])
    prof, tgt = read_workload(files, metric_columns)
    base = find_autoscaler(read_document(file), file)
    auto = load_autoscaler(base, file, tgt, settings)
    check_metric_columns(metric_columns, [auto])
    kind = space.target_kind(base, auto.hpa, file)
    if not 1 <= min_replicas_floor <= auto.hpa.max_replicas:
        raise InputError(f"must be from 1 to the autoscaler's maxReplicas ({auto.hpa.max_replicas}, {file}), got "
                         f"{min_replicas_floor}", field="--min-replicas-floor")
    if warn is not None:
        for line in request_warnings(auto, tgt, display_path(files.target)):
            warn(line)
    kw = dict(time_column=time_column, where=where, load_scale=load_scale, gaps=gaps)
    # times only: where the window ends, to split it (the values of the held-out rows are not used here)
    window = load_trace(files.trace, files.column, time_column=time_column, where=tuple(where), start=start,
                        end=end, load_scale=load_scale, gaps=gaps)
    lo, hi = window.start, window.end
    if not held_out_seconds >= 0:
        raise InputError(f"must be >= 0 seconds, got {held_out_seconds!r}", field="--held-out")
    split = hi - held_out_seconds
    if split - lo < MIN_TUNE_SECONDS:
        raise InputError(f"too little history: {(hi - lo) / 3600:.1f} h from {iso(lo, window.tz)} to "
                         f"{iso(hi, window.tz)}; tune needs at least {MIN_TUNE_SECONDS / 3600:g} h to tune on plus "
                         f"--held-out ({held_out_seconds / 3600:g} h)", file=str(files.trace), field="--start/--end")
    cut = _bound_text(split, window)
    tuning = Part(start, cut if held_out_seconds else end,
                  read_load(files, [auto], prof, tgt, start=start, end=cut if held_out_seconds else end, history=True, **kw))
    held = None
    if held_out_seconds:
        held = Part(cut, end, read_load(files, [auto], prof, tgt, start=cut, end=end, history=True, **kw))
    _check_workload(tuning.load, str(files.trace), files.column)
    prepared = Prepared(base=base, file=file, autoscaler=auto, kind=kind, target=tgt, profile=prof, settings=settings,
                        tuning=tuning, held_out=held, upstream_only=upstream_only, sources=(), needed_per_target=None,
                        min_replicas_floor=min_replicas_floor)
    prepared.needed_per_target = _needed(prepared)
    if not upstream_only:  # each source section alone, with the object's own values or the API's defaults
        probe = space.current_setting(auto.hpa, kind)
        prepared.sources = tuple(name for name in space.TUNING if _accepted(
            prepared, probe.without_sources().with_source(name, **(probe.source(name) or {}))))
    return prepared


def _bound_text(t: float, window) -> str:
    """``t`` as a ``--start``/``--end`` value that reads back as exactly ``t``."""
    text = repr(float(t)) if window.report.time_column_numeric else iso(t, window.tz)
    assert time_bound(text, window, "--end") == t
    return text


def _check_workload(load: Load, file: str, column: str) -> None:
    rps = np.asarray(load.rps, dtype=float)
    if not rps.size or float(rps.max()) <= 0:
        raise InputError("empty workload: the load is 0 over the whole tuning window; nothing to tune",
                         file=file, field=column)
    p5, p50, p95 = np.percentile(rps, [5, 50, 95])
    if p95 - p5 <= 0.02 * max(p50, 1e-12):
        raise InputError(f"flat workload: 90 % of the load lies within 2 % of its median ({p50:.4g} requests/s); "
                         "a fixed replica count serves it, there is no trade-off to tune", file=file, field=column)


def _accepted(p: Prepared, s: Setting) -> bool:
    try:
        p.autoscaler_for(s)
    except InputError:
        return False
    return True


def _needed(p: Prepared) -> Callable[[float], int] | None:
    """Pods the tuning part's peak needs at a target (a function of the target), for a CPU metric; None else."""
    if not p.kind.cpu:
        return None
    peak_rps = float(np.max(p.tuning.load.rps))
    return lambda target: _pods_for(p, peak_rps, target)


def _pods_for(p: Prepared, rps: float, target: float) -> int:
    """Pods ``rps`` requests/s need at ``target`` (percent of the CPU request, or millicores per pod)."""
    prof = p.profile
    request = p.target.requests.get(("cpu", ""))
    if not request and p.kind.type == "Utilization":
        return p.autoscaler.hpa.max_replicas
    per_pod = target / 100.0 * request if p.kind.type == "Utilization" else target
    work = prof.cpu_millicore_seconds_per_request * rps
    free = per_pod - prof.cpu_baseline_millicores
    if free > 0:
        return space.replicas_needed(work, free)
    return space.replicas_needed(prof.cpu_baseline_millicores + work, per_pod)  # one pod's worth


# ------------------------------------------------------------------------------------------------ evaluation
@dataclass(frozen=True, slots=True)
class Stop:
    """When a replay of the tuning part ends early (``Cluster.run``'s ``stop``, checked after each sync): once it
    has been overloaded more than ``overloaded_seconds`` or left more than ``unserved_requests`` unserved (it
    misses the objective whatever follows: ``OVER_LIMIT``), or has run more than ``pod_seconds`` pod-seconds
    (more pod-hours than the cheapest setting that met the objective so far: ``COSTLIER``), or once ``clock()``
    (seconds; ``time.monotonic`` in a worker process) is past ``deadline`` (``DEADLINE``)."""

    overloaded_seconds: float = math.inf
    unserved_requests: float = math.inf
    pod_seconds: float = math.inf
    #: once ``clock()`` passes ``deadline`` the replay stops (``DEADLINE``): the search's budget is over
    deadline: float = math.inf
    clock: Callable[[], float] = time.monotonic

    def __call__(self, cluster) -> bool:
        s = cluster.stats
        return (s.overloaded_seconds > self.overloaded_seconds or s.unserved_requests > self.unserved_requests
                or s.pod_seconds > self.pod_seconds or (self.deadline < math.inf and self.clock() > self.deadline))

    def reason(self, cluster) -> str:
        """Why ``cluster``'s run stopped ("" when it ran to the end)."""
        if not cluster.stopped:
            return ""
        s = cluster.stats
        if s.overloaded_seconds > self.overloaded_seconds or s.unserved_requests > self.unserved_requests:
            return OVER_LIMIT
        return COSTLIER if s.pod_seconds > self.pod_seconds else DEADLINE


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a worker sends back: the ``figures`` and the overload ``episodes`` ((start epoch s, seconds))."""

    figures: Figures
    episodes: tuple[tuple[float, float], ...]


_STATE: dict = {}


def _evaluate(s: Setting | None, part: str, stop: Stop | None = None) -> Outcome:
    """Replay ``s`` (None: the user's object) on the ``tuning`` or ``held_out`` part (in a worker process:
    the state was inherited at fork)."""
    p: Prepared = _STATE["prepared"]
    auto = p.autoscaler_for(s)
    load = p.tuning.load if part == "tuning" else _STATE["held_out"].load
    run = replay(auto, "candidate", p.target, p.profile, load, p.settings, stop=stop)
    cluster = run.cluster
    stopped = stop.reason(cluster) if stop is not None else ""
    episodes = tuple((a, d) for a, d, _ in cluster.stats.episodes)
    return Outcome(Figures.from_summary(run.summary, stopped), episodes)


#: prctl(2) option: the signal the kernel sends a process when its parent dies (Linux)
_PR_SET_PDEATHSIG = 1


def _start_worker(parent: int) -> None:
    """A worker's first act: ignore SIGINT and have the kernel SIGKILL it when ``parent`` (``pyhpa tune``) dies,
    however it dies (SIGTERM, SIGKILL, a crash), so no replay outlives the command; exits at once if the parent is
    gone already. Ctrl-C in a terminal sends SIGINT to the whole foreground process group, workers included: the
    parent alone handles it (exit code 130) and stops the workers (``_Runner.__exit__``), so a worker neither stops
    mid-queue nor prints a ``KeyboardInterrupt`` traceback. The worker was forked with SIGINT blocked
    (``_sigint_held``): one that came before this ignored it is dropped, not raised. On a system without prctl(2)
    (not Linux) workers end with the pool's shutdown only."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)


@contextlib.contextmanager
def _sigint_held():
    """SIGINT blocked in this thread for the block, so a worker process forked in it starts with SIGINT blocked
    until ``_start_worker`` ignores it (a Ctrl-C between the fork and that would raise ``KeyboardInterrupt`` in the
    worker). A SIGINT that came meanwhile reaches this process when the block ends (or another of its threads at
    once: Python raises ``KeyboardInterrupt`` in the main thread either way)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


class _Runner:
    """Runs evaluations in worker processes (``jobs`` > 1) or inline; ``submit`` returns a future either way.

    A worker process that dies (killed from outside: the OOM killer, a signal) breaks its pool
    (``BrokenProcessPool`` in every pending future): ``submit`` then starts a new pool, at most ``POOL_RESTARTS``
    times, then runs the replays inline; ``lost`` counts the replays that were lost so, ``map`` replays them again."""

    def __init__(self, prepared: Prepared, jobs: int, held_out: Part | None = None):
        _STATE["prepared"] = prepared
        _STATE["held_out"] = held_out
        self.jobs = max(1, jobs)
        self.pool = None
        self.workers: set[multiprocessing.Process] = set()  # the worker processes started, of every pool
        self.restarts = 0
        self.lost = 0
        if self.jobs > 1:
            self.pool = self._pool()

    def _pool(self) -> ProcessPoolExecutor:
        # each worker ignores SIGINT and dies with tune (PR_SET_PDEATHSIG): killing tune leaves no replay running
        return ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_start_worker, initargs=(os.getpid(),))

    def __enter__(self):
        return self

    def __exit__(self, kind, *exc):
        if self.pool is not None:
            if kind is not None:  # Ctrl-C (the workers ignore it) or an error: no replay is waited for
                for worker in self.workers:
                    worker.terminate()
            self.pool.shutdown(cancel_futures=True)
        _STATE.clear()
        return False

    @property
    def parallel(self) -> bool:
        return self.pool is not None

    def broken(self) -> None:
        """A replay came back lost with its worker (``BrokenProcessPool``): count it; the pool is started anew at
        the next ``submit``."""
        self.lost += 1

    def submit(self, s: Setting | None, part: str, stop: Stop | None = None) -> Future:
        while self.pool is not None:
            try:
                before = set(multiprocessing.active_children())
                with _sigint_held():  # the pool forks its workers in its first submit
                    fut = self.pool.submit(_evaluate, s, part, stop)
                self.workers |= set(multiprocessing.active_children()) - before
                return fut
            except BrokenProcessPool:  # a worker died since the last submit
                self.pool.shutdown(wait=True, cancel_futures=True)
                self.restarts += 1
                self.pool = self._pool() if self.restarts <= POOL_RESTARTS else None
        fut: Future = Future()
        fut.set_result(_evaluate(s, part, stop))
        return fut

    def map(self, items: list[tuple[Setting | None, str]]) -> list[Outcome]:
        """Replay ``items`` to the end (those lost with a worker again) and return their outcomes, in order."""
        futures = [self.submit(s, part) for s, part in items]
        out = []
        for (s, part), fut in zip(items, futures):
            while True:
                try:
                    out.append(fut.result())
                    break
                except BrokenProcessPool:
                    self.broken()
                    fut = self.submit(s, part)
        return out


# ------------------------------------------------------------------------------------------------ search
#: the searched factor on a window's floor (the pods the history's demand in the window needs at the target)
FLOOR_FACTOR = (0.4, 1.2)


def _suggest(trial, p: Prepared, peaks: Sequence[windows.Peak] = (), lowest: float | None = None) -> Setting:
    """The setting of an Optuna trial; ``lowest``: the lowest target searched (the range's, or higher once the
    upstream line's boundary is known)."""
    lo_t, hi_t = space.TARGET_PERCENT
    lo_f, hi_f = space.TARGET_FACTOR
    if p.kind.type == "Utilization":
        target = float(trial.suggest_int("target", max(lo_t, int(lowest or lo_t)), hi_t))
    else:
        target = p.kind.current * trial.suggest_float("target_factor", max(lo_f, lowest or lo_f), hi_f, log=True)
    base = p.autoscaler.hpa
    floor = p.min_replicas_floor
    min_hi = max(4, 2 * base.min_replicas, floor)
    min_r = trial.suggest_int("min_replicas", floor, min_hi)
    headroom = trial.suggest_categorical("max_headroom", space.MAX_HEADROOM)
    needed = p.needed_per_target(target) if p.needed_per_target else base.max_replicas
    max_r = max(min_r + 1, math.ceil(needed * headroom))
    window = trial.suggest_categorical("scale_down_window_seconds", space.SCALE_DOWN_WINDOWS)
    up = trial.suggest_categorical("scale_up_percent", space.SCALE_UP_PERCENTS)
    s = Setting(target=target, min_replicas=min_r, max_replicas=max_r, scale_down_window_seconds=window,
                scale_up_percent=up)
    for name in p.sources:  # each source section: on or off, then its fields (``space.TUNING``), in that order
        if trial.suggest_categorical(name, (False, True)):
            s = s.with_source(name, **{f.name: _suggest_field(trial, f) for f in space.TUNING[name].fields})
    if peaks:
        count = trial.suggest_int("windows", 0, len(peaks))
        if count:
            factor = trial.suggest_float("floor_factor", *FLOOR_FACTOR, step=0.05)
            s = replace(s, schedules=_windows(p, peaks[:count], factor, target, min_r, max_r))
    return s


def _suggest_field(trial, f: Searched) -> float:
    """An Optuna trial's value of a source section's field: an integer in steps, or a number rounded."""
    if f.integer:
        return trial.suggest_int(f.name, f.low, f.high, step=f.step)
    return round(trial.suggest_float(f.name, f.low, f.high), f.digits)


def _windows(p: Prepared, peaks: Sequence[windows.Peak], factor: float, target: float, min_r: int,
             max_r: int) -> tuple[Window, ...]:
    """The windows of ``peaks``: each floor the pods ``factor`` x its demand needs at ``target``, at most
    ``max_r``; a window whose floor is not above ``min_r`` would do nothing and is left out."""
    out = []
    for peak in peaks:
        floor = min(max_r, p.pods_for(peak.demand_rps * factor, target))
        if floor > min_r:
            out.append(Window(peak.name, peak.cron, peak.duration_seconds, "UTC", floor))
    return tuple(out)


#: upstream's targets a user tries by hand, the cheapest first: percent, or factors on an AverageValue/Value target
UPSTREAM_GRID = (90, 80, 70, 60, 50, 40)
UPSTREAM_FACTORS = (1.4, 1.0, 0.7, 0.5)


def _upstream(p: Prepared, target: float) -> dict:
    """The trial of upstream's HPA at ``target`` (percent, or a factor on the current value) with the user's
    ``minReplicas`` (at least the floor, ``Prepared.min_replicas_floor``), a max 1.5 x what the tuning part's peak
    needs there, and upstream's behavior."""
    params = {"target": target} if p.kind.type == "Utilization" else {"target_factor": target}
    params.update(min_replicas=max(p.autoscaler.hpa.min_replicas, p.min_replicas_floor), max_headroom=1.5,
                  scale_down_window_seconds=space.DEFAULT_SCALE_DOWN_WINDOW,
                  scale_up_percent=space.DEFAULT_SCALE_UP_PERCENT)
    params.update({name: False for name in p.sources})
    return params


def _extended(p: Prepared, target: float, lean: bool = True) -> list[dict]:
    """The trials of each source section at its defaults (``prediction: {}``, then ``saturation: {}``; ``p.sources``)
    at ``target``, each followed (``lean``) by its lean end where it has one (``space.TUNING``: prediction's quantile
    0.6 240 s ahead), else as ``_upstream``."""
    out = []
    for name in p.sources:
        defaults, tuning = space.defaults(name), space.TUNING[name]
        out.append(dict(_upstream(p, target), **{name: True}, **defaults))
        if lean and tuning.lean is not None:
            out.append(dict(_upstream(p, target), **{name: True}, **dict(defaults, **tuning.lean)))
    return out


def _line(p: Prepared) -> tuple[str, list]:
    """The target's Optuna parameter and its grid, lowest first: whole percents, or factors 1 % apart."""
    if p.kind.type == "Utilization":
        lo, hi = space.TARGET_PERCENT
        return "target", list(range(lo, hi + 1))
    lo, hi = space.TARGET_FACTOR
    n = int(math.log(hi / lo) / math.log(1.01))
    return "target_factor", [round(lo * 1.01 ** i, 4) for i in range(n + 1)] + [hi]


class _Search:
    """One search on the tuning part (``search``): the trials, the replays, the budget, the incumbent."""

    def __init__(self, prepared: Prepared, objective: Objective, trials: int, timeout: float, jobs: int, seed: int,
                 progress, clock):
        import optuna

        self.p, self.objective, self.trials, self.timeout, self.jobs = prepared, objective, trials, timeout, max(1, jobs)
        self.progress, self.clock = progress, clock
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            # conditional parameters (prediction's quantile only with prediction on): multivariate TPE by group
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=10, multivariate=True, group=True)
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.evaluations: list[Evaluation] = []
        self.seen: dict[Setting, Outcome] = {}
        self.peaks: list[windows.Peak] = []
        self.lowest: float | None = None  # the lowest target TPE searches (``narrow``)
        self.pending: dict[Future, tuple] = {}
        self.durations: list[float] = []  # seconds of ``clock`` per replay (serial: exact; parallel: with waiting)
        self.asked = 0
        self.t0 = clock()
        self.whole: Figures | None = None  # the current object's replay, to the end: the part's seconds, requests
        self.current: Evaluation | None = None  # the user's object (``run``)
        self.runner: _Runner | None = None
        self.retried: dict[Setting, int] = {}  # replays submitted again after their worker was lost
        self.cut = 0  # replays stopped at the budget's end and dropped
        self.lost = self.restarts = 0  # replays lost with a worker process, pools started anew

    # -------------------------------------------------------------------- budget
    def elapsed(self) -> float:
        return self.clock() - self.t0

    def room(self, share: float = 1.0) -> bool:
        """Another trial may start and, at the mean duration of the replays so far, end within ``share`` of the
        budget (the first one always may)."""
        if self.asked >= self.trials - (0 if share >= 1 else int(self.trials * POLISH_SHARE)):
            return False
        mean = sum(self.durations) / len(self.durations) if self.durations else 0.0
        return self.asked == 0 or self.elapsed() + mean < self.timeout * share

    # -------------------------------------------------------------------- stops
    def incumbent(self) -> Evaluation | None:
        """The cheapest setting that ran to its end and met the objective."""
        ok = [e for e in self.evaluations if e.complete and self.objective.met(e.in_sample)]
        return min(ok, key=rank_key) if ok else None

    def stop(self) -> Stop:
        """The stops of the next replay: over the limit, costlier than the incumbent (the user's object counts when
        it met the objective: it is a candidate of the held-out check), and, once there is one to recommend, the
        end of the budget plus ``DRAIN_SHARE`` (in ``clock``'s seconds inline; a worker process gets the same
        instant in ``time.monotonic``'s)."""
        o = self.objective
        over = o.limit + STOP_OVER_LIMIT_MARGIN
        best = min((e for e in (self.incumbent(), self.current) if e is not None and e.complete and o.met(e.in_sample)),
                   key=rank_key, default=None)
        pod_seconds = (math.inf if best is None
                       else (best.in_sample.pod_hours * (1 + STOP_COSTLIER_SHARE) + STOP_COSTLIER_MARGIN) * 3600.0)
        deadline, clock = math.inf, time.monotonic
        if best is not None:
            left = self.t0 + self.timeout * (1 + DRAIN_SHARE) - self.clock()
            deadline, clock = (time.monotonic() + left, time.monotonic) if self.runner.parallel else (
                self.clock() + left, self.clock)
        kw = dict(pod_seconds=pod_seconds, deadline=deadline, clock=clock)
        if o.metric == "overloaded_fraction":
            return Stop(overloaded_seconds=over * self.whole.simulated_seconds, **kw)
        return Stop(unserved_requests=over * self.whole.requests, **kw)

    # -------------------------------------------------------------------- trials
    def full(self, params: dict) -> dict:
        """``params`` with every parameter the space has now: a trial from before the windows were found has
        none (``windows`` 0), and an enqueued one must not leave it to the sampler."""
        if self.peaks and "windows" not in params:
            return dict(params, windows=0)
        return params

    def ask(self, params: dict | None) -> None:
        """Start one trial (``params``: enqueued, else TPE's; the caller checks the budget, ``room``). A setting
        replayed already is not replayed again (nor counted as another candidate)."""
        if params is not None:
            self.study.enqueue_trial(self.full(params))
        trial = self.study.ask()
        self.asked += 1
        s = _suggest(trial, self.p, self.peaks, self.lowest if params is None else None)
        began = self.clock()
        if s in self.seen:
            fut: Future = Future()
            fut.set_result(self.seen[s])
            began = None
        else:
            fut = self.runner.submit(s, "tuning", self.stop())
        self.pending[fut] = (trial, s, began)

    def collect(self, all_: bool = False) -> None:
        """Wait for one pending trial (``all_``: every one) and tell Optuna. A replay lost with its worker process
        is submitted again (once: a setting lost twice is dropped, in case it is what kills its worker); one stopped
        at the budget's end (``DEADLINE``) is dropped; Optuna is told both failed."""
        while self.pending:
            done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: self.pending[f][0].number):
                trial, s, began = self.pending.pop(fut)
                try:
                    out = fut.result()
                except BrokenProcessPool:
                    self.runner.broken()
                    if self.retried.get(s, 0) < 1 and self.room():
                        self.retried[s] = self.retried.get(s, 0) + 1
                        self.pending[self.runner.submit(s, "tuning", self.stop())] = (trial, s, self.clock())
                    else:
                        self._fail(trial)
                    continue
                if out.figures.stopped == DEADLINE:
                    self.cut += 1
                    self._fail(trial)
                    continue
                if began is not None:
                    self.durations.append(self.clock() - began)
                self._tell(trial, out.figures)
                if began is None:  # the same setting as an earlier trial
                    continue
                self.seen[s] = out
                self.evaluations.append(Evaluation(trial.number, s, out.figures, episodes=out.episodes,
                                                   params=dict(trial.params)))
                if self.progress:
                    self.progress(len(self.evaluations), self.trials, self.elapsed())
            if not all_:
                return

    def _fail(self, trial) -> None:
        import optuna

        self.study.tell(trial, state=optuna.trial.TrialState.FAIL)

    def _tell(self, trial, f: Figures) -> None:
        o = self.objective
        value = o.value(f)
        pod_hours = f.pod_hours
        if f.stopped:  # a lower bound, and an estimate of the rest at the same rate (a hint for the sampler)
            pod_hours *= self.whole.simulated_seconds / max(f.simulated_seconds, 1.0)
            if f.stopped == OVER_LIMIT:
                value = o.at_least(f, self.whole)
        trial.set_constraint(o.metric, value - o.limit)
        trial.set_user_attr("scale_events", f.scale_events)
        self.study.tell(trial, pod_hours)

    def batch(self, params: Iterable[dict], share: float = 1.0) -> None:
        """Run the trials ``params`` (``jobs`` at a time) within ``share`` of the budget."""
        for item in params:
            if not self.room(share):
                break
            while len(self.pending) >= self.runner.jobs:
                self.collect()
            self.ask(item)
        self.collect(all_=True)

    def tpe(self, share: float) -> None:
        """TPE's trials until ``share`` of the budget."""
        while True:
            while len(self.pending) < self.runner.jobs and self.room(share):
                self.ask(None)
            if not self.pending:
                return
            self.collect()

    def bounds(self, params: dict, floor: int = -1) -> tuple[int, int, Evaluation | None]:
        """On the line of the setting ``params`` stand for (its target varied, the rest as they are, ``_line``):
        the grid index of the highest target known to meet the objective (-1: none; at least ``floor``, a target
        taken as met without a replay on this line), of the next higher one known not to (the grid's length:
        none), and the evaluation at the first (None: none replayed on this line met it)."""
        name, grid = _line(self.p)
        rest = {k: v for k, v in self.full(params).items() if k != name}
        on = []
        for e in self.evaluations:
            if name in e.params and {k: v for k, v in self.full(e.params).items() if k != name} == rest:
                on.append((min(range(len(grid)), key=lambda j: abs(grid[j] - e.params[name])), e))
        met = [(i, e) for i, e in on if e.complete and self.objective.met(e.in_sample)]
        good, best = max(met, key=lambda x: x[0]) if met else (-1, None)
        good = max(good, floor)
        bad = min((i for i, e in on if i > good and not (e.complete and self.objective.met(e.in_sample))),
                  default=len(grid))
        return good, bad, best

    def bisect(self, params: dict, share: float = 1.0, floor: int = -1) -> None:
        """Bisect the target of the setting ``params`` stand for (the rest as they are) between the highest
        target known to meet the objective (at least the grid index ``floor``: an extension's line starts where
        upstream's met it) and the next higher one known not to, to one step of the grid (``_line``): the
        cheapest target that meets it, as a user would find by hand. ``jobs`` points at once."""
        name, grid = _line(self.p)
        rest = {k: v for k, v in params.items() if k != name}
        last = None
        while self.room(share):
            good, bad, _ = self.bounds(params, floor)
            if good < 0 or bad - good <= 1 or (good, bad) == last:  # done, or a point did not land on the line
                return
            last = good, bad
            k = min(self.runner.jobs, bad - good - 1)
            points = sorted({good + (bad - good) * (j + 1) // (k + 1) for j in range(k)} - {good, bad})
            self.batch([dict(rest, **{name: grid[i]}) for i in points], share)

    def narrow(self, params: dict) -> float | None:
        """After the upstream line (``params``) is bisected: TPE searches targets from ``NARROW`` below the highest
        one that met the objective there (lower ones cost more pod-hours than it: pods go as 1 / target) up; the
        whole range when none met it. Returns that target (None: none met it)."""
        good, _, best = self.bounds(params)
        if best is None:
            return None
        name, grid = _line(self.p)
        self.lowest = grid[good] - NARROW if name == "target" else grid[good] / (1 + NARROW / 100)
        return grid[good]

    # -------------------------------------------------------------------- phases
    def seed(self, share: float) -> None:
        """The trials a user would make by hand: upstream's HPA from 90 % down in steps of 10 until a target
        meets the objective, and one step more (``jobs`` targets at a time; the cheapest first, so that costlier
        ones can stop early, and a more cautious one for the held-out check), its target bisected to 1 %, TPE
        narrowed to it (``narrow``), and each extension's lines (``_extended``: its defaults, and prediction's lean
        end when an upstream target met the objective) 5 points above it, each bisected in turn between upstream's target and the next one up that missed
        (an extension lets the target go higher: the highest it allows is what it is worth; at 80 % when no upstream
        target met the objective, bisected above the first that meets it)."""
        p = self.p
        util = p.kind.type == "Utilization"
        grid = UPSTREAM_GRID if util else UPSTREAM_FACTORS
        line = _upstream(p, grid[0])
        for i in range(0, len(grid), self.jobs):
            self.batch([_upstream(p, t) for t in grid[i:i + self.jobs]], share)
            tried = [_upstream(p, t) for t in grid[:i + self.jobs]]
            if sum(1 for e in self.evaluations if e.params in tried and e.complete and self.objective.met(e.in_sample)) >= 2:
                break  # the first target that met it, and one step below: a fallback for the held-out check
        self.bisect(line, share)
        top = self.narrow(line)
        if top is None:
            target = 80 if util else 1.0
        else:
            target = min(top + 5, space.TARGET_PERCENT[1]) if util else min(top * 1.05, space.TARGET_FACTOR[1])
        # the lean end lets a target go higher than upstream's at little cost: no use when no upstream target met it
        lines = _extended(p, target, lean=top is not None)
        self.batch(lines, share)
        floor = self.bounds(line)[0] if top is not None else -1
        for params in lines:
            self.bisect(params, share, floor)

    def run(self) -> tuple[Evaluation, list[Evaluation]]:
        p = self.p
        with _Runner(p, self.jobs) as self.runner:
            first = self.runner.map([(None, "tuning")])[0]
            current = Evaluation(-1, space.current_setting(p.autoscaler.hpa, p.kind), first.figures,
                                 episodes=first.episodes)
            self.whole, self.current = first.figures, current
            self.seed(1 - POLISH_SHARE)
            if p.can_schedule:
                self._offer_windows(current)
            self.tpe(1 - POLISH_SHARE)
            best = self.incumbent()
            if best is not None:
                self.bisect(best.params)
            self.tpe(1.0)
            self._raised(current)
            self.lost, self.restarts = self.runner.lost, self.runner.restarts
        return current, self.evaluations

    def _raised(self, current: Evaluation) -> None:
        """The user's object below the floor (``Prepared.min_replicas_floor``) cannot be recommended
        (``check_held_out``): the same object with ``minReplicas`` raised to the floor is one more candidate (the
        last trial's number + 1), what a user keeping that many replicas would try first."""
        floor = self.p.min_replicas_floor
        if current.setting.min_replicas >= floor:
            return
        raised = replace(current.setting, min_replicas=floor, max_replicas=max(current.setting.max_replicas, floor))
        if any(e.setting == raised for e in self.evaluations):
            return
        out = self.runner.map([(raised, "tuning")])[0]
        number = max((e.number for e in self.evaluations), default=-1) + 1
        self.evaluations.append(Evaluation(number, raised, out.figures, episodes=out.episodes,
                                           origin=f"the current object with minReplicas raised to {floor} "
                                                  "(--min-replicas-floor)"))

    def _offer_windows(self, current: Evaluation) -> None:
        """Detect recurring peaks in the replays so far (``pyhpa.tune.windows``); when there are, the search
        space gains them, and the first window trials are the best setting so far and upstream's HPA at the
        lowest target that missed the objective, each with every window at its demand's floor."""
        p = self.p
        start = float(p.tuning.load.trace.start)
        replays = [windows.Replayed(e.setting.label(p.kind) if e.number >= 0 else "the current object",
                                    e.episodes, start, start + e.in_sample.simulated_seconds)
                   for e in [current, *self.evaluations]]
        prof, tr = p.profile, p.tuning.load.trace
        lead = (prof.pod_scheduling_seconds + prof.container_start_seconds
                + prof.app_startup_seconds * (1 + prof.startup_jitter_fraction) + p.settings.sync_period_seconds)
        self.peaks = windows.detect(replays, np.asarray(tr.times, dtype=float), np.asarray(p.tuning.load.rps, dtype=float),
                                    float(tr.end), lead)
        if not self.peaks:
            return
        trials = []
        best = self.incumbent()
        if best is not None:
            trials.append(best.params)
        name, _ = _line(p)
        line = {k: v for k, v in _upstream(p, 0).items() if k != name}
        missed = [e for e in self.evaluations if e.params and {k: v for k, v in e.params.items() if k != name} == line
                  and not self.objective.met(e.in_sample)]
        if missed:
            trials.append(min(missed, key=lambda e: e.params[name]).params)
        self.batch([dict(t, windows=len(self.peaks), floor_factor=1.0) for t in trials], 1 - POLISH_SHARE)


def search(prepared: Prepared, objective: Objective, *, trials: int = 200, timeout: float = DEFAULT_TIMEOUT, jobs: int = 1,
           seed: int = 0, progress: Callable[[int, int, float], None] | None = None,
           clock: Callable[[], float] = time.monotonic) -> tuple[Evaluation, list[Evaluation], float]:
    """Search on the tuning part only: the user's object, then what a user would try by hand (``_Search.seed``:
    upstream's HPA from 90 % down until a target meets the objective, bisected to 1 %, and the extensions'
    defaults there), schedule windows where the replays were late for a peak that recurs
    (``pyhpa.tune.windows``), Optuna's TPE, and at the end the bisection of the best setting's target;
    until ``trials`` settings or ``timeout`` seconds of ``clock`` (wall time; ``time.process_time`` with
    ``jobs=1`` budgets CPU time, for a machine shared with other work); ``jobs`` worker processes.
    Returns the user's object's evaluation, every candidate's (trial order) and the seconds of ``clock``.
    ``progress(done, total, elapsed_seconds)`` after each candidate."""
    # by construction: the search cannot reach the held-out rows
    s = _Search(replace(prepared, held_out=None), objective, trials, timeout, jobs, seed, progress, clock)
    current, evaluations = s.run()
    return current, evaluations, s.elapsed()


# ------------------------------------------------------------------------------------------------ selection
def rank_key(e: Evaluation) -> tuple:
    """Least pod-hours (to 0.1 pod-hour), then fewest scale events, then the trial order."""
    return (round(e.in_sample.pod_hours, 1), e.in_sample.scale_events, e.number)


def frontier(evaluations: Sequence[Evaluation], objective: Objective) -> list[Evaluation]:
    """The in-sample Pareto frontier of the settings replayed to the end: no other has both fewer pod-hours and
    a lower objective figure."""
    pts = sorted((e for e in evaluations if e.complete), key=lambda e: (e.in_sample.pod_hours, objective.value(e.in_sample)))
    out, best = [], math.inf
    for e in pts:
        v = objective.value(e.in_sample)
        if v < best:
            out.append(e)
            best = v
    return out


def _closest(evaluations: Sequence[Evaluation], objective: Objective, p: Prepared, figures: str = "in_sample") -> str:
    done = [e for e in evaluations if e.complete]
    e = min(done, key=lambda e: (objective.value(getattr(e, figures)), getattr(e, figures).pod_hours))
    f = getattr(e, figures)
    return (f"closest: {e.setting.label(p.kind)} ({objective.metric.replace('_', ' ')} {objective.value(f):.4%}, "
            f"{f.pod_hours:.1f} pod-hours)")


def check_held_out(prepared: Prepared, objective: Objective, current: Evaluation, evaluations: list[Evaluation], *,
                   jobs: int = 1, budget: float = math.inf, clock: Callable[[], float] = time.monotonic,
                   peaks: Sequence[windows.Peak] = (), between_budget: float = math.inf,
                   floor_budget: float = math.inf) -> tuple[Evaluation, int, float]:
    """Replay the in-sample winners, cheapest first (``rank_key``), on the held-out part until one meets the
    objective there too (within ``HELD_OUT_SLACK`` times the limit): every setting that met the objective
    in-sample, up the whole frontier, not a fixed number. The user's object is replayed there too; when it met the
    objective on both parts, the walk ends with it once ``budget`` seconds of ``clock`` are spent (it is the
    fallback: nothing else is refused for lack of time). A setting whose
    in-sample replay stopped early as costlier (``COSTLIER``) is first replayed to its end when it could rank
    before the next one checked, so that the order is the same as with every replay complete. Once a setting
    holds, the targets between it and a cheaper one on its line that missed on the held-out part are bisected on
    both parts for at most ``between_budget`` seconds of ``clock`` (``_between``), then its floor is lowered for at
    most ``floor_budget`` seconds (``_lower_floor``).

    When every one missed on the held-out part, more robust settings are derived (``_derive_robust``: lower
    targets, a higher max, prediction's 0.95 quantile, saturation, the windows of ``peaks``, a faster scale-up),
    for at most ``budget`` seconds of ``clock``, and appended to ``evaluations`` (``origin`` says how).

    Returns the recommendation, how many settings were checked on the held-out part and the wall seconds. Raises
    InputError when no setting met the objective in-sample, or none of those checked held out (naming the closest)."""
    t0, c0 = time.monotonic(), clock()
    # the user's object below the floor (--min-replicas-floor) is replayed for the comparison, never recommended
    eligible = current.setting.min_replicas >= prepared.min_replicas_floor
    everyone = [current, *evaluations] if eligible else list(evaluations)
    batch = max(1, jobs)
    checked: list[Evaluation] = []

    def finish(e: Evaluation) -> tuple[Evaluation, int, float]:
        c1 = clock()
        best = _between(prepared, objective, e, everyone, evaluations, checked, runner, batch,
                        lambda: clock() - c1 < between_budget)
        c2 = clock()
        best = _lower_floor(prepared, objective, best, everyone, evaluations, checked, runner, batch,
                            lambda: clock() - c2 < floor_budget)
        return best, len(checked), time.monotonic() - t0

    with _Runner(prepared, jobs, prepared.held_out) as runner:
        if not any(e.complete and objective.met(e.in_sample) for e in everyone):
            _complete_closest(objective, current, evaluations, runner, lambda: clock() - c0 < budget)
            below = "" if eligible else (f" (the current object's minReplicas {current.setting.min_replicas} is "
                                         f"below --min-replicas-floor {prepared.min_replicas_floor})")
            raise InputError(f"no setting met {objective.option} {objective.limit:g} on the tuning part "
                             f"({len(evaluations) + 1} tried{below}); "
                             f"{_closest([current, *evaluations], objective, prepared)}", field=objective.option)
        if prepared.held_out is not None:
            current.held_out = runner.map([(None, "held_out")])[0].figures
        # the user's object, when it met the objective on both parts, is what the walk ends with once the budget is over
        fallback = current if (eligible and current.complete and objective.met(current.in_sample)
                               and current.held_out is not None
                               and objective.met(current.held_out, HELD_OUT_SLACK)) else None
        while True:
            if fallback is not None and clock() - c0 >= budget:
                checked.append(fallback)
                return finish(fallback)
            group = _ranked(everyone, objective, checked)[:batch]
            bound = round(group[-1].in_sample.pod_hours, 1) + 0.05 if group else math.inf
            lazy = sorted(_unique(e for e in evaluations if e.in_sample.stopped == COSTLIER
                                  and e.in_sample.pod_hours <= bound), key=lambda e: e.in_sample.pod_hours)[:batch]
            if lazy:  # they could rank before the group: replay them to the end first
                for e, out in zip(lazy, runner.map([(e.setting, "tuning") for e in lazy])):
                    _set(evaluations, e.setting, in_sample=out.figures)
                continue
            if not group:
                break
            if prepared.held_out is None:
                return group[0], 0, time.monotonic() - t0
            todo = [e for e in group if e.held_out is None]
            for e, out in zip(todo, runner.map([(e.setting, "held_out") for e in todo])):
                _set(evaluations, e.setting, held_out=out.figures)
            checked += group
            for e in group:
                if objective.met(e.held_out, HELD_OUT_SLACK):
                    return finish(e)
        held, derived = _derive_robust(prepared, objective, everyone, evaluations, checked, runner, peaks,
                                       lambda: clock() - c0 < budget)
        if held is not None:
            return finish(held)
    more = f", and {derived} more robust ones derived from the closest" if derived else ""
    raise InputError(f"the objective held only in-sample: none of the {len(checked)} settings that met "
                     f"{objective.option} {objective.limit:g} on the tuning part (the whole in-sample frontier{more}) "
                     f"stayed within {HELD_OUT_SLACK:g}x it on the held-out part; "
                     f"{_closest(checked, objective, prepared, 'held_out')} held out",
                     field=objective.option)


def _derive_robust(prepared: Prepared, objective: Objective, everyone: list[Evaluation],
                   evaluations: list[Evaluation], checked: list[Evaluation], runner: _Runner,
                   peaks: Sequence[windows.Peak], within: Callable[[], bool]) -> tuple[Evaluation | None, int]:
    """When every in-sample winner missed on the held-out part (``check_held_out``): more robust settings derived
    from the cheapest checked and then from the closest so far (``robust_variants``), round after round while
    ``within()``, each replayed on the tuning part and, when it met the objective there, on the held-out part. The
    derived ones are appended to ``evaluations`` and ``everyone``, those replayed on the held-out part to ``checked``.
    Returns the cheapest that held out in the first round where one did (None: none did) and how many were derived."""
    derived = 0
    bases = [min(checked, key=rank_key)]  # the first round also from the cheapest, then from the closest so far
    used: set[Setting] = set()
    while within():
        tried = {e.setting for e in everyone}
        closest = [e for e in sorted(checked, key=lambda e: (objective.value(e.held_out), rank_key(e)))
                   if e.setting not in used][:1]
        variants = []
        for base in _unique(bases + closest):
            used.add(base.setting)
            # twice the steps down when the base missed by more than twice what the check allows
            far = objective.value(base.held_out) > 2 * HELD_OUT_SLACK * objective.limit
            steps = tuple(2 * k for k in ROBUST_TARGET_STEPS) if far else ROBUST_TARGET_STEPS
            variants += [(s, how) for s, how in robust_variants(prepared, base, peaks, steps) if s not in tried]
            tried |= {s for s, _ in variants}
        bases = []
        if not variants:
            if closest:
                continue
            break
        number = max((e.number for e in everyone), default=-1) + 1
        new = [Evaluation(number + i, s, out.figures, episodes=out.episodes, origin=how,
                          derived_by=Derived.ROBUST)
               for i, ((s, how), out) in enumerate(zip(variants, runner.map([(s, "tuning") for s, _ in variants])))]
        evaluations += new
        everyone += new
        derived += len(new)
        met = sorted((e for e in new if objective.met(e.in_sample)), key=rank_key)
        for e, out in zip(met, runner.map([(e.setting, "held_out") for e in met])):
            e.held_out = out.figures
        checked += met
        held = [e for e in met if objective.met(e.held_out, HELD_OUT_SLACK)]
        if held:
            return held[0], derived
    return None, derived


def _line_key(s: Setting) -> Setting:
    """What a setting is besides its target (and the max and window floors that follow the target): settings
    with the same key lie on one line, where a higher target costs fewer pod-hours and overloads more."""
    return replace(s, target=0.0, max_replicas=0, schedules=tuple(replace(w, min_replicas=0) for w in s.schedules))


def _between(p: Prepared, objective: Objective, passed: Evaluation, everyone: list[Evaluation],
             evaluations: list[Evaluation], checked: list[Evaluation], runner: "_Runner", batch: int,
             within: Callable[[], bool]) -> Evaluation:
    """The held-out check found ``passed``, and a cheaper setting on its line (``_line_key``; a higher target) met
    the objective in-sample but missed it on the held-out part: the targets between the two were maybe never
    tried (a search cut short by its budget bisects coarsely; a derived setting lowers the target by whole steps).
    Bisect them, ``batch`` at a time while ``within()``: each is replayed on the tuning part (it must meet the
    objective there) and on the held-out part, exactly as the check's other candidates, and the cheapest on both
    parts together (``_both_parts_key``) that meets it on both is returned (``passed`` when none does or no such setting missed). The settings replayed
    are appended to ``evaluations``, ``everyone`` and (those checked on the held-out part) ``checked``; their
    ``origin`` says so."""
    key, lo = _line_key(passed.setting), passed.setting.target
    missed = [e for e in checked if e.held_out is not None and not objective.met(e.held_out, HELD_OUT_SLACK)
              and _line_key(e.setting) == key and e.setting.target > lo]
    if not missed or p.held_out is None:
        return passed
    nearest = min(missed, key=lambda e: e.setting.target)

    def fails(e: Evaluation) -> bool:  # known to miss on either part
        return ((e.complete or e.in_sample.stopped == OVER_LIMIT) and not objective.met(e.in_sample)) or (
            e.held_out is not None and not objective.met(e.held_out, HELD_OUT_SLACK))

    hi = min(e.setting.target for e in everyone if _line_key(e.setting) == key and e.setting.target > lo and fails(e))
    name, grid = _line(p)
    targets = [float(t) for t in grid] if name == "target" else [round(p.kind.current * f, 1) for f in grid]
    found = passed

    while within():
        inside = [t for t in targets if lo < t < hi]
        if not inside:
            break
        k = min(batch, len(inside))
        points = sorted({inside[(len(inside) * (j + 1)) // (k + 1)] for j in range(k)})
        new = _replay_both(objective, [(replace(passed.setting, target=t), f"{_label(passed)} with its target raised to "
                                        f"{t:g} (below {_label(nearest)}, which missed on the held-out part)")
                                       for t in points], Derived.BETWEEN, everyone, evaluations, checked, runner)
        for e in new:
            if _holds(objective, e):
                lo = max(lo, e.setting.target)
                found = min(found, e, key=_both_parts_key)
        hi = min([hi] + [e.setting.target for e in new if e.setting.target > lo])
    return found


def _replay_both(objective: Objective, items: list[tuple[Setting, str]], derived_by: Derived,
                 everyone: list[Evaluation], evaluations: list[Evaluation], checked: list[Evaluation],
                 runner: "_Runner") -> list[Evaluation]:
    """Each setting of ``items`` (with how it was derived: its ``origin``) as an evaluation: the one in ``everyone``
    when it was replayed already, else a new one (``derived_by``) replayed on the tuning part to its end; then each
    that met the objective there and was not checked yet is replayed on the held-out part, as the check's other
    candidates are. The new ones are appended to ``evaluations`` and ``everyone``, those checked to ``checked``."""
    known = {e.setting: e for e in everyone}
    todo = list(dict.fromkeys(s for s, _ in items if s not in known))
    number = max(e.number for e in everyone) + 1
    origin = dict(reversed(items))  # the first origin given for a setting
    fresh = [Evaluation(number + i, s, out.figures, episodes=out.episodes, origin=origin[s], derived_by=derived_by)
             for i, (s, out) in enumerate(zip(todo, runner.map([(s, "tuning") for s in todo])))]
    evaluations += fresh
    everyone += fresh
    known.update((e.setting, e) for e in fresh)
    new = [known[s] for s, _ in items]
    held_out = [e for e in _unique(new) if e.held_out is None and e.complete and objective.met(e.in_sample)]
    for e, out in zip(held_out, runner.map([(e.setting, "held_out") for e in held_out])):
        _set(evaluations, e.setting, held_out=out.figures)
    checked += [e for e in held_out if e not in checked]
    return new


def _holds(objective: Objective, e: Evaluation) -> bool:
    """``e`` met the objective on the tuning part and within ``HELD_OUT_SLACK`` x the limit on the held-out part."""
    return e.held_out is not None and objective.met(e.in_sample) and objective.met(e.held_out, HELD_OUT_SLACK)


def _label(e: Evaluation) -> str:
    """How ``origin`` texts name an evaluation."""
    return f"trial {e.number}" if e.number >= 0 else "the current object"


def _lowest_target(p: Prepared) -> float:
    """The lowest target the search tries: ``space.TARGET_PERCENT``'s for a Utilization target, else the current
    value times ``space.TARGET_FACTOR``'s lowest."""
    return space.TARGET_PERCENT[0] if p.kind.type == "Utilization" else p.kind.current * space.TARGET_FACTOR[0]


def _lowered(p: Prepared, target: float, steps: Sequence[int]) -> list[tuple[int, float]]:
    """``target`` lowered by each of ``steps`` (points of a Utilization target, else percent of the value), as
    (step, target) pairs, as long as it stays at or above ``_lowest_target`` (unrounded: ``_rounded``)."""
    util, lowest = p.kind.type == "Utilization", _lowest_target(p)
    out = []
    for k in steps:
        t = target - k if util else target / (1 + k / 100)
        if t < lowest:
            break
        out.append((k, t))
    return out


def _rounded(p: Prepared, target: float) -> float:
    """A target as a setting carries it: a float for a Utilization target, else rounded to 0.1."""
    return float(target) if p.kind.type == "Utilization" else round(target, 1)


def _lower_floor(p: Prepared, objective: Objective, passed: Evaluation, everyone: list[Evaluation],
                 evaluations: list[Evaluation], checked: list[Evaluation], runner: "_Runner", batch: int,
                 within: Callable[[], bool]) -> Evaluation:
    """The held-out check found ``passed`` (the cheapest that holds, ``_between`` done): try its floor one lower.
    The search may never have: on tuning days that sit at minReplicas (quiet days before a burst on the held-out
    day) its settings with a low floor were also given a max for the tuning part's peak, and all missed on the
    held-out part, where the walk went on up to a higher floor. ``passed`` with ``minReplicas`` one lower is tried
    at its target, then lowered by ``ROBUST_TARGET_STEPS`` (more headroom per pod for the longer way up from fewer
    pods), ``batch`` at a time while ``within()``, each replayed on both parts (``_replay_both``); the highest
    target that holds is bisected up to the lowest that missed (``_between``), and kept when it is cheaper on both
    parts together (``_both_parts_key``); then the next floor down, to the floor a user keeps
    (``Prepared.min_replicas_floor``, 1 by default). Returns the cheapest on both parts that
    holds (``passed`` when no lower floor is cheaper). The settings replayed are appended as in ``_between``; their
    ``origin`` says so."""
    if p.held_out is None:
        return passed
    best = passed
    while best.setting.min_replicas > p.min_replicas_floor and within():
        s, floor = best.setting, best.setting.min_replicas - 1
        targets = [s.target] + [_rounded(p, t) for _, t in _lowered(p, s.target, ROBUST_TARGET_STEPS)]
        held = None
        for i in range(0, len(targets), batch):
            if not within():
                break
            new = _replay_both(objective, [(replace(s, min_replicas=floor, target=t), f"{_label(best)} with minReplicas "
                                            f"{floor}" + ("" if t == s.target else f" and its target lowered to {t:g}"))
                                           for t in targets[i:i + batch]], Derived.FLOOR,
                               everyone, evaluations, checked, runner)
            held = next((e for e in new if _holds(objective, e)), None)
            if held is not None:
                break
        if held is None:
            break
        held = _between(p, objective, held, everyone, evaluations, checked, runner, batch, within)
        if _both_parts_key(held) >= _both_parts_key(best):
            break
        best = held
    return best


def _both_parts_key(e: Evaluation) -> tuple:
    """``rank_key`` of a setting checked on both parts, by its pod-hours on both: when the tuning days cost the same
    at either target (flat at ``minReplicas``), the held-out day tells which is cheaper."""
    held_out = e.held_out.pod_hours if e.held_out is not None else math.inf
    return (round(e.in_sample.pod_hours + held_out, 1), *rank_key(e))


def robust_variants(p: Prepared, base: Evaluation, peaks: Sequence[windows.Peak] = (),
                    steps: Sequence[int] = ROBUST_TARGET_STEPS) -> list[tuple[Setting, str]]:
    """Settings more robust than ``base``'s to days unlike the ones tuned on, each with how it was derived: its
    target lowered by ``steps`` (points, or percent of a factor; more headroom per pod; the max kept at least the pods the tuning
    part's peak needs there x 1.5), twice the max (up to twice what the peak needs at the lowest target), each source
    section's robust value (``space.TUNING``: prediction at its 0.95 quantile, saturation on, or at its largest demand
    factor when it is on), the schedule windows of ``peaks`` at 1.2 x their demand, a 900 % scale-up."""
    s = base.setting
    util = p.kind.type == "Utilization"
    lo = _lowest_target(p)
    name = _label(base)
    out: list[tuple[Setting, str]] = []

    def needed(target: float) -> int:
        return p.needed_per_target(target) if p.needed_per_target else s.max_replicas

    for k, target in _lowered(p, s.target, steps):
        max_r = max(s.max_replicas, math.ceil(needed(target) * 1.5), s.min_replicas + 1)
        # a window's floor serves the same demand at the lower target: more pods, as 1 / target
        floors = tuple(replace(w, min_replicas=min(max_r, math.ceil(w.min_replicas * s.target / target)))
                       for w in s.schedules)
        out.append((replace(s, target=_rounded(p, target), max_replicas=max_r, schedules=floors),
                    f"{name} with its target lowered by {k}{' points' if util else ' %'}"))
    # at most twice what the tuning part's peak needs at the lowest target searched (or the current max)
    cap = max(p.autoscaler.hpa.max_replicas, 2 * needed(lo), s.min_replicas + 1)
    if s.max_replicas * 2 <= cap:
        out.append((replace(s, max_replicas=s.max_replicas * 2), f"{name} with twice its max"))
    # the user's own max: the pods they allow when a day needs more than the tuning part's peak did
    own = p.autoscaler.hpa.max_replicas
    if s.max_replicas < own and own != s.max_replicas * 2:
        out.append((replace(s, max_replicas=own), f"{name} with the current object's max ({own})"))
    for section in p.sources:
        robust = _robust(s, section)
        if robust is not None:
            out.append((robust, f"{name} with {section} "
                                f"{space.TUNING[section].robust_label.format(**robust.source(section))}"))
    if p.can_schedule and peaks and not s.schedules:
        found = _windows(p, peaks, 1.2, s.target, s.min_replicas, s.max_replicas)
        if found:
            out.append((replace(s, schedules=found), f"{name} with the schedule windows of the recurring peaks"))
    if s.scale_up_percent < space.SCALE_UP_PERCENTS[-1]:
        out.append((replace(s, scale_up_percent=space.SCALE_UP_PERCENTS[-1]),
                    f"{name} with a {space.SCALE_UP_PERCENTS[-1]} % scale-up"))
    return out


def _robust(s: Setting, name: str) -> Setting | None:
    """``s`` with the source section ``name`` at its robust value (``space.Robust``); None when that
    is ``s``."""
    tuning = space.TUNING[name]
    rule = tuning.robust
    field_ = next(f for f in tuning.fields if f.name == rule.field)
    values = s.source(name)
    if values is None:
        default = space.defaults(name)[rule.field]
        return s.with_source(name, **{rule.field: default if rule.least is None else max(rule.least, default)})
    least = field_.high if rule.least is None else rule.least
    value = min(field_.high, max(values[rule.field] + rule.step, least))
    return None if value == values[rule.field] else s.with_source(name, **{rule.field: value})


def _complete_closest(objective: Objective, current: Evaluation, evaluations: list[Evaluation], runner: _Runner,
                      within: Callable[[], bool] = lambda: True) -> None:
    """Replay to their end the settings stopped over the limit that could come closer to it than every setting
    replayed to its end (the least of what they reached first), so that the refusal names the closest one; while
    ``within()`` (the check's budget: past it the refusal names the closest replayed to its end so far)."""
    best = min(objective.value(e.in_sample) for e in [current, *evaluations] if e.complete)
    for e in sorted(_unique(e for e in evaluations if e.in_sample.stopped),
                    key=lambda e: objective.at_least(e.in_sample, current.in_sample)):
        if objective.at_least(e.in_sample, current.in_sample) >= best or not within():
            break
        _set(evaluations, e.setting, in_sample=runner.map([(e.setting, "tuning")])[0].figures)
        best = min(best, objective.value(e.in_sample))


def _ranked(everyone: list[Evaluation], objective: Objective, checked: list[Evaluation]) -> list[Evaluation]:
    """Settings replayed to the end that met the objective in-sample, one per setting, cheapest first,
    those already checked left out."""
    done = {e.setting for e in checked}
    feasible = sorted((e for e in everyone if e.complete and objective.met(e.in_sample)), key=rank_key)
    return [e for e in _unique(feasible) if e.setting not in done]


def _unique(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    out, seen = [], set()
    for e in evaluations:
        if e.setting not in seen:
            seen.add(e.setting)
            out.append(e)
    return out


def _set(evaluations: list[Evaluation], s: Setting, **figures: Figures) -> None:
    """Give every evaluation of the setting ``s`` the figures (``in_sample=`` or ``held_out=``)."""
    for e in evaluations:
        if e.setting == s:
            for k, v in figures.items():
                setattr(e, k, v)


def tune(prepared: Prepared, objective: Objective, *, trials: int = 200, timeout: float = DEFAULT_TIMEOUT, jobs: int = 1,
         seed: int = 0, progress: Callable[[int, int, float], None] | None = None,
         clock: Callable[[], float] = time.monotonic) -> TuneResult:
    """Search, then the held-out check (see ``search`` and ``check_held_out``)."""
    s = _Search(replace(prepared, held_out=None), objective, trials, timeout, jobs, seed, progress, clock)
    current, evaluations = s.run()
    searched = s.elapsed()
    stopped_costlier = sum(1 for e in evaluations if e.in_sample.stopped == COSTLIER)
    found = len(evaluations)
    best, tried, checked = check_held_out(prepared, objective, current, evaluations, jobs=jobs,
                                          budget=timeout * ROBUST_SHARE, clock=clock, peaks=s.peaks,
                                          between_budget=timeout * BETWEEN_SHARE, floor_budget=timeout * FLOOR_SHARE)
    notes = []
    completed = stopped_costlier - sum(1 for e in evaluations[:found] if e.in_sample.stopped == COSTLIER)
    if completed:
        notes.append(f"{completed} setting(s) stopped early as costlier were replayed to the end for the held-out check")
    # the floor step's settings, and the targets its _between bisected, come after its first one
    first_floor = next((i for i, e in enumerate(evaluations) if i >= found and e.derived_by is Derived.FLOOR),
                       len(evaluations))
    lowered = any(e is best for e in evaluations[first_floor:])
    derived = sum(1 for e in evaluations[found:] if e.derived_by is Derived.ROBUST)
    between = sum(1 for e in evaluations[found:first_floor] if e.derived_by is Derived.BETWEEN)
    if derived:
        notes.append(f"every setting the search found that met the objective in-sample missed it on the held-out part: "
                     f"{derived} more robust one(s) were derived from the cheapest and the closest of them" +
                     ("" if best.derived_by is Derived.BETWEEN or lowered else f"; the recommendation is {best.origin}"))
    walked = sum(1 for e in _unique([current, *evaluations[:found]]) if e.held_out is not None and e.complete
                 and objective.met(e.in_sample) and not objective.met(e.held_out, HELD_OUT_SLACK))
    if not derived and walked:
        refined = best.derived_by is not None  # by _between or _lower_floor: the next notes say how
        notes.append(f"the {walked} cheaper in-sample setting(s) missed the objective on the held-out part; "
                     + ("the walk stopped at the cheapest that met it on both, refined below" if refined
                        else "the recommendation is the cheapest that met it on both"))
    if between:
        notes.append(f"{between} target(s) between the cheapest setting that held out and a cheaper one on its line "
                     f"that missed there were replayed on both parts; " +
                     ("its floor was then lowered (next note)" if lowered else f"the recommendation is {best.origin}"
                      if best.derived_by is Derived.BETWEEN else "none that held out was cheaper"))
    floors = sum(1 for e in evaluations[first_floor:] if e.derived_by is Derived.FLOOR)
    if floors:
        notes.append(f"{floors} setting(s) with a floor (minReplicas) lower than the cheapest that held out were "
                     f"replayed on both parts; " + (f"the recommendation is {best.origin}" if lowered
                                                    else "none that held out was cheaper"))
    if best is current:
        notes.append("the current object is the cheapest setting that met the objective on both parts: it is kept as it is")
    if s.lost or s.restarts:
        notes.append(f"{s.lost} replay(s) were lost with their worker process (killed from outside); the workers were "
                     f"started anew {s.restarts} time(s)" + (" and then replaced by tune's own process"
                                                              if s.restarts > POOL_RESTARTS else ""))
    if s.cut:
        notes.append(f"{s.cut} replay(s) still running {DRAIN_SHARE:.0%} past the --timeout budget were stopped and "
                     "left out")
    return TuneResult(objective=objective, evaluations=evaluations, current=current, recommended=best,
                      manifest=prepared.base if best is current else prepared.manifest(best.setting),
                      frontier=frontier(evaluations, objective), search_seconds=searched, check_seconds=checked,
                      held_out_tried=tried, notes=notes, peaks=s.peaks)
