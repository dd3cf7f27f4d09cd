"""Snapshots: what a controller sees at one sync (format: tests/data/conformance/FORMAT.md).

A snapshot file is JSON or YAML holding one snapshot, or ``{"cases": [...]}`` with many.
``load_snapshots`` parses them once into the core's types; ``run_snapshot`` feeds one
through the decision core; ``decision_json`` gives the ``explain --output json`` line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..core import ControllerConfig, Decision, Forecast, HPA, Memory, MetricSamples, Pod, Scale, decide
from ..core.quantity import format_milli
from ..core.selector import SelectorError, matches, parse_selector
from .errors import InputError
from .metrics_api import external_samples, object_samples, pods_samples, resource_samples
from .autoscaler import autoscaler_from_dict
from .objects import object_label, pod_from_dict
from .parse import format_time, milli, timestamp
from .promql import OFFLINE_SERVER, samples_from_answer, split_prometheus, with_prometheus


@dataclass(slots=True)
class Snapshot:
    """One parsed snapshot, ready for ``pyhpa.core.decide``."""

    name: str
    source: str
    level: str
    now: float
    config: ControllerConfig
    hpa: HPA
    scale: Scale
    pods: list[Pod]
    samples: list[MetricSamples]
    memory: Memory
    prenormalized: int | None
    expect: dict | None
    hpa_object: Any = None
    forecast: Forecast | None = None


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file; errors name the file and line. Several YAML documents give a list."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror}", file=str(path)) from None
    if p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"malformed JSON: {err.msg} (column {err.colno})", file=str(path), line=err.lineno) from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(f"malformed YAML: {problem}", file=str(path), line=line) from None
    if not docs:
        raise InputError("the file is empty", file=str(path))
    return docs[0] if len(docs) == 1 else docs


def controller_config(d: dict | None) -> ControllerConfig:
    """ControllerConfig from the snapshot's ``controller`` key (omitted keys: upstream defaults)."""
    d = d or {}
    if not isinstance(d, dict):
        raise InputError("must be a mapping", field="controller")
    gates = d.get("featureGates") or {}
    base = ControllerConfig()
    try:
        return ControllerConfig(
            tolerance=float(d.get("tolerance", base.tolerance)),
            cpu_initialization_period_seconds=float(d.get("cpuInitializationPeriodSeconds", base.cpu_initialization_period_seconds)),
            initial_readiness_delay_seconds=float(d.get("initialReadinessDelaySeconds", base.initial_readiness_delay_seconds)),
            downscale_stabilization_window_seconds=float(
                d.get("downscaleStabilizationWindowSeconds", base.downscale_stabilization_window_seconds)),
            scale_up_limit_factor=float(d.get("scaleUpLimitFactor", base.scale_up_limit_factor)),
            scale_to_zero=bool(gates.get("HPAScaleToZero", base.scale_to_zero)),
            configurable_tolerance=bool(gates.get("HPAConfigurableTolerance", base.configurable_tolerance)),
        )
    except (TypeError, ValueError) as err:
        raise InputError(f"bad controller setting: {err}", field="controller") from None


def scale_from_dict(d: Any) -> Scale:
    """The target's autoscaling/v1 Scale."""
    if not isinstance(d, dict):
        raise InputError("must be an autoscaling/v1 Scale object", field="scale")
    spec, status = d.get("spec") or {}, d.get("status") or {}
    replicas = spec.get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise InputError(f"must be an integer, got {replicas!r}", field="scale.spec.replicas")
    return Scale(replicas, int(status.get("replicas", replicas)), str(status.get("selector", "")))


def memory_from_dict(d: Any) -> Memory:
    """Controller memory from ``history`` (absent recommendations: no memory yet)."""
    if d is None:
        return Memory()
    if not isinstance(d, dict):
        raise InputError("must be a mapping", field="history")

    def pairs(key: str, value_key: str) -> list[tuple[float, int]]:
        out = []
        for i, e in enumerate(d.get(key) or []):
            f = f"history.{key}[{i}]"
            if not isinstance(e, dict) or not isinstance(e.get(value_key), int):
                raise InputError(f"needs timestamp and integer {value_key}", field=f)
            out.append((timestamp(e.get("timestamp"), f"{f}.timestamp"), e[value_key]))
        return out

    recs = pairs("recommendations", "replicas") if "recommendations" in d else None
    return Memory(recs, pairs("scaleUpEvents", "replicaChange"), pairs("scaleDownEvents", "replicaChange"))


