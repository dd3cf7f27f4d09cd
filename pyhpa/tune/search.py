"""Reading tune's inputs, the search (Optuna) and the held-out check.

The window (``--start`` to ``--end``, or the whole trace) is split at ``end - held_out_seconds``: the
part before is tuned on, the part after is the held-out check. ``prepare`` reads each part exactly as
``pyhpa simulate --start A --end B`` would (the rows before each part are the forecaster's history), and
``search`` is handed the tuning part only, so nothing it decides can depend on the held-out rows or on
rows after ``--end``.
"""

from __future__ import annotations

import math
import multiprocessing
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from ..adapters.autoscaler import find_autoscaler
from ..adapters.errors import InputError
from ..adapters.snapshot import read_document
from ..simulate import Autoscaler, Load, Settings, load_autoscaler, read_load, read_workload, replay
from ..simulate.profile import Profile
from ..simulate.target import Target
from ..simulate.trace import iso, load_trace, time_bound
from . import space
from .space import Setting, TargetKind

#: a setting passes the held-out check when its held-out figure is within this many times the limit
#: (one held-out day is a small sample: the issue's own acceptance allows 2x the asked fraction on the next week)
HELD_OUT_SLACK = 2.0
#: least time to tune on (one daily cycle)
MIN_TUNE_SECONDS = 86400.0
#: settings checked on the held-out part, cheapest first, before tune refuses
HELD_OUT_CANDIDATES = 8
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

    def met(self, f: "Figures", slack: float = 1.0) -> bool:
        return self.value(f) <= self.limit * slack + 1e-12


@dataclass(slots=True, frozen=True)
class Figures:
    """One replay's figures (summary.json of ``pyhpa simulate``): pod-hours, overloaded seconds and share of
    time, unserved requests and share of requests, scale events (ups + downs), simulated seconds."""

    pod_hours: float
    overloaded_seconds: float
    overloaded_fraction: float
    unserved_requests: float
    unserved_fraction: float
    scale_events: int
    simulated_seconds: float

    @classmethod
    def from_summary(cls, s: dict) -> "Figures":
        return cls(pod_hours=s["pod_hours"], overloaded_seconds=s["overloaded_seconds"],
                   overloaded_fraction=s["overloaded_fraction"], unserved_requests=s["unserved_requests"],
                   unserved_fraction=s["unserved_fraction"], scale_events=s["scale_ups"] + s["scale_downs"],
                   simulated_seconds=s["simulated_seconds"])


