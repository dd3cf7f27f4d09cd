"""Per-autoscaler Prometheus series: what each autoscaler this replica syncs is doing (docs/controller.md,
"Per-autoscaler metrics").

Labels are kube-state-metrics' for HPAs: ``namespace``, ``name``, plus ``metric`` for a metric's series (the
metric's key, as ``status.metricHealth`` names it: ``Resource/cpu``, ``ContainerResource/cpu/app``,
``Pods/rps``, ``External/queue{a=b}``, ...). Values are as the HPA reads them: a Utilization metric in percent
of its request (or limit), others in the metric's unit (cores for CPU, bytes for memory, the custom metric's
unit), the prediction's forecast and observation in the same unit as the metric's workload total.

Each sync stores a few plain values in one slotted record per autoscaler (``AutoscalerMetrics.synced``, called
by the reconciler); the series are built from the records when ``/metrics`` is scraped (a prometheus_client
custom collector, ``collect``). prometheus_client's labelled children cost about 1 KB and a lock per series:
13 series per autoscaler were 9.7 KB per autoscaler and a fifth of a steady sync's CPU; a record is about
0.5 KB and a steady sync only stores numbers. Every series of an autoscaler goes when it is deleted or moves to
another shard (``remove``, called by ``Monitor.deleted``); a series that no longer applies (a metric removed
from the spec, a prediction switched off) is gone from the next scrape after the next sync.

Upstream's ``horizontal_pod_autoscaler_controller_desired_replicas{namespace, hpa_name}`` is kept in the same
records (``desired``), so an autoscaler costs no prometheus_client child at all.

``/metrics`` writes these series with ``render``: the text ``prometheus_client.generate_latest`` writes for them
(the same lines, tested), formatted straight from the records. The generic path builds a sample object per series
and took 2.9 s of CPU per scrape at 10,000 autoscalers (120,000 series), blocking the controller's loop
meanwhile; ``render`` takes about a tenth of that. The collector (``collect``) stays registered, for whoever reads
the registry.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from ...api.sections import SOURCE_SECTIONS
from ...core import Decision, metric_key
from ...core.model import UTILIZATION, Proposal, SourceKind, SourceRef

PREFIX = "pyhpa_autoscaler_"
LABELS = ("namespace", "name")
METRIC_LABELS = ("namespace", "name", "metric")
#: ``reason`` of sync errors that are not in the decision (the sync stopped before deciding)
FAILED_GET_SCALE = "FailedGetScale"
INVALID_SPEC = "InvalidSpec"
API_ERROR = "APIError"
FAILED_RESCALE = "FailedRescale"
#: upstream's per-HPA gauge (pkg/controller/podautoscaler/monitor: ObserveDesiredReplicas)
UPSTREAM_DESIRED = "horizontal_pod_autoscaler_controller_desired_replicas"

#: (name, help) of the gauges with the labels ``namespace``, ``name``; in the order of ``_Record.replicas``
_REPLICA_GAUGES = (
    ("current_replicas", "Current replicas of the autoscaler's target (spec.replicas of its Scale) at the last sync."),
    ("desired_replicas", "Desired replicas decided at the last sync."),
    ("min_replicas", "Effective minReplicas at the last sync (spec.minReplicas raised by active schedule windows)."),
    ("max_replicas", "Effective maxReplicas at the last sync (spec.maxReplicas lowered by active schedule windows)."),
    ("paused", "1 while a pause annotation holds the autoscaler (pyhpa.dev/paused, paused-replicas, "
               "paused-scale-in, paused-scale-out), else 0."),
    ("fallback_active", "1 while a failing metric proposes its fallback replicas, else 0."),
)
_HELP = {
    "metric_value": "Current value of one spec.metrics entry: percent of request (or limit) for Utilization "
                    "targets, else the metric's unit. Absent while the metric fails.",
    "metric_target": "Target of one spec.metrics entry, in the unit of pyhpa_autoscaler_metric_value.",
    "decided_by": "The source that set the replica count at the last sync: source (Metric, Schedule, Prediction, "
                  "Saturation, Fallback, Pause, Spec, Stabilization, Policy) and decided_by (Source/name).",
    "prediction_forecast": "The prediction's forecast (quantile) of the metric's workload total over the lead "
                           "window, in the metric's unit.",
    "prediction_observed": "The metric's workload total observed at the last sync, in the unit of "
                           "pyhpa_autoscaler_prediction_forecast.",
    "prediction_wape_ratio": "Recent weighted absolute percentage error of the forecasts (sum |error| / sum "
                             "actual), as a fraction.",
    "last_sync_timestamp_seconds": "When the autoscaler was last synced (epoch s).",
    "sync_period_seconds": "The autoscaler's sync period (its own or --sync-period).",
    "sync_errors": "Syncs that ended with an error, by reason (the Warning event's: FailedGetResourceMetric, "
                   "FailedGetScale, FailedRescale, InvalidSpec, ...; APIError when an API call failed otherwise).",
}
_UPSTREAM_DESIRED_HELP = "Current desired replica count for HPA objects."
#: family names
_REPLICA_NAMES = tuple(PREFIX + name for name, _ in _REPLICA_GAUGES)
_VALUE, _TARGET, _DECIDED = PREFIX + "metric_value", PREFIX + "metric_target", PREFIX + "decided_by"
_WAPE = PREFIX + "prediction_wape_ratio"
_LAST_SYNC, _PERIOD = PREFIX + "last_sync_timestamp_seconds", PREFIX + "sync_period_seconds"
_FORECAST, _OBSERVED, _ERRORS = PREFIX + "prediction_forecast", PREFIX + "prediction_observed", PREFIX + "sync_errors"
#: the gauges the source sections declare (``SourceSection.gauge``: 1 while the source is active and applied, only
#: for autoscalers that use it), in the order of ``SOURCE_SECTIONS``: (field, kind, family name, help); the values
#: of ``_Record.gauges`` are in this order
_SOURCE_GAUGES = tuple((section.field, section.source.kind, PREFIX + section.gauge[0], section.gauge[1])
                       for section in SOURCE_SECTIONS.values() if section.gauge is not None)
#: enum members the sync path names, bound once (an enum's attribute access costs ~10x a global's in Python 3.11)
_FALLBACK = SourceKind.FALLBACK


def _value(p: Proposal) -> float | None:
    """The metric's current value in the target's terms: percent for Utilization, else units (milli / 1000)."""
    if p.error is not None:
        return None
    if p.spec.target_type == UTILIZATION and p.utilization is not None:
        return float(p.utilization)
    return None if p.raw_milli is None else p.raw_milli / 1000.0


def _target(p: Proposal) -> float | None:
    s = p.spec
    if s.target_type == UTILIZATION:
        return None if s.target_utilization is None else float(s.target_utilization)
    milli = s.target_average_milli if s.target_average_milli is not None else s.target_value_milli
    return None if milli is None else milli / 1000.0


def _active(decision: Decision, kind: SourceKind, before: int | None) -> int:
    """1 while the source of ``kind`` asks for something and it counts (active and applied), else 0; as ``before``
    (0 for none) when this sync stopped before the source was evaluated."""
    s = decision.source(kind)
    if s is None:
        return before or 0
    return 1 if s.active and s.applied else 0


class _Record:
    """What the series of one autoscaler show: plain values, set by its syncs, read at scrape time.

    ``replicas``: (current, desired, min, max, paused, fallback) of the last decision (None before one);
    ``metrics``: per ``spec.metrics`` entry (key, target or None), made when the ``specs`` change; ``values``: per
    entry its value or None; ``prediction``: (key, forecast, observed, wape) for an autoscaler with
    ``spec.prediction``; ``gauges``: the ``_SOURCE_GAUGES`` values, 0/1 for a source the autoscaler uses, else None
    (None: it uses none), ``gauged`` (index, kind) of those it uses, made when the ``hpa`` changes; ``errors``:
    reason -> [count, first time]; ``upstream_desired``: upstream's gauge.
    """

    __slots__ = ("last_sync", "period", "replicas", "decided_by", "specs", "metrics", "values", "prediction",
                 "hpa", "gauged", "gauges", "errors", "upstream_desired")

    def __init__(self) -> None:
        self.last_sync: float | None = None
        self.period: float | None = None
        self.replicas: tuple | None = None
        self.decided_by: SourceRef | None = None
        self.specs: list = []
        self.metrics: tuple = ()
        self.values: list = []
        self.prediction: tuple | None = None
        self.hpa: Any = None
        self.gauged: tuple[tuple[int, SourceKind], ...] = ()
        self.gauges: list | None = None
        self.errors: dict[str, list] | None = None
        self.upstream_desired: int | None = None


class AutoscalerMetrics:
    """The per-autoscaler series, collected from ``_Record``s on ``registry`` (module docstring: names, units)."""

    def __init__(self, registry: CollectorRegistry):
        #: per autoscaler (namespace, name)
        self._records: dict[tuple[str, str], _Record] = {}
        self._apart = False
        registry.register(self)

    # ----- recording (the sync path) -----------------------------------------------------------------------------
    def _record(self, namespace: str, name: str) -> _Record:
        own = (namespace, name)
        rec = self._records.get(own)
        if rec is None:
            rec = self._records[own] = _Record()
        return rec

    def desired(self, namespace: str, name: str, replicas: int) -> None:
        """Upstream's ObserveDesiredReplicas (``horizontal_pod_autoscaler_controller_desired_replicas``)."""
        self._record(namespace, name).upstream_desired = replicas

    def synced(self, a: Any, result: Any, now: float, predictions: Any = None) -> None:
        """Record one sync of Autoscaler ``a`` (``result``: its SyncResult) at epoch ``now``; ``predictions`` the
        controller's ``LivePredictions`` (forecast observation and WAPE). A sync that stopped before deciding
        keeps the series of the last decision and counts its error."""
        rec = self._record(a.namespace, a.name)
        rec.last_sync = now
        rec.period = a.sync_period_seconds
        if result.error != "none" or result.decision is None or result.decision.error is not None:
            errors = rec.errors
            if errors is None:
                errors = rec.errors = {}
            for reason in self._errors(result):
                entry = errors.get(reason)
                if entry is None:
                    errors[reason] = [1, now]
                else:
                    entry[0] += 1
        d = result.decision
        if d is not None:
            self._decided(rec, a, d, predictions)

    @staticmethod
    def _errors(result: Any) -> list[str]:
        """The reasons a sync failed: each failing metric's, FailedRescale, the stopped sync's Warning event's."""
        if getattr(result, "reason", ""):
            return [result.reason]
        d = result.decision
        if d is None:
            return [API_ERROR] if result.error != "none" else []
        out = [p.reason for p in d.proposals if p.error is not None and p.reason]
        if d.error is not None and d.error.startswith("failed to rescale"):
            out.append(FAILED_RESCALE)
        if d.error is not None and not out:
            out.append(next((e.reason for e in d.events if e.type == "Warning"), API_ERROR))
        return list(dict.fromkeys(out))

    @staticmethod
    def _decided(rec: _Record, a: Any, d: Decision, predictions: Any) -> None:
        # the sync path of every autoscaler: plain stores, no comparisons it does not need (a store costs less than
        # comparing), no enum attribute lookups, no generator expressions
        st = d.status
        fallback = 0
        for s in d.sources:
            if s.source == _FALLBACK and s.applied and s.active:
                fallback = 1
                break
        rec.replicas = (st.current_replicas, d.desired_replicas, d.min_replicas_effective, d.max_replicas_effective,
                        0 if st.pause is None else 1, fallback)
        rec.decided_by = d.decided_by
        proposals = d.proposals
        specs = [p.spec for p in proposals]
        if specs != rec.specs:  # the metric keys and targets change with the spec only
            rec.specs = specs
            rec.metrics = tuple((metric_key(p.spec), _target(p)) for p in proposals)
        rec.values = [_value(p) for p in proposals]
        hpa = a.hpa
        if hpa is None:
            rec.prediction = rec.gauges = rec.hpa = None
            rec.gauged = ()
            return
        if hpa is not rec.hpa:  # a new spec: which of the sources with a gauge it uses
            rec.hpa = hpa
            rec.gauged = tuple((j, kind) for j, (field, kind, _, _) in enumerate(_SOURCE_GAUGES)
                               if getattr(hpa, field) is not None)
        if rec.gauged:
            before = rec.gauges
            gauges = rec.gauges = [None] * len(_SOURCE_GAUGES)
            for j, kind in rec.gauged:
                gauges[j] = _active(d, kind, None if before is None else before[j])
        else:
            rec.gauges = None
        if hpa.prediction is None:
            rec.prediction = None
        else:
            i = hpa.prediction.metric
            key = metric_key(hpa.metrics[i]) if 0 <= i < len(hpa.metrics) else f"metrics[{i}]"
            ps = st.prediction
            forecast = None if ps is None or ps.forecast_milli is None else ps.forecast_milli / 1000
            observed, wape = predictions.figures(a.key) if predictions is not None else (None, None)
            rec.prediction = (key, forecast, None if observed is None else observed / 1000.0, wape)

    def remove(self, namespace: str, name: str) -> None:
        """Drop every series of the autoscaler (deleted, or moved to another shard)."""
        self._records.pop((namespace, name), None)

    # ----- the scrape ---------------------------------------------------------------------------------------------
    def describe(self) -> list[Metric]:
        """The families (no samples): lets the registry check names when registering."""
        return list(self._families())

    def _families(self) -> Iterator[Metric]:
        for name, doc in _REPLICA_GAUGES:
            yield GaugeMetricFamily(PREFIX + name, doc, labels=LABELS)
        for name in ("metric_value", "metric_target"):
            yield GaugeMetricFamily(PREFIX + name, _HELP[name], labels=METRIC_LABELS)
        yield InfoMetricFamily(PREFIX + "decided_by", _HELP["decided_by"], labels=LABELS)
        for _, _, family, doc in _SOURCE_GAUGES:
            yield GaugeMetricFamily(family, doc, labels=LABELS)
        for name in ("prediction_wape_ratio", "last_sync_timestamp_seconds", "sync_period_seconds"):
            yield GaugeMetricFamily(PREFIX + name, _HELP[name], labels=LABELS)
        for name in ("prediction_forecast", "prediction_observed"):
            yield GaugeMetricFamily(PREFIX + name, _HELP[name], labels=METRIC_LABELS)
        yield CounterMetricFamily(PREFIX + "sync_errors", _HELP["sync_errors"], labels=("namespace", "name", "reason"))
        yield GaugeMetricFamily(UPSTREAM_DESIRED, _UPSTREAM_DESIRED_HELP, labels=("namespace", "hpa_name"))

    @contextmanager
    def rendered_apart(self) -> Iterator[None]:
        """Meanwhile ``collect`` yields nothing (the registry's other collectors are written by prometheus_client,
        these by ``render``: ``Monitor.exposition``)."""
        self._apart = True
        try:
            yield
        finally:
            self._apart = False

    def _walk(self) -> Iterator[tuple[str, str, tuple[tuple[str, str], ...], float, float | None]]:
        """Every sample of every recorded autoscaler, once, for both renderers: (family name, sample name, labels
        as (name, value) pairs sorted by name, value, the counter's created time or None)."""
        for (ns, name), rec in list(self._records.items()):
            own = (("name", name), ("namespace", ns))
            if rec.upstream_desired is not None:
                yield UPSTREAM_DESIRED, UPSTREAM_DESIRED, (("hpa_name", name), ("namespace", ns)), \
                    rec.upstream_desired, None
            if rec.last_sync is None:  # only upstream's gauge so far
                continue
            yield _LAST_SYNC, _LAST_SYNC, own, rec.last_sync, None
            if rec.period is not None:
                yield _PERIOD, _PERIOD, own, rec.period, None
            if rec.replicas is not None:
                for family, v in zip(_REPLICA_NAMES, rec.replicas):
                    yield family, family, own, v, None
                by = rec.decided_by
                text, kind = ("None", "None") if by is None else (str(by), by.kind.value)
                yield _DECIDED, _DECIDED + "_info", (("decided_by", text), *own, ("source", kind)), 1.0, None
            for (key, t), v in zip(rec.metrics, rec.values):
                labels = (("metric", key), *own)
                if v is not None:
                    yield _VALUE, _VALUE, labels, v, None
                if t is not None:
                    yield _TARGET, _TARGET, labels, t, None
            if rec.gauges is not None:
                for (_, _, family, _), v in zip(_SOURCE_GAUGES, rec.gauges):
                    if v is not None:
                        yield family, family, own, v, None
            if rec.prediction is not None:
                key, fc, ob, w = rec.prediction
                labels = (("metric", key), *own)
                if fc is not None:
                    yield _FORECAST, _FORECAST, labels, fc, None
                if ob is not None:
                    yield _OBSERVED, _OBSERVED, labels, ob, None
                if w is not None:
                    yield _WAPE, _WAPE, own, w, None
            if rec.errors:
                for reason, (count, first) in rec.errors.items():
                    yield _ERRORS, _ERRORS + "_total", (*own, ("reason", reason)), count, first

    def collect(self) -> Iterator[Metric]:
        """Every series of every recorded autoscaler (called by the registry at each scrape)."""
        if self._apart:
            return iter(())
        families = {f.name: f for f in self._families()}
        for family, _, labels, value, created in self._walk():
            f = families[family]
            named = dict(labels)
            if family == _DECIDED:
                f.add_metric([named["namespace"], named["name"]], {"source": named["source"],
                                                                  "decided_by": named["decided_by"]})
            elif created is not None:
                f.add_metric([named[k] for k in f._labelnames], value, created=created)
            else:
                f.add_metric([named[k] for k in f._labelnames], value)
        return iter(families.values())

    def render(self) -> str:
        """The Prometheus text format (0.0.4) of every series ``collect`` yields, as ``generate_latest`` writes it:
        per family its ``# HELP`` and ``# TYPE`` lines, then its samples (labels sorted by name, values as
        ``floatToGoString``); the counter's ``_created`` samples in a gauge family after it."""
        out: dict[str, list[str]] = {f.name: [] for f in self._families()}
        created: list[str] = []
        go = floatToGoString
        for family, sample, labels, value, first in self._walk():
            text = ",".join(f'{k}="{_label(v)}"' for k, v in labels)
            out[family].append(f"{sample}{{{text}}} {go(value)}\n")
            if first is not None:
                created.append(f"{family}_created{{{text}}} {go(first)}\n")
        text: list[str] = []
        for family in self._families():
            name, kind = family.name, family.type
            shown = name + "_total" if kind == "counter" else name + "_info" if kind == "info" else name
            doc = _doc(family.documentation)
            text.append(f"# HELP {shown} {doc}\n# TYPE {shown} {'gauge' if kind == 'info' else kind}\n")
            text.extend(out[name])
            if kind == "counter" and created:
                text.append(f"# HELP {name}_created {doc}\n# TYPE {name}_created gauge\n")
                text.extend(created)
        return "".join(text)


def _label(value: str) -> str:
    """A label value as the text format writes it (backslash, newline and double quote escaped)."""
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')
    return value


def _doc(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")
