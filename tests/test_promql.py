"""Prometheus as a metric source, against a real Prometheus (Debian's package) on loopback."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from controlplane.net import free_port
from controlplane.prometheus import PrometheusServer, prometheus_binary
from pyhpa.adapters.errors import InputError
from pyhpa.adapters.metric_types.prometheus import metric_from_dict
from pyhpa.adapters.promql import PromQuery, query_samples, samples_from_answer
from pyhpa.core import HPA, ControllerConfig, Memory, Pod, Scale, SyncInputs, decide
from pyhpa.core.model import ZERO_TIME

needs_prometheus = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="Debian's prometheus is not installed here (.ci/run installs it); the PromQL server tests are skipped",
)


def test_metric_definition_maps_to_core_types():
    spec, q = metric_from_dict({"type": "Prometheus", "prometheus": {
        "name": "rps", "query": "rate(x[1m])", "server": "http://p:9090/", "podLabel": "pod",
        "target": {"type": "AverageValue", "averageValue": "10"}}}, "spec.metrics[0]")
    assert (spec.type, spec.target_average_milli, q.server, q.pod_label) == ("Pods", 10000, "http://p:9090", "pod")
    spec, q = metric_from_dict({"type": "Prometheus", "prometheus": {
        "query": "sum(q)", "server": "http://p", "target": {"type": "Value", "value": "30"}}}, "m")
    assert (spec.type, spec.target_value_milli) == ("External", 30000)
    with pytest.raises(InputError) as err:
        metric_from_dict({"type": "Prometheus", "prometheus": {"query": "q", "server": "http://p", "podLabel": "pod",
                                                               "target": {"type": "Value", "value": "3"}}}, "m")
    assert "m.prometheus.target.type" in str(err.value)


def test_answers_become_samples_or_errors():
    q = PromQuery("http://p", "q", "pod")
    ans = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"pod": "a"}, "value": [100.0, "1.5"]}, {"metric": {"pod": "b"}, "value": [100.0, "NaN"]}]}}
    s = samples_from_answer(ans, q)
    assert {k: v.value for k, v in s.pods.items()} == {"a": 1500}
    assert samples_from_answer({"status": "error", "error": "bad_data"}, q).error.endswith("bad_data")
    scalar = {"status": "success", "data": {"resultType": "scalar", "result": [5.0, "7"]}}
    assert samples_from_answer(scalar, PromQuery("http://p", "q")).values == [7000]
    two = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [1, "1"]}, {"metric": {}, "value": [1, "2"]}]}}
    assert "2 series" in samples_from_answer(two, PromQuery("http://p", "q")).error


async def test_unreachable_prometheus_is_a_metric_error_not_an_exception():
    import httpx2

    async with httpx2.AsyncClient() as client:
        s = await query_samples(client, PromQuery(f"http://127.0.0.1:{free_port()}", "up", timeout_seconds=1))
    assert s.error and s.error.startswith("prometheus unreachable")


@needs_prometheus
async def test_real_prometheus_per_pod_metric_scales_up():
    import httpx2

    registry = CollectorRegistry()
    gauge = Gauge("app_requests_per_second", "requests per second", ["pod"], registry=registry)
    for name, value in (("web-0", 30), ("web-1", 34), ("web-2", 26)):
        gauge.labels(pod=name).set(value)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        with PrometheusServer([f"127.0.0.1:{port}"]) as prom:
            prom.wait_for("app_requests_per_second", lambda a: len(a["data"]["result"]) == 3)
            spec, q = metric_from_dict({"type": "Prometheus", "prometheus": {
                "name": "rps", "query": "app_requests_per_second", "server": prom.url, "podLabel": "pod",
                "target": {"type": "AverageValue", "averageValue": "10"}}}, "spec.metrics[0]")
            async with httpx2.AsyncClient() as client:
                samples = await query_samples(client, q)
    finally:
        server.shutdown()
    assert {k: v.value for k, v in samples.pods.items()} == {"web-0": 30000, "web-1": 34000, "web-2": 26000}
    pods = [Pod(f"web-{i}", "Running", {"app": "web"}, False, ZERO_TIME, True, ZERO_TIME, {}, {}) for i in range(3)]
    hpa = HPA("default", "web", 1, 20, (spec,))
    d = decide(SyncInputs(hpa=hpa, scale=Scale(3, 3, "app=web"), pods=pods, samples=[samples], memory=Memory(),
                          now=samples.timestamp + 1, config=ControllerConfig()))
    # average 30 against a target of 10 per pod: ceil(3.0 * 3) = 9 replicas
    assert d.proposals[0].replicas == 9
    # without spec.behavior one sync may at most double (max(2 x 3, 4) = 6): ScaleUpLimit
    assert d.desired_replicas == 6 and d.rescale
    assert {c.type: c.reason for c in d.conditions}["ScalingLimited"] == "ScaleUpLimit"
