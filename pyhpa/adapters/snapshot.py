"""Snapshots: what a controller sees at one sync (format: tests/data/conformance/FORMAT.md).

This module owns the format in both directions. Reading: a snapshot file is JSON or YAML holding one
snapshot, or ``{"cases": [...]}`` with many; ``load_snapshots`` parses them once into the core's types;
``run_snapshot`` feeds one through the decision core; ``decision_json`` gives the ``explain --output
json`` line. Writing: ``snapshot_to_dict`` (with ``controller_to_dict``, ``metrics_to_dict`` and
``memory_to_dict``, also the shape of the controller memory kept in ``status.pyhpa``) produces what
``pyhpa snapshot`` writes; the key tables (``CONTROLLER_KEYS``, ``FEATURE_GATES``) serve both directions;
what each metric type records under ``metrics`` and reads back is its own (``pyhpa.adapters.metric_types``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ..api.sections import SOURCE_SECTIONS
from ..api.status import render_status
from ..core import (
    HPA,
    ControllerConfig,
    Decision,
    Forecast,
    HPAWarning,
    Memory,
    MetricFailures,
    MetricSamples,
    Pod,
    Scale,
    SyncInputs,
    active_windows,
    check_hpa,
    decide,
)
from ..core.metrics import raw_text
from .autoscaler import LIST_KINDS, effective_config, is_autoscaler, read_autoscaler
from .errors import InputError
from .files import MAX_DOCUMENT_BYTES, read_bytes
from .metric_types import REGISTRY
from .objects import object_label, pod_from_dict
from .parse import format_time, int32_value, timestamp
from .prediction import forecast_from_dict, forecast_to_dict
from .promql import OFFLINE_SERVER


@dataclass(slots=True)
class Snapshot:
    """One parsed snapshot: the decision core's ``inputs`` (``pyhpa.core.SyncInputs``: what ``run_snapshot`` gives
    ``pyhpa.core.decide``) and what the file says of them: its ``name``, ``source`` and ``level``, the ``expect``ed
    decision (conformance cases) and the HPA as the v2 model read (``hpa_object``)."""

    name: str
    source: str
    level: str
    inputs: SyncInputs
    expect: dict | None
    hpa_object: Any = None


#: PyYAML's safe loader, its C implementation (libyaml, several times faster) where installed
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR_TAG, _MERGE_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"


class _UniqueKeyLoader(_LOADER):  # type: ignore[misc, valid-type]
    """``_LOADER`` refusing a key repeated in one mapping, as kubectl does (sigs.k8s.io/yaml: ``key "x" already set
    in map``) and unlike PyYAML, whose last value wins; the keys a merge (``<<: *anchor``) brings in may be
    overridden, as YAML means them to be."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode) and _repeated_key(self, node) is not None:
            raise _RepeatedKey
        return super().construct_mapping(node, deep=deep)


class _RepeatedKey(Exception):
    """A mapping repeats a key (``_UniqueKeyLoader``, or the JSON reader's pairs hook)."""


def _repeated_key(loader: Any, node: Any) -> tuple[Any, Any, Any] | None:
    """(key, first key node, repeated key node) of the first key ``node`` (a MappingNode) repeats, else None."""
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = key_node.value if key_node.tag == _STR_TAG else loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node)
        except TypeError:  # an unhashable key: PyYAML's constructor refuses it itself
            continue
        if first is not key_node:
            return key, first, key_node
    return None


