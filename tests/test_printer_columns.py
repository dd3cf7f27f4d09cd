"""``kubectl get horizontalautoscalers`` shows REFERENCE and TARGETS as ``kubectl get hpa`` does (issue 37).

The texts are kubectl's (``pyhpa.adapters.printers``, checked against upstream's own test tables in
tests/data/kubectl/), the controller writes them into the status (``status.reference``, ``status.targets``), and the
CRD's printer columns point at those fields. tests/test_controller_e2e.py checks them written through the API double,
tests/e2e/test_crd_real.py in ``kubectl get`` of a real API server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from controller_util import autoscaler, cpu_metric
from test_controller_e2e import printer_columns

from pyhpa.adapters.parse import go_quantity_text
from pyhpa.adapters.printers import Targets, format_hpa_metrics, reference
from pyhpa.api.crd import crd
from pyhpa.controller import Settings
from pyhpa.controller.cache.autoscaler import parse_autoscaler
from pyhpa.controller.outputs.status import status_with_condition

DATA = Path(__file__).parent / "data" / "kubectl"
HPA_CASES = yaml.safe_load((DATA / "hpa_targets.yaml").read_text())["cases"]
QUANTITY_CASES = yaml.safe_load((DATA / "quantity_emit.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", HPA_CASES, ids=[c["name"] for c in HPA_CASES])
def test_reference_and_targets_as_upstreams_printer(case):
    assert reference(case["scaleTargetRef"]) == case["reference"]
    assert format_hpa_metrics(case["metrics"], case["currentMetrics"]) == case["targets"]


@pytest.mark.parametrize("case", QUANTITY_CASES, ids=[c["in"] for c in QUANTITY_CASES])
def test_a_quantity_is_printed_as_upstream_prints_it(case):
    assert go_quantity_text(case["in"]) == case["expect"]
    assert go_quantity_text("-" + case["in"]) == "-" + case["expect"]


def _resource(name: str, target: dict) -> dict:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def _pods(name: str, average: str) -> dict:
    return {"type": "Pods", "pods": {"metric": {"name": name}, "target": {"type": "AverageValue",
                                                                           "averageValue": average}}}


#: (metrics, currentMetrics, TARGETS): the rules upstream's table does not reach, each as kubectl v1.37.2's own
#: printer prints it (checked once with its TableGenerator on the same objects); the last two are pyhpa's
#: Prometheus metrics, printed as the Pods or External metric they act as
MORE = [
    ([_resource("memory", {"type": "AverageValue", "averageValue": "500Mi"})],
     [{"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "1536Mi"}}}],
     "memory: 1536Mi/500Mi"),
    ([_resource("memory", {"type": "AverageValue", "averageValue": "1.5Gi"}), _pods("rps", "1000")],
     [], "memory: <unknown>/1536Mi, <unknown>/1k"),
    ([_pods("rps", "0.5")], [{"type": "Pods", "pods": {"metric": {"name": "rps"}, "current": {}}}], "<nil>/500m"),
    ([_resource("cpu", {"type": "Utilization"})],
     [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "40m"}}}], "cpu: <unknown>/<auto>"),
    ([{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}}}],
     [{"type": "External", "external": {"metric": {"name": "queue"}, "current": {"averageValue": "10"}}}],
     "<nil>/30"),
    ([{"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "metric": {"name": "q"},
                                    "target": {"type": "AverageValue", "averageValue": "2000m"}}}],
     [{"type": "Object", "object": {"metric": {"name": "q"}, "current": {"value": "3"}}}], "<unknown>/2 (avg)"),
    ([_pods("a", "1"), _resource("cpu", {"type": "Utilization", "averageUtilization": 50}), _pods("b", "2"),
      _pods("c", "3")],
     [None, {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}],
     "<unknown>/1, cpu: 45%/50% + 2 more..."),
    ([{"type": "Prometheus", "prometheus": {"query": "sum(rate(x[1m]))", "name": "rps", "podLabel": "pod",
                                            "target": {"type": "AverageValue", "averageValue": "100"}}}],
     [{"type": "Pods", "pods": {"metric": {"name": "rps"}, "current": {"averageValue": "120"}}}], "120/100"),
    ([{"type": "Prometheus", "prometheus": {"query": "sum(x)", "target": {"type": "Value", "value": "1e3"}}}],
     [], "<unknown>/1e3"),
]


@pytest.mark.parametrize("metrics,current,expected", MORE, ids=[m[2] for m in MORE])
def test_what_upstreams_table_leaves_out(metrics, current, expected):
    assert format_hpa_metrics(metrics, current) == expected


def test_a_type_kubectl_does_not_know_and_no_metrics():
    assert format_hpa_metrics([{"type": "Mystery"}], []) == "<unknown type>"
    assert format_hpa_metrics([], []) == "<none>"
    assert reference({"kind": "Deployment"}) == "" and reference(None) == ""


def test_stored_current_metrics_are_matched_by_name_not_position():
    """``status.currentMetrics`` leaves out a metric that failed: the stored entries are matched to the metrics
    shown by type and name (upstream's would have an empty entry in its place)."""
    targets = Targets.of([_pods("a", "1"), _resource("cpu", {"type": "Utilization", "averageUtilization": 50})])
    stored = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}]
    assert targets.text(stored) == "<unknown>/1, cpu: <unknown>/50%"  # by position: the wrong entry for each
    assert targets.text(targets.matched(stored)) == "<unknown>/1, cpu: 45%/50%"


