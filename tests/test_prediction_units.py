"""Adapters of predictive scaling: spec.prediction parsing, default history queries, Prometheus range
queries, the status section and kubectl's status.prediction in `pyhpa explain`."""

from __future__ import annotations

import json

import httpx2
import pytest
import yaml
from controller_util import autoscaler, cpu_metric
from typer.testing import CliRunner

from deploy.generate_crd import crd
from pyhpa.adapters.errors import InputError
from pyhpa.adapters.prediction import forecast_from_status, prediction_from_dict, prediction_status, prediction_to_dict
from pyhpa.adapters.promql import RangeQueryError, query_range, range_step
from pyhpa.cli.main import app
from pyhpa.controller.cache.autoscaler import parse_autoscaler
from pyhpa.controller.settings import Settings
from pyhpa.controller.sync.prediction import default_history_query
from pyhpa.core import Forecast, PredictionSpec, PredictionStatus, check_prediction
from pyhpa.core.model import MetricSpec
from pyhpa.core.prediction import MAX_QUANTILE, MIN_HISTORY_SECONDS, MIN_LEAD_SECONDS, MIN_QUANTILE, MIN_REFRESH_SECONDS

METRICS = (MetricSpec("Resource", "cpu", "Utilization", 50),)


def test_empty_prediction_gives_the_defaults_and_round_trips():
    spec = prediction_from_dict({}, METRICS)
    assert spec == PredictionSpec()
    assert (spec.history_seconds, spec.lead_seconds, spec.quantile, spec.mode, spec.refresh_seconds) == (
        604800, 300, 0.9, "Enforce", 3600)
    assert prediction_from_dict(prediction_to_dict(spec), METRICS) == spec
    custom = prediction_from_dict({"leadSeconds": 120.0, "quantile": 0.95, "mode": "Observe",
                                   "historyQuery": "sum(x)"}, METRICS)
    assert (custom.lead_seconds, custom.quantile, custom.mode, custom.history_query) == (120, 0.95, "Observe", "sum(x)")


@pytest.mark.parametrize("d, field", [
    ({"metric": 1}, "spec.prediction.metric"),
    ({"metric": -1}, "spec.prediction.metric"),
    ({"leadSeconds": 1.5}, "spec.prediction.leadSeconds"),
    ({"leadSeconds": 604800}, "spec.prediction.leadSeconds"),
    ({"quantile": 0.4}, "spec.prediction.quantile"),
    ({"quantile": True}, "spec.prediction.quantile"),
    ({"refreshSeconds": 10}, "spec.prediction.refreshSeconds"),
    ({"historyQuery": ""}, "spec.prediction.historyQuery"),
    ("yes", "spec.prediction"),
])
def test_bad_prediction_fields(d, field):
    with pytest.raises(InputError) as err:
        prediction_from_dict(d, METRICS)
    assert err.value.field == field


def test_one_rule_set_for_spec_prediction_the_forecast_flags_and_the_crd():
    assert check_prediction(PredictionSpec()) == []
    bad = PredictionSpec(metric=2, history_seconds=3600, lead_seconds=0, quantile=1.0, mode="Sometimes",
                         refresh_seconds=59, history_query=" ")
    assert [f for f, _ in check_prediction(bad, METRICS)] == [
        "metric", "historySeconds", "leadSeconds", "quantile", "mode", "refreshSeconds", "historyQuery"]
    assert check_prediction(PredictionSpec(lead_seconds=7200, history_seconds=7200)) == [
        ("leadSeconds", "must be shorter than historySeconds (7200)")]
    assert check_prediction(PredictionSpec(lead_seconds=float("nan")))[0][0] == "leadSeconds"
    assert check_prediction(PredictionSpec(), (MetricSpec("Prometheus", "q"),)) == [
        ("metric", "spec.metrics[0] of type 'Prometheus' cannot be forecast")]
    schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "prediction"]["properties"]
    assert (schema["historySeconds"]["minimum"], schema["leadSeconds"]["minimum"],
            schema["refreshSeconds"]["minimum"]) == (MIN_HISTORY_SECONDS, MIN_LEAD_SECONDS, MIN_REFRESH_SECONDS)
    assert (schema["quantile"]["minimum"], schema["quantile"]["maximum"]) == (MIN_QUANTILE, MAX_QUANTILE)
    for field, value in (("historySeconds", MIN_HISTORY_SECONDS - 1), ("leadSeconds", MIN_LEAD_SECONDS - 1),
                         ("refreshSeconds", MIN_REFRESH_SECONDS - 1), ("quantile", MAX_QUANTILE)):
        with pytest.raises(InputError) as err:
            prediction_from_dict({field: value}, METRICS)
        assert err.value.field == f"spec.prediction.{field}"
        prediction_from_dict({field: schema[field]["minimum"]} if field != "quantile" else {}, METRICS)


def parsed(metrics, **prediction):
    obj = autoscaler("web", "web-app", metrics, prediction=prediction)
    a = parse_autoscaler(obj, Settings())
    assert a.error is None, a.error
    return a


