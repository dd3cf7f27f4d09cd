"""Per-autoscaler Prometheus series: what each autoscaler this replica syncs is doing (docs/controller.md,
"Per-autoscaler metrics").

Labels are kube-state-metrics' for HPAs: ``namespace``, ``name``, plus ``metric`` for a metric's series (the
metric's key, as ``status.metricHealth`` names it: ``Resource/cpu``, ``ContainerResource/cpu/app``,
``Pods/rps``, ``External/queue{a=b}``, ...). Values are as the HPA reads them: a Utilization metric in percent
of its request (or limit), others in the metric's unit (cores for CPU, bytes for memory, the custom metric's
unit), the prediction's forecast and observation in the same unit as the metric's workload total.

Updated once per sync (``AutoscalerMetrics.synced``, called by the reconciler); every series of an autoscaler is
removed when it is deleted or moves to another shard (``remove``, called by ``Monitor.deleted``), and a series
that no longer applies (a metric removed from the spec, a prediction switched off) is removed at the next sync.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Info

from ...core import Decision, metric_key
from ...core.model import (FALLBACK_SOURCE, PREDICTING, PREDICTION_ACTIVE, SATURATION_ACTIVE, UTILIZATION,
                          Proposal)

PREFIX = "pyhpa_autoscaler_"
LABELS = ("namespace", "name")
METRIC_LABELS = ("namespace", "name", "metric")
#: ``reason`` of sync errors that are not in the decision (the sync stopped before deciding)
FAILED_GET_SCALE = "FailedGetScale"
INVALID_SPEC = "InvalidSpec"
API_ERROR = "APIError"
FAILED_RESCALE = "FailedRescale"


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


def _condition(decision: Decision, ctype: str) -> Any:
    for c in decision.conditions:
        if c.type == ctype:
            return c
    return None


class AutoscalerMetrics:
    """The per-autoscaler series on ``registry`` (see the module docstring for names and units)."""

    def __init__(self, registry: CollectorRegistry):
        r = registry

        def gauge(name: str, doc: str, labels=LABELS) -> Gauge:
            return Gauge(PREFIX + name, doc, labels, registry=r)

        self.current = gauge("current_replicas", "Current replicas of the autoscaler's target (spec.replicas "
                             "of its Scale) at the last sync.")
        self.desired = gauge("desired_replicas", "Desired replicas decided at the last sync.")
        self.min = gauge("min_replicas", "Effective minReplicas at the last sync (spec.minReplicas raised by "
                         "active schedule windows).")
        self.max = gauge("max_replicas", "Effective maxReplicas at the last sync (spec.maxReplicas lowered by "
                         "active schedule windows).")
        self.metric_value = gauge("metric_value", "Current value of one spec.metrics entry: percent of request "
                                  "(or limit) for Utilization targets, else the metric's unit. Absent while the "
                                  "metric fails.", METRIC_LABELS)
        self.metric_target = gauge("metric_target", "Target of one spec.metrics entry, in the unit of "
                                   "pyhpa_autoscaler_metric_value.", METRIC_LABELS)
        self.decided_by = Info(PREFIX + "decided_by", "The source that set the replica count at the last sync: "
                               "source (Metric, Schedule, Prediction, Saturation, Fallback, Pause, Spec, "
                               "Stabilization, Policy) and decided_by (Source/name).", LABELS, registry=r)
        self.paused = gauge("paused", "1 while a pause annotation holds the autoscaler (pyhpa.dev/paused, "
                            "paused-replicas, paused-scale-in, paused-scale-out), else 0.")
        self.fallback = gauge("fallback_active", "1 while a failing metric proposes its fallback replicas, else 0.")
        self.predicting = gauge("predicting", "1 while the prediction is applied (PredictionActive=True); 0 while "
                                "it observes or steps aside. Only for autoscalers with spec.prediction.")
        self.saturated = gauge("saturated", "1 while the pods are pinned at their CPU limit (SaturationActive="
                               "True), else 0. Only for autoscalers with spec.saturation.")
        self.forecast = gauge("prediction_forecast", "The prediction's forecast (quantile) of the metric's "
                              "workload total over the lead window, in the metric's unit.", METRIC_LABELS)
        self.observed = gauge("prediction_observed", "The metric's workload total observed at the last sync, in "
                              "the unit of pyhpa_autoscaler_prediction_forecast.", METRIC_LABELS)
        self.wape = gauge("prediction_wape_ratio", "Recent weighted absolute percentage error of the forecasts "
                          "(sum |error| / sum actual), as a fraction.")
        self.last_sync = gauge("last_sync_timestamp_seconds", "When the autoscaler was last synced (epoch s).")
        self.period = gauge("sync_period_seconds", "The autoscaler's sync period (its own or --sync-period).")
        self.errors = Counter(PREFIX + "sync_errors", "Syncs that ended with an error, by reason (the Warning "
                              "event's: FailedGetResourceMetric, FailedGetScale, FailedRescale, InvalidSpec, ...; "
                              "APIError when an API call failed otherwise).", ("namespace", "name", "reason"),
                              registry=r)
        #: per autoscaler (namespace, name): its series (children cached: a steady sync only sets values)
        self._series: dict[tuple[str, str], _Series] = {}

    def synced(self, a: Any, result: Any, now: float, predictions: Any = None) -> None:
        """Record one sync of Autoscaler ``a`` (``result``: its SyncResult) at epoch ``now``; ``predictions`` the
        controller's ``LivePredictions`` (forecast observation and WAPE). A sync that stopped before deciding
        keeps the series of the last decision and counts its error."""
        own = (a.namespace, a.name)
        rec = self._series.get(own)
        if rec is None:
            rec = self._series[own] = _Series(self, own)
        rec.last_sync.set(now)
        if rec.period_value != a.sync_period_seconds:
            rec.period_value = a.sync_period_seconds
            rec.period.set(float(a.sync_period_seconds))
        if result.error != "none" or result.decision is None or result.decision.error is not None:
            for reason in self._errors(result):
                rec.error(reason).inc()
        d = result.decision
        if d is not None:
            rec.decided(a, d, predictions)

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

    def remove(self, namespace: str, name: str) -> None:
        """Drop every series of the autoscaler (deleted, or moved to another shard)."""
        rec = self._series.pop((namespace, name), None)
        if rec is not None:
            rec.drop_all()


class _Series:
    """The series of one autoscaler: labelled children, created once and set at each sync."""

    __slots__ = ("m", "own", "labels", "last_sync", "period", "period_value", "errors", "replicas", "specs",
                 "metric_children", "value_on", "decided_label", "prediction", "saturated", "values")

    def __init__(self, m: AutoscalerMetrics, own: tuple[str, str]):
        self.m, self.own = m, own
        self.labels: set[tuple[Any, tuple]] = set()  # every (family, label values) created, for drop_all
        self.last_sync = self._child(m.last_sync, own)
        self.period = self._child(m.period, own)
        self.period_value: float | None = None
        self.errors: dict[str, Any] = {}
        self.replicas: tuple | None = None
        self.values: tuple = ()
        self.specs: tuple = ()
        self.metric_children: list[tuple[tuple, Any, Any]] = []
        self.value_on: list[bool] = []
        self.decided_label: str | None = None
        self.prediction: tuple | None = None
        self.saturated: Any = None

    def _child(self, family: Any, labels: tuple) -> Any:
        self.labels.add((family, labels))
        return family.labels(*labels)

    def _drop(self, family: Any, labels: tuple) -> None:
        if (family, labels) in self.labels:
            self.labels.discard((family, labels))
            try:
                family.remove(*labels)
            except KeyError:
                pass

    def drop_all(self) -> None:
        for family, labels in list(self.labels):
            self._drop(family, labels)

    def error(self, reason: str) -> Any:
        child = self.errors.get(reason)
        if child is None:
            child = self.errors[reason] = self._child(self.m.errors, (*self.own, reason))
        return child

    def decided(self, a: Any, d: Decision, predictions: Any) -> None:
        m, own = self.m, self.own
        if self.replicas is None:
            self.replicas = tuple(self._child(g, own) for g in (m.current, m.desired, m.min, m.max, m.paused,
                                                                   m.fallback))
        values = (d.current_replicas, d.desired_replicas, d.min_replicas_effective, d.max_replicas_effective,
                  1 if d.status.pause is not None else 0,
                  1 if any(s.source == FALLBACK_SOURCE and s.applied and s.replicas is not None for s in d.sources)
                  else 0)
        if values != self.values:  # a steady sync sets nothing
            self.values = values
            for child, value in zip(self.replicas, values):
                child.set(value)
        self._metrics(d)
        label = d.decided_by or "None"
        if label != self.decided_label:
            self.decided_label = label
            self.labels.add((m.decided_by, own))
            m.decided_by.labels(*own).info({"source": label.split("/", 1)[0], "decided_by": label})
        hpa = a.hpa
        self._prediction(a, hpa, d, predictions)
        if hpa is not None and hpa.saturation is not None:
            if self.saturated is None:
                self.saturated = self._child(m.saturated, own)
            c = _condition(d, SATURATION_ACTIVE)
            self.saturated.set(1 if c is not None and c.status == "True" else 0)
        elif self.saturated is not None:
            self.saturated = None
            self._drop(m.saturated, own)

    def _metrics(self, d: Decision) -> None:
        m, own = self.m, self.own
        specs = tuple(p.spec for p in d.proposals)
        if specs != self.specs:
            for labels, _, _ in self.metric_children:
                self._drop(m.metric_value, labels)
                self._drop(m.metric_target, labels)
            self.specs = specs
            self.metric_children = []
            self.value_on = []
            for p in d.proposals:
                labels = (*own, metric_key(p.spec))
                target = _target(p)
                child = self._child(m.metric_target, labels) if target is not None else None
                if child is not None:
                    child.set(target)
                self.metric_children.append((labels, None, child))
                self.value_on.append(False)
        for i, p in enumerate(d.proposals):
            labels, child, _ = self.metric_children[i]
            value = _value(p)
            if value is None:
                if self.value_on[i]:
                    self.value_on[i] = False
                    self._drop(m.metric_value, labels)
                    self.metric_children[i] = (labels, None, self.metric_children[i][2])
                continue
            if child is None:
                child = self._child(m.metric_value, labels)
                self.metric_children[i] = (labels, child, self.metric_children[i][2])
                self.value_on[i] = True
            child.set(value)

    def _prediction(self, a: Any, hpa: Any, d: Decision, predictions: Any) -> None:
        m, own = self.m, self.own
        if hpa is None or hpa.prediction is None:
            if self.prediction is not None:
                labels = self.prediction[0]
                self.prediction = None
                for family, lab in ((m.predicting, own), (m.wape, own), (m.forecast, labels),
                                    (m.observed, labels)):
                    self._drop(family, lab)
            return
        i = hpa.prediction.metric
        labels = (*own, metric_key(hpa.metrics[i]) if 0 <= i < len(hpa.metrics) else f"metrics[{i}]")
        if self.prediction is None or self.prediction[0] != labels:
            if self.prediction is not None:
                for family in (m.forecast, m.observed):
                    self._drop(family, self.prediction[0])
            self.prediction = (labels, self._child(m.predicting, own))
        c = _condition(d, PREDICTION_ACTIVE)
        self.prediction[1].set(1 if c is not None and c.reason == PREDICTING else 0)
        ps = d.status.prediction
        self._optional(m.forecast, labels, None if ps is None or ps.forecast_milli is None else ps.forecast_milli / 1000)
        observed, wape = predictions.figures(a.key) if predictions is not None else (None, None)
        self._optional(m.observed, labels, None if observed is None else observed / 1000.0)
        self._optional(m.wape, own, wape)

    def _optional(self, family: Any, labels: tuple, value: float | None) -> None:
        """A series present while it has a value."""
        if value is None:
            self._drop(family, labels)
        else:
            self.labels.add((family, labels))
            family.labels(*labels).set(value)
