"""Prometheus metrics with upstream's names, labels and buckets (pkg/controller/podautoscaler/monitor).

``action`` is scale_up, scale_down or none; ``error`` is spec (the autoscaler's spec cannot work),
internal (anything else failed) or none; ``metric_type`` is the ``spec.metrics[].type``. Durations
are seconds, buckets ``0.001 * 2**k`` for k < 15. Each Controller has its own registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .autoscaler_metrics import AutoscalerMetrics

SUBSYSTEM = "horizontal_pod_autoscaler_controller"
BUCKETS = tuple(0.001 * 2**k for k in range(15))
ACTION_HELP = ("The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' "
               "should be either 'spec', 'internal', or 'none'.")
SCALE_UP, SCALE_DOWN, NONE = "scale_up", "scale_down", "none"
SPEC, INTERNAL = "spec", "internal"


def action_label(current: int, desired: int) -> str:
    """scale_up / scale_down / none from the current and the new replica count."""
    if desired > current:
        return SCALE_UP
    if desired < current:
        return SCALE_DOWN
    return NONE


class Monitor:
    """The controller's metrics, on ``registry`` (a fresh one unless given)."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciliations = Counter(
            "reconciliations", "Number of reconciliations of HPA controller. " + ACTION_HELP
            + " Note that if both spec and internal errors happen during a reconciliation, the first one to occur "
            "is reported in `error` label.", ["action", "error"], subsystem=SUBSYSTEM, registry=r)
        self.reconciliation_duration = Histogram(
            "reconciliation_duration_seconds", "The time(seconds) that the HPA controller takes to reconcile once. "
            + ACTION_HELP, ["action", "error"], subsystem=SUBSYSTEM, buckets=BUCKETS, registry=r)
        self.metric_computations = Counter(
            "metric_computation", "Number of metric computations. " + ACTION_HELP
            + " The label 'metric_type' corresponds to HPA.spec.metrics[*].type", ["action", "error", "metric_type"],
            subsystem=SUBSYSTEM, registry=r)
        self.metric_computation_duration = Histogram(
            "metric_computation_duration_seconds", "The time(seconds) that the HPA controller takes to calculate one "
            "metric. " + ACTION_HELP + " The label 'metric_type' corresponds to HPA.spec.metrics[*].type",
            ["action", "error", "metric_type"], subsystem=SUBSYSTEM, buckets=BUCKETS, registry=r)
        self.num_autoscalers = Gauge(
            "num_horizontal_pod_autoscalers", "Current number of controlled HPA objects.", subsystem=SUBSYSTEM,
            registry=r)
        self.leader = Gauge(
            "leader_election_master_status", "Gauge of if the reporting system is master of the relevant lease, 0 "
            "indicates backup, 1 indicates master. 'name' is the string used to identify the lease.", ["name"],
            registry=r)  # client-go's leader election metric (set only with --leader-elect)

        self._children: dict[tuple, tuple] = {}
        #: the per-autoscaler series, upstream's desired_replicas among them (pyhpa.controller.outputs.autoscaler_metrics)
        self.autoscalers = AutoscalerMetrics(r)

    def exposition(self) -> bytes:
        """``/metrics``: the registry as ``prometheus_client.generate_latest`` writes it, the per-autoscaler series
        written by their own ``render`` (the same lines, much faster: 120,000 series at 10,000 autoscalers)."""
        with self.autoscalers.rendered_apart():
            text = generate_latest(self.registry)
        return text + self.autoscalers.render().encode()

    def _pair(self, counter: Counter, histogram: Histogram, labels: tuple) -> tuple:
        """The labelled children of a counter/histogram pair (looked up once per label set)."""
        key = (id(counter), labels)
        pair = self._children.get(key)
        if pair is None:
            pair = self._children[key] = (counter.labels(*labels), histogram.labels(*labels))
        return pair

    def reconciliation(self, action: str, error: str, seconds: float) -> None:
        """ObserveReconciliationResult."""
        total, duration = self._pair(self.reconciliations, self.reconciliation_duration, (action, error))
        total.inc()
        duration.observe(seconds)

    def metric_computation(self, action: str, error: str, seconds: float, metric_type: str) -> None:
        """ObserveMetricComputationResult."""
        total, duration = self._pair(self.metric_computations, self.metric_computation_duration,
                                     (action, error, metric_type))
        total.inc()
        duration.observe(seconds)

    def desired(self, namespace: str, name: str, replicas: int) -> None:
        """ObserveDesiredReplicas (``desired_replicas{namespace, hpa_name}``, kept with the per-autoscaler series)."""
        self.autoscalers.desired(namespace, name, replicas)

    def deleted(self, namespace: str, name: str) -> None:
        """The autoscaler is gone (or moved to another shard): drop its desired_replicas and per-autoscaler series."""
        self.autoscalers.remove(namespace, name)