def _unique_pairs(pairs: list) -> dict:
    """``json.loads``'s ``object_pairs_hook``: a JSON object as a dict, a repeated key refused (``_RepeatedKey``)."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return d


def _where_repeated(text: str) -> tuple[int, list, int, int] | None:
    """Where the first repeated key of ``text`` (YAML, or JSON read as YAML) is: (document index, path from the
    document's root as keys and list indexes, line of its first and of its repeated occurrence); None when PyYAML
    cannot compose ``text`` (JSON it does not read as YAML)."""
    loader = _UniqueKeyLoader(text)
    try:
        index = 0
        while loader.check_node():
            stack = [(loader.get_node(), [])]
            while stack:
                node, path = stack.pop()
                if isinstance(node, yaml.MappingNode):
                    found = _repeated_key(loader, node)
                    if found is not None:
                        key, first, again = found
                        return index, [*path, key], first.start_mark.line + 1, again.start_mark.line + 1
                    stack.extend((v, [*path, k.value]) for k, v in reversed(node.value))
                elif isinstance(node, yaml.SequenceNode):
                    stack.extend((v, [*path, i]) for i, v in reversed(list(enumerate(node.value))))
            index += 1
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return None


def _repeated_key_error(text: str, docs: list, file: str, key: Any = None) -> InputError:
    """The InputError of a repeated key in ``text``: its line, the object holding it (the innermost object on its
    path in ``docs``, the documents read with the last value winning: a mapping with a ``kind`` and a
    ``metadata.name``, or a list) and its path from there."""
    where = _where_repeated(text)
    if where is None:
        return InputError(f"duplicate key \"{key}\" in one object; kubectl refuses it too, keep one", file=file)
    index, path, first, again = where
    node, obj, start = docs[index], "", 0
    for i, part in enumerate(path):
        if _is_object(node):
            obj, start = object_label(node), i
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[start:]).lstrip(".")
    return InputError(f"duplicate key \"{path[-1]}\" (already set at line {first}); kubectl refuses it too, keep one",
                      file=file, obj=obj, field=field, line=again)


def _is_object(d: Any) -> bool:
    """Whether ``d`` is a Kubernetes object an error line can name: a kind with a ``metadata.name``, or a list."""
    if not isinstance(d, dict) or not d.get("kind"):
        return False
    meta = d.get("metadata")
    return str(d["kind"]).endswith("List") or (isinstance(meta, dict) and bool(meta.get("name")))


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file (at most ``MAX_DOCUMENT_BYTES``, read as ``pyhpa.adapters.files.read_bytes``
    reads any file: a pipe or a device too); errors name the file and line. Several YAML documents give a list.
    A key repeated in one object is an error naming the file, its line, the object and the key's path, as kubectl
    refuses such a file (PyYAML and ``json`` would keep the last value)."""
    p = Path(path)
    data = read_bytes(p, MAX_DOCUMENT_BYTES, "a YAML or JSON file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not a text file (YAML or JSON): byte {err.start} is not UTF-8", file=str(path)) from None
    if "\x00" in text:
        raise InputError(f"not a text file (YAML or JSON): byte {text.index(chr(0))} is NUL", file=str(path))
    if not text.strip():
        raise InputError("the file is empty", file=str(path))
    if p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text, object_pairs_hook=_unique_pairs)
        except json.JSONDecodeError as err:
            raise InputError(f"malformed JSON: {err.msg} (column {err.colno})", file=str(path), line=err.lineno) from None
        except _RepeatedKey as err:
            raise _repeated_key_error(text, [json.loads(text)], str(path), err.args[0]) from None
    try:
        docs = [d for d in yaml.load_all(text, Loader=_UniqueKeyLoader) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(f"malformed YAML: {problem}", file=str(path), line=line) from None
    except _RepeatedKey:
        raise _repeated_key_error(text, list(yaml.load_all(text, Loader=_LOADER)), str(path)) from None
    if not docs:
        raise InputError("the file is empty", file=str(path))
    return docs[0] if len(docs) == 1 else docs


#: ``ControllerConfig`` field <-> snapshot ``controller`` key (FORMAT.md), for reading and writing
CONTROLLER_KEYS = (
    ("tolerance", "tolerance"),
    ("cpu_initialization_period_seconds", "cpuInitializationPeriodSeconds"),
    ("initial_readiness_delay_seconds", "initialReadinessDelaySeconds"),
    ("downscale_stabilization_window_seconds", "downscaleStabilizationWindowSeconds"),
    ("scale_up_limit_factor", "scaleUpLimitFactor"),
)
#: ``ControllerConfig`` field <-> ``controller.featureGates`` key
FEATURE_GATES = (("scale_to_zero", "HPAScaleToZero"), ("configurable_tolerance", "HPAConfigurableTolerance"),
                 ("pod_level_resources", "PodLevelResources"))
#: The other gates upstream's HPA controller reads (v1.37.2), which pyhpa does not take as settings, and the
#: value pyhpa behaves as (each v1.37.2's default; tests/test_upstream_decide.py checks both tables against
#: ``tools/upstream/hpa-decide --gates``): HPAGeneration (``pyhpa run`` writes ``status.observedGeneration`` and
#: syncs an autoscaler whose spec generation changed at once, a status-only change waits for its period);
#: HPAOptimizedSelectorStore and StaleControllerConsistencyHPA (how upstream indexes selectors and guards against
#: a stale informer cache: no decision depends on them).
UPSTREAM_ONLY_GATES = {"HPAGeneration": True, "HPAOptimizedSelectorStore": True, "StaleControllerConsistencyHPA": True}
def metric_error_label(metric_type: str, name: str) -> str | None:
    """The ``metrics.errors`` entry of a failed call: ``resource`` or ``<key>:<metric name>``, as the metric type says
    (``MetricType.snapshot_label``; None: a type the registry does not hold)."""
    t = REGISTRY.get(metric_type)
    return None if t is None else t.snapshot_label(name)


def controller_config(d: dict | None) -> ControllerConfig:
    """ControllerConfig from the snapshot's ``controller`` key (omitted keys: upstream defaults)."""
    d = d or {}
    if not isinstance(d, dict):
        raise InputError("must be a mapping", field="controller")
    gates = d.get("featureGates") or {}
    if not isinstance(gates, dict):
        raise InputError("must be a mapping of gate names to true or false", field="controller.featureGates")
    known = {k for _, k in FEATURE_GATES}
    for k, v in gates.items():
        f = f"controller.featureGates.{k}"
        if not isinstance(v, bool):
            raise InputError(f"must be true or false, got {v!r}", field=f)
        if k in UPSTREAM_ONLY_GATES and v is not UPSTREAM_ONLY_GATES[k]:
            raise InputError(f"pyhpa always behaves as {k}={str(UPSTREAM_ONLY_GATES[k]).lower()} (the v1.37.2 "
                             f"default)", field=f)
        if k not in known and k not in UPSTREAM_ONLY_GATES:
            raise InputError(f"not a feature gate the HPA controller reads (known: "
                             f"{', '.join(sorted(known | set(UPSTREAM_ONLY_GATES)))})", field=f)
    base = ControllerConfig()
    try:
        values = {f: float(d.get(k, getattr(base, f))) for f, k in CONTROLLER_KEYS}
        values.update({f: bool(gates.get(k, getattr(base, f))) for f, k in FEATURE_GATES})
    except (TypeError, ValueError) as err:
        raise InputError(f"bad controller setting: {err}", field="controller") from None
    for f, k in CONTROLLER_KEYS:  # the controller's flags: durations, a tolerance and a factor, none negative
        if not (math.isfinite(values[f]) and values[f] >= 0):
            raise InputError(f"must be a finite number >= 0, got {d.get(k)!r}", field=f"controller.{k}")
    return ControllerConfig(**values)


def controller_to_dict(config: ControllerConfig, **gathering: Any) -> dict:
    """The snapshot's ``controller`` of ``config``; ``gathering`` adds keys that only say how the inputs were
    gathered (``syncPeriodSeconds``, ``metricsTimeoutSeconds``, ``prometheusUrl``; None values left out)."""
    out: dict[str, Any] = {k: getattr(config, f) for f, k in CONTROLLER_KEYS}
    out["featureGates"] = {k: getattr(config, f) for f, k in FEATURE_GATES}
    out.update({k: v for k, v in gathering.items() if v is not None})
    return out


def metrics_to_dict(answers: Iterable[tuple[str, str, Any, bool]]) -> dict:
    """The snapshot's ``metrics`` from (metric type, metric name, answer as received, readable) per
    ``spec.metrics`` item: readable answers by source and name; unreadable ones (the call failed, or its
    answer could not be read) in ``errors``; an answer of None (not asked) is left out."""
    out: dict[str, Any] = {}
    errors: list[str] = []
    for mtype, name, answer, readable in answers:
        label = metric_error_label(mtype, name)
        if label is None or answer is None:
            continue
        if not readable:
            if label not in errors:
                errors.append(label)
            continue
        t = REGISTRY[mtype]
        if t.snapshot_named:
            out.setdefault(t.snapshot_key, {})[name] = answer
        else:
            out[t.snapshot_key] = answer
    if errors:
        out["errors"] = errors
    return out


def snapshot_to_dict(*, name: str, source: str, now: float, controller: dict, hpa: dict, scale: Scale,
                     scale_name: str, namespace: str, pods: list[dict], metrics: dict,
                     memory: Memory | None = None, level: str = "controller", forecast: Forecast | None = None,
                     ) -> dict:
    """A snapshot document (FORMAT.md) that ``load_snapshots`` reads back into the same inputs: ``hpa`` an
    autoscaling/v2 object dict, ``pods`` v1 Pod dicts, ``controller``/``metrics`` from ``controller_to_dict``
    / ``metrics_to_dict``, ``memory`` the controller memory (``history``; None: none kept), ``forecast``
    what the forecaster answered (an autoscaler with ``spec.prediction``)."""
    doc = {
        "name": name,
        "source": source,
        "level": level,
        "now": format_time(now),
        "controller": controller,
        "hpa": hpa,
        "scale": {"apiVersion": "autoscaling/v1", "kind": "Scale",
                  "metadata": {"name": scale_name, "namespace": namespace},
                  "spec": {"replicas": scale.spec_replicas},
                  "status": {"replicas": scale.status_replicas, "selector": scale.selector}},
        "pods": pods,
        "metrics": metrics,
    }
    if memory is not None:
        doc["history"] = memory_to_dict(memory)
    if forecast is not None:
        doc["forecast"] = forecast_to_dict(forecast)
    return doc


def scale_from_dict(d: Any) -> Scale:
    """The target's autoscaling/v1 Scale."""
    if not isinstance(d, dict):
        raise InputError("must be an autoscaling/v1 Scale object", field="scale")
    spec, status = d.get("spec") or {}, d.get("status") or {}
    if not isinstance(spec, dict) or not isinstance(status, dict):
        raise InputError("must be a mapping", field="scale.spec" if not isinstance(spec, dict) else "scale.status")
    replicas = int32_value(spec.get("replicas", 0), "scale.spec.replicas")
    current = int32_value(status.get("replicas", replicas), "scale.status.replicas")
    return Scale(replicas, current, str(status.get("selector", "")))


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
            out.append((timestamp(e.get("timestamp"), f"{f}.timestamp"), int32_value(e[value_key], f"{f}.{value_key}")))
        return out

    recs = pairs("recommendations", "replicas") if "recommendations" in d else None
    return Memory(recs, pairs("scaleUpEvents", "replicaChange"), pairs("scaleDownEvents", "replicaChange"),
                  _metric_failures(d.get("metricFailures")))


def _metric_failures(items: Any) -> dict[str, MetricFailures]:
    """``history.metricFailures``: [{metric, numberOfFailures, firstFailureTime, fallbackSince?}]."""
    out: dict[str, MetricFailures] = {}
    if items is None:
        return out
    if not isinstance(items, list):
        raise InputError("must be a list", field="history.metricFailures")
    for i, e in enumerate(items):
        f = f"history.metricFailures[{i}]"
        n = e.get("numberOfFailures") if isinstance(e, dict) else None
        if not isinstance(e, dict) or not isinstance(e.get("metric"), str) or not isinstance(n, int) or \
                isinstance(n, bool) or n < 1:
            raise InputError("needs metric, numberOfFailures (an integer >= 1) and firstFailureTime", field=f)
        since = e.get("fallbackSince")
        out[e["metric"]] = MetricFailures(
            number_of_failures=n, first_failure_time=timestamp(e.get("firstFailureTime"), f"{f}.firstFailureTime"),
            fallback_since=None if since is None else timestamp(since, f"{f}.fallbackSince"))
    return out


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
    if m.metric_failures:
        out["metricFailures"] = [
            {"metric": k, "numberOfFailures": f.number_of_failures, "firstFailureTime": format_time(f.first_failure_time),
             **({"fallbackSince": format_time(f.fallback_since)} if f.fallback_since is not None else {})}
            for k, f in sorted(m.metric_failures.items())]
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
    t = REGISTRY.get(spec.type)
    if t is None or t.extension is not None:  # unknown (the core reports it), or read with its query
        return MetricSamples()
    return t.from_snapshot(spec, None, metrics, errors)


def snapshot_from_dict(d: Any, source: str, index: int | None = None, lenient: bool = False) -> Snapshot:
    """Parse one snapshot; InputError names the file, the snapshot and the field (a Kubernetes object instead,
    such as an HPA: what to give it to, ``not_a_snapshot``)."""
    if isinstance(d, dict) and "hpa" not in d and d.get("apiVersion") and d.get("kind"):
        raise InputError(not_a_snapshot(d), file=source, obj=object_label(d))
    label = f"snapshot {d.get('name')!r}" if isinstance(d, dict) and d.get("name") else (
        f"snapshot #{index}" if index is not None else "snapshot")
    try:
        if not isinstance(d, dict):
            raise InputError("a snapshot must be a mapping")
        for key in ("hpa", "scale", "now"):
            if key not in d:
                raise InputError(f"missing required key {key!r}", field=key)
        config = controller_config(d.get("controller"))
        hpa, model, extended, config = read_hpa(d["hpa"], config, lenient,
                                                server=_prometheus_server(d.get("controller")), extensions=True)
        pods = pods_in_namespace(d.get("pods") or [], hpa.namespace, lenient=lenient)
        pre = (d.get("input") or {}).get("prenormalizedDesiredReplicas")
        if pre is not None:
            pre = int32_value(pre, "input.prenormalizedDesiredReplicas")
        now = timestamp(d["now"], "now")
        scale = scale_from_dict(d["scale"])
        samples = _with_extended_samples(samples_for(hpa, d.get("metrics")), extended, d.get("metrics"))
        inputs = SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory_from_dict(d.get("history")),
                            now=now, config=config, prenormalized=pre, forecast=forecast_from_dict(d.get("forecast")))
        return Snapshot(str(d.get("name") or label), source, str(d.get("level", "controller")), inputs,
                        d.get("expect"), model)
    except InputError as err:
        raise InputError(err.message, source, f"{label}: {err.obj}" if err.obj else label, err.field) from None


