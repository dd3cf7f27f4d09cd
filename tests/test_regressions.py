"""Issue 11, "Exact to the last edge": upstream v1.37's decision on edge snapshots.

Every case of ``tests/data/conformance/regressions*.json`` goes through the ``pyhpa explain`` path
(load_snapshots -> run_snapshot -> decision_json, and the CLI ``explain -o json``); every key under
``expect`` is compared, the conditions must be exactly upstream's (no condition upstream does
not set), and no condition type of a case's ``absentConditions`` may be in the status (issue 21: with
``HPAScaleToZero`` off a rescale removes a stale ScaledToZero). Variants of the same kinds (built from those cases) check the semantics, not the cases.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pyhpa.adapters.errors import InputError
from pyhpa.adapters.parse import milli
from pyhpa.adapters.snapshot import decision_json, load_snapshots, run_snapshot, snapshot_from_dict
from pyhpa.cli.main import app
from pyhpa.core import (
    HPA,
    Behavior,
    Condition,
    ControllerConfig,
    Memory,
    MetricSamples,
    MetricSpec,
    Scale,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
    decide,
    rescale_failed,
)
from pyhpa.core.calculator import go_int64, sum_values, sum_values_per_pod
from pyhpa.core.model import MAX_INT64

DATA = Path(__file__).parent / "data" / "conformance"
REGRESSIONS = DATA / "regressions.json"
GATE_OFF = DATA / "regressions-scaled-to-zero-gate-off.json"
FILES = (REGRESSIONS, GATE_OFF)
CASES = {c["name"]: c for c in json.loads(REGRESSIONS.read_text())["cases"]}
ALL_CASES = {c["name"]: c for f in FILES for c in json.loads(f.read_text())["cases"]}


def check(out: dict, want: dict, absent: list[str] = ()) -> None:
    """Compare a decision_json line with an ``expect`` block: every key, conditions exactly (and their messages
    where the case gives them), a proposal's error text where the case gives it; no condition of a type in
    ``absent`` (the case's ``absentConditions``)."""
    present = [c["type"] for c in out["conditions"]]
    for ctype in absent:
        assert ctype not in present, f"{ctype} must be absent: {out['conditions']}"
    assert set(want) <= {"proposals", "desiredReplicas", "conditions"}, want
    if "proposals" in want:
        assert len(out["proposals"]) == len(want["proposals"]), out["proposals"]
        for got, w in zip(out["proposals"], want["proposals"]):
            if isinstance(w.get("error"), str):  # the error text itself (FORMAT.md)
                assert got["error"] == w["error"], got
            assert (got["error"] is not None) == bool(w.get("error", False)), got
            for key in ("replicas", "utilization"):
                if key in w:
                    assert got[key] == w[key], (key, got)
            if "rawValue" in w:
                assert got["rawValue"] == w["rawValue"] and milli(got["rawValue"]) == milli(w["rawValue"]), got
    if "desiredReplicas" in want:
        assert out["desiredReplicas"] == want["desiredReplicas"]
    if "conditions" in want:
        got = [(c["type"], c["status"], c["reason"]) for c in out["conditions"]]
        assert got == [(c["type"], c["status"], c["reason"]) for c in want["conditions"]]
        for g, w in zip(out["conditions"], want["conditions"]):
            if "message" in w:
                assert g["message"] == w["message"], g


@pytest.mark.parametrize("snap", [s for f in FILES for s in load_snapshots(f, lenient=True)], ids=lambda s: s.name)
def test_regression_case(snap):
    out = decision_json(snap.name, run_snapshot(snap))
    json.dumps(out)
    check(out, snap.expect, ALL_CASES[snap.name].get("absentConditions", []))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_regression_through_the_cli(path):
    r = CliRunner().invoke(app, ["explain", "-o", "json", "--lenient", str(path)])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.output.splitlines()]
    cases = {c["name"]: c for c in json.loads(path.read_text())["cases"]}
    assert [x["name"] for x in lines] == list(cases)
    for line in lines:
        check(line, cases[line["name"]]["expect"], cases[line["name"]].get("absentConditions", []))


