"""The snapshot format is owned by one module (``pyhpa.adapters.snapshot``): what it writes, it reads back
into the same core inputs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyhpa.adapters.snapshot import (
    controller_config,
    controller_to_dict,
    memory_from_dict,
    memory_to_dict,
    metrics_to_dict,
    snapshot_from_dict,
    snapshot_to_dict,
)
from pyhpa.core import ControllerConfig, Memory, Scale

configs = st.builds(
    ControllerConfig,
    tolerance=st.floats(0, 1), cpu_initialization_period_seconds=st.floats(0, 1e4),
    initial_readiness_delay_seconds=st.floats(0, 1e3), downscale_stabilization_window_seconds=st.floats(0, 3600),
    scale_up_limit_factor=st.floats(1, 10), scale_to_zero=st.booleans(), configurable_tolerance=st.booleans(),
)
# replica counts and changes are never negative (the core records |new - prev|; a snapshot refuses a negative one)
pairs = st.lists(st.tuples(st.integers(0, 2_000_000_000).map(float), st.integers(0, 50)), max_size=5)


@settings(max_examples=100, deadline=None)
@given(configs)
def test_controller_config_round_trips(config):
    written = controller_to_dict(config, syncPeriodSeconds=15, prometheusUrl=None)
    assert written["syncPeriodSeconds"] == 15 and "prometheusUrl" not in written
    assert controller_config(written) == config


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), pairs), pairs, pairs)
def test_memory_round_trips(recs, up, down):
    m = Memory(recs, up, down)
    assert memory_from_dict(memory_to_dict(m)) == m


def test_a_written_snapshot_reads_back_into_the_same_inputs():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "prod"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 10,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                                 "type": "Utilization", "averageUtilization": 50}}},
                                {"type": "External", "external": {"metric": {"name": "queue"}, "target": {
                                 "type": "Value", "value": "10"}}},
                                {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {
                                 "type": "AverageValue", "averageValue": "5"}}}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "prod", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]},
           "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                      "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    resource = {"kind": "PodMetricsList", "items": [{"metadata": {"name": "web-0"}, "timestamp": "2026-01-01T00:10:00Z",
                                                     "window": "30s", "containers": [{"name": "app", "usage": {"cpu": "150m"}}]}]}
    external = {"items": [{"metricName": "queue", "metricLabels": {}, "timestamp": "2026-01-01T00:10:00Z", "value": "25"}]}
    config = ControllerConfig(tolerance=0.05, scale_to_zero=True)
    memory = Memory([(1_767_225_000.0, 3)], [(1_767_225_100.0, 1)], [])
    doc = snapshot_to_dict(
        name="prod/web", source="test", now=1_767_226_200.0, controller=controller_to_dict(config),
        hpa=hpa, scale=Scale(3, 3, "app=web"), scale_name="web", namespace="prod", pods=[pod],
        metrics=metrics_to_dict([("Resource", "cpu", resource, True), ("External", "queue", external, True),
                                 ("Pods", "rps", {"broken": True}, False)]),
        memory=memory,
    )
    snap = snapshot_from_dict(doc, "written.yaml").inputs
    assert snap.config == config and snap.scale == Scale(3, 3, "app=web") and snap.memory == memory
    assert snap.now == 1_767_226_200.0 and [p.name for p in snap.pods] == ["web-0"]
    cpu, queue, rps = snap.samples
    assert cpu.pods["web-0"].value == 150 and queue.values == [25_000]
    assert rps.error is not None and "metrics.errors" in rps.error  # written as errors: ["pods:rps"]
    assert doc["metrics"]["errors"] == ["pods:rps"]