def not_a_snapshot(d: dict) -> str:
    """What to do with Kubernetes object ``d`` given where a snapshot goes (``pyhpa explain FILE``): an autoscaler
    (or a kubectl list of them) goes with ``--hpa``; anything else is named, with the snapshot format."""
    items = d.get("items") if d.get("kind") in LIST_KINDS else None
    if is_autoscaler(d) or (isinstance(items, list) and any(is_autoscaler(x) for x in items)):
        what = "an autoscaler" if items is None else f"a {d['kind']} of autoscalers"
        return (f"{what}, not a snapshot: give it with --hpa (and --pods and --pod-metrics, or --recommendation N), "
                "or make a snapshot of a live cluster with pyhpa snapshot NAMESPACE/NAME")
    return (f"{d['apiVersion']} {d['kind']}, not a snapshot (format: tests/data/conformance/FORMAT.md): kubectl "
            "output goes with --hpa, --pods and --pod-metrics")


def _prometheus_server(controller: Any) -> str:
    return (controller.get("prometheusUrl") if isinstance(controller, dict) else None) or OFFLINE_SERVER


def read_hpa(doc: Any, config: ControllerConfig, lenient: bool = False, server: str = OFFLINE_SERVER,
             extensions: bool = False) -> tuple[HPA, Any, dict, ControllerConfig]:
    """The HPA of a snapshot, ``explain --hpa`` or ``thresholds``: an autoscaling/v2 HorizontalPodAutoscaler or
    a HorizontalAutoscaler (read by ``pyhpa.adapters.autoscaler.read_autoscaler``: its settings applied to
    ``config``, ``schedules`` and the other extension fields, ``type: Prometheus`` metrics, what ``pyhpa
    snapshot`` writes). ``extensions`` also allows a HorizontalAutoscaler's metric extensions
    (``utilizationBasis``) in an autoscaling/v2 document; ``server``, the Prometheus server, is not needed
    offline. Returns (HPA, v2 model, {index: (MetricSpec, MetricQuery)} of the metrics of types autoscaling/v2
    lacks (``ParsedAutoscaler.extended``), config)."""
    parsed = read_autoscaler(doc, lenient=lenient, scale_to_zero=config.scale_to_zero, prometheus_server=server,
                             go_structs=lenient, extensions=extensions)
    return parsed.hpa, parsed.model, parsed.extended, effective_config(config, parsed.settings)


