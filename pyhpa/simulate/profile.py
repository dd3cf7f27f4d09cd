"""The workload profile: how trace load becomes resource use, and how pods start.

A profile is a small YAML (or JSON) mapping; every key is optional and has the default
below. Units are in the names: ``_rps`` is requests per second, ``_millicores`` CPU
thousandths of a core, ``_seconds`` seconds, ``_mebibytes`` MiB. docs/profile.md shows
an example of every field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..adapters.errors import InputError
from ..adapters.snapshot import read_document
from .trace import MAX_VALUE

LOAD_UNITS = ("requests_per_second", "requests_per_minute", "cpu_millicores", "cpu_percent")
TRAFFIC_SPREADS = ("even", "imbalanced")
SERVED_SOURCE = "served_requests_per_second"


@dataclass(slots=True, frozen=True)
class MetricSource:
    """Where a Pods, Object or External metric of the HPA gets its values.

    ``source`` is ``served_requests_per_second`` (Pods only: each pod's served requests/s,
    averaged over the metrics-server window) or ``column`` (a trace column, times
    ``scale``). For Pods metrics a column holds the workload total, split over the Ready
    pods like the traffic; for Object and External metrics it is the value itself.
    """

    source: str
    column: str = ""
    scale: float = 1.0


@dataclass(slots=True, frozen=True)
class Profile:
    """A workload profile (all fields optional; defaults fit a small web service).

    Load:
      ``load_unit``: what the trace column (times ``--load-scale``) means:
      ``requests_per_second`` (default), ``requests_per_minute``, ``cpu_millicores`` (CPU
      demand; one "request" is ``cpu_millicore_seconds_per_request`` of work) or
      ``cpu_percent`` (percent of ``cpu_percent_base_millicores``, e.g. a VM's CPU trace).
      ``cpu_percent_base_millicores``: what 100 % means for ``cpu_percent`` (required then).

    Pod capacity and resource use:
      ``pod_capacity_rps`` (20): requests/s one ready pod can serve; further capped at
      what its CPU limit allows. ``cpu_millicore_seconds_per_request`` (50): CPU time per
      request (millicore-seconds = CPU milliseconds). ``cpu_baseline_millicores`` (5): CPU
      of an idle running pod. ``memory_baseline_mebibytes`` (64) and
      ``memory_mebibytes_per_rps`` (0): working set. ``container`` (first container):
      the container that serves and uses this CPU and memory; other containers idle.

    Pod start-up (Pending -> Running -> Ready):
      ``pod_scheduling_seconds`` (1): creation to binding (``status.startTime``).
      ``container_start_seconds`` (4): binding to Running (image pull, container start).
      ``app_startup_seconds`` (5): Running to able to serve; the readinessProbe of the
      target decides when the pod turns Ready. ``startup_cpu_boost_millicores`` (0) extra
      CPU for ``startup_cpu_boost_seconds`` (0) after the container starts.
      ``startup_jitter_fraction`` (0): each pod's three delays are multiplied by a factor
      drawn uniformly from [1-j, 1+j] (seeded).

    Traffic:
      ``traffic_spread``: ``even`` (each Ready pod gets the same share, as kube-proxy
      spreads connections) or ``imbalanced`` (each pod gets a fixed random weight with
      coefficient of variation ``traffic_imbalance_cv``, 0.3, seeded). A pod never serves
      more than its capacity; the rest is unserved.

    Metrics pipeline (metrics-server):
      ``metric_resolution_seconds`` (15): scrape interval (``--metric-resolution``); a
      pod's CPU is the average over the window between its last two scrapes, so a pod
      has no sample until its second scrape. ``metrics_scrape_offset_seconds`` (None:
      drawn from the seed in [0, resolution)): phase of the scrapes against the HPA syncs.
      ``metrics``: HPA metric name -> ``MetricSource`` for Pods, Object, External metrics.
    """

    load_unit: str = "requests_per_second"
    cpu_percent_base_millicores: float | None = None
    pod_capacity_rps: float = 20.0
    cpu_millicore_seconds_per_request: float = 50.0
    cpu_baseline_millicores: float = 5.0
    memory_baseline_mebibytes: float = 64.0
    memory_mebibytes_per_rps: float = 0.0
    container: str = ""
    pod_scheduling_seconds: float = 1.0
    container_start_seconds: float = 4.0
    app_startup_seconds: float = 5.0
    startup_cpu_boost_millicores: float = 0.0
    startup_cpu_boost_seconds: float = 0.0
    startup_jitter_fraction: float = 0.0
    traffic_spread: str = "even"
    traffic_imbalance_cv: float = 0.3
    metric_resolution_seconds: float = 15.0
    metrics_scrape_offset_seconds: float | None = None
    metrics: dict[str, MetricSource] = field(default_factory=dict)

    def load_to_rps(self, value: float) -> float:
        """Requests/s of a trace value (already times ``--load-scale``) in ``load_unit``."""
        unit = self.load_unit
        if unit == "requests_per_second":
            return value
        if unit == "requests_per_minute":
            return value / 60.0
        millicores = value if unit == "cpu_millicores" else value * (self.cpu_percent_base_millicores or 0.0) / 100.0
        return millicores / self.cpu_millicore_seconds_per_request

    def to_dict(self) -> dict:
        """The profile as plain data (for summary.json)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "metrics"}
        out["metrics"] = {k: {"source": v.source, "column": v.column, "scale": v.scale} for k, v in sorted(self.metrics.items())}
        return out