@dataclass(slots=True)
class Evaluation:
    """One setting tried: its trial ``number`` (-1: the user's current object), figures on the tuning part
    (``in_sample``) and, when checked, on the held-out part."""

    number: int
    setting: Setting
    in_sample: Figures
    held_out: Figures | None = None


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
    ``held_out`` parts, the searched ranges (``ranges``) and which extensions the object can take."""

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
    can_predict: bool
    can_saturate: bool
    needed_per_target: Callable[[float], int] | None
    inputs: dict = field(default_factory=dict)

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


# ------------------------------------------------------------------------------------------------ inputs
def prepare(files: dict, *, metric_columns: Sequence[str] = (), time_column: str | None = None,
            where: Sequence[str] = (), start: str | None = None, end: str | None = None, load_scale: float = 1.0,
            gaps: str = "error", settings: Settings | None = None, held_out_seconds: float = 86400.0,
            upstream_only: bool = False) -> Prepared:
    """Read the inputs as ``pyhpa simulate`` does (``files``: ``pyhpa.simulate.input_files``'s keys, one
    ``hpa``) and split the window. Raises InputError: unreadable input, a metric the simulator cannot
    replay, too little history, a flat or empty workload."""
    settings = settings or Settings()
    file = str(files["hpa"][0])
    prof, tgt = read_workload(files, metric_columns)
    base = find_autoscaler(read_document(file), file)
    auto = load_autoscaler(base, file, tgt, settings)
    kind = space.target_kind(base, auto.hpa, file)
    kw = dict(time_column=time_column, where=where, load_scale=load_scale, gaps=gaps)
    # times only: where the window ends, to split it (the values of the held-out rows are not used here)
    window = load_trace(files["trace"], files["column"], time_column=time_column, where=tuple(where), start=start,
                        end=end, load_scale=load_scale, gaps=gaps)
    lo, hi = window.start, window.end
    if not held_out_seconds >= 0:
        raise InputError(f"must be >= 0 seconds, got {held_out_seconds!r}", field="--held-out")
    split = hi - held_out_seconds
    if split - lo < MIN_TUNE_SECONDS:
        raise InputError(f"too little history: {(hi - lo) / 3600:.1f} h from {iso(lo, window.tz)} to "
                         f"{iso(hi, window.tz)}; tune needs at least {MIN_TUNE_SECONDS / 3600:g} h to tune on plus "
                         f"--held-out ({held_out_seconds / 3600:g} h)", file=str(files["trace"]), field="--start/--end")
    cut = _bound_text(split, window)
    tuning = Part(start, cut if held_out_seconds else end,
                  read_load(files, [auto], prof, tgt, start=start, end=cut if held_out_seconds else end, history=True, **kw))
    held = None
    if held_out_seconds:
        held = Part(cut, end, read_load(files, [auto], prof, tgt, start=cut, end=end, history=True, **kw))
    _check_workload(tuning.load, str(files["trace"]), files["column"])
    prepared = Prepared(base=base, file=file, autoscaler=auto, kind=kind, target=tgt, profile=prof, settings=settings,
                        tuning=tuning, held_out=held, upstream_only=upstream_only, can_predict=False,
                        can_saturate=False, needed_per_target=None)
    prepared.needed_per_target = _needed(prepared)
    if not upstream_only:
        probe = space.current_setting(auto.hpa, kind)
        prepared.can_predict = _accepted(prepared, replace(probe, prediction=True, saturation=False))
        prepared.can_saturate = _accepted(prepared, replace(probe, prediction=False, saturation=True))
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
    prof, tgt = p.profile, p.target
    request = tgt.requests.get(("cpu", ""))
    peak_rps = float(np.max(p.tuning.load.rps))
    demand = prof.cpu_baseline_millicores + prof.cpu_millicore_seconds_per_request * peak_rps  # one pod's worth
    work = prof.cpu_millicore_seconds_per_request * peak_rps

    def needed(target: float) -> int:
        per_pod = target / 100.0 * request if p.kind.type == "Utilization" else target
        if not request and p.kind.type == "Utilization":
            return p.autoscaler.hpa.max_replicas
        free = per_pod - prof.cpu_baseline_millicores
        return space.replicas_needed(work if free > 0 else demand, free if free > 0 else per_pod)

    return needed


# ------------------------------------------------------------------------------------------------ evaluation
_STATE: dict = {}


def _evaluate(s: Setting | None, part: str) -> Figures:
    """Replay ``s`` (None: the user's object) on the ``tuning`` or ``held_out`` part (in a worker process:
    the state was inherited at fork)."""
    p: Prepared = _STATE["prepared"]
    auto = p.autoscaler_for(s)
    load = p.tuning.load if part == "tuning" else _STATE["held_out"].load
    run = replay(auto, "candidate", p.target, p.profile, load, p.settings)
    return Figures.from_summary(run.summary)


class _Runner:
    """Runs evaluations in worker processes (``jobs`` > 1) or inline."""

    def __init__(self, prepared: Prepared, jobs: int, held_out: Part | None = None):
        _STATE["prepared"] = prepared
        _STATE["held_out"] = held_out
        self.jobs = max(1, jobs)
        self.pool = None
        if self.jobs > 1:
            self.pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("fork"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        _STATE.clear()
        return False

    def map(self, items: list[tuple[Setting | None, str]]) -> list[Figures]:
        if self.pool is None:
            return [_evaluate(s, part) for s, part in items]
        return list(self.pool.map(_evaluate, *zip(*items)))


# ------------------------------------------------------------------------------------------------ search
def _suggest(trial, p: Prepared) -> Setting:
    lo_t, hi_t = space.TARGET_PERCENT
    if p.kind.type == "Utilization":
        target = float(trial.suggest_int("target", lo_t, hi_t))
    else:
        target = p.kind.current * trial.suggest_float("target_factor", *space.TARGET_FACTOR, log=True)
    base = p.autoscaler.hpa
    min_hi = max(4, 2 * base.min_replicas)
    min_r = trial.suggest_int("min_replicas", 1, min_hi)
    headroom = trial.suggest_categorical("max_headroom", space.MAX_HEADROOM)
    needed = p.needed_per_target(target) if p.needed_per_target else base.max_replicas
    max_r = max(min_r + 1, math.ceil(needed * headroom))
    window = trial.suggest_categorical("scale_down_window_seconds", space.SCALE_DOWN_WINDOWS)
    up = trial.suggest_categorical("scale_up_percent", space.SCALE_UP_PERCENTS)
    s = Setting(target=target, min_replicas=min_r, max_replicas=max_r, scale_down_window_seconds=window,
                scale_up_percent=up)
    if p.can_predict and trial.suggest_categorical("prediction", (False, True)):
        s = replace(s, prediction=True, quantile=round(trial.suggest_float("quantile", *space.QUANTILE), 3),
                    lead_seconds=trial.suggest_int("lead_seconds", *space.LEAD_SECONDS, step=60))
    if p.can_saturate and trial.suggest_categorical("saturation", (False, True)):
        s = replace(s, saturation=True, demand_factor=round(trial.suggest_float("demand_factor", *space.DEMAND_FACTOR), 2))
    return s


def _seeds(p: Prepared) -> list[dict]:
    """The first trials: upstream's HPA at targets 40-90 % with the user's bounds and upstream's behavior
    (the grid a user would try by hand), then the extensions' defaults at 70 and 80 %."""
    base = p.autoscaler.hpa
    out = []
    util = p.kind.type == "Utilization"
    grid = (40, 50, 60, 70, 80, 90) if util else (0.5, 0.7, 1.0, 1.4)
    for t in grid:
        params = {"target": t} if util else {"target_factor": t}
        params.update(min_replicas=min(base.min_replicas, max(4, 2 * base.min_replicas)), max_headroom=1.5,
                      scale_down_window_seconds=space.DEFAULT_SCALE_DOWN_WINDOW,
                      scale_up_percent=space.DEFAULT_SCALE_UP_PERCENT)
        if p.can_predict:
            params["prediction"] = False
        if p.can_saturate:
            params["saturation"] = False
        out.append(params)
    if p.can_predict or p.can_saturate:
        for t in ((70, 80) if util else (1.0, 1.4)):
            params = dict(out[0], **({"target": t} if util else {"target_factor": t}))
            if p.can_predict:
                params.update(prediction=True, quantile=space.DEFAULT_QUANTILE, lead_seconds=space.DEFAULT_LEAD)
            if p.can_saturate:
                params.update(saturation=True, demand_factor=space.DEFAULT_DEMAND_FACTOR)
            out.append(params)
    return out


