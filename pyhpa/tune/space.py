"""The search space of ``pyhpa tune``: one ``Setting`` per point, and the manifest it stands for.

A setting changes only what tune searches: the first metric's target, ``minReplicas``, ``maxReplicas``,
``behavior`` (scale-down stabilization window, scale-up policy) and, unless upstream-only, the source sections the
API has and tune searches (``TUNING``: ``spec.prediction``, ``spec.saturation``; ``Source``) and
schedule windows of its own (``spec.schedules`` floors, ``pyhpa.tune.windows``), added beside the object's.
Everything else in the user's object (other metrics, its own schedules, fallbacks, the object's own settings) is
kept as written.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..adapters.autoscaler import GROUP_VERSION, KIND, V2_API_VERSION, V2_KIND, V2_SPEC_FIELDS
from ..adapters.errors import InputError
from ..adapters.fallback import without_metric_fallbacks
from ..adapters.metric_types import REGISTRY, RESOURCE_TYPES
from ..api import v1alpha1 as api
from ..api.sections import SOURCE_SECTIONS
from ..core import HPA

#: upstream's defaults (autoscaling/v2 without ``behavior``): scale-down window 300 s, scale-up 100 % or 4 pods / 15 s
DEFAULT_SCALE_DOWN_WINDOW = 300
DEFAULT_SCALE_UP_PERCENT = 100
#: the searched ranges
TARGET_PERCENT = (30, 95)        # averageUtilization, percent of request
TARGET_FACTOR = (0.4, 2.0)       # AverageValue/Value: factor on the current value
SCALE_DOWN_WINDOWS = (0, 60, 120, 180, 300, 450, 600)
SCALE_UP_PERCENTS = (100, 200, 400, 900)
#: maxReplicas: these times the pods the tuning part's peak needs at the target. Not less than 1.5: a max at the
#: history's own peak (x 1, x 1.25) saves pod-hours only by capping the peaks, and one day busier than those
#: tuned on pays for it in overload (NASA-HTTP, 13 July 1995: 23 pods at 69 % capped the day's peak, 1.00 % of
#: the next week overloaded against 0.71 % with 29 or 35); the held-out day shows it only when it is the busiest
MAX_HEADROOM = (1.5, 2.0)


@dataclass(frozen=True, slots=True)
class TargetKind:
    """Where the first metric's target lives in the manifest: ``type`` (Utilization, AverageValue, Value),
    the current value (percent, or milli-units of the metric), and whether it is a CPU Resource metric."""

    type: str
    current: float
    cpu: bool


@dataclass(frozen=True, slots=True)
class Window:
    """One ``spec.schedules`` window tune adds: ``name``, ``start`` (5-field cron), ``duration_seconds``,
    ``time_zone`` (IANA name) and ``min_replicas`` (the floor while it is active)."""

    name: str
    start: str
    duration_seconds: int
    time_zone: str
    min_replicas: int

    def manifest(self) -> dict:
        """The ``spec.schedules`` item, written through the API (``pyhpa.api.v1alpha1.ScheduleWindow``)."""
        return api.manifest(api.ScheduleWindow(name=self.name, start=self.start, duration_seconds=self.duration_seconds,
                                               time_zone=self.time_zone, min_replicas=self.min_replicas), "time_zone")

    def label(self) -> str:
        return f"{self.start} ({self.time_zone}) for {self.duration_seconds // 60} min, floor {self.min_replicas}"


#: candidates.csv columns of a setting's windows (several windows: values joined by " | ")
WINDOW_COLUMNS = {"schedule_start": "start", "schedule_duration_seconds": "duration_seconds",
                  "schedule_time_zone": "time_zone", "schedule_min_replicas": "min_replicas"}


# ----- what tune searches of each source section of the API ----------------------------------------------------
@dataclass(frozen=True, slots=True)
class Searched:
    """A field of a source section that ``pyhpa tune`` searches (its snake_case ``name``), from ``low`` to ``high``:
    an integer field in steps of ``step``, else a number rounded to ``digits`` (as suggested, and as written)."""

    name: str
    low: float
    high: float
    step: int | None = None
    digits: int | None = None

    @property
    def integer(self) -> bool:
        return self.step is not None


@dataclass(frozen=True, slots=True)
class Robust:
    """What ``pyhpa tune``'s held-out check tries of a section when every setting missed there: a section that was
    off is turned on at its defaults with ``field`` at least ``least``; one that was on gets ``field`` raised by
    ``step`` and to at least ``least``, at most the top of its range. ``least`` None: off, the defaults as they are;
    on, the top of the range."""

    field: str
    least: float | None = None
    step: float = 0.0


@dataclass(frozen=True, slots=True)
class Tuning:
    """How ``pyhpa tune`` searches a source section and speaks of it:

    - ``fields``: what is searched (``Searched``), in the order the search suggests them (the Optuna parameters are
      the section's name, on or off, then these names: they must differ from one section to another);
    - the search tries the section at its defaults (``{}``) and, when the user's target met the objective, also at
      ``lean`` (values over the defaults; None: no such trial); ``robust`` is what the held-out check tries;
    - texts, each formatted with the section's values: ``label`` (a candidate's label, candidates and notes),
      ``brief`` (after on in the terminal's table), ``robust_label`` (after ``with <name>`` in how the held-out
      check derived a setting), and ``why`` (what the section does, before why recommended.yaml has it or not).
    """

    fields: tuple[Searched, ...]
    label: str
    brief: str
    why: str
    robust: Robust
    robust_label: str
    lean: dict[str, float] | None = None


#: The source sections ``pyhpa tune`` searches (a ``pyhpa.api.sections.SOURCE_SECTIONS`` key each), in the order it
#: suggests them: a source listed here is searched, written and reported by tune with no other change here.
TUNING: dict[str, Tuning] = {
    "prediction": Tuning(
        fields=(Searched("quantile", 0.5, 0.95, digits=3), Searched("lead_seconds", 120, 900, step=60)),
        label="prediction q{quantile:.2f} lead {lead_seconds} s", brief="q{quantile:g} lead {lead_seconds}s",
        why="forecast the metric's total and scale ahead of what repeats (docs/prediction.md)",
        robust=Robust("quantile", least=0.95, step=0.1), robust_label="at its {quantile:g} quantile",
        # the lean end: the default 0.9 quantile 300 s ahead buys headroom the target already keeps on a bursty load;
        # a median-ish quantile a little further than a pod's start-up ahead costs fewer pod-hours and lets the
        # target go higher (the quantiles the search settled on in the tune benchmark's recommendations: 0.55-0.72)
        lean={"quantile": 0.6, "lead_seconds": 240}),
    "saturation": Tuning(
        fields=(Searched("demand_factor", 1.5, 3.0, digits=2),),
        label="saturation x{demand_factor:.2f}", brief="x{demand_factor:g}",
        why="pods pinned at their CPU limit ask for demandFactor x their use in one round (docs/saturation.md)",
        robust=Robust("demand_factor"), robust_label="x{demand_factor:g}"),
}


_ORDER = {name: i for i, name in enumerate(TUNING)}


_DEFAULTS = {name: {f.name: getattr(SOURCE_SECTIONS[name].spec(), f.name) for f in tuning.fields}
             for name, tuning in TUNING.items()}


def defaults(name: str) -> dict[str, float]:
    """The API's defaults of the fields tune searches in the source section ``name`` (``{}`` in the manifest)."""
    return dict(_DEFAULTS[name])