def test_absent_conditions_are_checked():
    """The runner fails a line that still has a condition its case says must be absent."""
    case = ALL_CASES["scaled-to-zero-true-removed-on-rescale-gate-off"]
    out = decide_case(case)
    check(out, case["expect"], case["absentConditions"])
    stale = dict(out, conditions=out["conditions"] + [{"type": "ScaledToZero", "status": "True",
                                                       "reason": "ScaledToZero"}])
    with pytest.raises(AssertionError, match="ScaledToZero must be absent"):
        check(stale, {}, case["absentConditions"])


def decide_case(case: dict) -> dict:
    snap = snapshot_from_dict(case, "variant", 0, lenient=True)
    return decision_json(snap.name, run_snapshot(snap))


def variant(name: str) -> dict:
    return copy.deepcopy(CASES[name])


def pod(case: dict, name: str) -> dict:
    return next(p for p in case["pods"] if p["metadata"]["name"] == name)


# --- pods: readiness ---------------------------------------------------------------------

def test_ready_unknown_inside_the_cpu_initialization_period_is_not_unready():
    c = variant("cpu-ready-unknown-is-not-unready")
    p = pod(c, "test-pod-3")
    p["status"]["startTime"] = "2025-12-31T23:59:00Z"  # 60 s before now: initializing
    p["status"]["conditions"][0]["lastTransitionTime"] = "2025-12-31T23:57:00Z"
    assert decide_case(c)["desiredReplicas"] == 7
    p["status"]["conditions"][0]["status"] = "False"  # False is unready: filled in with 0 on scale-up
    assert decide_case(c)["proposals"][0]["replicas"] == 5