def _with_extended_samples(samples: list[MetricSamples], extended: dict, metrics: Any) -> list[MetricSamples]:
    """``samples`` with the entries of the metrics of types autoscaling/v2 lacks (``extended``: {index: (MetricSpec,
    MetricQuery)}) read by their type (``MetricType.from_snapshot``; Prometheus: ``metrics.prometheus.<name>``, a
    Prometheus ``/api/v1/query`` JSON answer, ``prometheus:<name>`` in ``metrics.errors`` when the query failed)."""
    metrics = metrics if isinstance(metrics, dict) else {}
    errors = set(metrics.get("errors") or [])
    for i, (spec, q) in extended.items():
        samples[i] = REGISTRY[q.type].from_snapshot(spec, q, metrics, errors)
    return samples


def pods_in_namespace(items: list, namespace: str, where: str = "pods", lenient: bool = False) -> list[Pod]:
    """The pods of ``namespace`` among ``items`` (v1 Pod dicts), as upstream's pod lister lists them
    (``Pods(hpa.Namespace)``): a pod of another namespace is parsed (so errors are reported) but left
    out; a pod without ``metadata.namespace`` is taken to be in ``namespace``."""
    out = []
    for i, p in enumerate(items):
        pod = _pod(p, i, where, lenient)
        meta = p.get("metadata") if isinstance(p, dict) else None
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        if not ns or ns == namespace:
            out.append(pod)
    return out