@dataclass(frozen=True, slots=True)
class Source:
    """A source section a setting turns on, ``spec.<name>`` (a ``TUNING`` key), with the ``values`` of the fields
    tune searches there, (field, value) in ``TUNING``'s order (built by ``Setting.with_source``)."""

    name: str
    values: tuple[tuple[str, float], ...]

    def as_dict(self) -> dict[str, float]:
        return dict(self.values)

    def manifest(self) -> dict:
        """The ``spec.<name>`` section, written through the API (every field tune searched: the reader sees the
        setting), each number rounded as searched."""
        fields_ = TUNING[self.name].fields
        struct = SOURCE_SECTIONS[self.name].spec
        values = {f.name: v if f.digits is None else round(v, f.digits) for f, (_, v) in zip(fields_, self.values)}
        return api.manifest(struct(**values), *values)

    def label(self) -> str:
        return TUNING[self.name].label.format(**self.as_dict())


@dataclass(frozen=True, slots=True)
class Setting:
    """One point of the search space.

    ``target``: percent of request for a Utilization target, else milli-units of the metric;
    ``min_replicas``/``max_replicas``: bounds; ``scale_down_window_seconds``: behavior.scaleDown
    stabilization window (s); ``scale_up_percent``: behavior.scaleUp Percent policy per 15 s (with
    upstream's 4 Pods policy beside it); ``sources``: the source sections turned on (``Source``: spec.prediction
    with ``quantile`` and ``lead_seconds``, spec.saturation with ``demand_factor``, ...; in ``TUNING``'s order, one
    each; ``with_source`` adds one); ``schedules``: the windows tune adds to spec.schedules (``Window``; none by
    default).
    """

    target: float
    min_replicas: int
    max_replicas: int
    scale_down_window_seconds: int = DEFAULT_SCALE_DOWN_WINDOW
    scale_up_percent: int = DEFAULT_SCALE_UP_PERCENT
    sources: tuple[Source, ...] = ()
    schedules: tuple[Window, ...] = ()

    def source(self, name: str) -> dict[str, float] | None:
        """The values of the source section ``name`` (None: off)."""
        for s in self.sources:
            if s.name == name:
                return s.as_dict()
        return None

    def on(self, name: str) -> bool:
        return any(s.name == name for s in self.sources)

    def with_source(self, name: str, **values: float) -> "Setting":
        """This setting with the source section ``name`` on: ``values`` over its own values when it is on already,
        else over the API's defaults (``defaults``)."""
        merged = {**(self.source(name) or defaults(name)), **values}
        if merged.keys() != {f.name for f in TUNING[name].fields}:
            raise ValueError(f"{name} searches {[f.name for f in TUNING[name].fields]}, got {sorted(values)}")
        new = Source(name, tuple((f.name, merged[f.name]) for f in TUNING[name].fields))
        rest = [s for s in self.sources if s.name != name]
        return replace(self, sources=tuple(sorted([*rest, new], key=lambda s: _ORDER[s.name])))

    def without_sources(self) -> "Setting":
        return replace(self, sources=())

    def as_dict(self) -> dict:
        """The setting as summary.json writes it: ``columns`` with the windows as a list of dicts."""
        out = self._fields()
        out["schedules"] = [asdict(w) for w in self.schedules]
        return out

    def columns(self) -> dict:
        """The setting as candidates.csv columns: its fields, the windows as ``WINDOW_COLUMNS``."""
        out = self._fields()
        for column, attr in WINDOW_COLUMNS.items():
            out[column] = " | ".join(str(getattr(w, attr)) for w in self.schedules)
        return out

    def _fields(self) -> dict:
        """The fields but the windows, each source section flat: its name (on or off) and its values (the API's
        defaults when off)."""
        out = {"target": self.target, "min_replicas": self.min_replicas, "max_replicas": self.max_replicas,
               "scale_down_window_seconds": self.scale_down_window_seconds, "scale_up_percent": self.scale_up_percent}
        for name in TUNING:
            values = self.source(name)
            out[name] = values is not None
            out.update(values if values is not None else defaults(name))
        return out

    @property
    def extended(self) -> bool:
        return bool(self.sources) or bool(self.schedules)

    def label(self, kind: TargetKind) -> str:
        t = f"{self.target:g} %" if kind.type == "Utilization" else f"{self.target / 1000:g}"
        out = f"target {t}, replicas {self.min_replicas}-{self.max_replicas}"
        if self.scale_down_window_seconds != DEFAULT_SCALE_DOWN_WINDOW or self.scale_up_percent != DEFAULT_SCALE_UP_PERCENT:
            out += f", down window {self.scale_down_window_seconds} s, up {self.scale_up_percent} %"
        for s in self.sources:
            out += f", {s.label()}"
        for w in self.schedules:
            out += f", window {w.label()}"
        return out