def memory_to_dict(m: Memory) -> dict:
    """Controller memory in the snapshot ``history`` shape (also kept in the autoscaler's status)."""
    def pairs(items, key):
        return [{"timestamp": format_time(ts), key: v} for ts, v in items]

    out = {
        "scaleUpEvents": pairs(m.scale_up_events, "replicaChange"),
        "scaleDownEvents": pairs(m.scale_down_events, "replicaChange"),
    }
    if m.recommendations is not None:
        out = {"recommendations": pairs(m.recommendations, "replicas"), **out}
    return out


def samples_for(hpa: HPA, metrics: dict) -> list[MetricSamples]:
    """What each metrics API answered, one entry per ``hpa.metrics`` item."""
    metrics = metrics or {}
    errors = set(metrics.get("errors") or [])
    out = []
    for spec in hpa.metrics:
        out.append(_samples_one(spec, metrics, errors))
    return out


def _samples_one(spec, metrics: dict, errors: set) -> MetricSamples:
    failed = "the metrics API call failed (listed in the snapshot's metrics.errors)"
    if spec.type in ("Resource", "ContainerResource"):
        if "resource" in errors:
            return MetricSamples(error=failed)
        if "resource" not in metrics:
            return MetricSamples(error="no metrics returned from resource metrics API")
        container = spec.container if spec.type == "ContainerResource" else ""
        return resource_samples(metrics["resource"], spec.name, container)
    key = {"Pods": "pods", "Object": "object", "External": "external"}.get(spec.type)
    if key is None:
        return MetricSamples()
    if f"{key}:{spec.name}" in errors:
        return MetricSamples(error=failed)
    answer = (metrics.get(key) or {}).get(spec.name)
    if answer is None:
        return MetricSamples(error=f"no {key} metric {spec.name!r} in the snapshot")
    where = f"metrics.{key}.{spec.name}"
    if key == "pods":
        return pods_samples(answer, where)
    if key == "object":
        return object_samples(answer, where)
    try:
        reqs = parse_selector(spec.selector)
    except SelectorError as err:
        raise InputError(str(err), field="metric selector") from None
    return external_samples(answer, where, lambda labels: matches(reqs, labels))


def snapshot_from_dict(d: Any, source: str, index: int | None = None, lenient: bool = False) -> Snapshot:
    """Parse one snapshot; InputError names the file, the snapshot and the field."""
    label = f"snapshot {d.get('name')!r}" if isinstance(d, dict) and d.get("name") else (
        f"snapshot #{index}" if index is not None else "snapshot")
    try:
        if not isinstance(d, dict):
            raise InputError("a snapshot must be a mapping")
        for key in ("hpa", "scale", "now"):
            if key not in d:
                raise InputError(f"missing required key {key!r}", field=key)
        config = controller_config(d.get("controller"))
        hpa, model, prom = _hpa_and_prometheus(d["hpa"], d.get("controller"), lenient, config.scale_to_zero)
        pods = [_pod(p, i) for i, p in enumerate(d.get("pods") or [])]
        pre = (d.get("input") or {}).get("prenormalizedDesiredReplicas")
        if pre is not None and (not isinstance(pre, int) or isinstance(pre, bool)):
            raise InputError(f"must be an integer, got {pre!r}", field="input.prenormalizedDesiredReplicas")
        return Snapshot(
            str(d.get("name") or label), source, str(d.get("level", "controller")), timestamp(d["now"], "now"),
            config, hpa, scale_from_dict(d["scale"]), pods, _with_prometheus_samples(
                samples_for(hpa, d.get("metrics")), prom, d.get("metrics")),
            memory_from_dict(d.get("history")), pre, d.get("expect"), model, forecast_from_dict(d.get("forecast")),
        )
    except InputError as err:
        raise InputError(err.message, source, f"{label}: {err.obj}" if err.obj else label, err.field) from None