def _pod(p: Any, i: int, where: str = "pods", lenient: bool = False) -> Pod:
    try:
        return pod_from_dict(p, lenient)
    except InputError as err:
        raise InputError(err.message, obj=err.obj or object_label(p), field=f"{where}[{i}].{err.field}".rstrip(".")) from None


def load_snapshots(path: str | Path, lenient: bool = False) -> list[Snapshot]:
    """All snapshots of a file (one snapshot, or ``{"cases": [...]}``)."""
    doc = read_document(path)
    if isinstance(doc, dict) and "cases" in doc:
        cases = doc["cases"]
        if not isinstance(cases, list):
            raise InputError("'cases' must be a list", file=str(path), field="cases")
        if not cases:
            raise InputError("no snapshots: 'cases' is empty", file=str(path), field="cases")
        return [snapshot_from_dict(c, str(path), i, lenient) for i, c in enumerate(cases)]
    docs = doc if isinstance(doc, list) else [doc]
    if not docs:
        raise InputError("no snapshots: the file holds an empty list", file=str(path))
    return [snapshot_from_dict(c, str(path), i if len(docs) > 1 else None, lenient) for i, c in enumerate(docs)]


def run_snapshot(s: Snapshot, recommendation: int | None = None) -> Decision:
    """Feed a snapshot through the decision core (``recommendation`` overrides the input)."""
    inputs = s.inputs
    if recommendation is not None:
        inputs = replace(inputs, prenormalized=recommendation)
    return decide(inputs)


