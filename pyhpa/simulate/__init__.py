"""``pyhpa simulate``: replay a load trace through the exact HPA decision core.

``run_simulation`` parses the inputs once (HPA manifests, the target Deployment or
StatefulSet, the trace CSV, the workload profile), runs one simulated cluster per HPA on
the same load, and returns a ``Simulation``; ``pyhpa.simulate.report`` writes
timeline.csv, summary.json and plot.png. With no HPA, target and trace it runs the
bundled example: the php-apache HPA of the Kubernetes walkthrough on two days of the
NASA 1995 web trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence

from ..adapters.autoscaler import effective_config, find_autoscaler, read_autoscaler
from ..adapters.errors import InputError
from ..adapters.metric_types import REGISTRY, RESOURCE_TYPES
from ..adapters.objects import object_label
from ..adapters.promql import OFFLINE_SERVER
from ..adapters.snapshot import read_document
from ..core import HPA, ControllerConfig, MetricError
from ..core.calculator import pod_requests, utilization_ratio
from ..core.model import LIMIT, UTILIZATION
from .cluster import Cluster, History
from .compiled import CompiledCluster
from .metrics import columns_needed, metric_views
from .profile import MetricSource, Profile, load_profile, metric_source
from .report import summarize
from .target import Target, load_target
from .trace import Trace, iso, load_trace, parse_outages, time_bound

__all__ = ["BUNDLED", "Autoscaler", "Load", "Run", "Settings", "Simulation", "WorkloadFiles", "bundled_path", "check_metric_columns", "check_settings", "display_path",
           "input_files", "request_warnings", "require_inputs", "load_autoscaler",
           "read_load", "read_workload", "replay", "run_simulation"]

#: The bundled example (files under pyhpa/data/).
BUNDLED = {
    "hpa": "examples/php-apache-hpa.yaml",
    "target": "examples/php-apache.yaml",
    "profile": "examples/php-apache-profile.yaml",
    "trace": "traces/nasa_http_1995-07-12_13_per_minute.csv",
    "column": "requests_per_second",
}


def bundled_path(key: str) -> Path:
    """Path of a bundled example file (``hpa``, ``target``, ``profile``, ``trace``)."""
    return Path(str(resources.files("pyhpa") / "data" / BUNDLED[key]))


def display_path(path) -> str:
    """A bundled file as ``pyhpa/data/...`` (the same in every clone and install), others as given."""
    if not path:
        return ""
    data = Path(str(resources.files("pyhpa") / "data")).resolve()
    try:
        return "pyhpa/data/" + Path(str(path)).resolve().relative_to(data).as_posix()
    except ValueError:
        return str(path)


@dataclass(slots=True, frozen=True)
class WorkloadFiles:
    """The inputs of one workload's replay (``input_files``; ``pyhpa simulate``'s and ``pyhpa tune``'s flags of the
    same names): the autoscaler manifests (``hpa``: one or more, each simulated on the same load), the target
    Deployment or StatefulSet, the trace CSV and its load ``column``, and the workload profile (None: the built-in
    defaults). Paths as given, str or Path; nothing is read until ``read_workload`` and ``read_load``."""

    hpa: tuple[str | Path, ...]
    target: str | Path
    trace: str | Path
    column: str
    profile: str | Path | None = None

    def shown(self) -> dict[str, str]:
        """Each input as the outputs name it (keys ``hpa``, ``target``, ``trace``, ``column``, ``profile``): bundled
        files as ``pyhpa/data/...`` (``display_path``), the manifests comma-separated, "" for no profile."""
        return {"hpa": ", ".join(map(display_path, self.hpa)), "target": display_path(self.target),
                "trace": display_path(self.trace), "column": display_path(self.column),
                "profile": display_path(self.profile)}


@dataclass(slots=True, frozen=True)
class Settings:
    """Simulation settings: HPA sync period (s, upstream ``--horizontal-pod-autoscaler-sync-period``),
    seed, controller flags, and the window (s) in which a reversed scale counts as a flap."""

    sync_period_seconds: float = 15.0
    seed: int = 0
    config: ControllerConfig = field(default_factory=ControllerConfig)
    flap_window_seconds: float = 600.0


@dataclass(slots=True)
class Run:
    """One HPA's run: its label (file stem), the finished cluster, the summary figures."""

    label: str
    hpa_file: str
    cluster: Cluster
    summary: dict