_NUMBER_FIELDS = {f.name for f in fields(Profile)} - {"load_unit", "traffic_spread", "container", "metrics"}
_POSITIVE = {"pod_capacity_rps", "cpu_millicore_seconds_per_request", "metric_resolution_seconds"}
_OPTIONAL = {"cpu_percent_base_millicores", "metrics_scrape_offset_seconds"}


def load_profile(path: str | Path | None) -> Profile:
    """Read a profile file (YAML or JSON); None gives the defaults. Raises InputError."""
    if path is None:
        return Profile()
    doc = read_document(path)
    try:
        return profile_from_dict(doc)
    except InputError as err:
        raise err.at(file=str(path), obj="workload profile") from None


def profile_from_dict(d: Any) -> Profile:
    """A Profile from a mapping: unknown keys, wrong types and impossible values are errors."""
    if d is None:
        return Profile()
    if not isinstance(d, dict):
        raise InputError("a workload profile must be a mapping of field: value")
    known = {f.name for f in fields(Profile)}
    kwargs: dict[str, Any] = {}
    for key, value in d.items():
        if key not in known:
            raise InputError(f"unknown field (known: {', '.join(sorted(known))})", field=str(key))
        kwargs[key] = _field_value(key, value)
    profile = Profile(**kwargs)
    _check(profile)
    return profile


def _field_value(key: str, value: Any) -> Any:
    if key in _NUMBER_FIELDS:
        if value is None and key in _OPTIONAL:
            return None
        return _number(value, key)
    if key == "metrics":
        return _metric_sources(value)
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {value!r}", field=key)
    return value


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"must be a number, got {value!r}", field=key)
    value = float(value)
    if not math.isfinite(value) or not 0 <= value <= MAX_VALUE:
        raise InputError(f"must be a number from 0 to {MAX_VALUE:g}, got {value!r}", field=key)
    if key in _POSITIVE and value == 0:
        raise InputError("must be greater than 0", field=key)
    return value


def _metric_sources(value: Any) -> dict[str, MetricSource]:
    if not isinstance(value, dict):
        raise InputError("must map HPA metric names to {source: served_requests_per_second} or {column: NAME}",
                         field="metrics")
    return {str(name): metric_source(spec, f"metrics.{name}") for name, spec in value.items()}


def metric_source(spec: Any, where: str) -> MetricSource:
    """One ``metrics`` entry: ``{source: served_requests_per_second}`` or ``{column: NAME, scale: X}``."""
    if not isinstance(spec, dict):
        raise InputError("must be a mapping with 'source' or 'column'", field=where)
    unknown = set(spec) - {"source", "column", "scale"}
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r} (known: source, column, scale)", field=where)
    scale = _number(spec.get("scale", 1.0), f"{where}.scale")
    if "column" in spec:
        if not isinstance(spec["column"], str) or not spec["column"]:
            raise InputError("must be a trace column name", field=f"{where}.column")
        return MetricSource("column", spec["column"], scale)
    if spec.get("source") != SERVED_SOURCE:
        raise InputError(f"give 'column: NAME' or 'source: {SERVED_SOURCE}'", field=where)
    return MetricSource(SERVED_SOURCE, "", scale)


def _check(p: Profile) -> None:
    if p.load_unit not in LOAD_UNITS:
        raise InputError(f"must be one of {', '.join(LOAD_UNITS)}, got {p.load_unit!r}", field="load_unit")
    if p.load_unit == "cpu_percent" and not p.cpu_percent_base_millicores:
        raise InputError("load_unit cpu_percent needs cpu_percent_base_millicores (what 100 % is, e.g. 2000 for 2 cores)",
                         field="cpu_percent_base_millicores")
    if p.traffic_spread not in TRAFFIC_SPREADS:
        raise InputError(f"must be one of {', '.join(TRAFFIC_SPREADS)}, got {p.traffic_spread!r}", field="traffic_spread")
    if p.startup_jitter_fraction >= 1:
        raise InputError("must be below 1", field="startup_jitter_fraction")
    offset = p.metrics_scrape_offset_seconds
    if offset is not None and offset >= p.metric_resolution_seconds:
        raise InputError("must be below metric_resolution_seconds", field="metrics_scrape_offset_seconds")