def test_default_history_query_per_metric_type():
    a = parsed([cpu_metric(), {"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "AverageValue", "averageValue": "1Gi"}}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {
            "type": "Utilization", "averageUtilization": 60}}},
        {"type": "Pods", "pods": {"metric": {"name": "http_rps", "selector": {"matchLabels": {"verb": "GET"}}},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "Object", "object": {"metric": {"name": "queue_depth"}, "describedObject": {
            "apiVersion": "v1", "kind": "Service", "name": "q"}, "target": {"type": "Value", "value": "100"}}},
        {"type": "External", "external": {"metric": {"name": "sqs_messages", "selector": {"matchLabels": {
            "queue": "jobs"}}}, "target": {"type": "AverageValue", "averageValue": "30"}}}])
    assert a.hpa.prediction == PredictionSpec()
    q = [default_history_query(a, i)[0] for i in range(6)]
    pods = 'namespace="default",pod=~"web-app-.*"'
    assert q[0] == f'sum(rate(container_cpu_usage_seconds_total{{{pods},container!="",container!="POD"}}[5m]))'
    assert q[1] == f'sum(container_memory_working_set_bytes{{{pods},container!="",container!="POD"}})'
    assert q[2] == f'sum(rate(container_cpu_usage_seconds_total{{{pods},container="app"}}[5m]))'
    assert q[3] == f'sum(http_rps{{{pods},verb="GET"}})'
    assert q[4] == 'sum(queue_depth{namespace="default"})'
    assert q[5] == 'sum(sqs_messages{queue="jobs"})'


def test_spec_prediction_errors_reach_the_controller_as_one_line():
    obj = autoscaler("web", "web", [cpu_metric()], prediction={"quantile": 2})
    a = parse_autoscaler(obj, Settings())
    assert a.hpa is None and a.error.startswith("spec.prediction.quantile: must be a number in [0.5, 1)")


def test_range_step_keeps_under_prometheus_point_limit():
    assert range_step(0, 7 * 86400) == 60
    assert (14 * 86400) / range_step(0, 14 * 86400) <= 11000


def _client(handler) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def test_query_range_reads_one_series_and_drops_nan():
    def handler(request):
        assert request.url.path == "/api/v1/query_range"
        assert request.url.params["step"] == "60"
        return httpx2.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {}, "values": [[100, "1.5"], [160, "NaN"], [220, "2"]]}]}})

    async with _client(handler) as c:
        assert await query_range(c, "http://p", "sum(x)", 0, 300, 60, 5) == ([100.0, 220.0], [1.5, 2.0])


@pytest.mark.parametrize("response, text", [
    (httpx2.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"pod": "a"}, "values": []}, {"metric": {"pod": "b"}, "values": []}]}}), "2 series"),
    (httpx2.Response(400, json={"status": "error", "error": "parse error"}), "parse error"),
    (httpx2.Response(502, text="bad gateway"), "without JSON"),
    (httpx2.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": []}}), "matrix"),
])
async def test_query_range_failures_are_range_query_errors(response, text):
    async with _client(lambda request: response) as c:
        with pytest.raises(RangeQueryError) as err:
            await query_range(c, "http://p", "sum(x)", 0, 300, 60, 5)
    assert text in str(err.value)


