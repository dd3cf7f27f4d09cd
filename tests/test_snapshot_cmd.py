"""``pyhpa snapshot``: the inputs of one sync, gathered as the controller gathers them, explain to its decision.

The controller runs against the Kubernetes API double until it has decided; then ``pyhpa snapshot`` (the CLI,
in a thread: it runs its own event loop) snapshots the same autoscaler at the same clock (``--now``) with the
inputs frozen, and ``pyhpa explain -o json`` on that file must give the controller's decision.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from controller_util import autoscaler, deployment, wait_for
from lightkube import codecs
from test_controller_e2e import Running, put_pods, replicas, set_cpu
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.adapters.parse import format_time
from pyhpa.adapters.snapshot import decision_json, memory_to_dict
from pyhpa.cli.main import app
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

HA = "pyhpa.dev/v1alpha1"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
runner = CliRunner()


async def cli(*args) -> tuple[int, str]:
    """Run ``pyhpa ARGS`` in a thread (the double keeps serving on this loop); (exit code, output)."""
    result = await asyncio.to_thread(runner.invoke, app, [str(a) for a in args])
    return result.exit_code, result.output


async def explain_json(path: Path) -> dict:
    code, out = await cli("explain", "-o", "json", path)
    assert code == 0, out
    return json.loads(out)


def conditions(decision) -> list[tuple[str, str, str]]:
    return [(c.type, c.status, c.reason) for c in decision.conditions]


def explained_conditions(out: dict) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in out["conditions"]]


def set_memory(kd: KubeDouble, name: str, history: dict | None) -> None:
    """Put the controller memory into ``status.pyhpa`` as a status-backed memory store keeps it."""
    obj = kd.get_object(HA, "horizontalautoscalers", "default", name)
    status = dict(obj.get("status") or {})
    status.pop("pyhpa", None)
    if history is not None:
        status["pyhpa"] = history
    kd.put_object(dict(obj, status=status))


async def test_snapshot_of_a_sync_explains_to_the_controllers_decision(kd, tmp_path):
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", 3)))
    put_pods(kd, "web", 0, 3)
    set_cpu(kd, "web", 3, "200m")  # 100 % of the request against 50 %: wants 6
    # one pod more per 10 minutes: the scale event in the memory holds the next syncs at 4
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]}}
    await client.create(HorizontalAutoscaler(autoscaler("web", "web", behavior=behavior, syncPeriodSeconds=1,
                                                        tolerance=0.05)))
    async with Running(kd, sync_period_seconds=1) as run:
        await wait_for(lambda: replicas(kd, "web") == 4, what="the scale-up to 4")

        def held():
            return [r for r in run.results if r.decision is not None and not r.decision.rescale
                    and r.decision.current_replicas == 4]

        await wait_for(lambda: len(held()) >= 2, what="two syncs held at 4 by the scale-up policy")
    sync = held()[-1]  # the controller is stopped: nothing changes from here on
    assert sync.decision.desired_replicas == 4
    assert ("ScalingLimited", "True", "ScaleUpLimit") in conditions(sync.decision)
    history = memory_to_dict(sync.gathered.inputs.memory)
    assert history["scaleUpEvents"] and history["scaleUpEvents"][0]["replicaChange"] == 1
    set_memory(kd, "web", history)  # what a status-backed memory keeps in status.pyhpa
    kd.clear_requests()

    path = tmp_path / "web.yaml"
    code, out = await cli("snapshot", "default/web", "--server", kd.url, "--now", format_time(sync.gathered.inputs.now),
                          "--output-file", path)
    assert code == 0, out
    assert [r for r in kd.requests if r[0] in WRITES] == []
    snap = yaml.safe_load(path.read_text())
    assert snap["now"] == format_time(sync.gathered.inputs.now)
    # the memory as a controller starting now loads it from status.pyhpa (the live recommendation held till now)
    assert snap["history"]["scaleUpEvents"] == history["scaleUpEvents"]
    assert [r["replicas"] for r in snap["history"]["recommendations"]] == [
        r["replicas"] for r in history["recommendations"]]
    assert snap["controller"]["tolerance"] == 0.05 and snap["controller"]["syncPeriodSeconds"] == 1
    assert (snap["hpa"]["apiVersion"], snap["hpa"]["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")
    assert "tolerance" not in snap["hpa"]["spec"] and snap["hpa"]["spec"]["behavior"] == behavior
    assert snap["hpa"]["status"]["desiredReplicas"] == 4 and "pyhpa" not in snap["hpa"]["status"]
    assert snap["scale"]["spec"] == {"replicas": 4}
    assert snap["scale"]["status"]["selector"] == sync.gathered.inputs.scale.selector == "app=web"
    assert [p["metadata"]["name"] for p in snap["pods"]] == [p.name for p in sync.gathered.inputs.pods]
    # the metrics API's answer as received (metrics-server stamps each item's creationTimestamp with the
    # time of the request: the snapshot asked again, maybe a second later)
    assert _unstamped(snap["metrics"]["resource"]) == _unstamped(sync.gathered.answers[0])

    out = await explain_json(path)
    assert out["desiredReplicas"] == sync.decision.desired_replicas == 4
    assert explained_conditions(out) == conditions(sync.decision)
    assert [p["replicas"] for p in out["proposals"]] == [p.replicas for p in sync.decision.proposals] == [6]

    # without the memory the policy has no scale event to count: 5 would be allowed
    set_memory(kd, "web", None)
    code, text = await cli("snapshot", "default/web", "--server", kd.url, "--now", format_time(sync.gathered.inputs.now),
                           "-o", "json")
    assert code == 0, text
    bare = json.loads(text)
    assert "history" not in bare
    path.write_text(text)
    assert (await explain_json(path))["desiredReplicas"] == 5
    assert [r for r in kd.requests if r[0] in WRITES] == []
    assert kd.invalid_requests == []


async def test_snapshot_keeps_every_metric_api_answer_and_failure_as_the_controller_got_them(kd, tmp_path):
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("api", 2)))
    put_pods(kd, "api", 0, 2)
    set_cpu(kd, "api", 2, "150m")
    kd.set_pods_metric("default", "requests_per_second", {"api-0": "15", "api-1": "25"})
    kd.set_object_metric("default", "deployments.apps", "api", "queue_length", "30")
    kd.set_external_metric("default", "queue_messages", [({"queue": "jobs"}, "20")])
    kd.add_fault("GET", r"external\.metrics\.k8s\.io/.*/queue_messages", status=503)
    metrics = [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
        {"type": "Pods", "pods": {"metric": {"name": "requests_per_second"},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "Object", "object": {"describedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                                      "metric": {"name": "queue_length"}, "target": {"type": "Value", "value": "10"}}},
        {"type": "External", "external": {"metric": {"name": "queue_messages"},
                                          "target": {"type": "AverageValue", "averageValue": "5"}}},
    ]
    await client.create(HorizontalAutoscaler(autoscaler("api", "api", metrics, max_replicas=20)))
    target = kd.get_object("apps/v1", "deployments", "default", "api")
    async with Running(kd, sync_period_seconds=60) as run:
        await wait_for(lambda: run.results, what="the first sync")
    first = run.results[0]
    kd.put_object(target)  # the inputs as that sync found them: before its own scale-up to 4
    assert first.decision.proposals[3].error is not None  # the external metrics API failed
    path = tmp_path / "api.json"
    code, out = await cli("snapshot", "default/api", "--server", kd.url, "--now", format_time(first.gathered.inputs.now),
                          "-o", "json", "--output-file", path)
    assert code == 0, out
    snap = json.loads(path.read_text())
    assert sorted(snap["metrics"]) == ["errors", "object", "pods", "resource"]
    assert snap["metrics"]["errors"] == ["external:queue_messages"]
    assert (snap["scale"]["spec"]["replicas"], snap["scale"]["status"]["replicas"]) == (
        first.gathered.inputs.scale.spec_replicas, first.gathered.inputs.scale.status_replicas)
    assert snap["metrics"]["pods"]["requests_per_second"] == first.gathered.answers[1]
    assert snap["metrics"]["object"]["queue_length"] == first.gathered.answers[2]
    out = await explain_json(path)
    # the same proposals; a failed call's message names the snapshot instead of the API's answer
    expected = decision_json("api", first.decision)["proposals"]
    assert [dict(p, error=p["error"] is not None) for p in out["proposals"]] == [
        dict(p, error=p["error"] is not None) for p in expected]
    assert [p["replicas"] for p in expected] == [3, 4, 6, None]  # 75 % of request vs 50 %: 3
    assert out["desiredReplicas"] == first.decision.desired_replicas
    assert explained_conditions(out) == conditions(first.decision)
    assert kd.invalid_requests == []


async def test_snapshot_of_a_missing_autoscaler_or_target_is_one_line_with_exit_code_2(kd):
    code, out = await cli("snapshot", "default/nothere", "--server", kd.url)
    assert code == 2
    assert out.strip().splitlines() == ["error: HorizontalAutoscaler default/nothere: not found"]
    kd.put_object(autoscaler("orphan", "gone"))
    code, out = await cli("snapshot", "default/orphan", "--server", kd.url)
    assert code == 2 and len(out.strip().splitlines()) == 1
    assert out.startswith("error: HorizontalAutoscaler default/orphan: spec.scaleTargetRef: "
                          "cannot read the target's scale")
    assert kd.invalid_requests == []


@pytest.mark.parametrize("args,message", [
    (["snapshot", "nonsense"], "error: NAMESPACE/NAME: expected NAMESPACE/NAME, got 'nonsense'"),
    (["snapshot", "default/web", "--now", "yesterday"], "error: --now:"),
    (["snapshot", "default/web", "--kubeconfig", "/nonexistent/kubeconfig"],
     "error: /nonexistent/kubeconfig: --kubeconfig: cannot load the Kubernetes configuration"),
])
def test_snapshot_bad_input_is_one_line_with_exit_code_2(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.output


PROM_SNAPSHOT = {
    "now": "2026-01-01T00:00:10Z",
    "hpa": {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 10,
                     "metrics": [{"type": "Prometheus", "prometheus": {
                         "name": "rps", "query": "sum by (pod) (rate(http_requests_total[1m]))", "podLabel": "pod",
                         "target": {"type": "AverageValue", "averageValue": "10"}}}]}},
    "scale": {"spec": {"replicas": 2}, "status": {"replicas": 2, "selector": "app=web"}},
    "pods": [{"metadata": {"name": f"web-{i}", "namespace": "default", "labels": {"app": "web"}},
              "spec": {"containers": [{"name": "app"}]},
              "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                         "conditions": [{"type": "Ready", "status": "True",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}} for i in range(2)],
    "metrics": {"prometheus": {"rps": {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"pod": "web-0"}, "value": [1767225610, "30"]},
        {"metric": {"pod": "web-1"}, "value": [1767225610, "20"]}]}}}},
}


def test_explain_reads_prometheus_metrics_of_a_snapshot(tmp_path):
    path = tmp_path / "prom.json"
    path.write_text(json.dumps(PROM_SNAPSHOT))
    r = runner.invoke(app, ["explain", "-o", "json", str(path)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    # average 25 per pod against 10: ceil(2.5 x 2) = 5, capped at max(2 x 2, 4) = 4 without behavior
    assert out["proposals"][0]["replicas"] == 5 and out["proposals"][0]["rawValue"] == "25"
    assert out["proposals"][0]["metric"] == "pods metric rps"
    assert out["desiredReplicas"] == 4
    failed = json.loads(json.dumps(PROM_SNAPSHOT))
    failed["metrics"] = {"errors": ["prometheus:rps"]}
    path.write_text(json.dumps(failed))
    out = json.loads(runner.invoke(app, ["explain", "-o", "json", str(path)]).output)
    active = {c["type"]: c for c in out["conditions"]}["ScalingActive"]
    assert (active["status"], active["reason"]) == ("False", "FailedGetPodsMetric")
    bad = json.loads(json.dumps(PROM_SNAPSHOT))
    bad["hpa"]["spec"]["metrics"][0]["prometheus"]["target"] = {"type": "Value", "value": "3"}
    path.write_text(json.dumps(bad))
    r = runner.invoke(app, ["explain", str(path)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "spec.metrics[0].prometheus.target.type" in r.output


def _unstamped(answer: dict) -> dict:
    items = [dict(i, metadata={k: v for k, v in (i.get("metadata") or {}).items() if k != "creationTimestamp"})
             for i in answer.get("items") or []]
    return dict(answer, items=items)