def test_ready_unknown_is_not_ready_when_counting_ready_pods():
    c = variant("duplicate-ready-condition-first-wins")
    p = pod(c, "test-pod-1")
    p["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    out = decide_case(c)
    assert out["proposals"][0]["replicas"] == 2 and out["desiredReplicas"] == 2  # one ready pod: ceil(2*1)


def test_first_ready_condition_counts_both_ways():
    c = variant("duplicate-ready-condition-first-wins")
    conds = pod(c, "test-pod-1")["status"]["conditions"]
    assert [x["status"] for x in conds] == ["True", "False"]
    conds.reverse()
    assert decide_case(c)["proposals"][0]["replicas"] == 2


# --- pods: namespace ------------------------------------------------------------------------

def test_pods_of_other_namespaces_never_count_and_a_pod_without_namespace_is_the_hpas():
    c = variant("pod-in-other-namespace-counted")
    strangers = [p for p in c["pods"] if p["metadata"]["namespace"] != "test-namespace"]
    assert strangers
    for p in strangers:
        del p["metadata"]["namespace"]
    assert decide_case(c)["proposals"][0]["replicas"] == 6  # 3 ready pods: ceil(2 * 3)
    c = variant("pod-level-requests-used-for-utilization")
    for p in c["pods"]:
        p["metadata"]["namespace"] = "elsewhere"
    out = decide_case(c)
    assert "no pods returned by selector" in out["proposals"][0]["error"]


# --- pods: requests -------------------------------------------------------------------------

def test_pod_level_requests_of_another_resource_fall_back_to_the_containers_aggregate():
    c = variant("pod-level-requests-used-for-utilization")
    for p in c["pods"]:
        p["spec"]["resources"] = {"requests": {"memory": "1Gi"}}
    out = decide_case(c)  # cpu: the containers' 500m -> 300 % of a 50 % target -> ceil(6 * 2) = 12
    assert out["proposals"][0]["utilization"] == 300 and out["proposals"][0]["replicas"] == 12


def test_pod_level_requests_add_overhead_and_a_missing_resource_fails():
    c = variant("pod-level-requests-used-for-utilization")
    for p in c["pods"]:
        p["spec"]["overhead"] = {"cpu": "1"}  # 1500m / (2000m + 1000m) = 50 %
    out = decide_case(c)
    assert out["proposals"][0]["utilization"] == 50
    for p in c["pods"]:
        p["spec"]["overhead"] = {}
        p["spec"]["resources"] = {"requests": {"memory": "1Gi"}}
        for ct in p["spec"]["containers"]:
            ct["resources"] = {"requests": {"memory": "1Gi"}}
    out = decide_case(c)
    assert out["proposals"][0]["error"] is not None
    assert "missing pod-level request for cpu in Pod test-pod-0" in out["proposals"][0]["error"]


def test_container_resource_uses_the_container_even_with_pod_level_requests():
    c = variant("pod-level-requests-used-for-utilization")
    target = c["hpa"]["spec"]["metrics"][0]["resource"]["target"]
    c["hpa"]["spec"]["metrics"][0] = {"type": "ContainerResource", "containerResource": {
        "name": "cpu", "container": "container1", "target": target}}
    out = decide_case(c)
    assert out["proposals"][0]["utilization"] == 300  # 1500m of the container's 500m, not the pod's 2


def test_container_resource_container_missing_or_without_request_fails():
    c = variant("container-resource-missing-request-is-an-error")
    out = decide_case(c)
    assert "missing request for cpu in container container1 of Pod test-pod-1" in out["proposals"][0]["error"]
    c["hpa"]["spec"]["metrics"][0]["containerResource"]["container"] = "sidecar"
    for p in c["pods"]:
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    for m in c["metrics"]["resource"]["items"]:
        m["containers"][0]["name"] = "sidecar"
    out = decide_case(c)
    assert "container sidecar not found in Pod test-pod-0" in out["proposals"][0]["error"]
    assert [x["reason"] for x in out["conditions"]][-1] == "FailedGetContainerResourceMetric"


# --- arithmetic -----------------------------------------------------------------------------

def test_external_sums_as_upstream():
    assert sum_values_per_pod(MetricSamples(values=[25, -5])) == 20  # the running sum never went negative
    assert sum_values_per_pod(MetricSamples(values=[-5, 25])) == MAX_INT64
    assert sum_values_per_pod(MetricSamples(values=[MAX_INT64, 1, -10])) == MAX_INT64  # wrapped: overflow
    assert sum_values(MetricSamples(values=[MAX_INT64 - 1, 5, -100])) == MAX_INT64  # capped, rest not added
    assert sum_values(MetricSamples(values=[-5, 25])) == 20


def test_external_average_value_order_of_samples_decides():
    c = variant("external-averagevalue-negative-running-sum-saturates")
    items = c["metrics"]["external"][next(iter(c["metrics"]["external"]))]["items"]
    items.reverse()  # 25 then -5: 20 over 2 pods at 10 each -> within tolerance
    out = decide_case(c)
    assert out["proposals"][0]["replicas"] == 2 and out["proposals"][0]["rawValue"] == "10"


def test_go_int64_is_amd64s_conversion():
    assert go_int64(float("inf")) == go_int64(float("-inf")) == go_int64(float("nan")) == -2**63
    assert go_int64(9.3e18) == -2**63 and go_int64(-3.5) == -3 and go_int64(2.0**62) == 2**62


def test_external_average_with_zero_status_replicas_reports_min_int64():
    c = variant("per-pod-average-with-zero-status-replicas")
    out = decide_case(c)
    assert out["proposals"][0]["rawValue"] == "-9223372036854775808m"
    hpa, scale_ = _external_hpa(average=True), Scale(2, 0, "app=x")
    d = decide(SyncInputs(hpa=hpa, scale=scale_, pods=[], samples=[MetricSamples(values=[30_000])], memory=Memory(),
                          now=0.0, config=ControllerConfig()))
    assert d.proposals[0].raw_milli == -2**63 and d.proposals[0].replicas == 3
    d = decide(SyncInputs(hpa=hpa, scale=scale_, pods=[], samples=[MetricSamples(values=[-1, 5])], memory=Memory(),
                          now=0.0, config=ControllerConfig()))
    assert d.proposals[0].raw_milli == MAX_INT64  # saturated usage is reported as is


# --- HPAScaleToZero --------------------------------------------------------------------------

def _external_hpa(min_r=1, max_r=10, average=False, conditions=(), desired=None, metrics=None):
    m = MetricSpec("External", "queue", "AverageValue" if average else "Value",
                   target_average_milli=10_000 if average else None, target_value_milli=None if average else 10_000)
    return HPA("ns", "h", min_r, max_r, metrics or (m,), None, tuple(conditions), None, desired)


NO_GATE = ControllerConfig(scale_to_zero=False)  # HPAScaleToZero off (on by default since v1.37)
GATE = ControllerConfig(scale_to_zero=True)
TRUE = Condition("ScaledToZero", "True", "ScaledToZero", "", 0.0)


def _types(d):
    return [(c.type, c.status, c.reason) for c in d.conditions]


def test_scaled_to_zero_true_when_the_hpa_scales_to_zero_and_reset_by_any_rescale():
    hpa = _external_hpa(min_r=0, average=True)
    d = decide(SyncInputs(hpa=hpa, scale=Scale(3, 3, "app=x"), pods=[], samples=[MetricSamples(values=[0])],
                          memory=Memory([]), now=100.0, config=GATE))
    assert d.desired_replicas == 0 and ("ScaledToZero", "True", "ScaledToZero") in _types(d)
    hpa = _external_hpa(min_r=1, max_r=2, average=True, conditions=(TRUE,))  # bounds branch: above max, still a rescale
    d = decide(SyncInputs(hpa=hpa, scale=Scale(5, 5, "app=x"), pods=[], samples=[MetricSamples(values=[0])],
                          memory=Memory([]), now=100.0, config=GATE))
    assert d.desired_replicas == 2 and _types(d)[0] == ("ScaledToZero", "False", "NotScaledToZero")


def test_scaled_to_zero_condition_left_alone_when_the_rescale_fails():
    hpa = _external_hpa(min_r=0, average=True)
    d = decide(SyncInputs(hpa=hpa, scale=Scale(3, 3, "app=x"), pods=[], samples=[MetricSamples(values=[0])],
                          memory=Memory([]), now=100.0, config=GATE))
    failed = rescale_failed(d, hpa, "boom", 100.0)
    assert "ScaledToZero" not in [c.type for c in failed.conditions]
    hpa = _external_hpa(min_r=0, average=True, conditions=(TRUE,))
    d = decide(SyncInputs(hpa=hpa, scale=Scale(3, 3, "app=x"), pods=[], samples=[MetricSamples(values=[90_000])],
                          memory=Memory([]), now=100.0, config=GATE))
    assert ("ScaledToZero", "False", "NotScaledToZero") in _types(d)
    assert ("ScaledToZero", "True", "ScaledToZero") in _types(rescale_failed(d, hpa, "boom", 100.0))


def test_from_zero_needs_an_object_or_external_metric_unless_min_replicas_is_set():
    cpu = (MetricSpec("Resource", "cpu", "Utilization", 50),)
    hpa = _external_hpa(min_r=0, conditions=(TRUE,), metrics=cpu)
    d = decide(SyncInputs(hpa=hpa, scale=Scale(0, 0, "app=x"), pods=[], samples=[MetricSamples()], memory=Memory([]),
                          now=100.0, config=GATE))
    assert _types(d) == [("ScaledToZero", "True", "ScaledToZero"), ("AbleToScale", "True", "SucceededGetScale"),
                         ("ScalingActive", "False", "ScalingDisabled")]
    hpa = _external_hpa(min_r=2, conditions=(TRUE,))  # from zero: metrics first (min clamps normalization)
    d = decide(SyncInputs(hpa=hpa, scale=Scale(0, 0, "app=x"), pods=[], samples=[MetricSamples(values=[5_000])],
                          memory=Memory([]), now=100.0, config=GATE))
    assert d.proposals[0].replicas == 1 and d.desired_replicas == 2
    assert d.rescale_reason == "external metric queue() above target"
    up = ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)))
    down = ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),))
    hpa = HPA("ns", "h", 2, 10, hpa.metrics, Behavior(up, down), (TRUE,))  # behavior: only the bump gives 2
    d = decide(SyncInputs(hpa=hpa, scale=Scale(0, 0, "app=x"), pods=[], samples=[MetricSamples(values=[5_000])],
                          memory=Memory([]), now=100.0, config=GATE))
    assert d.prenormalized == 1 and d.desired_replicas == 2 and d.rescale
    assert _types(d)[0] == ("ScaledToZero", "False", "NotScaledToZero")


