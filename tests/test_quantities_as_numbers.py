"""Quantities written as YAML/JSON numbers, as kubectl users write them (``averageValue: 100``,
``behavior.scaleDown.tolerance: 0.05``): the API server reads a number as the quantity with those digits,
so every command decides exactly as with the string, and the CRD and the controller accept them too."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from controller_util import CRD, ControllerTask, autoscaler, deployment, pod, wait_for
from typer.testing import CliRunner

from pyhpa.adapters.errors import InputError
from pyhpa.adapters.objects import hpa_from_dict
from pyhpa.adapters.parse import milli, quantity, tolerance_float
from pyhpa.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "explain"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _hpa(target: dict, behavior: dict | None = None, name: str = "web") -> dict:
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]}
    if behavior is not None:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec,
            "status": {"currentReplicas": 3, "desiredReplicas": 3}}


def _write(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("number,text", [(100, "100"), (0.05, "0.05"), (1.5, "1.5"), (1e-05, "0.00001"),
                                         (2, "2"), (0.1, "100m")])
def test_a_number_is_the_quantity_with_those_digits(number, text):
    assert quantity(number) == quantity(text)
    assert milli(number) == milli(text)
    assert tolerance_float(number) == tolerance_float(text)


def test_the_parsed_hpa_is_the_same_for_numbers_and_strings():
    as_numbers = _hpa({"type": "AverageValue", "averageValue": 100}, {"scaleDown": {"tolerance": 0.05}})
    as_strings = _hpa({"type": "AverageValue", "averageValue": "100"}, {"scaleDown": {"tolerance": "0.05"}})
    original = copy.deepcopy(as_numbers)
    assert hpa_from_dict(as_numbers)[0] == hpa_from_dict(as_strings)[0]
    assert as_numbers == original  # nothing the user gave is rewritten


@pytest.mark.parametrize("bad,word", [(True, "true or false"), ([1], "a list"), ({"a": 1}, "a mapping")])
def test_a_quantity_that_is_neither_number_nor_string_names_the_field(bad, word):
    with pytest.raises(InputError) as err:
        hpa_from_dict(_hpa({"type": "AverageValue", "averageValue": bad}))
    assert str(err.value) == ("HorizontalPodAutoscaler default/web: spec.metrics[0].resource.target.averageValue: "
                              f"expected a quantity (a number, or a string such as 500m or 1Gi), got {word}")


def test_thresholds_of_average_value_100_are_those_of_the_string(tmp_path):
    outs = []
    for value in (100, "100"):
        r = invoke("thresholds", "-o", "json", _write(tmp_path, "h.yaml", _hpa({"type": "AverageValue", "averageValue": value},
                                                                              {"scaleDown": {"tolerance": 0.05}})))
        assert r.exit_code == 0, r.output
        outs.append(json.loads(r.output))
    assert outs[0] == outs[1]
    assert outs[0]["tolerance"]["scaleDown"] == 0.05


def _explain(tmp_path, hpa: dict, pods: Path = EX / "pods.yaml") -> dict:
    r = invoke("explain", "-o", "json", "--hpa", _write(tmp_path, "hpa.yaml", hpa), "--pods", pods,
               "--pod-metrics", EX / "podmetrics.json", "--now", "2026-11-21T10:00:00Z")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _all_ready_pods(tmp_path: Path) -> Path:
    """The example's pods with the starting one Ready for an hour: 172m + 164m + 240m = 192m on average."""
    doc = yaml.safe_load((EX / "pods.yaml").read_text())
    for p in doc["items"]:
        p["status"]["startTime"] = "2026-11-21T09:00:00Z"
        p["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-21T09:00:20Z"}]
    return _write(tmp_path, "pods.yaml", doc)


def test_explain_average_value_as_a_number_decides_as_the_string(tmp_path):
    # 1 core as a YAML integer and as text; 0.1 cores (a float) as 100m
    assert _explain(tmp_path, _hpa({"type": "AverageValue", "averageValue": 1})) == \
        _explain(tmp_path, _hpa({"type": "AverageValue", "averageValue": "1"}))
    small = _explain(tmp_path, _hpa({"type": "AverageValue", "averageValue": 0.1}))
    assert small == _explain(tmp_path, _hpa({"type": "AverageValue", "averageValue": "100m"}))
    assert small["desiredReplicas"] > 3


def test_a_float_tolerance_decides_as_upstream_reads_it(tmp_path):
    """192m on average against a 183m target: ratio 1.049. A scale-up tolerance of 0.04 (float, string or 40m)
    scales 3 -> 4; 0.05 (float or string) keeps 3, as upstream reads the quantity's digits."""
    pods = _all_ready_pods(tmp_path)
    decisions = {}
    for tol in (0.04, "0.04", "40m", 0.05, "0.05"):
        out = _explain(tmp_path, _hpa({"type": "AverageValue", "averageValue": "183m"}, {"scaleUp": {"tolerance": tol}}),
                       pods)
        assert out["proposals"][0]["rawValue"] == "192m"
        decisions[repr(tol)] = out
    assert decisions["0.04"] == decisions["'0.04'"] == decisions["'40m'"]
    assert decisions["0.04"]["desiredReplicas"] == 4
    assert decisions["0.05"] == decisions["'0.05'"]
    assert decisions["0.05"]["desiredReplicas"] == 3