def test_explain_from_kubectl_reads_the_forecast_from_status_prediction(tmp_path):
    hpa = yaml.safe_load(open("examples/explain/hpa.yaml"))
    hpa["apiVersion"], hpa["kind"] = "pyhpa.dev/v1alpha1", "HorizontalAutoscaler"
    hpa["spec"]["prediction"] = {}
    hpa["status"]["prediction"] = {"reason": "Predicting", "forecast": "900m", "message": "seasonal", "replicas": 9}
    (tmp_path / "hza.yaml").write_text(yaml.safe_dump(hpa))
    args = ["explain", "-o", "json", "--hpa", str(tmp_path / "hza.yaml"), "--pods", "examples/explain/pods.yaml",
            "--pod-metrics", "examples/explain/podmetrics.json", "--now", "2026-11-21T10:00:00Z"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["prediction"]["forecast"] == "900m" and doc["prediction"]["replicas"] == 9
    hpa["status"]["prediction"] = {"reason": "HistoryUnavailable", "message": "prometheus unreachable"}
    (tmp_path / "hza.yaml").write_text(yaml.safe_dump(hpa))
    doc = json.loads(CliRunner().invoke(app, args).output)
    assert doc["prediction"]["reason"] == "HistoryUnavailable" and doc["prediction"]["replicas"] is None
    cond = {c["type"]: c for c in doc["conditions"]}["PredictionActive"]
    assert (cond["status"], cond["message"]) == ("False", "prometheus unreachable")


def test_status_prediction_has_one_renderer_and_the_reader_takes_back_what_it_wrote():
    ps = PredictionStatus(forecast_milli=123456, expected_milli=100001, provisioned_milli=110000, replicas=7,
                          reason="Predicting", mode="Enforce")
    assert prediction_status(ps) == {"forecast": "123456m", "expected": "100001m", "provisioned": "110",
                                     "replicas": 7, "reason": "Predicting", "mode": "Enforce"}
    written = prediction_status(ps, significant=3)  # what the controller writes: rounded up to 3 digits
    assert (written["forecast"], written["expected"]) == ("124", "101")
    assert forecast_from_status({"prediction": {**written, "message": "seasonal"}}) == Forecast(
        total_milli=124000, expected_milli=101000, reason="Predicting", message="seasonal")
    aside = PredictionStatus(forecast_milli=None, replicas=None, reason="HistoryUnavailable", mode="Enforce")
    assert prediction_status(aside) == {"forecast": None, "expected": None, "provisioned": None, "replicas": None,
                                        "reason": "HistoryUnavailable", "mode": "Enforce"}
    assert forecast_from_status({"prediction": {"reason": "HistoryUnavailable"}}).total_milli is None
    assert forecast_from_status(None) is None and forecast_from_status({"prediction": {"forecast": "1"}}) is None
    with pytest.raises(InputError) as err:
        forecast_from_status({"prediction": {"reason": "Predicting", "forecast": "lots"}})
    assert err.value.field == "status.prediction.forecast"


def _core_inputs(prediction: PredictionSpec):
    from pyhpa.core import HPA, Memory, MetricSamples, Pod, PodSample, Scale

    hpa = HPA(namespace="default", name="web", min_replicas=1, max_replicas=20, metrics=METRICS, prediction=prediction)
    pods = [Pod(f"web-{i}", "Running", {"app": "web"}, start_time=0.0, ready=True, ready_transition_time=0.0,
                requests={("cpu", ""): 1000}) for i in range(2)]
    samples = [MetricSamples(pods={p.name: PodSample(500, 1e9 - 10, 15.0) for p in pods}, timestamp=1e9 - 10)]
    return hpa, Scale(2, 2, "app=web"), pods, samples, Memory()


@pytest.mark.parametrize("history, reason", [
    ("noise", "NotPredictable"), ("flat", "NotPredictable"), ("short", "InsufficientHistory")])
def test_no_usable_pattern_gives_no_proposal_and_the_condition(history, reason):
    """Through the forecaster and the core: white noise, a flat series and too little history ask for nothing."""
    import numpy as np

    from pyhpa.core import ControllerConfig, SyncInputs, decide
    from pyhpa.forecast import Predictor, settings_for, to_core_forecast

    now = 1e9
    days = 0.1 if history == "short" else 7
    t = now - days * 86400 + np.arange(0, days * 86400, 60.0)
    rng = np.random.default_rng(1)
    v = np.full(t.size, 1000.0)
    if history == "noise":
        v += 200.0 * rng.standard_normal(t.size)
    if history == "short":  # 2.4 hours of a daily cycle
        v += 600.0 * np.sin(2 * np.pi * t / 86400)
    spec = PredictionSpec()
    p = Predictor(settings_for(spec))
    p.extend(t, v)
    forecast = to_core_forecast(p.forecast(now))
    assert forecast.total_milli is None and forecast.reason == reason
    hpa, scale, pods, samples, memory = _core_inputs(spec)
    d = decide(SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory, now=now,
                          config=ControllerConfig(), forecast=forecast))
    with_pred = decide(SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory, now=now,
                                  config=ControllerConfig()))
    assert [s.replicas for s in d.sources if s.source == "Prediction"] == [None]
    cond = {c.type: c for c in d.conditions}["PredictionActive"]
    assert (cond.status, cond.reason) == ("False", reason)
    assert d.desired_replicas == with_pred.desired_replicas == 2  # 50 % of 1 CPU at a 50 % target: as upstream


def test_removing_spec_prediction_removes_its_condition_and_status():
    from dataclasses import replace

    from pyhpa.core import ControllerConfig, SyncInputs, decide, with_status

    hpa, scale, pods, samples, memory = _core_inputs(PredictionSpec())
    d = decide(SyncInputs(hpa=hpa, scale=scale, pods=pods, samples=samples, memory=memory, now=1e9,
                          config=ControllerConfig()))
    assert "PredictionActive" in {c.type for c in d.conditions} and d.status.prediction is not None
    without = replace(with_status(hpa, d.status), prediction=None)
    again = decide(SyncInputs(hpa=without, scale=scale, pods=pods, samples=samples, memory=d.memory, now=1e9 + 15,
                              config=ControllerConfig()))
    assert "PredictionActive" not in {c.type for c in again.conditions} and again.status.prediction is None
    plain = decide(SyncInputs(hpa=replace(hpa, prediction=None), scale=scale, pods=pods, samples=samples, memory=memory,
                              now=1e9, config=ControllerConfig()))
    assert [c.type for c in again.conditions] == [c.type for c in plain.conditions]