def test_gate_off_removes_scaled_to_zero_on_rescale_and_drops_it_when_disabled():
    """Upstream: after a successful rescale with HPAScaleToZero off, removeCondition(ScaledToZero) (either
    status); a failed rescale leaves the stale condition where it was; no rescale leaves it alone."""
    false = Condition("ScaledToZero", "False", "NotScaledToZero", "", 0.0)
    able = Condition("AbleToScale", "True", "SucceededGetScale", "", 0.0)
    for stale in (TRUE, false):
        hpa = _external_hpa(min_r=1, average=True, conditions=(able, stale))
        d = decide(SyncInputs(hpa=hpa, scale=Scale(2, 2, "app=x"), pods=[], samples=[MetricSamples(values=[60_000])],
                              memory=Memory([]), now=100.0, config=NO_GATE))
        assert d.rescale and "ScaledToZero" not in [c.type for c in d.conditions]
        assert "ScaledToZero" not in [c.type for c in d.status.conditions]
        failed = rescale_failed(d, hpa, "boom", 100.0)
        assert [c.type for c in failed.conditions][:2] == ["AbleToScale", "ScaledToZero"]
        assert failed.conditions[1] == stale
        steady = decide(SyncInputs(hpa=hpa, scale=Scale(6, 6, "app=x"), pods=[],
                                   samples=[MetricSamples(values=[60_000])], memory=Memory([]), now=100.0,
                                   config=NO_GATE))
        assert not steady.rescale and stale in steady.conditions
    d = decide(SyncInputs(hpa=hpa, scale=Scale(0, 0, "app=x"), pods=[], samples=[MetricSamples(values=[60_000])],
                          memory=Memory([]), now=100.0, config=NO_GATE))
    assert "ScaledToZero" not in [c.type for c in d.conditions] and not d.rescale