def test_simulate_reads_numeric_quantities_as_their_text(tmp_path):
    example = ROOT / "pyhpa" / "data" / "examples"
    outs = []
    for tag, value, tol in (("numbers", 0.1, 0.05), ("strings", "100m", "0.05")):
        hpa = yaml.safe_load((example / "php-apache-hpa.yaml").read_text())
        hpa["spec"]["metrics"][0]["resource"]["target"] = {"type": "AverageValue", "averageValue": value}
        hpa["spec"]["behavior"] = {"scaleDown": {"tolerance": tol}}
        out = tmp_path / tag
        r = invoke("simulate", "--hpa", _write(tmp_path, f"{tag}.yaml", hpa), "--target", example / "php-apache.yaml",
                   "--profile", example / "php-apache-profile.yaml",
                   "--trace", ROOT / "pyhpa" / "data" / "traces" / "nasa_http_1995-07-12_13_per_minute.csv",
                   "--column", "requests_per_second", "--start", "1995-07-13T08:00:00", "--end", "1995-07-13T14:00:00",
                   "--output-dir", out, "--no-plot", "--no-progress")
        assert r.exit_code == 0, r.output
        outs.append((out / "timeline.csv").read_text())
    assert outs[0] == outs[1]
    assert "desired_replicas" in outs[0].splitlines()[0]


async def test_crd_and_controller_take_numbers_as_the_api_server_does(kube_double):
    """The shipped CRD admits averageValue: 100 and tolerance: 0.05; the controller decides with them exactly as
    with the strings (before: the CRD refused 0.05, and the controller set InvalidSpec for 100)."""
    kd = kube_double
    kd.register_crd(CRD)
    from lightkube import ApiError

    from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

    client = kd.async_client()
    for name in ("num", "text", "whole"):
        kd.put_object(deployment(name, 2) | {"status": {"replicas": 2}})
        for i in range(2):
            kd.put_object(pod(f"{name}-{i}", name))
            kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": "300m"}})
    metric = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue"}}}
    num, text = copy.deepcopy(metric), copy.deepcopy(metric)
    num["resource"]["target"]["averageValue"] = 0.2
    text["resource"]["target"]["averageValue"] = "200m"
    await client.create(HorizontalAutoscaler(autoscaler("num", "num", [num],
                                                        behavior={"scaleDown": {"tolerance": 0.05}})))
    await client.create(HorizontalAutoscaler(autoscaler("text", "text", [text],
                                                        behavior={"scaleDown": {"tolerance": "0.05"}})))
    whole = autoscaler("int", "whole", [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "AverageValue", "averageValue": 1}}}])
    await client.create(HorizontalAutoscaler(whole))  # an integer quantity: admitted too
    bad = autoscaler("bad", "whole", [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "AverageValue", "averageValue": "12 apples"}}}])
    with pytest.raises(ApiError) as err:
        await client.create(HorizontalAutoscaler(bad))
    assert err.value.status.code == 422  # the quantity pattern still applies to strings
    assert kd.invalid_requests and all("bad" in str(r) for r in kd.invalid_requests)
    kd.invalid_requests.clear()

    async with ControllerTask(kd, sync_period_seconds=1) as ctl:
        def replicas(name):
            return kd.get_object("apps/v1", "deployments", "default", name)["spec"]["replicas"]

        def done():  # the scale write lands before the sync's result is recorded: wait for both
            keys = {r.key for r in ctl.results if r.decision is not None and r.decision.rescale}
            return replicas("num") == 3 and replicas("text") == 3 and {"default/num", "default/text"} <= keys

        await wait_for(done, what="both scaled to 3")
        by_key = {}
        for r in ctl.results:
            if r.decision is not None and r.decision.rescale:
                by_key.setdefault(r.key, r)
        num_d, text_d = by_key["default/num"].decision, by_key["default/text"].decision
        assert (num_d.current_replicas, num_d.desired_replicas) == (text_d.current_replicas, text_d.desired_replicas) == (2, 3)
        assert [p.raw_milli for p in num_d.proposals] == [p.raw_milli for p in text_d.proposals] == [300]
    for name in ("num", "text", "int"):
        status = kd.get_object("pyhpa.dev/v1alpha1", "horizontalautoscalers", "default", name)["status"]
        active = next(c for c in status["conditions"] if c["type"] == "ScalingActive")
        assert active["reason"] != "InvalidSpec", (name, active)
    assert kd.invalid_requests == []