def target_kind(doc: dict, hpa: HPA, file: str) -> TargetKind:
    """The first metric's target, or InputError when it has none tune can search."""
    metrics = (doc.get("spec") or {}).get("metrics") or []
    if not metrics:
        raise InputError("has no metrics: tune searches the first metric's target (an HPA without metrics "
                         "scales on CPU 80 %; write it out)", file=file, field="spec.metrics")
    m = hpa.metrics[0]
    cpu = m.type in RESOURCE_TYPES and m.name == "cpu"
    if m.target_type == "Utilization":
        return TargetKind("Utilization", float(m.target_utilization), cpu)
    milli = m.target_average_milli if m.target_type == "AverageValue" else m.target_value_milli
    if not milli:
        raise InputError(f"a {m.target_type} target of {milli!r} cannot be tuned", file=file, field="spec.metrics[0]")
    return TargetKind(m.target_type, float(milli), cpu)


def current_setting(hpa: HPA, kind: TargetKind) -> Setting:
    """The user's own object as a setting (its behavior summarized: tune's table shows it as written)."""
    b = hpa.behavior
    window = DEFAULT_SCALE_DOWN_WINDOW
    up = DEFAULT_SCALE_UP_PERCENT
    if b is not None and b.scale_down is not None and b.scale_down.stabilization_window_seconds is not None:
        window = b.scale_down.stabilization_window_seconds
    if b is not None and b.scale_up is not None:
        pct = [p.value for p in b.scale_up.policies if p.type == "Percent"]
        up = max(pct) if pct else up
    s = Setting(target=kind.current, min_replicas=hpa.min_replicas, max_replicas=hpa.max_replicas,
                scale_down_window_seconds=int(window), scale_up_percent=int(up))
    for name, tuning in TUNING.items():
        spec = getattr(hpa, name)  # the core's spec of the section (None: off)
        if spec is not None:
            s = s.with_source(name, **{f.name: getattr(spec, f.name) if not f.integer else int(getattr(spec, f.name))
                                       for f in tuning.fields})
    return s