def forecast_from_dict(d: Any) -> Forecast | None:
    """The snapshot's ``forecast`` (``{total: quantity, reason, message}``) as the core's ``Forecast``."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError("must be a mapping {total, reason, message}", field="forecast")
    unknown = set(d) - {"total", "reason", "message"}
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r} (known: total, reason, message)", field="forecast")
    total = d.get("total")
    reason = d.get("reason", "Predicting" if total is not None else None)
    if not isinstance(reason, str) or not reason:
        raise InputError("needs a reason (a PredictionActive reason) when there is no total", field="forecast.reason")
    message = d.get("message", "")
    if not isinstance(message, str):
        raise InputError("must be a string", field="forecast.message")
    return Forecast(total_milli=None if total is None else milli(total, "forecast.total"), reason=reason,
                    message=message)


def forecast_to_dict(f: Forecast) -> dict:
    """``forecast_from_dict`` inverted (for ``pyhpa snapshot``)."""
    out: dict = {"reason": f.reason, "message": f.message}
    if f.total_milli is not None:
        out["total"] = format_milli(f.total_milli)
    return out


def _hpa_and_prometheus(doc: Any, controller: Any, lenient: bool, scale_to_zero: bool) -> tuple[HPA, Any, dict]:
    """``hpa_from_dict`` for a snapshot HPA that may hold ``type: Prometheus`` metrics (what ``pyhpa snapshot``
    writes for a HorizontalAutoscaler with PromQL metrics): those are read by ``pyhpa.adapters.promql`` and
    the rest as autoscaling/v2. Returns (HPA, model, {index: (MetricSpec, PromQuery)}). The server is not
    needed offline: ``controller.prometheusUrl`` or a placeholder."""
    spec = doc.get("spec") if isinstance(doc, dict) else None
    metrics = spec.get("metrics") if isinstance(spec, dict) else None
    server = (controller.get("prometheusUrl") if isinstance(controller, dict) else None) or OFFLINE_SERVER
    v2_metrics, prom = split_prometheus(metrics, "spec.metrics", server)
    if prom:
        doc = dict(doc, spec=dict(spec, metrics=v2_metrics))
    hpa, model = autoscaler_from_dict(doc, lenient=lenient, scale_to_zero=scale_to_zero)
    return with_prometheus(hpa, prom), model, prom


def _with_prometheus_samples(samples: list[MetricSamples], prom: dict, metrics: Any) -> list[MetricSamples]:
    """``samples`` with the PromQL metrics' entries read from ``metrics.prometheus.<name>`` (a Prometheus
    ``/api/v1/query`` JSON answer; ``prometheus:<name>`` in ``metrics.errors``: the query failed)."""
    metrics = metrics if isinstance(metrics, dict) else {}
    answers = metrics.get("prometheus") or {}
    errors = set(metrics.get("errors") or [])
    for i, (spec, q) in prom.items():
        if f"prometheus:{spec.name}" in errors:
            samples[i] = MetricSamples(error="the prometheus query failed (listed in the snapshot's metrics.errors)")
        elif spec.name not in answers:
            samples[i] = MetricSamples(error=f"no prometheus metric {spec.name!r} in the snapshot")
        else:
            samples[i] = samples_from_answer(answers[spec.name], q)
    return samples


def _pod(p: Any, i: int) -> Pod:
    try:
        return pod_from_dict(p)
    except InputError as err:
        raise InputError(err.message, obj=err.obj or object_label(p), field=f"pods[{i}].{err.field}".rstrip(".")) from None


def load_snapshots(path: str | Path, lenient: bool = False) -> list[Snapshot]:
    """All snapshots of a file (one snapshot, or ``{"cases": [...]}``)."""
    doc = read_document(path)
    if isinstance(doc, dict) and "cases" in doc:
        cases = doc["cases"]
        if not isinstance(cases, list):
            raise InputError("'cases' must be a list", file=str(path), field="cases")
        return [snapshot_from_dict(c, str(path), i, lenient) for i, c in enumerate(cases)]
    docs = doc if isinstance(doc, list) else [doc]
    return [snapshot_from_dict(c, str(path), i if len(docs) > 1 else None, lenient) for i, c in enumerate(docs)]


def run_snapshot(s: Snapshot, recommendation: int | None = None) -> Decision:
    """Feed a snapshot through the decision core (``recommendation`` overrides the input)."""
    pre = recommendation if recommendation is not None else s.prenormalized
    return decide(s.hpa, s.scale, s.pods, s.samples, s.memory, s.now, s.config, pre, forecast=s.forecast)


def decision_json(name: str, d: Decision) -> dict:
    """The ``explain --output json`` object of one decision."""
    proposals = [
        {
            "metric": p.metric,
            "replicas": p.replicas,
            "utilization": p.utilization,
            "rawValue": format_milli(p.raw_milli) if p.raw_milli is not None else None,
            "error": p.error,
        }
        for p in d.proposals
    ]
    conds = [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in d.conditions]
    out = {"name": name, "proposals": proposals, "desiredReplicas": d.desired_replicas, "conditions": conds}
    p = d.status.prediction
    if p is not None:
        source = next((s for s in d.sources if s.source == "Prediction"), None)
        out["prediction"] = {
            "forecast": format_milli(p.forecast_milli) if p.forecast_milli is not None else None,
            "replicas": p.replicas, "reason": p.reason, "mode": p.mode,
            "applied": bool(source is not None and source.applied and source.replicas is not None),
            "won": d.decided_by.startswith("Prediction/"),
        }
        out["decidedBy"] = d.decided_by
    return out
