"""Prometheus as a metric source of the live controller (``type: Prometheus`` metrics).

The end-to-end test needs a real Prometheus (Debian's package; ``.ci/run`` installs it) scraping a
``prometheus_client`` exporter that plays the application's per-pod metric; the controller scales a
Deployment in the Kubernetes API double on it, up, then down after the (shortened) stabilization window.
It is skipped only where the ``prometheus`` binary is absent. The other tests need no Prometheus.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from controller_util import autoscaler, deployment, wait_for
from lightkube import ApiError, codecs
from prometheus_client import CollectorRegistry, Gauge, start_http_server
from test_controller_e2e import HA, Running, assert_exactly_as_decided, events, put_pods, replicas
from typer.testing import CliRunner

from controlplane.net import free_port
from controlplane.prometheus import PrometheusServer, prometheus_binary
from kubedouble import KubeDouble
from pyhpa.adapters.parse import format_time
from pyhpa.cli.main import app
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

needs_prometheus = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="the prometheus binary is not installed here (.ci/run installs Debian's package); "
           "the controller's Prometheus end-to-end test is skipped",
)
QUERY = "sum by (pod) (app_requests_per_second)"
WINDOW = 3.0  # scale-down stabilization, seconds (test-shortened)


def prom_metric(**fields) -> dict:
    p = {"name": "requests_per_second", "query": QUERY, "podLabel": "pod", "timeoutSeconds": 5,
         "target": {"type": "AverageValue", "averageValue": "10"}, **fields}
    return {"type": "Prometheus", "prometheus": {k: v for k, v in p.items() if v is not None}}


def stored_status(kd: KubeDouble, name: str) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", name) or {}).get("status") or {}


def condition(status: dict, ctype: str) -> dict:
    return {c["type"]: c for c in status.get("conditions") or []}.get(ctype, {})


@needs_prometheus
async def test_scales_up_then_down_after_the_window_on_a_promql_metric(kd, tmp_path):
    registry = CollectorRegistry()
    gauge = Gauge("app_requests_per_second", "requests per second", ["pod"], registry=registry)
    for i in range(3):
        gauge.labels(pod=f"web-{i}").set(20)
    port = free_port()
    exporter, _ = start_http_server(port, addr="127.0.0.1", registry=registry)
    prom = PrometheusServer([f"127.0.0.1:{port}"])
    await asyncio.to_thread(prom.__enter__)
    try:
        await asyncio.to_thread(prom.wait_for, QUERY, lambda a: len(a["data"]["result"]) == 3)
        client = kd.async_client()
        await client.create(codecs.from_dict(deployment("web", 3)))
        put_pods(kd, "web", 0, 3)
        await client.create(HorizontalAutoscaler(autoscaler("web", "web", [prom_metric()], syncPeriodSeconds=1)))
        async with Running(kd, sync_period_seconds=1, downscale_stabilization_window_seconds=WINDOW,
                           prometheus_url=prom.url) as run:
            # 20 per pod against 10: ceil(2 x 3) = 6
            await wait_for(lambda: replicas(kd, "web") == 6, timeout=60, what="the scale-up to 6")
            up = (await wait_for(lambda: run.rescales("default/web"), what="the scale-up's result"))[0]
            assert (up.decision.current_replicas, up.decision.desired_replicas) == (3, 6)
            written = [s for k, s in run.written if k == "default/web" and s.get("currentReplicas") == 3][-1]
            assert_exactly_as_decided(up, written)
            # a PromQL metric per pod shows in the status as the Pods metric it acts as
            assert written["currentMetrics"] == [{"type": "Pods", "pods": {
                "metric": {"name": "requests_per_second"}, "current": {"averageValue": "20"}}}]
            assert (condition(written, "ScalingActive")["reason"]) == "ValidMetricFound"
            assert run.controller.monitor.registry.get_sample_value(
                "horizontal_pod_autoscaler_controller_metric_computation_total",
                {"action": "scale_up", "error": "none", "metric_type": "Prometheus"}) == 1

            # the new pods come up and the load drops to 5 per pod: ceil(0.5 x 6) = 3, after the window
            put_pods(kd, "web", 3, 6)
            for i in range(6):
                gauge.labels(pod=f"web-{i}").set(5)
            await asyncio.to_thread(prom.wait_for, QUERY, lambda a: len(a["data"]["result"]) == 6 and all(
                s["value"][1] == "5" for s in a["data"]["result"]))
            await wait_for(lambda: replicas(kd, "web") == 3, timeout=60, what="the scale-down to 3")
            down = (await wait_for(lambda: [r for r in run.rescales("default/web") if r.action == "scale_down"],
                                   what="the scale-down's result"))[0]
            assert (down.decision.current_replicas, down.decision.desired_replicas) == (6, 3)
            before = [r for r in run.results[:run.results.index(down)] if r.decision is not None]
            held = [r for r in before if r.decision.prenormalized == 3]
            assert held and all(("AbleToScale", "ScaleDownStabilized") in
                                [(c.type, c.reason) for c in r.decision.conditions] for r in held)
            last_six = max(r.gathered.inputs.now for r in before if (r.decision.prenormalized or 0) > 3)
            assert down.gathered.inputs.now - last_six >= WINDOW  # the recommendation of 6 was kept for the window
            await wait_for(lambda: any(e["note"] == "New size: 3; reason: All metrics below target"
                                       for e in events(kd, "web")), what="the scale-down event")
            await wait_for(lambda: len(run.results) > run.results.index(down) + 1, what="a sync after the scale-down")
        last = run.results[-1]

        # `pyhpa snapshot` of that sync keeps the PromQL metric and Prometheus' answer; explain agrees
        snap = await asyncio.to_thread(CliRunner().invoke, app, [
            "snapshot", "default/web", "--server", kd.url, "--prometheus-url", prom.url, "-o", "json",
            "--now", format_time(last.gathered.inputs.now)])
        assert snap.exit_code == 0, snap.output
        doc = json.loads(snap.output)
        assert doc["hpa"]["spec"]["metrics"] == [prom_metric()]
        assert doc["metrics"]["prometheus"]["requests_per_second"]["status"] == "success"
        (tmp_path / "s.json").write_text(snap.output)
        out = json.loads(CliRunner().invoke(app, ["explain", "-o", "json", str(tmp_path / "s.json")]).output)
        assert out["desiredReplicas"] == last.decision.desired_replicas == 3
        assert out["proposals"][0]["rawValue"] == "5"
    finally:
        await asyncio.to_thread(prom.__exit__, None, None, None)
        exporter.shutdown()
    assert kd.invalid_requests == []


async def test_prometheus_metric_problems_are_conditions_as_for_any_metric(kd):
    """No server anywhere: InvalidSpec naming the field. An unreachable server: the metric fails as a Pods
    metric does (FailedGetPodsMetric), within its timeout; other autoscalers are unaffected."""
    client = kd.async_client()
    for name in ("noserver", "down"):
        await client.create(codecs.from_dict(deployment(name, 2)))
        put_pods(kd, name, 0, 2)
    dead = f"http://127.0.0.1:{free_port()}"
    await client.create(HorizontalAutoscaler(autoscaler("noserver", "noserver", [prom_metric()])))
    await client.create(HorizontalAutoscaler(autoscaler("down", "down", [prom_metric(server=dead, timeoutSeconds=2)])))
    async with Running(kd):
        invalid = await wait_for(lambda: condition(stored_status(kd, "noserver"), "ScalingActive"),
                                 what="the InvalidSpec condition")
        assert (invalid["status"], invalid["reason"]) == ("False", "InvalidSpec")
        assert "spec.metrics[0].prometheus.server: needs a 'server'" in invalid["message"]
        failed = await wait_for(lambda: condition(stored_status(kd, "down"), "ScalingActive"),
                                what="the failed metric's condition")
        assert (failed["status"], failed["reason"]) == ("False", "FailedGetPodsMetric")
        assert "prometheus unreachable" in failed["message"]
    assert replicas(kd, "down") == 2 and replicas(kd, "noserver") == 2
    assert kd.invalid_requests == []


async def test_crd_accepts_prometheus_metrics_and_rejects_incomplete_ones(kd):
    client = kd.async_client()
    single = prom_metric(podLabel=None, target={"type": "Value", "value": "30"}, server="http://p:9090")
    created = await client.create(HorizontalAutoscaler(autoscaler("ok", "web", [prom_metric(), single])))
    assert created["spec"]["metrics"][1]["prometheus"]["target"] == {"type": "Value", "value": "30"}
    for bad in (prom_metric(query=""), prom_metric(timeoutSeconds=0), prom_metric(unknown=1),
                {"type": "Prometheus", "prometheus": {"query": "up"}}):
        with pytest.raises(ApiError) as err:
            await client.create(HorizontalAutoscaler(autoscaler("bad", "web", [bad])))
        assert err.value.status.code == 422
    assert len(kd.invalid_requests) == 4  # exactly the four refused bodies


def test_run_rejects_a_prometheus_url_that_is_not_http():
    result = CliRunner().invoke(app, ["run", "--prometheus-url", "prometheus:9090"])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: --prometheus-url: must be an http:// or https:// URL with a host, "
                                     "got 'prometheus:9090'")