def search(prepared: Prepared, objective: Objective, *, trials: int = 200, timeout: float = 240.0, jobs: int = 1,
           seed: int = 0, progress: Callable[[int, int, float], None] | None = None,
           clock: Callable[[], float] = time.monotonic) -> tuple[Evaluation, list[Evaluation], float]:
    """Search on the tuning part only: the user's object, then Optuna's TPE (seeded with a grid of upstream
    targets), until ``trials`` settings or ``timeout`` seconds of ``clock`` (wall time; ``time.process_time``
    with ``jobs=1`` budgets CPU time, for a machine shared with other work); ``jobs`` worker processes.
    Returns the user's object's evaluation, every candidate's (trial order) and the seconds of ``clock``.
    ``progress(done, total, elapsed_seconds)`` after each candidate."""
    import optuna

    prepared = replace(prepared, held_out=None)  # by construction: the search cannot reach the held-out rows
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # conditional parameters (prediction's quantile only with prediction on): multivariate TPE by group
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=10, multivariate=True, group=True)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    for params in _seeds(prepared):
        study.enqueue_trial(params, skip_if_exists=True)
    t0 = clock()
    evaluations: list[Evaluation] = []
    seen: dict[Setting, Figures] = {}
    with _Runner(prepared, jobs) as runner:
        current = Evaluation(-1, space.current_setting(prepared.autoscaler.hpa, prepared.kind),
                             runner.map([(None, "tuning")])[0])
        if runner.pool is None:
            _serial(study, prepared, objective, trials, timeout, t0, evaluations, seen, runner, progress, clock)
        else:
            _parallel(study, prepared, objective, trials, timeout, t0, evaluations, seen, runner, progress, clock)
    return current, evaluations, clock() - t0


def _tell(study, trial, objective: Objective, figures: Figures) -> None:
    trial.set_constraint(objective.metric, objective.value(figures) - objective.limit)
    trial.set_user_attr("scale_events", figures.scale_events)
    study.tell(trial, figures.pod_hours)


def _serial(study, p, objective, trials, timeout, t0, evaluations, seen, runner, progress, clock) -> None:
    while len(evaluations) < trials and (not evaluations or clock() - t0 < timeout):
        trial = study.ask()
        s = _suggest(trial, p)
        fig = seen.get(s) or runner.map([(s, "tuning")])[0]
        seen[s] = fig
        _tell(study, trial, objective, fig)
        evaluations.append(Evaluation(trial.number, s, fig))
        if progress:
            progress(len(evaluations), trials, clock() - t0)


def _parallel(study, p, objective, trials, timeout, t0, evaluations, seen, runner, progress, clock) -> None:
    pending = {}
    asked = 0
    while True:
        while len(pending) < runner.jobs and asked < trials and (asked < runner.jobs or clock() - t0 < timeout):
            trial = study.ask()
            s = _suggest(trial, p)
            asked += 1
            pending[runner.pool.submit(_evaluate, s, "tuning")] = (trial, s)
        if not pending:
            return
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for fut in done:
            trial, s = pending.pop(fut)
            fig = fut.result()
            seen[s] = fig
            _tell(study, trial, objective, fig)
            evaluations.append(Evaluation(trial.number, s, fig))
            if progress:
                progress(len(evaluations), trials, clock() - t0)


