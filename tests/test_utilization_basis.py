"""Issue 13, items 2 and 3: utilization against limits (``utilizationBasis``) and the warnings where an HPA
cannot work as written, through the core, the CLI and the controller."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from controller_util import autoscaler, running, wait_for
from lightkube.resources.core_v1 import Pod as PodResource
from typer.testing import CliRunner

from deploy.generate_crd import crd
from pyhpa.adapters.objects import hpa_from_dict, pod_from_dict
from pyhpa.adapters.snapshot import read_hpa, snapshot_from_dict
from pyhpa.cli.main import app
from pyhpa.controller import Controller, Settings
from pyhpa.controller.kube.stubs import StubCluster, StubMetrics
from pyhpa.core import (
    HPA,
    LIMIT,
    ControllerConfig,
    Memory,
    MetricSamples,
    MetricSpec,
    PodSample,
    Scale,
    SyncInputs,
    check_hpa,
    decide,
)

ROOT = Path(__file__).parent.parent
NOW = 1_800_000_000.0
START = "2026-01-01T00:00:00Z"
runner = CliRunner()


def pod_dict(name: str, containers: list[tuple[str, dict, dict]], pod_level: dict | None = None) -> dict:
    """A running, ready pod; containers: (name, requests, limits)."""
    spec = {"containers": [{"name": n, "resources": {"requests": r, "limits": lim}} for n, r, lim in containers]}
    if pod_level:
        spec["resources"] = pod_level
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": spec, "status": {"phase": "Running", "startTime": START,
                                     "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": START}]}}


def cpu_spec(target: int, basis: str = "Request", kind: str = "Resource", container: str = "") -> MetricSpec:
    return MetricSpec(kind, "cpu", "Utilization", target, container=container, utilization_basis=basis)


def one_sync(spec: MetricSpec, pods: list[dict], usage_milli: list[int], replicas: int = 2):
    core_pods = [pod_from_dict(p) for p in pods]
    samples = MetricSamples(pods={p.name: PodSample(u, NOW - 10, 30.0) for p, u in zip(core_pods, usage_milli)},
                            timestamp=NOW - 10)
    hpa = HPA("default", "web", 1, 20, (spec,))
    return decide(SyncInputs(hpa=hpa, scale=Scale(replicas, replicas, "app=web"), pods=core_pods, samples=[samples],
                             memory=Memory([]), now=NOW, config=ControllerConfig()))


LIMITED = [pod_dict(f"web-{i}", [("app", {"cpu": "100m"}, {"cpu": "200m"})]) for i in range(2)]


# --- the Limit basis in the core ---------------------------------------------------------------

def test_limit_basis_divides_by_the_limit():
    by_request = one_sync(cpu_spec(60), LIMITED, [150, 150])
    by_limit = one_sync(cpu_spec(60, LIMIT), LIMITED, [150, 150])
    assert by_request.proposals[0].utilization == 150 and by_request.proposals[0].replicas == 5  # ceil(2.5 * 2)
    assert by_limit.proposals[0].utilization == 75 and by_limit.proposals[0].replicas == 3  # ceil(1.25 * 2)
    assert by_limit.proposals[0].metric == "cpu resource utilization (percentage of limit)"
    assert by_limit.status.current_metrics[0]["resource"]["current"]["averageUtilization"] == 75


def test_limit_basis_without_a_limit_fails_the_metric_as_a_missing_request_does():
    pods = [LIMITED[0], pod_dict("web-1", [("app", {"cpu": "100m"}, {})])]
    d = one_sync(cpu_spec(60, LIMIT), pods, [150, 150])
    p = d.proposals[0]
    assert p.replicas is None and "missing limit for cpu in container app of Pod web-1" in p.error
    assert [(c.type, c.status, c.reason) for c in d.conditions][-1] == ("ScalingActive", "False",
                                                                        "FailedGetResourceMetric")
    assert not d.rescale
    assert one_sync(cpu_spec(60), pods, [150, 150]).proposals[0].replicas == 5  # the Request basis does not care


def test_limit_basis_uses_pod_level_limits_and_container_limits_for_container_resource():
    pods = [pod_dict(f"web-{i}", [("app", {"cpu": "100m"}, {"cpu": "200m"}), ("side", {"cpu": "100m"}, {})],
                     pod_level={"limits": {"cpu": "1"}}) for i in range(2)]
    d = one_sync(cpu_spec(50, LIMIT), pods, [500, 500])
    assert d.proposals[0].utilization == 50  # 500m of the pod-level 1 CPU, not of the containers' limits
    d = one_sync(cpu_spec(50, LIMIT, "ContainerResource", "app"), pods, [150, 150])
    assert d.proposals[0].utilization == 75  # 150m of app's 200m
    d = one_sync(cpu_spec(50, LIMIT, "ContainerResource", "side"), pods, [150, 150])
    assert "missing limit for cpu in container side of Pod web-0" in d.proposals[0].error


def test_objects_without_the_fields_decide_as_before():
    plain = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
             "metadata": {"name": "web", "namespace": "default"},
             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10,
                      "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                          "type": "Utilization", "averageUtilization": 60}}}]}}
    hpa, _ = hpa_from_dict(plain)
    ha = dict(plain, apiVersion="pyhpa.dev/v1alpha1", kind="HorizontalAutoscaler")
    ha_hpa, _, _, config = read_hpa(ha, ControllerConfig())
    assert ha_hpa == hpa and hpa.metrics[0].utilization_basis == "Request" and config == ControllerConfig()
    explicit = copy.deepcopy(ha)
    explicit["spec"]["metrics"][0]["resource"]["utilizationBasis"] = "Request"
    assert read_hpa(explicit, ControllerConfig())[0] == hpa
    # limits on the pods change nothing for the Request basis
    unlimited = [pod_dict(f"web-{i}", [("app", {"cpu": "100m"}, {})]) for i in range(2)]
    a, b = one_sync(hpa.metrics[0], LIMITED, [150, 150]), one_sync(hpa.metrics[0], unlimited, [150, 150])
    assert (a.desired_replicas, a.proposals[0].utilization) == (b.desired_replicas, b.proposals[0].utilization)


def test_utilization_basis_is_refused_where_it_does_not_belong():
    v2 = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10,
                   "metrics": [{"type": "Resource", "resource": {"name": "cpu", "utilizationBasis": "Limit",
                                                                 "target": {"type": "Utilization", "averageUtilization": 60}}}]}}
    with pytest.raises(Exception, match=r"spec.metrics\[0\].resource.utilizationBasis.*HorizontalAutoscaler"):
        hpa_from_dict(v2)
    ha = dict(v2, apiVersion="pyhpa.dev/v1alpha1", kind="HorizontalAutoscaler")
    bad = copy.deepcopy(ha)
    bad["spec"]["metrics"][0]["resource"]["utilizationBasis"] = "Usage"
    with pytest.raises(Exception, match="must be Request or Limit"):
        read_hpa(bad, ControllerConfig())
    avg = copy.deepcopy(ha)
    avg["spec"]["metrics"][0]["resource"]["target"] = {"type": "AverageValue", "averageValue": "100m"}
    with pytest.raises(Exception, match="Limit needs a Utilization target"):
        read_hpa(avg, ControllerConfig())


# --- warnings in the core ------------------------------------------------------------------------

STARVED = [pod_dict(f"web-{i}", [("app", {"cpu": "100m"}, {"cpu": "150m"})]) for i in range(3)]


def warnings_for(spec: MetricSpec, pods: list[dict], samples=(), tolerance: float = 0.1):
    hpa = HPA("default", "web", 1, 10, (spec,))
    return check_hpa(hpa, Scale(3, 3, "app=web"), [pod_from_dict(p) for p in pods], list(samples),
                     ControllerConfig(tolerance=tolerance))


def test_scale_starvation_when_the_target_is_above_the_limit():
    (w,) = warnings_for(cpu_spec(200), STARVED)
    assert w.reason == "ScaleStarvation" and w.pods == ("web-0", "web-1", "web-2")
    assert "the target 200% of the request (200m) is above the limit 150m" in w.message
    assert "CPU is throttled at the limit" in w.message and "at or below 150%" in w.message
    assert warnings_for(cpu_spec(120), STARVED) == []  # scale-up above 132 %: reachable
    (w,) = warnings_for(cpu_spec(140), STARVED)  # 154 % threshold > the 150 % the limit allows
    assert "scale-up threshold 154% (target 140% plus the 0.1 tolerance)" in w.message
    assert warnings_for(cpu_spec(140), STARVED, tolerance=0.05) == []  # 147 % < 150 %
    unlimited = [pod_dict("web-0", [("app", {"cpu": "100m"}, {})])]
    assert warnings_for(cpu_spec(500), unlimited) == []  # nothing caps the usage


def test_scale_starvation_of_a_limit_basis_target_above_100_percent():
    assert warnings_for(cpu_spec(80, LIMIT), STARVED) == []
    (w,) = warnings_for(cpu_spec(100, LIMIT), STARVED)  # never above 100 % of the limit, threshold 110 %
    assert w.reason == "ScaleStarvation" and "(percentage of limit)" in w.metric


def test_scale_starvation_of_a_container_resource_metric_and_memory():
    pods = [pod_dict("web-0", [("app", {"cpu": "100m"}, {"cpu": "150m"}), ("side", {"cpu": "1"}, {})])]
    (w,) = warnings_for(cpu_spec(200, kind="ContainerResource", container="app"), pods)
    assert w.container == "app" and "container app of pod web-0" in w.message
    assert warnings_for(cpu_spec(200), pods) == []  # the pod sum: side has no limit, the pod is not capped
    mem = [pod_dict("web-0", [("app", {"memory": "100Mi"}, {"memory": "120Mi"})])]
    (w,) = warnings_for(MetricSpec("Resource", "memory", "Utilization", 150), mem)
    assert "memory cannot grow past the limit" in w.message


def multi_container_samples(app_milli: int, side_milli: int) -> MetricSamples:
    return MetricSamples(pods={"web-0": PodSample(app_milli + side_milli, NOW, 30.0)},
                         containers={"web-0": {"app": app_milli, "side": side_milli}}, timestamp=NOW)


MULTI = [pod_dict("web-0", [("app", {"cpu": "100m"}, {}), ("side", {"cpu": "900m"}, {})])]


def test_pod_sum_hides_a_busy_container():
    (w,) = warnings_for(cpu_spec(80), MULTI, [multi_container_samples(150, 50)])
    assert w.reason == "PodSumHidesContainer" and w.container == "app"
    assert "container app uses 150% of its own request while the pod as a whole is at 20% (target 80%)" in w.message
    assert "ContainerResource metric on container app" in w.message
    assert warnings_for(cpu_spec(80), MULTI, [multi_container_samples(90, 50)]) == []  # app not above its request
    assert warnings_for(cpu_spec(80), MULTI, [multi_container_samples(150, 700)]) == []  # the pod is at the target
    assert warnings_for(cpu_spec(80, kind="ContainerResource", container="app"), MULTI,
                        [multi_container_samples(150, 50)]) == []


def test_the_metrics_api_answer_gives_the_per_container_usage():
    from pyhpa.adapters.metrics_api import resource_samples
    answer = {"items": [{"metadata": {"name": "web-0"}, "timestamp": START, "window": "30s", "containers": [
        {"name": "app", "usage": {"cpu": "150m"}}, {"name": "side", "usage": {"cpu": "50m"}}]},
        {"metadata": {"name": "web-1"}, "timestamp": START, "window": "30s", "containers": [
            {"name": "app", "usage": {"cpu": "10m"}}]}]}
    s = resource_samples(answer, "cpu")
    assert s.pods["web-0"].value == 200 and s.containers == {"web-0": {"app": 150, "side": 50}}
    assert resource_samples(answer, "cpu", "app").containers is None


# --- the CLI -------------------------------------------------------------------------------------

def horizontal_autoscaler(target: int, basis: str | None = None) -> dict:
    resource = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}
    if basis:
        resource["utilizationBasis"] = basis
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 10, "tolerance": 0.05,
                     "metrics": [{"type": "Resource", "resource": resource}]},
            "status": {"currentReplicas": 2, "desiredReplicas": 2}}


def pod_metrics(usages: list[int]) -> dict:
    return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "items": [
        {"metadata": {"name": f"web-{i}", "namespace": "default"}, "timestamp": START, "window": "30s",
         "containers": [{"name": "app", "usage": {"cpu": f"{u}m"}}]} for i, u in enumerate(usages)]}


def snapshot(hpa: dict, pods: list[dict], usages: list[int]) -> dict:
    return {"name": "web", "now": "2026-01-01T00:10:00Z", "hpa": hpa,
            "scale": {"spec": {"replicas": 2}, "status": {"replicas": 2, "selector": "app=web"}},
            "pods": pods, "metrics": {"resource": pod_metrics(usages)}}


def write(tmp_path: Path, name: str, doc) -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc))
    return p


def test_explain_a_horizontal_autoscaler_snapshot_with_the_limit_basis(tmp_path):
    path = write(tmp_path, "s.yaml", snapshot(horizontal_autoscaler(60, "Limit"), LIMITED, [150, 150]))
    r = runner.invoke(app, ["explain", "-o", "json", str(path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["proposals"] == [{"metric": "cpu resource utilization (percentage of limit)", "replicas": 3,
                                 "utilization": 75, "rawValue": "150m", "error": None}]
    assert out["warnings"] == []
    snap = snapshot_from_dict(yaml.safe_load(path.read_text()), str(path))
    assert snap.inputs.config.tolerance == 0.05  # the object's own setting
    text = " ".join(runner.invoke(app, ["explain", str(path)]).output.split())
    assert "current 75% of limit (average 150m) target 60% of limit" in text


def test_explain_warns_of_scale_starvation_in_text_and_json(tmp_path):
    pods = [pod_dict(f"web-{i}", [("app", {"cpu": "100m"}, {"cpu": "150m"})]) for i in range(2)]
    path = write(tmp_path, "s.yaml", snapshot(horizontal_autoscaler(200), pods, [150, 150]))
    out = json.loads(runner.invoke(app, ["explain", "-o", "json", str(path)]).output)
    assert out["proposals"][0]["replicas"] == 2  # 150 % of a 200 % target: the HPA sees no reason to scale
    assert [w["reason"] for w in out["warnings"]] == ["ScaleStarvation"] and out["warnings"][0]["pods"] == ["web-0", "web-1"]
    text = " ".join(runner.invoke(app, ["explain", str(path)]).output.split())  # rich wraps long lines
    assert "warning ScaleStarvation" in text and "CPU is throttled at the limit" in text


def test_explain_kubectl_inputs_of_a_horizontal_autoscaler(tmp_path):
    hpa = write(tmp_path, "hpa.yaml", horizontal_autoscaler(60, "Limit"))
    pods = write(tmp_path, "pods.yaml", {"apiVersion": "v1", "kind": "List", "items": LIMITED})
    metrics = write(tmp_path, "pm.yaml", pod_metrics([150, 150]))
    r = runner.invoke(app, ["explain", "-o", "json", "--hpa", str(hpa), "--pods", str(pods), "--pod-metrics",
                            str(metrics), "--now", "2026-01-01T00:10:00Z"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["proposals"][0]["utilization"] == 75


def test_explain_refuses_utilization_basis_on_an_autoscaling_v2_hpa(tmp_path):
    hpa = horizontal_autoscaler(60, "Limit")
    hpa.update(apiVersion="autoscaling/v2", kind="HorizontalPodAutoscaler")
    hpa["spec"].pop("tolerance")
    path = write(tmp_path, "hpa.yaml", hpa)
    r = runner.invoke(app, ["thresholds", str(path)])
    assert r.exit_code == 2
    assert "spec.metrics[0].resource.utilizationBasis" in r.output and "Traceback" not in r.output


def test_thresholds_of_a_limit_basis_and_starvation_with_pods(tmp_path):
    hpa = write(tmp_path, "hpa.yaml", horizontal_autoscaler(60, "Limit"))
    out = json.loads(runner.invoke(app, ["thresholds", "-o", "json", str(hpa)]).output)
    assert out["metrics"][0]["unit"] == "percent of limit" and out["tolerance"]["scaleUp"] == 0.05
    assert out["warnings"] == []
    hpa = write(tmp_path, "hpa2.yaml", horizontal_autoscaler(200))
    pods = write(tmp_path, "pods.yaml", {"apiVersion": "v1", "kind": "List", "items": STARVED})
    r = runner.invoke(app, ["thresholds", "-o", "json", "--pods", str(pods), str(hpa)])
    assert r.exit_code == 0, r.output
    assert [w["reason"] for w in json.loads(r.output)["warnings"]] == ["ScaleStarvation"]
    text = " ".join(runner.invoke(app, ["thresholds", "--pods", str(pods), str(hpa)]).output.split())
    assert "warning ScaleStarvation" in text and "lower the target or raise the limit" in text


def test_the_crd_schema_takes_utilization_basis_and_the_files_are_generated():
    generated = crd()
    item = generated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "metrics"]["items"]["properties"]
    for source in ("resource", "containerResource"):
        assert item[source]["properties"]["utilizationBasis"]["enum"] == ["Request", "Limit"]
    for path in (ROOT / "deploy" / "crd.yaml", ROOT / "pyhpa" / "data" / "deploy" / "crd.yaml"):
        assert yaml.safe_load(path.read_text()) == generated


# --- the controller ------------------------------------------------------------------------------

async def test_run_reads_the_limit_basis_and_emits_the_starvation_warning_once():
    cluster, metrics = StubCluster(), StubMetrics()
    metric = {"type": "Resource", "resource": {"name": "cpu", "utilizationBasis": "Limit",
                                               "target": {"type": "Utilization", "averageUtilization": 100}}}
    cluster.put_autoscaler(autoscaler("web", "web", metrics=[metric]))
    cluster.put_scale("default", "Deployment", "web", 2, "app=web")
    for p in LIMITED:
        cluster.put_pod(PodResource.from_dict(p))
    metrics.resource[("default", "app=web")] = pod_metrics([150, 150])
    controller = Controller(Settings(health_port=None, sync_period_seconds=0.05, jitter=0), cluster, metrics)
    async with running(controller) as results:
        await wait_for(lambda: len(results) >= 4, what="four syncs")
        await wait_for(lambda: any(e.reason == "ScaleStarvation" for e in cluster.events), what="the warning")
    assert results[0].decision.proposals[0].utilization == 75  # 150m of the 200m limit
    starving = [e for e in cluster.events if e.reason == "ScaleStarvation"]
    assert len(starving) == 1 and starving[0].type == "Warning"  # once, not every sync
    assert "never scales up" in starving[0].note
