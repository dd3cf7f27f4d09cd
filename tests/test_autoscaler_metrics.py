"""Per-autoscaler metrics (issue 22) through ``pyhpa run`` against the HTTP API double: the series each
autoscaler gets, their values as the sync decided them, and their removal when the autoscaler is deleted."""

from __future__ import annotations

from controller_util import ControllerTask, autoscaler, deployment, pod, wait_for
from lightkube import codecs
from prometheus_client import generate_latest

from kubedouble import KubeDouble
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

HA = "pyhpa.dev/v1alpha1"
QUEUE = {"type": "External", "external": {"metric": {"name": "queue_depth"},
                                          "target": {"type": "AverageValue", "averageValue": "30"}}}


async def world(kd: KubeDouble) -> None:
    client = kd.async_client()
    for name, n in (("web", 2), ("worker", 2), ("frozen", 3)):
        await client.create(codecs.from_dict(deployment(name, n)))
        for i in range(n):
            kd.put_object(pod(f"{name}-{i}", name))
            kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": "150m"}})  # 75 % of the request
    await client.create(HorizontalAutoscaler(autoscaler("web", "web", syncPeriodSeconds=1, saturation={},
                                                        prediction={})))
    # worker: its External metric is never served (fails) and it has a fallback after 1 failure
    await client.create(HorizontalAutoscaler(autoscaler("worker", "worker", [QUEUE], syncPeriodSeconds=1,
                                                        fallback={"failureThreshold": 1, "replicas": 4})))
    frozen = autoscaler("frozen", "frozen", syncPeriodSeconds=1)
    frozen["metadata"]["annotations"] = {"pyhpa.dev/paused": "true"}
    await client.create(HorizontalAutoscaler(frozen))


def value(run: ControllerTask, series: str, **labels) -> float | None:
    return run.controller.monitor.registry.get_sample_value(series, labels)


async def test_series_per_autoscaler_and_removed_with_it(kd):
    await world(kd)
    async with ControllerTask(kd, sync_period_seconds=1) as run:
        web, worker, frozen = ({"namespace": "default", "name": n} for n in ("web", "worker", "frozen"))
        await wait_for(lambda: value(run, "pyhpa_autoscaler_fallback_active", **worker) == 1, timeout=30,
                       what="worker on fallback")
        await wait_for(lambda: value(run, "pyhpa_autoscaler_current_replicas", **web) == 3, timeout=30,
                       what="web at 3 (75 % of 50 % on 2 pods)")
        # replicas and bounds
        assert value(run, "pyhpa_autoscaler_desired_replicas", **web) == 3
        assert (value(run, "pyhpa_autoscaler_min_replicas", **web), value(run, "pyhpa_autoscaler_max_replicas", **web)) == (1, 10)
        # each metric's value and target, in the target's terms (percent of request)
        cpu = dict(web, metric="Resource/cpu")
        assert value(run, "pyhpa_autoscaler_metric_target", **cpu) == 50
        assert value(run, "pyhpa_autoscaler_metric_value", **cpu) in (75, 50)  # before / after the new pod's sample
        # the source that decided, info-style
        assert value(run, "pyhpa_autoscaler_decided_by_info", **web, source="Metric",
                     decided_by="Metric/cpu resource utilization (percentage of request)") == 1
        info = [s.labels for f in run.controller.monitor.registry.collect() for s in f.samples
                if s.name == "pyhpa_autoscaler_decided_by_info" and s.labels["name"] == "worker"]
        assert len(info) == 1 and info[0]["source"] == "Fallback" and info[0]["decided_by"].startswith("Fallback/")
        # states: the failing metric has no value, its errors are counted by reason
        q = dict(worker, metric="External/queue_depth")
        assert value(run, "pyhpa_autoscaler_metric_value", **q) is None
        assert value(run, "pyhpa_autoscaler_metric_target", **q) == 30
        assert value(run, "pyhpa_autoscaler_sync_errors_total", **worker, reason="FailedGetExternalMetric") >= 1
        await wait_for(lambda: value(run, "pyhpa_autoscaler_paused", **frozen) == 1, what="frozen paused")
        assert value(run, "pyhpa_autoscaler_paused", **web) == 0
        assert value(run, "pyhpa_autoscaler_predicting", **web) == 0  # no Prometheus: steps aside
        assert value(run, "pyhpa_autoscaler_saturated", **web) == 0
        assert value(run, "pyhpa_autoscaler_predicting", **worker) is None  # only where configured
        assert value(run, "pyhpa_autoscaler_sync_period_seconds", **web) == 1
        assert value(run, "pyhpa_autoscaler_last_sync_timestamp_seconds", **web) > 1.7e9

        # deleted: every series of it goes, the others stay
        await kd.async_client().delete(HorizontalAutoscaler, "worker", namespace="default")
        await wait_for(lambda: "default/worker" not in run.controller.autoscalers, what="worker forgotten")
        text = generate_latest(run.controller.monitor.registry).decode()
        assert 'name="worker"' not in text
        assert 'pyhpa_autoscaler_desired_replicas{name="web",namespace="default"}' in text


