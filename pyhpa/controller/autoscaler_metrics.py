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

from ..core import Decision, metric_key
from ..core.model import (FALLBACK_SOURCE, PREDICTING, PREDICTION_ACTIVE, SATURATION_ACTIVE, UTILIZATION,
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
        #: per autoscaler key: (family, label values) of the series it has now
        self._series: dict[tuple[str, str], set[tuple[Any, tuple]]] = {}

    def _set(self, have: set, family: Gauge, labels: tuple, value: float | None) -> None:
        if value is None:
            return
        family.labels(*labels).set(value)
        have.add((family, labels))

    def synced(self, a: Any, result: Any, now: float, predictions: Any = None) -> None:
        """Record one sync of Autoscaler ``a`` (``result``: its SyncResult) at epoch ``now``; ``predictions`` the
        controller's ``LivePredictions`` (forecast observation and WAPE)."""
        ns, name = a.namespace, a.name
        own = (ns, name)
        have: set = set()
        self._set(have, self.last_sync, own, now)
        self._set(have, self.period, own, float(a.sync_period_seconds))
        reasons = self._errors(result)
        for reason in reasons:
            self.errors.labels(ns, name, reason).inc()
        old = self._series.get(own, set())
        for family, labels in old:  # error counters stay for as long as the autoscaler does
            if family is self.errors:
                have.add((family, labels))
        for reason in reasons:
            have.add((self.errors, (ns, name, reason)))
        d = result.decision
        if d is not None:
            self._decision(have, a, d, own, predictions)
        else:  # the sync stopped before deciding: keep what the last decision said, refresh the clock only
            have |= {s for s in old if s[0] is not self.errors}
        for family, labels in old - have:
            family.remove(*labels)
        self._series[own] = have

    def _decision(self, have: set, a: Any, d: Decision, own: tuple, predictions: Any) -> None:
        self._set(have, self.current, own, float(d.current_replicas))
        self._set(have, self.desired, own, float(d.desired_replicas))
        if d.max_replicas_effective or d.min_replicas_effective:
            self._set(have, self.min, own, float(d.min_replicas_effective))
            self._set(have, self.max, own, float(d.max_replicas_effective))
        for p in d.proposals:
            labels = (*own, metric_key(p.spec))
            self._set(have, self.metric_value, labels, _value(p))
            self._set(have, self.metric_target, labels, _target(p))
        decided = d.decided_by or "None"
        self.decided_by.labels(*own).info({"source": decided.split("/", 1)[0], "decided_by": decided})
        have.add((self.decided_by, own))
        self._set(have, self.paused, own, 1.0 if d.status.pause is not None else 0.0)
        fallback = any(s.source == FALLBACK_SOURCE and s.applied and s.replicas is not None for s in d.sources)
        self._set(have, self.fallback, own, 1.0 if fallback else 0.0)
        hpa = a.hpa
        if hpa is not None and hpa.prediction is not None:
            c = _condition(d, PREDICTION_ACTIVE)
            self._set(have, self.predicting, own, 1.0 if c is not None and c.reason == PREDICTING else 0.0)
            i = hpa.prediction.metric
            labels = (*own, metric_key(hpa.metrics[i]) if 0 <= i < len(hpa.metrics) else f"metrics[{i}]")
            ps = d.status.prediction
            if ps is not None and ps.forecast_milli is not None:
                self._set(have, self.forecast, labels, ps.forecast_milli / 1000.0)
            if predictions is not None:
                observed, wape = predictions.figures(a.key)
                self._set(have, self.observed, labels, None if observed is None else observed / 1000.0)
                self._set(have, self.wape, own, wape)
        if hpa is not None and hpa.saturation is not None:
            c = _condition(d, SATURATION_ACTIVE)
            self._set(have, self.saturated, own, 1.0 if c is not None and c.status == "True" else 0.0)

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
        for family, labels in self._series.pop((namespace, name), set()):
            try:
                family.remove(*labels)
            except KeyError:
                pass