def snapshot_warnings(s: Snapshot) -> list[HPAWarning]:
    """Where the snapshot's HPA cannot work as written (``pyhpa.core.check_hpa``)."""
    i = s.inputs
    return check_hpa(i.hpa, i.scale, i.pods, i.samples, i.config)


def warning_json(w: HPAWarning) -> dict:
    """One warning in the ``explain``/``thresholds`` JSON output."""
    return {"reason": w.reason, "metric": w.metric, "message": w.message, "pods": list(w.pods),
            "container": w.container}


def decision_json(name: str, d: Decision, hpa: HPA | None = None, now: float | None = None,
                  warnings: Iterable[HPAWarning] = (), generation: int = 0) -> dict:
    """The ``explain --output json`` object of one decision.

    Keys: ``name``, ``proposals`` (per metric), ``desiredReplicas``, ``conditions``; the combination of
    sources: ``sources`` (what each source asked for), ``decidedBy`` (``Source/name`` of the one that set the
    number), ``minReplicasEffective``/``maxReplicasEffective`` (bounds after active windows),
    ``activeSchedules`` (names); ``warnings`` (``snapshot_warnings``: where the HPA cannot work); with ``hpa``
    and ``now``, for an HPA with ``spec.schedules``: ``schedules`` (each active window's ``name``, ``start``,
    ``end`` (RFC 3339 UTC), ``minReplicas``, ``maxReplicas``), ``nextScheduleChange`` and ``expiredSchedules``
    (names of the dated windows that have ended: they never apply again); for each source section the sync has a
    status of (``SOURCE_SECTIONS``), its ``source_report`` under its field. Then ``status``: the whole status the
    controller would write (``pyhpa.api.status.render_status``, ``observedGeneration`` the HPA's ``generation``), and
    ``events``: each event of the sync (``type``, ``reason``, ``message``), in order.
    """
    proposals = [
        {
            "metric": p.metric,
            "replicas": p.replicas,
            "utilization": p.utilization,
            "rawValue": raw_text(p.spec, p.raw_milli) if p.raw_milli is not None else None,
            "error": p.error,
        }
        for p in d.proposals
    ]
    conds = [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in d.conditions]
    sources = [{"source": s.source.value, "name": s.name, "replicas": s.replicas, "minReplicas": s.min_replicas,
                "maxReplicas": s.max_replicas, "applied": s.applied, "error": s.error, "note": s.note}
               for s in d.sources]
    # status.desiredReplicas: what upstream writes (the previous value when every metric failed)
    out = {"name": name, "proposals": proposals, "desiredReplicas": d.status.desired_replicas, "conditions": conds,
           "sources": sources, "decidedBy": "" if d.decided_by is None else str(d.decided_by), "minReplicasEffective": d.min_replicas_effective,
           "maxReplicasEffective": d.max_replicas_effective, "activeSchedules": list(d.active_schedules),
           "warnings": [warning_json(w) for w in warnings]}
    if hpa is not None and now is not None and hpa.schedules:
        out["schedules"] = [{"name": w.name, "start": format_time(w.start), "end": format_time(w.end),
                             "minReplicas": w.min_replicas, "maxReplicas": w.max_replicas}
                            for w in active_windows(hpa.schedules, now)]
        change = d.status.schedules.next_change if d.status.schedules is not None else None
        out["nextScheduleChange"] = format_time(change)
        out["expiredSchedules"] = list(d.status.schedules.expired) if d.status.schedules is not None else []
    for field in SOURCE_SECTIONS:
        report = source_report(d, field)
        if report is not None:
            out[field] = report
    out["status"] = render_status(d.status, generation, null_current_metrics=True)
    out["events"] = [{"type": e.type, "reason": e.reason, "message": e.message} for e in d.events]
    return out


def source_report(d: Decision, field: str) -> dict | None:
    """What one sync's source of ``spec.<field>`` did (a ``pyhpa.api.sections.SOURCE_SECTIONS`` entry; ``pyhpa
    explain -o json``'s ``<field>``), None when the sync has no status of it (not configured, or the sync stopped
    before the source): the section's ``figures`` of its status, then ``applied`` (its replicas were a proposal of
    the recommendation: active, and neither observing nor stepping aside) and ``won`` (it set the final number)."""
    st = getattr(d.status, field)
    if st is None:
        return None
    section = SOURCE_SECTIONS[field]
    source = d.source(section.source.kind)
    return {**section.figures(st), "applied": bool(source is not None and source.applied and source.active),
            "won": bool(source is not None and source.won)}
