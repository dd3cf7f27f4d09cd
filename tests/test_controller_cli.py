"""``pyhpa run`` and ``pyhpa manifests``: flags, one-line errors, the shipped manifests, graceful shutdown."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from controller_util import CRD, autoscaler, web_of_two
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.cli.main import app
from pyhpa.cli.run_cmd import MANIFESTS, manifest_text

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_manifests_prints_crd_rbac_and_deployment_from_the_package():
    result = runner.invoke(app, ["manifests"])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.output) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds == ["CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                     "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Deployment", "PodDisruptionBudget",
                     "Service"]
    preview = next(d for d in docs if d["metadata"]["name"] == "pyhpa-preview" and d["kind"] == "ClusterRole")
    assert preview["rules"] == [{"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
                                 "verbs": ["get", "list", "watch"]}]
    only = runner.invoke(app, ["manifests", "--only", "crd"])
    assert [d["kind"] for d in yaml.safe_load_all(only.output)] == ["CustomResourceDefinition"]


@pytest.mark.parametrize("part", MANIFESTS)
def test_repository_deploy_files_are_the_package_copies(part):
    assert (ROOT / "deploy" / "base" / f"{part}.yaml").read_text() == manifest_text(part)


@pytest.mark.parametrize("part", MANIFESTS)
def test_manifests_pass_the_official_schemas(part):
    for doc in yaml.safe_load_all(manifest_text(part)):
        kubernetes_validate.validate(doc, "1.37", strict=True)


def test_rbac_is_least_privilege():
    role = next(d for d in yaml.safe_load_all(manifest_text("rbac")) if d["kind"] == "ClusterRole")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules[(("",), ("pods",))] == {"list", "watch"}
    assert rules[(("pyhpa.dev",), ("horizontalautoscalers/status",))] == {"get", "update"}
    assert rules[(("*",), ("*/scale",))] == {"get", "update"}
    assert rules[(("events.k8s.io",), ("events",))] == {"create", "patch"}
    assert not any(v & {"delete", "deletecollection", "*"} for v in rules.values())


def test_crd_schema_is_the_hpa_spec_plus_settings_and_the_hpa_status_plus_memory():
    schema = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    spec, status = schema["spec"]["properties"], schema["status"]["properties"]
    assert {"scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior"} <= spec.keys()
    assert {"syncPeriodSeconds", "tolerance", "cpuInitializationPeriodSeconds", "initialReadinessDelaySeconds"} <= spec.keys()
    assert {"currentReplicas", "desiredReplicas", "currentMetrics", "conditions", "lastScaleTime",
            "observedGeneration", "pyhpa"} <= status.keys()
    assert set(status["pyhpa"]["properties"]) == {"recommendations", "scaleUpEvents", "scaleDownEvents",
                                                  "metricFailures"}
    fallback = {"failureThreshold", "failureDurationSeconds", "replicas", "behavior"}
    assert set(spec["fallback"]["properties"]) == fallback
    assert set(spec["metrics"]["items"]["properties"]["fallback"]["properties"]) == fallback
    assert spec["fallback"]["properties"]["behavior"]["enum"] == ["static", "currentReplicas", "currentReplicasIfHigher",
                                                                  "currentReplicasIfLower"]
    assert set(status["metricHealth"]["items"]["properties"]) >= {"metric", "numberOfFailures", "status"}
    target = spec["metrics"]["items"]["properties"]["resource"]["properties"]["target"]["properties"]
    # quantities the user writes take strings and numbers (0.05 too), those the controller writes int-or-string
    assert target["averageValue"]["x-kubernetes-preserve-unknown-fields"] is True and "type" not in target["averageValue"]
    current = status["currentMetrics"]["items"]["properties"]["resource"]["properties"]["current"]["properties"]
    assert current["averageValue"]["x-kubernetes-int-or-string"] is True


async def test_crd_accepts_full_hpa_specs_and_rejects_unknown_fields(kube_double):
    kube_double.register_crd(CRD)
    client = kube_double.async_client()
    from lightkube import ApiError

    from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

    body = autoscaler("full", "web", behavior={
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "tolerance": "0.05",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
        "scaleDown": {"policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}},
        syncPeriodSeconds=30, tolerance=0.2, cpuInitializationPeriodSeconds=120, initialReadinessDelaySeconds=10)
    created = await client.create(HorizontalAutoscaler(body))
    assert created["spec"]["minReplicas"] == 1 and created["spec"]["tolerance"] == 0.2
    bad = autoscaler("bad", "web", replicas=3)
    with pytest.raises(ApiError) as err:
        await client.create(HorizontalAutoscaler(bad))
    assert err.value.status.code == 422


@pytest.mark.parametrize("args,message", [
    (["run", "--workers", "0"], "error: --workers: must be at least 1"),
    (["run", "--sync-period", "-1"], "error: --sync-period: must be greater than 0 seconds"),
    (["run", "--kubeconfig", "/nonexistent/kubeconfig"],
     "error: /nonexistent/kubeconfig: --kubeconfig: cannot load the Kubernetes configuration"),
    (["run", "--log-level", "loud"], "error: --log-level: 'loud' is not one of 'debug', 'info', 'warning', 'error'"),
    (["run", "--shards", "2"], "error: --shards: '2' is not one of '1', 'auto'"),
])
def test_run_reports_bad_input_in_one_line_with_exit_code_2(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.output


def test_run_serves_a_double_and_stops_gracefully_on_sigterm():
    kd = KubeDouble.start_in_thread()
    try:
        web_of_two(kd)
        kd.put_object(autoscaler("web", "web"))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyhpa.cli.main", "run", "--server", kd.url, "--health-port", "-1",
             "--sync-period", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 60
            while kd.get_object("apps/v1", "deployments", "default", "web")["spec"]["replicas"] != 4:
                assert proc.poll() is None and time.monotonic() < deadline, "the controller did not scale the target"
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, out
        assert "controller stopped after" in out
        assert kd.invalid_requests == []
    finally:
        kd.stop()


def test_benchmark_prints_one_line_per_api_and_worker_count():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "controller.py"), "--hpas", "30",
                             "--workers", "2", "--shard-period", "1", "--shard-seconds", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    http, rep = "api=http workers=2 hpas=30", "api=http workers=2 hpas=30 sync_period_seconds=1"
    assert [line.rsplit("=", 1)[0] for line in lines] == [
        "api=stub workers=2 hpas=30 reconciles_per_second", f"{http} reconciles_per_second",
        f"{http} first_round_seconds", f"{http} steady_round_seconds", f"{http} requests_per_sync",
        f"{http} controller_cpu_ms_per_sync", f"{rep} replicas=1 rss_mb", f"{rep} replicas=1 status_writes_per_round",
        f"{rep} replicas=1 events_per_round", f"{rep} restart=1 caches_synced_seconds",
        f"{rep} restart=1 first_round_seconds", f"{rep} restart=1 status_writes", f"{rep} restart=1 events",
        f"{rep} replicas=2 rss_mb", f"{rep} replicas=2 syncs_per_second",
        f"{rep} replicas=2 sync_lag_p50_seconds", f"{rep} replicas=2 sync_lag_p99_seconds",
        f"{rep} replicas=2 status_writes_per_round", f"{rep} replicas=2 events_per_round",
        f"{rep} join=1 max_sync_gap_seconds", f"{rep} leave=1 max_sync_gap_seconds"]
    texts = [line.rsplit("=", 1)[1] for line in lines]
    assert not [t for t in texts if t.startswith("-")], lines  # durations, counts, rates: never negative, never -0.0
    values = dict(zip((line.rsplit("=", 1)[0] for line in lines), map(float, texts)))
    assert all(math.isfinite(v) and v >= 0 for v in values.values()), lines
    # what the run did, not how fast this machine is: both APIs reconciled, the replicas ran and synced
    assert values["api=stub workers=2 hpas=30 reconciles_per_second"] > 0 and values[f"{http} reconciles_per_second"] > 0
    assert values[f"{rep} replicas=1 rss_mb"] > 0 and values[f"{rep} replicas=2 rss_mb"] > 0
    assert values[f"{rep} replicas=2 syncs_per_second"] > 0
    # a percentile of the sync-lag histogram is one of its bucket bounds (all above 0); NaN when nothing synced
    assert values[f"{rep} replicas=2 sync_lag_p50_seconds"] > 0 and values[f"{rep} replicas=2 sync_lag_p99_seconds"] > 0