def manifest(base: dict, s: Setting, kind: TargetKind, upstream_only: bool, current: bool = False) -> dict:
    """The object ``s`` stands for, built from the user's ``base`` document: a HorizontalPodAutoscaler when
    nothing beyond autoscaling/v2 is left (always with ``upstream_only``), else a HorizontalAutoscaler.
    ``current``: ``s`` is the user's own object (returned unchanged)."""
    if current:
        return copy.deepcopy(base)
    spec = copy.deepcopy(base.get("spec") or {})
    metric = spec["metrics"][0]
    section = metric.get(_target_section(metric.get("type")))
    tgt = section.setdefault("target", {}) if isinstance(section, dict) else {}
    if kind.type == "Utilization":
        tgt["averageUtilization"] = int(round(s.target))
    else:
        tgt["averageValue" if kind.type == "AverageValue" else "value"] = _quantity(s.target)
    spec["minReplicas"] = s.min_replicas
    spec["maxReplicas"] = s.max_replicas
    spec["behavior"] = behavior(s)
    if spec["behavior"] is None:
        del spec["behavior"]
    for name in TUNING:
        spec.pop(name, None)
    for source in s.sources:
        spec[source.name] = source.manifest()
    if s.schedules:
        own = list(spec.get("schedules") or [])
        taken = {w.get("name") for w in own if isinstance(w, dict)}
        for w in s.schedules:
            item = w.manifest()
            while item["name"] in taken:
                item["name"] += "-tune"
            taken.add(item["name"])
            own.append(item)
        spec["schedules"] = own
    if upstream_only:
        spec = {k: v for k, v in spec.items() if k in V2_SPEC_FIELDS}
        spec["metrics"] = without_metric_fallbacks(spec["metrics"])
    v2 = all(k in V2_SPEC_FIELDS for k in spec) and spec["metrics"] == without_metric_fallbacks(spec["metrics"])
    meta = {k: v for k, v in (base.get("metadata") or {}).items() if k in ("name", "namespace", "labels", "annotations")}
    return {"apiVersion": V2_API_VERSION if v2 else GROUP_VERSION, "kind": V2_KIND if v2 else KIND,
            "metadata": meta, "spec": spec}


def _target_section(metric_type: Any) -> str:
    """The field of a ``spec.metrics[]`` item of ``metric_type`` whose ``target`` tune writes: its source's
    (``pyhpa.adapters.metric_types``: autoscaling/v2's types, and the ``Prometheus`` extension, whose
    ``prometheus.target`` is a MetricTarget too); "" for a type none of them is (nothing written)."""
    t = REGISTRY.get(metric_type) if isinstance(metric_type, str) else None
    return t.field if t is not None else ""


def behavior(s: Setting) -> dict | None:
    """``spec.behavior`` for ``s``: None when both directions are upstream's defaults."""
    out = {}
    if s.scale_down_window_seconds != DEFAULT_SCALE_DOWN_WINDOW:
        out["scaleDown"] = {"stabilizationWindowSeconds": s.scale_down_window_seconds}
    if s.scale_up_percent != DEFAULT_SCALE_UP_PERCENT:
        out["scaleUp"] = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": s.scale_up_percent, "periodSeconds": 15},
            {"type": "Pods", "value": 4, "periodSeconds": 15}]}
    return out or None


def _quantity(milli: float) -> str:
    m = max(1, int(round(milli)))
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def replicas_needed(peak_demand_milli: float, per_pod_milli: float) -> int:
    """Pods a peak needs at a per-pod target (at least 1)."""
    return max(1, math.ceil(peak_demand_milli / per_pod_milli)) if per_pod_milli > 0 else 1