@dataclass(slots=True)
class Simulation:
    """All runs over one trace; ``inputs`` says which file each input came from; ``outages`` the
    ``--metrics-outage`` intervals (epoch s)."""

    runs: list[Run]
    trace: Trace
    target: Target
    profile: Profile
    settings: Settings
    inputs: dict[str, str]
    outages: tuple[tuple[float, float], ...] = ()


def run_simulation(
    hpa: Sequence[str | Path] = (),
    target: str | Path | None = None,
    trace: str | Path | None = None,
    column: str | None = None,
    *,
    profile: str | Path | None = None,
    time_column: str | None = None,
    where: Sequence[str] = (),
    start: str | None = None,
    end: str | None = None,
    load_scale: float = 1.0,
    gaps: str = "error",
    metric_columns: Sequence[str] = (),
    metrics_outages: Sequence[str] = (),
    settings: Settings | None = None,
    progress: Callable[[str, float, float], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Simulation:
    """Simulate each HPA in ``hpa`` on the same trace and target.

    ``column`` is the load column (requests/s unless the profile's ``load_unit`` says
    otherwise), multiplied by ``load_scale``; ``metric_columns`` items are
    ``METRIC=COLUMN`` sources for Pods/Object/External metrics (overriding the
    profile's). ``metrics_outages`` items are ``START/END`` intervals (ISO 8601; END may be
    a duration such as ``PT3H``) in which every metrics API call fails. ``progress(label,
    simulated_seconds, total_seconds)`` is called during each run; ``warn(line)`` with each of
    ``request_warnings`` before the runs (legal input that makes every sync fail). Raises InputError for any
    bad input.
    """
    settings = settings or Settings()
    check_settings(settings)
    files = input_files(list(hpa), target, trace, column, profile)
    prof, tgt = read_workload(files, metric_columns)
    hpas = [_load_hpa(f, tgt, settings) for f in files.hpa]
    check_metric_columns(metric_columns, hpas)
    load = read_load(files, hpas, prof, tgt, time_column=time_column, where=where, start=start, end=end,
                     load_scale=load_scale, gaps=gaps, metrics_outages=metrics_outages)
    if warn is not None:
        for h in hpas:
            for line in request_warnings(h, tgt, display_path(files.target)):
                warn(line)
    runs = [replay(h, label, tgt, prof, load, settings, progress) for h, label in zip(hpas, _labels(list(files.hpa)))]
    return Simulation(runs, load.trace, tgt, prof, settings, files.shown(), load.outages)


@dataclass(slots=True)
class Load:
    """The load of one replay: the ``trace`` slice (``--start`` to ``--end``), its load column in requests/s
    (``rps``), the ``--metrics-outage`` intervals (epoch s) and, when an autoscaler has ``spec.prediction``,
    the rows before ``--start`` as the forecaster's ``history``."""

    trace: Trace
    rps: object
    outages: tuple[tuple[float, float], ...]
    history: History | None


def read_workload(files: WorkloadFiles, metric_columns: Sequence[str] = ()) -> tuple[Profile, Target]:
    """The profile (with ``--metric-column`` sources) and the target of ``files``. Raises InputError."""
    prof = _with_metric_columns(load_profile(files.profile or None), metric_columns)
    return prof, load_target(files.target, prof.container)


def read_load(files: WorkloadFiles, hpas: Sequence["Autoscaler"], prof: Profile, tgt: Target, *, time_column: str | None = None,
              where: Sequence[str] = (), start: str | None = None, end: str | None = None, load_scale: float = 1.0,
              gaps: str = "error", metrics_outages: Sequence[str] = (), history: bool | None = None) -> Load:
    """Read the trace as ``pyhpa simulate`` does (rows ``start <= time < end``; the columns ``hpas``' metrics
    read; rows before ``start`` as history when one of them predicts, or when ``history`` is True).
    Raises InputError."""
    extra = tuple(dict.fromkeys(c for h in hpas for c in columns_needed(_views(h, tgt, prof))))
    tr = load_trace(files.trace, files.column, extra_columns=extra, time_column=time_column, where=tuple(where),
                    start=start, end=end, load_scale=load_scale, gaps=gaps)
    tr.report.file = display_path(files.trace)
    outages = parse_outages(metrics_outages, tr)
    for h in hpas:
        check_extent(tr, h, prof, files.profile)
    rps = prof.load_to_rps(tr.values[files.column])
    if history is None:
        history = any(h.hpa.prediction is not None for h in hpas)
    past = _history(files, prof, tr, extra, time_column, tuple(where), start, load_scale) if history else None
    return Load(tr, rps, outages, past)


#: the most HPA syncs, and the most metrics-server scrapes, one replay simulates: about 174 days at upstream's 15 s
#: (a few minutes and a few hundred MB; the syncs are the timeline's rows)
MAX_SYNCS = 1_000_000


def check_extent(trace: Trace, h: "Autoscaler", prof: Profile, profile_file: str | Path | None) -> None:
    """Refuse a replay of more than ``MAX_SYNCS`` syncs or scrapes (the simulated span over ``h``'s sync period, or
    over the profile's ``metric_resolution_seconds``; ``prof`` read from ``profile_file``, None for the built-in
    one) before it starts: InputError naming the period (when it is below a second) or else the trace, with the
    span and what to change."""
    span = trace.end - trace.start
    own = h.own_sync_period
    for what, every, flag, file, obj in (
            ("syncs", h.sync_period_seconds, "spec.syncPeriodSeconds" if own else "--sync-period",
             display_path(h.file) if own else "", h.label if own else ""),
            ("metrics-server scrapes", prof.metric_resolution_seconds, "metric_resolution_seconds",
             display_path(profile_file) or "(built-in profile)", "workload profile")):
        count = span / every
        if count <= MAX_SYNCS:
            continue
        text = (f"{what}: one every {every:g} s over the simulated {_span_text(span)} ({iso(trace.start, trace.tz)} to "
                f"{iso(trace.end, trace.tz)}) is {count:,.0f}; a simulation runs at most {MAX_SYNCS:,}")
        if every < 1:
            raise InputError(f"{text}: a longer period, or a shorter span (--start/--end)", file=file, obj=obj,
                             field=flag)
        raise InputError(f"{text}: a shorter span (--start/--end)", file=trace.report.file)


def _span_text(seconds: float) -> str:
    """A span as people say it: 240 s, 3.0 hours, 2.0 days."""
    if seconds < 3 * 3600:
        return f"{seconds:,.0f} s"
    return f"{seconds / 3600:,.1f} hours" if seconds < 3 * 86400 else f"{seconds / 86400:,.1f} days"


def replay(h: "Autoscaler", label: str, tgt: Target, prof: Profile, load: Load, settings: Settings,
           progress: Callable[[str, float, float], None] | None = None,
           stop: Callable[[Cluster], bool] | None = None) -> Run:
    """One autoscaler on one load: the simulated cluster run to the end and its summary (``Run``).
    ``stop(cluster)``, checked after each sync, may end the run early (``Cluster.run``): the summary then covers
    the span simulated and ``run.cluster.stopped`` is True."""
    tr = load.trace
    f = display_path(h.file)
    # compiled where it covers the autoscaler (``pyhpa.simulate.compiled``)
    cluster = CompiledCluster(h.hpa, tgt, prof, h.config, tr.times, load.rps, tr.values, tr.start, tr.end,
                              h.sync_period_seconds, settings.seed, load.outages, history=load.history)
    total = tr.end - tr.start
    try:
        cluster.run(None if progress is None else (lambda s, lab=label: progress(lab, s, total)), stop)
    except InputError as err:  # what the HPA did with the load (more pods than the simulator runs)
        raise err.at(file=f, obj=h.label) from None
    return Run(label, f, cluster, summarize(label, f, cluster, tr, settings))


def _history(files: WorkloadFiles, prof: Profile, tr: Trace, extra: tuple, time_column, where: tuple, start,
             load_scale: float) -> History | None:
    """The trace rows before ``--start`` (the forecaster's history; gaps are left as gaps)."""
    if start is None:
        return None
    lo = time_bound(start, tr, "--start")
    full = load_trace(files.trace, files.column, extra_columns=extra, time_column=time_column, where=where,
                      load_scale=load_scale, gaps="hold")
    keep = full.times < lo
    if not keep.any():
        return None
    values = {c: v[keep] for c, v in full.values.items()}
    return History(times=full.times[keep], rps=prof.load_to_rps(values[files.column]), columns=values)


#: the seeds a simulation takes (``--seed``): numpy's and Optuna's samplers take 0 to 2^32 - 1
MAX_SEED = 2**32 - 1


def check_settings(s: Settings) -> None:
    """The flags of ``pyhpa simulate`` and ``pyhpa tune``: InputError naming the first that is out of range."""
    if not 0 <= s.seed <= MAX_SEED:
        raise InputError(f"must be from 0 to {MAX_SEED:,}, got {s.seed:,}", field="--seed")
    if not s.sync_period_seconds > 0:
        raise InputError(f"must be > 0, got {s.sync_period_seconds!r}", field="--sync-period")
    if not s.flap_window_seconds >= 0:
        raise InputError(f"must be >= 0, got {s.flap_window_seconds!r}", field="--flap-window")
    c = s.config
    for name, value in (("--tolerance", c.tolerance), ("--downscale-stabilization", c.downscale_stabilization_window_seconds),
                        ("--cpu-initialization-period", c.cpu_initialization_period_seconds),
                        ("--initial-readiness-delay", c.initial_readiness_delay_seconds)):
        if not value >= 0:
            raise InputError(f"must be >= 0, got {value!r}", field=name)


def input_files(hpa: Sequence[str | Path], target, trace, column, profile) -> WorkloadFiles:
    """The files to read (``--hpa``, ``--target``, ``--trace``, ``--column``, ``--profile``): all given, or (none
    given) the bundled example. Raises InputError naming the flags missing."""
    if not hpa and target is None and trace is None:
        return WorkloadFiles((bundled_path("hpa"),), bundled_path("target"), bundled_path("trace"),
                             column or BUNDLED["column"], profile or bundled_path("profile"))
    require_inputs("simulate", {"--hpa": hpa, "--target": target, "--trace": trace, "--column": column},
                   "or none of --hpa, --target, --trace for the bundled example")
    return WorkloadFiles(tuple(hpa), target, trace, column, profile or None)


def require_inputs(command: str, given: dict, otherwise: str) -> None:
    """The inputs of a replay come together (``given``: flag -> value, all four of ``--hpa``, ``--target``,
    ``--trace``, ``--column``): InputError naming the missing flags and the ones given, ``otherwise`` saying what
    else ``command`` takes."""
    missing = [flag for flag, value in given.items() if not value]
    if missing:
        shown = ", ".join(flag for flag, value in given.items() if value) or "none"
        raise InputError(f"missing: {command} needs {', '.join(list(given)[:-1])} and {list(given)[-1]} together "
                         f"(given: {shown}), {otherwise}", field=", ".join(missing))


def _named_metric(metric_type: str) -> bool:
    """Whether a metric of ``metric_type`` is named and fed by a trace column (Pods, Object, External): an
    autoscaling/v2 type (``pyhpa.adapters.metric_types``) that is no resource of the pods."""
    t = REGISTRY.get(metric_type)
    return t is not None and not t.resource and t.extension is None


def check_metric_columns(items: Sequence[str], hpas: Sequence["Autoscaler"]) -> None:
    """Each ``--metric-column METRIC=COLUMN`` must feed a metric an autoscaler has (a Pods, Object or External metric
    named METRIC): InputError naming the flag otherwise, instead of a column nobody reads. (Its COLUMN is then read,
    and a missing one refused, by the trace loader.)"""
    names = sorted({m.name for h in hpas for m in h.hpa.metrics if _named_metric(m.type)})
    for item in items:
        name = item.partition("=")[0].strip()
        if name not in names:
            theirs = f"theirs: {', '.join(names)}" if names else "they have none"
            raise InputError(f"{item!r}: no autoscaler has a Pods, Object or External metric {name!r} ({theirs}; "
                             "Resource metrics follow the load)", field="--metric-column")


def _with_metric_columns(prof: Profile, items: Sequence[str]) -> Profile:
    if not items:
        return prof
    metrics: dict[str, MetricSource] = dict(prof.metrics)
    for item in items:
        name, sep, col = item.partition("=")
        if not sep or not name.strip() or not col.strip():
            raise InputError(f"want METRIC=COLUMN, got {item!r}", field="--metric-column")
        metrics[name.strip()] = metric_source({"column": col.strip()}, "--metric-column")
    return Profile(**{**{k: getattr(prof, k) for k in Profile.__dataclass_fields__}, "metrics": metrics})


@dataclass(slots=True, frozen=True)
class Autoscaler:
    """One ``--hpa`` file read: the core HPA, the controller flags with its own settings applied, its sync
    period (s), the file and ``Kind namespace/name``, and whether the period is the object's own."""

    hpa: HPA
    file: str
    config: ControllerConfig
    sync_period_seconds: float
    label: str
    own_sync_period: bool = False  # the period is the object's spec.syncPeriodSeconds, not --sync-period


def _load_hpa(path, target: Target, settings: Settings) -> Autoscaler:
    """An autoscaling/v2 HPA or a HorizontalAutoscaler file; a HorizontalAutoscaler's own settings
    (``syncPeriodSeconds``, ``tolerance``, ...) override the flags, as in ``pyhpa run``."""
    file = str(path)
    return load_autoscaler(find_autoscaler(read_document(path), file), file, target, settings)


def load_autoscaler(found: dict, file: str, target: Target, settings: Settings) -> Autoscaler:
    """An autoscaling/v2 HPA or HorizontalAutoscaler document (``file`` names it in errors), read as
    ``pyhpa simulate --hpa`` reads it. Raises InputError naming the file and object."""
    try:
        parsed = read_autoscaler(found, scale_to_zero=settings.config.scale_to_zero, prometheus_server=OFFLINE_SERVER)
        _check_ref(parsed.model, parsed.hpa, target)
    except InputError as err:
        raise err.at(file=file, obj=object_label(found)) from None
    own = parsed.settings
    period = own.sync_period_seconds or settings.sync_period_seconds
    return Autoscaler(parsed.hpa, file, effective_config(settings.config, own), period, parsed.label,
                      own.sync_period_seconds is not None)


def request_warnings(h: Autoscaler, target: Target, file: str) -> list[str]:
    """One line per Utilization metric of ``h`` whose target cannot be computed for ``target``'s pods (``file``,
    the target's manifest): a container without the request (or limit, ``utilizationBasis: Limit``) the metric
    divides by, or requests summing to 0. Legal input, which the API server takes: upstream then fails every sync
    with FailedGetResourceMetric (``missing request for cpu in container web``, or ``no metrics returned matched
    known pods``), and so does the replay; the line says so before it starts, naming the file, object, container
    and field. The error is the decision core's own (``pod_requests``, ``utilization_ratio``)."""
    out = []
    pod = target.pod
    for i, m in enumerate(h.hpa.metrics):
        if m.type not in RESOURCE_TYPES or m.target_type != UTILIZATION or pod is None:
            continue
        limits = m.utilization_basis == LIMIT
        try:
            amounts = pod_requests([pod], m.name, m.container, limits, h.config.pod_level_resources)
            utilization_ratio({pod.name: 0}, amounts, m.target_utilization or 1)
            continue
        except MetricError as err:
            reason = str(err).partition(" of Pod ")[0]
        what, own = ("limit", pod.limits) if limits else ("request", pod.requests)
        names = [m.container] if m.container else list(pod.containers)
        missing = [c for c in names if own.get((m.name, c)) is None]
        if not m.container and (pod.pod_level_limits if limits else pod.pod_level_requests):
            container, problem = "", f"the pod-level {m.name} {what} is 0"
        elif missing:
            container, problem = missing[0], f"container {missing[0]} has no {m.name} {what}"
        else:
            container = names[0]
            problem = (f"container {container} {what}s 0 {m.name}" if len(names) == 1 else
                       f"containers {', '.join(names)} {what} 0 {m.name} in all")
        field = f"{target.fields.get(container, 'spec.template.spec')}.resources.{what}s.{m.name}"
        out.append(f"{file}: {target.label}: {field}: {problem}, so the Utilization target of {display_path(h.file)} "
                   f"({h.label}, spec.metrics[{i}]) cannot be computed: every sync will report upstream's "
                   f"FailedGetResourceMetric ({reason})")
    return out


def _check_ref(model, hpa: HPA, target: Target) -> None:
    ref = model.spec.scaleTargetRef
    if (ref.kind, ref.name) != (target.kind, target.name) or hpa.namespace != target.namespace:
        raise InputError(f"scaleTargetRef is {ref.kind} {hpa.namespace}/{ref.name} but --target is {target.label}",
                         field="spec.scaleTargetRef")


def _views(h: Autoscaler, target: Target, prof: Profile):
    try:
        return metric_views(h.hpa, target, prof)
    except InputError as err:
        raise err.at(file=h.file, obj=h.label) from None


def _labels(files: list) -> list[str]:
    labels: list[str] = []
    for f in files:
        base = Path(str(f)).stem or "hpa"
        label, n = base, 2
        while label in labels:
            label, n = f"{base}-{n}", n + 1
        labels.append(label)
    return labels
