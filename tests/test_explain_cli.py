"""``pyhpa explain`` and ``pyhpa thresholds`` from the command line, including bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pyhpa.cli.main import app
from pyhpa.core import ControllerConfig, Memory, SyncInputs, decide
from pyhpa.core.model import MetricSpec
from pyhpa.core.thresholds import thresholds
from tests.builders import NOW, cpu_hpa, cpu_pods, scale

EX = Path(__file__).parent.parent / "examples" / "explain"
CONF = Path(__file__).parent / "data" / "conformance"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_explain_text_tells_why():
    r = invoke("explain", EX / "snapshot.yaml")
    assert r.exit_code == 0, r.output
    assert "left out as unready: php-apache-7d4b9-c" in r.output
    assert "filled in (scale-up: assumed 0)" in r.output
    assert "scale 3 -> 4" in r.output


def test_explain_json_one_line_per_snapshot_in_order():
    r = invoke("explain", "-o", "json", "--lenient", CONF / "behavior.json", EX / "snapshot.yaml")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.output.splitlines()]
    names = [c["name"] for c in json.loads((CONF / "behavior.json").read_text())["cases"]]
    assert [x["name"] for x in lines] == names + ["php-apache-scale-up-with-a-starting-pod"]
    last = lines[-1]
    assert set(last) == {"name", "proposals", "desiredReplicas", "conditions",  # the keys before issue 9, kept
                         "sources", "decidedBy", "minReplicasEffective", "maxReplicasEffective", "activeSchedules",
                         "warnings", "status", "events"}  # issue 58: the whole status and the sync's events
    assert last["warnings"] == []  # requests without limits: nothing starves
    assert last["decidedBy"] == "Metric/cpu resource utilization (percentage of request)"
    assert last["sources"] == [{"source": "Metric", "name": "cpu resource utilization (percentage of request)",
                                "replicas": 4, "minReplicas": None, "maxReplicas": None, "applied": True,
                                "error": None, "note": ""}]
    assert (last["minReplicasEffective"], last["maxReplicasEffective"], last["activeSchedules"]) == (1, 10, [])
    assert last["proposals"] == [{"metric": "cpu resource utilization (percentage of request)", "replicas": 4,
                                  "utilization": 84, "rawValue": "168m", "error": None}]
    assert last["desiredReplicas"] == 4


def test_recommendation_skips_metrics_and_normalizes():
    r = invoke("explain", "-o", "json", "--recommendation", "1", EX / "snapshot.yaml")
    out = json.loads(r.output)
    assert out["proposals"] == []
    # recommendations of 3 within the 300 s window hold the scale-down
    assert out["desiredReplicas"] == 3
    able = {c["type"]: c for c in out["conditions"]}["AbleToScale"]
    assert able["reason"] == "ScaleDownStabilized"
    r = invoke("explain", "--recommendation", "40", EX / "snapshot.yaml")
    assert "limit: 40 -> 6  [ScaleUpLimit]" in r.output


def test_kubectl_inputs_give_the_same_decision_as_the_snapshot():
    snap = json.loads(invoke("explain", "-o", "json", EX / "snapshot.yaml").output)
    r = invoke("explain", "-o", "json", "--hpa", EX / "hpa.yaml", "--pods", EX / "pods.yaml",
               "--pod-metrics", EX / "podmetrics.json", "--now", "2026-11-21T10:00:00Z")
    assert r.exit_code == 0, r.output
    kubectl = json.loads(r.output)
    assert kubectl["proposals"] == snap["proposals"]
    assert kubectl["desiredReplicas"] == snap["desiredReplicas"]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def _hpa(**spec):
    base = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1,
            "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 50}}}]}
    base.update(spec)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "prod"}, "spec": base}


BAD = [
    ("malformed-yaml", "hpa.yaml", "spec:\n  maxReplicas: [1,\n", ["hpa.yaml:", "malformed YAML"]),
    ("unknown-metric", "hpa.yaml", yaml.safe_dump(_hpa(metrics=[{"type": "Cheese"}])),
     ["HorizontalPodAutoscaler prod/web", "spec.metrics[0].type", "unknown metric type"]),
    ("bad-target-type", "hpa.yaml", yaml.safe_dump(_hpa(metrics=[{"type": "Pods", "pods": {
        "metric": {"name": "qps"}, "target": {"type": "Utilization", "averageUtilization": 5}}}])),
     ["spec.metrics[0].pods.target.type", "not allowed for Pods"]),
    ("min-gt-max", "hpa.yaml", yaml.safe_dump(_hpa(minReplicas=7)), ["spec.minReplicas", "greater than maxReplicas"]),
    ("missing-max", "hpa.yaml", yaml.safe_dump({k: v for k, v in _hpa().items()} | {"spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}}}), ["spec", "maxReplicas"]),
    ("bad-quantity", "hpa.yaml", yaml.safe_dump(_hpa(metrics=[{"type": "Pods", "pods": {
        "metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "12 apples"}}}])),
     ["spec.metrics[0].pods.target.averageValue", "malformed quantity"]),
]


@pytest.mark.parametrize("case,fname,text,needles", BAD, ids=[b[0] for b in BAD])
def test_bad_hpa_is_one_line_and_exit_2(tmp_path, case, fname, text, needles):
    path = _write(tmp_path, fname, text)
    r = invoke("thresholds", path)
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert "Traceback" not in r.output
    for n in needles:
        assert n in lines[0], lines[0]


def test_malformed_json_snapshot_names_line(tmp_path):
    path = _write(tmp_path, "snap.json", '{"name": "x",\n "now": }\n')
    r = invoke("explain", path)
    assert r.exit_code == 2
    assert "snap.json:2: malformed JSON" in r.output


def test_malformed_timestamp_in_snapshot(tmp_path):
    snap = yaml.safe_load((EX / "snapshot.yaml").read_text())
    snap["pods"][0]["status"]["startTime"] = "yesterday"
    path = _write(tmp_path, "snap.yaml", yaml.safe_dump(snap))
    r = invoke("explain", path)
    assert r.exit_code == 2
    out = r.output.strip()
    assert len(out.splitlines()) == 1
    assert "snap.yaml" in out and "Pod default/php-apache-7d4b9-a" not in out or "pods[0]" in out
    assert "status.startTime" in out


def test_lenient_passes_api_invalid_objects_to_the_controller(tmp_path):
    snap = yaml.safe_load((EX / "snapshot.yaml").read_text())
    snap["hpa"]["spec"]["metrics"].append({"type": "Cheese"})
    path = _write(tmp_path, "snap.yaml", yaml.safe_dump(snap))
    assert invoke("explain", path).exit_code == 2
    r = invoke("explain", "-o", "json", "--lenient", path)
    out = json.loads(r.output)
    assert out["proposals"][1]["error"] == 'unknown metric source type "Cheese"'
    assert out["desiredReplicas"] == 4  # an invalid metric does not block a scale-up


def test_thresholds_table_matches_the_seed_example(tmp_path):
    hpa = _hpa(maxReplicas=4)
    hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = 75
    r = invoke("thresholds", "-o", "json", _write(tmp_path, "h.yaml", yaml.safe_dump(hpa)))
    rows = {row["replicas"]: row for row in json.loads(r.output)["metrics"][0]["rows"]}
    assert rows[1]["scale_up_at"] == 83 and rows[1]["scale_up_to"] == 2
    assert (rows[4]["scale_down_at"], rows[4]["scale_down_to"]) == (56, 3)
    assert (rows[3]["scale_down_at"], rows[3]["scale_down_to"]) == (50, 2)
    assert (rows[2]["scale_down_at"], rows[2]["scale_down_to"]) == (37, 1)
    assert rows[1]["scale_down_at"] is None and rows[4]["scale_up_at"] is None


def test_per_direction_tolerance_moves_only_its_thresholds(tmp_path):
    hpa = _hpa(maxReplicas=6, behavior={"scaleUp": {"tolerance": "0.05"}})
    out = json.loads(invoke("thresholds", "-o", "json", _write(tmp_path, "h.yaml", yaml.safe_dump(hpa))).output)
    base = json.loads(invoke("thresholds", "-o", "json", _write(tmp_path, "b.yaml", yaml.safe_dump(_hpa(maxReplicas=6)))).output)
    for a, b in zip(out["metrics"][0]["rows"], base["metrics"][0]["rows"]):
        assert a["scale_down_at"] == b["scale_down_at"]
        if a["scale_up_at"] is not None:
            assert a["scale_up_at"] < b["scale_up_at"]


@pytest.mark.parametrize("target", [30, 50, 75, 90, 150])
def test_thresholds_agree_with_the_decision_core(target):
    spec = MetricSpec("Resource", "cpu", "Utilization", target)
    cfg = ControllerConfig()
    for row in thresholds(spec, 1, 8, 0.1, 0.1):
        r = row.replicas

        def desired(util):
            pods, samples = cpu_pods([util * 10] * r)  # request 1000m: util % == util*10 milli
            mem = Memory([(NOW - 3600, r)])
            return decide(SyncInputs(hpa=cpu_hpa(target, 1, 8), scale=scale(r), pods=pods, samples=[samples],
                                     memory=mem, now=NOW, config=cfg)).desired_replicas

        if row.scale_up_at is not None:
            assert desired(row.scale_up_at) == row.scale_up_to > r
            assert desired(row.scale_up_at - 1) <= r
        if row.scale_down_at is not None:
            assert desired(row.scale_down_at) == row.scale_down_to < r
            assert desired(row.scale_down_at + 1) >= r


def test_explain_text_of_saturation_below_the_limit(tmp_path):
    """Pods well below their CPU limit: the source stays out and says why (the text once failed on the replicas
    a source below the limit does not ask for)."""
    calm = tmp_path / "calm.yaml"
    calm.write_text((EX / "snapshot-saturation.yaml").read_text().replace("cpu: '1'", "cpu: '4'"))
    r = invoke("explain", calm)
    assert r.exit_code == 0, r.output
    assert ("saturation: pinned at 95 % of the CPU limit, demand factor 2, mode Enforce\n"
            "  the 4 ready pods use 24 % of their CPU limit\n"
            "  stays out [BelowLimit]: the ready pods use less than 95 % of their CPU limit: their usage shows the "
            "demand\n") in r.output


# (issue 37) kubectl get hpa -o yaml writes a v1 List, even of one HPA: read when it holds exactly one autoscaler;
# several or none is one line saying how to get one.
def _list(tmp_path, items, kind="List", api_version="v1", suffix=".yaml"):
    doc = {"apiVersion": api_version, "kind": kind, "metadata": {"resourceVersion": ""}, "items": items}
    return _write(tmp_path, "list" + suffix, json.dumps(doc) if suffix == ".json" else yaml.safe_dump(doc))


def _example_hpa():
    return yaml.safe_load((EX / "hpa.yaml").read_text())


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_kubectl_list_of_one_autoscaler_is_read_as_the_autoscaler(tmp_path, suffix):
    path = _list(tmp_path, [_example_hpa()], suffix=suffix)
    listed = invoke("thresholds", "-o", "json", path)
    assert listed.exit_code == 0, listed.output
    assert listed.output == invoke("thresholds", "-o", "json", EX / "hpa.yaml").output
    r = invoke("explain", "-o", "json", "--hpa", path, "--pods", EX / "pods.yaml", "--pod-metrics",
               EX / "podmetrics.json", "--now", "2026-11-21T10:00:00Z")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["desiredReplicas"] == json.loads(invoke(
        "explain", "-o", "json", EX / "snapshot.yaml").output)["desiredReplicas"]


def test_a_typed_list_and_a_list_of_a_horizontalautoscaler_are_read(tmp_path):
    item = {k: v for k, v in _example_hpa().items() if k not in ("apiVersion", "kind")}  # as the API lists items
    r = invoke("thresholds", "-o", "json", _list(tmp_path, [item], "HorizontalPodAutoscalerList", "autoscaling/v2"))
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["hpa"] == "default/php-apache"
    ha = yaml.safe_load((EX.parent / "schedules" / "php-apache-schedules.yaml").read_text())
    r = invoke("schedules", "-o", "json", _list(tmp_path, [ha, {"apiVersion": "v1", "kind": "Service"}]))
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("items, line", [
    ([], "List: items: the List is empty (kubectl get found no autoscaler); give one autoscaler, e.g. kubectl get hpa "
         "NAME -n NAMESPACE -o yaml"),
    (["two"], "List: items: holds 2 autoscalers (default/php-apache, shop/web); pyhpa reads one at a time: pick one "
              "with kubectl get hpa php-apache -n default -o yaml"),
    ([{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}],
     "List: items: no HorizontalAutoscaler or HorizontalPodAutoscaler among its 1 items (kinds: Deployment); give one "
     "autoscaler, e.g. kubectl get hpa NAME -n NAMESPACE -o yaml"),
], ids=["empty", "two", "no-autoscaler"])
@pytest.mark.parametrize("command", [("thresholds",), ("explain", "--recommendation", "2", "--hpa")])
def test_a_kubectl_list_of_no_or_several_autoscalers_is_one_line(tmp_path, items, line, command):
    if items == ["two"]:
        items = [_example_hpa(), _example_hpa()]
        items[1]["metadata"] = {"name": "web", "namespace": "shop"}
    path = _list(tmp_path, items)
    r = invoke(*command, path)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"error: {path}: {line}"


# (issue 37) An HPA, a HorizontalAutoscaler or other kubectl output given where a snapshot goes: one line saying
# where it goes instead (a snapshot has no apiVersion and kind).
HINT = ("not a snapshot: give it with --hpa (and --pods and --pod-metrics, or --recommendation N), or make a snapshot "
        "of a live cluster with pyhpa snapshot NAMESPACE/NAME")


@pytest.mark.parametrize("path, line", [
    (EX / "hpa.yaml", f"HorizontalPodAutoscaler default/php-apache: an autoscaler, {HINT}"),
    (EX.parent / "schedules" / "php-apache-schedules.yaml", f"HorizontalAutoscaler php-apache: an autoscaler, {HINT}"),
    ("list", f"List: a List of autoscalers, {HINT}"),
    (EX / "pods.yaml", "List: v1 List, not a snapshot (format: tests/data/conformance/FORMAT.md): kubectl output goes "
                       "with --hpa, --pods and --pod-metrics"),
], ids=["hpa", "horizontalautoscaler", "kubectl-list", "pods"])
def test_kubectl_output_given_as_a_snapshot_says_where_it_goes(tmp_path, path, line):
    if path == "list":
        path = _list(tmp_path, [_example_hpa()])
    r = invoke("explain", path)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"error: {path}: {line}"


def test_explain_prints_what_the_user_wrote_never_reading_it_as_markup():
    """A selector's text (``map[string]string{...}``, ``[]LabelSelectorRequirement{}``) reached rich's markup
    reader in the metric lines, the sources table and the conditions' messages, which ate the bracketed parts
    (``mapstring{...}``, and a whole message up to a closing bracket)."""
    r = invoke("explain", "--lenient", CONF / "regressions.json")
    assert r.exit_code == 0, r.output
    assert "MatchLabels:map[string]string{" in r.output and "MatchExpressions:[]LabelSelectorRequirement{}" in r.output
    assert "mapstring{" not in r.output and "MatchExpressions:LabelSelectorRequirement" not in r.output
    assert "[bold]" not in r.output and "[/]" not in r.output  # the command's own styling is still styling