def test_a_failed_sync_keeps_the_columns_with_the_stored_metrics():
    """A sync that cannot read the target's scale rewrites a condition only: REFERENCE and TARGETS come from the
    spec as it is now and the stored ``currentMetrics``."""
    obj = autoscaler("web", "web-v2", [_pods("rps", "10"), cpu_metric(60)])
    obj["status"] = {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}],
        "reference": "Deployment/web", "targets": "<unknown>/10, cpu: 45%/50%"}
    a = parse_autoscaler(obj, Settings())
    status = status_with_condition(a, "AbleToScale", "False", "FailedGetScale", "not found", 0.0)
    assert (status["reference"], status["targets"]) == ("Deployment/web-v2", "<unknown>/10, cpu: 45%/60%")
    unreadable = dict(obj, spec=dict(obj["spec"], minReplicas="two"))
    a = parse_autoscaler(unreadable, Settings())
    assert a.error and a.targets is None
    status = status_with_condition(a, "ScalingActive", "False", "InvalidSpec", a.error, 0.0)
    assert status["reference"] == "Deployment/web-v2" and "targets" not in status


def test_an_autoscaler_without_metrics_shows_the_api_default():
    """The API server gives a native HPA without metrics a CPU Utilization metric of 80 %; kubectl shows it."""
    obj = autoscaler("web", "web")
    obj["spec"].pop("metrics", None)
    a = parse_autoscaler(obj, Settings())
    assert a.targets.text([]) == "cpu: <unknown>/80%"


def test_the_crd_shows_kubectls_columns_from_the_status():
    version = crd()["spec"]["versions"][0]
    columns = version["additionalPrinterColumns"]
    assert [c["name"] for c in columns if "priority" not in c] == ["Reference", "Targets", "MinPods", "MaxPods",
                                                                   "Replicas", "Age"]  # kubectl get hpa's
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    obj = {"spec": {"minReplicas": 1, "maxReplicas": 5},
           "status": {"reference": "Deployment/web", "targets": "cpu: 45%/50%", "currentReplicas": 2}}
    shown = dict(zip([c["name"] for c in columns], printer_columns(obj)))
    assert (shown["Reference"], shown["Targets"]) == ("Deployment/web", "cpu: 45%/50%")
    for name in ("reference", "targets"):
        assert status[name]["type"] == "string"