# ------------------------------------------------------------------------------------------------ selection
def rank_key(e: Evaluation) -> tuple:
    """Least pod-hours (to 0.1 pod-hour), then fewest scale events, then the trial order."""
    return (round(e.in_sample.pod_hours, 1), e.in_sample.scale_events, e.number)


def frontier(evaluations: Sequence[Evaluation], objective: Objective) -> list[Evaluation]:
    """The in-sample Pareto frontier: no other setting has both fewer pod-hours and a lower objective figure."""
    pts = sorted(evaluations, key=lambda e: (e.in_sample.pod_hours, objective.value(e.in_sample)))
    out, best = [], math.inf
    for e in pts:
        v = objective.value(e.in_sample)
        if v < best:
            out.append(e)
            best = v
    return out


def _closest(evaluations: Sequence[Evaluation], objective: Objective, p: Prepared, figures: str = "in_sample") -> str:
    e = min(evaluations, key=lambda e: (objective.value(getattr(e, figures)), getattr(e, figures).pod_hours))
    f = getattr(e, figures)
    return (f"closest: {e.setting.label(p.kind)} ({objective.metric.replace('_', ' ')} {objective.value(f):.4%}, "
            f"{f.pod_hours:.1f} pod-hours)")


def check_held_out(prepared: Prepared, objective: Objective, current: Evaluation, evaluations: list[Evaluation], *,
                   jobs: int = 1) -> tuple[Evaluation, int, float]:
    """Replay the in-sample winners, cheapest first (``rank_key``), on the held-out part until one meets the
    objective there too (within ``HELD_OUT_SLACK`` times the limit); the user's object is replayed there too.
    Returns the recommendation, how many settings were checked and the wall seconds. Raises InputError when
    no setting met the objective in-sample, or none of the ``HELD_OUT_CANDIDATES`` cheapest held out."""
    t0 = time.monotonic()
    feasible = sorted((e for e in [current, *evaluations] if objective.met(e.in_sample)), key=rank_key)
    unique: list[Evaluation] = []
    for e in feasible:
        if all(u.setting != e.setting for u in unique):
            unique.append(e)
    if not unique:
        raise InputError(f"no setting met {objective.option} {objective.limit:g} on the tuning part "
                         f"({len(evaluations) + 1} tried); {_closest([current, *evaluations], objective, prepared)}",
                         field=objective.option)
    if prepared.held_out is None:
        return unique[0], 0, time.monotonic() - t0
    batch = max(1, jobs)
    tried = 0
    with _Runner(prepared, jobs, prepared.held_out) as runner:
        current.held_out = runner.map([(None, "held_out")])[0]
        for i in range(0, min(len(unique), HELD_OUT_CANDIDATES), batch):
            group = unique[i:i + batch]
            todo = [e for e in group if e is not current]
            for e, fig in zip(todo, runner.map([(e.setting, "held_out") for e in todo])):
                for same in evaluations:
                    if same.setting == e.setting:
                        same.held_out = fig
            tried += len(group)
            for e in group:
                if objective.met(e.held_out, HELD_OUT_SLACK):
                    return e, tried, time.monotonic() - t0
    checked = [e for e in unique if e.held_out is not None]
    raise InputError(f"the objective held only in-sample: none of the {tried} cheapest settings that met "
                     f"{objective.option} {objective.limit:g} on the tuning part stayed within {HELD_OUT_SLACK:g}x "
                     f"it on the held-out part; {_closest(checked, objective, prepared, 'held_out')} held out",
                     field=objective.option)


def tune(prepared: Prepared, objective: Objective, *, trials: int = 200, timeout: float = 240.0, jobs: int = 1,
         seed: int = 0, progress: Callable[[int, int, float], None] | None = None,
         clock: Callable[[], float] = time.monotonic) -> TuneResult:
    """Search, then the held-out check (see ``search`` and ``check_held_out``)."""
    current, evaluations, searched = search(prepared, objective, trials=trials, timeout=timeout, jobs=jobs, seed=seed,
                                            progress=progress, clock=clock)
    best, tried, checked = check_held_out(prepared, objective, current, evaluations, jobs=jobs)
    notes = []
    if tried > 1:
        notes.append(f"the {tried - 1} cheaper in-sample setting(s) missed the objective on the held-out part; "
                     "the recommendation is the cheapest that met it on both")
    if best is current:
        notes.append("the current object is the cheapest setting that met the objective on both parts: it is kept as it is")
    return TuneResult(objective=objective, evaluations=evaluations, current=current, recommended=best,
                      manifest=prepared.base if best is current else prepared.manifest(best.setting), frontier=frontier(evaluations, objective),
                      search_seconds=searched, check_seconds=checked, held_out_tried=tried, notes=notes)