def test_series_follow_the_spec_and_the_metric_state():
    """Unit: a metric that fails loses its value series (its target stays); a metric removed from the spec loses
    both; a sync that stopped before deciding counts its reason and keeps the last decision's series."""
    from dataclasses import replace
    from types import SimpleNamespace

    from builders import NOW, cpu_hpa, cpu_pods, old_memory, scale
    from prometheus_client import CollectorRegistry

    from pyhpa.controller.outputs.autoscaler_metrics import AutoscalerMetrics
    from pyhpa.core import ControllerConfig, MetricSamples, MetricSpec, SyncInputs, decide

    registry = CollectorRegistry()
    m = AutoscalerMetrics(registry)
    pods, samples = cpu_pods([600] * 4)
    two = replace(cpu_hpa(), metrics=(MetricSpec("Resource", "cpu", "Utilization", 50),
                                      MetricSpec("Pods", "rps", "AverageValue", target_average_milli=10_000)))
    a = SimpleNamespace(namespace="ns", name="web", key="ns/web", hpa=two, sync_period_seconds=15)
    rps = MetricSamples(error="no rps")
    d = decide(SyncInputs(hpa=two, scale=scale(4), pods=pods, samples=[samples, rps], memory=old_memory(4), now=NOW,
                          config=ControllerConfig()))
    m.synced(a, SimpleNamespace(decision=d, error="internal", reason=""), NOW)
    got = lambda name, **labels: registry.get_sample_value(name, dict(namespace="ns", name="web", **labels))  # noqa: E731
    assert got("pyhpa_autoscaler_metric_value", metric="Resource/cpu") == 60
    assert got("pyhpa_autoscaler_metric_value", metric="Pods/rps") is None  # failing: no value
    assert got("pyhpa_autoscaler_metric_target", metric="Pods/rps") == 10
    assert got("pyhpa_autoscaler_sync_errors_total", reason="FailedGetPodsMetric") == 1

    one = cpu_hpa()
    a.hpa = one
    d = decide(SyncInputs(hpa=one, scale=scale(4), pods=pods, samples=[samples], memory=old_memory(4), now=NOW,
                          config=ControllerConfig()))
    m.synced(a, SimpleNamespace(decision=d, error="none", reason=""), NOW + 15)
    assert got("pyhpa_autoscaler_metric_target", metric="Pods/rps") is None  # removed from the spec
    assert got("pyhpa_autoscaler_metric_target", metric="Resource/cpu") == 50
    assert got("pyhpa_autoscaler_sync_errors_total", reason="FailedGetPodsMetric") == 1  # a counter stays

    m.synced(a, SimpleNamespace(decision=None, error="internal", reason="FailedGetScale"), NOW + 30)
    assert got("pyhpa_autoscaler_sync_errors_total", reason="FailedGetScale") == 1
    assert got("pyhpa_autoscaler_desired_replicas") == d.desired_replicas
    assert got("pyhpa_autoscaler_last_sync_timestamp_seconds") == NOW + 30
    m.remove("ns", "web")
    assert not [s for f in registry.collect() for s in f.samples if s.labels.get("name") == "web"]


def test_the_scrape_writes_what_prometheus_client_writes():
    """``/metrics`` (``Monitor.exposition``) writes the per-autoscaler series with their own renderer: the same lines
    as prometheus_client's ``generate_latest`` of the whole registry — every family, label escaping (a metric key
    with quotes and a backslash), counters with their ``_created`` samples, prediction and saturation series."""
    from dataclasses import replace
    from types import SimpleNamespace

    from builders import NOW, cpu_hpa, cpu_pods, old_memory, scale

    from pyhpa.controller.outputs.monitor import Monitor
    from pyhpa.core import ControllerConfig, MetricSamples, MetricSpec, PredictionSpec, SyncInputs, decide
    from pyhpa.core.saturation import SaturationSpec

    m = Monitor()
    pods, samples = cpu_pods([600] * 4)
    plain = cpu_hpa()
    odd = replace(cpu_hpa(), metrics=(MetricSpec("Resource", "cpu", "Utilization", 50),
                                      MetricSpec("External", 'queue "a\\b"', "AverageValue", target_average_milli=3000)),
                  prediction=PredictionSpec(), saturation=SaturationSpec())
    for i, hpa in enumerate([plain, odd, plain]):
        a = SimpleNamespace(namespace=f"ns-{i}", name=f"web-{i}", key=f"ns-{i}/web-{i}", hpa=hpa, sync_period_seconds=15)
        extra = [MetricSamples(error="no queue")] if len(hpa.metrics) > 1 else []
        d = decide(SyncInputs(hpa=hpa, scale=scale(4), pods=pods, samples=[samples, *extra], memory=old_memory(4),
                              now=NOW, config=ControllerConfig()))
        m.autoscalers.synced(a, SimpleNamespace(decision=d, error="internal" if extra else "none", reason=""), NOW + i)
        m.desired(a.namespace, a.name, d.desired_replicas)
    m.desired("ns-9", "never-synced", 3)  # upstream's gauge only
    m.reconciliation("none", "none", 0.01)
    text = m.exposition().decode()
    assert sorted(text.splitlines()) == sorted(generate_latest(m.registry).decode().splitlines())
    assert 'metric="External/queue \\"a\\\\b\\""' in text and "pyhpa_autoscaler_sync_errors_created{" in text
    assert 'pyhpa_autoscaler_saturated{name="web-1",namespace="ns-1"}' in text