# --- status when metrics fail -------------------------------------------------------------

def test_failed_metrics_keep_previous_status_desired_replicas_zero_without_status():
    bad = [MetricSamples(error="down")]
    d = decide(SyncInputs(hpa=_external_hpa(desired=5), scale=Scale(3, 3, "app=x"), pods=[], samples=bad,
                          memory=Memory([]), now=0.0, config=ControllerConfig()))
    assert d.status.desired_replicas == 5 and d.desired_replicas == 3 and not d.rescale
    d = decide(SyncInputs(hpa=_external_hpa(), scale=Scale(3, 3, "app=x"), pods=[], samples=bad, memory=Memory([]),
                          now=0.0, config=ControllerConfig()))
    assert d.status.desired_replicas == 0  # Go's zero value of an HPA without status


def test_external_items_are_summed_whatever_their_labels():
    c = variant("external-items-not-matching-selector")
    out = decide_case(c)
    assert out["proposals"][0]["rawValue"] == "40"


# --- --lenient ------------------------------------------------------------------------------

def test_lenient_reads_unset_fields_as_go_zero_values():
    c = copy.deepcopy(json.loads((DATA / "controller.json").read_text())["cases"][0])
    want = decide_case(c)
    for m in c["hpa"]["spec"]["metrics"]:
        del m["resource"]["target"]["type"]  # a Go MetricTarget{AverageUtilization: &x}
    del c["hpa"]["spec"]["scaleTargetRef"]["kind"]
    got = decide_case(c)
    assert got["desiredReplicas"] == want["desiredReplicas"] and got["proposals"] == want["proposals"]
    with pytest.raises(InputError, match="spec.scaleTargetRef.kind: required field is missing"):
        snapshot_from_dict(c, "f.json", 0, lenient=False)
