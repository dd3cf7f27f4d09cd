"""Fallback through ``pyhpa run`` (the production wiring: ``run_controller``, status-backed memory) against the
HTTP API double with the metrics APIs failing: the metrics chain breaks, the fallback applies after the
threshold, a healthy metric still wins, the metrics come back, and a failover keeps the failure counts.

Every test asserts the state left in the cluster (replicas, ``status.metricHealth``, conditions, events) and
that every body the controller sent was valid (``kd.invalid_requests == []``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from controller_util import ControllerTask, Skew, autoscaler, cpu_metric, deployment, pod, wait_for
from lightkube import codecs

from kubedouble import KubeDouble
from pyhpa.adapters.parse import timestamp
from pyhpa.controller import Settings
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler, parse_autoscaler

HA = "pyhpa.dev/v1alpha1"
ROOT = Path(__file__).resolve().parent.parent
RESOURCE_API = r"^/apis/metrics\.k8s\.io/"
EXTERNAL_API = r"^/apis/external\.metrics\.k8s\.io/"
FAST = {"scaleDown": {"stabilizationWindowSeconds": 0},
        "scaleUp": {"policies": [{"type": "Pods", "value": 100, "periodSeconds": 1}]}}
MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}


def replicas(kd: KubeDouble, name: str) -> int:
    return kd.get_object("apps/v1", "deployments", "default", name)["spec"]["replicas"]


def status(kd: KubeDouble, name: str) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", name) or {}).get("status") or {}


def condition(kd: KubeDouble, name: str, ctype: str) -> tuple:
    c = {c["type"]: c for c in status(kd, name).get("conditions") or []}.get(ctype) or {}
    return c.get("status"), c.get("reason"), c.get("message", "")


def health(kd: KubeDouble, name: str) -> dict:
    return {h["metric"]: h for h in status(kd, name).get("metricHealth") or []}


def events(kd: KubeDouble, name: str) -> list[dict]:
    return [e for e in kd.list_objects("events.k8s.io/v1", "events", "default") if e["regarding"]["name"] == name]


def reasons(kd: KubeDouble, name: str) -> set[str]:
    return {e["reason"] for e in events(kd, name)}


async def workload(kd: KubeDouble, name: str, n: int, cpu: str, memory: str = "50Mi", **spec) -> None:
    """A Deployment of ``n`` ready pods using ``cpu`` of a 200m request and ``memory``, and its autoscaler."""
    await kd.async_client().create(codecs.from_dict(deployment(name, n)))
    set_usage(kd, name, n, cpu, memory)
    await kd.async_client().create(HorizontalAutoscaler(autoscaler(name, name, **spec)))


def set_usage(kd: KubeDouble, name: str, n: int, cpu: str, memory: str = "50Mi") -> None:
    for i in range(n):
        if kd.get_object("v1", "pods", "default", f"{name}-{i}") is None:
            kd.put_object(pod(f"{name}-{i}", name))
        kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": cpu, "memory": memory}})


async def test_the_night_the_metrics_api_broke_cpu_and_memory_fall_back_and_recover(kd):
    """metrics.k8s.io answers 503 (CPU and memory both fail): the autoscaler with a fallback counts the failed
    syncs in status.metricHealth, holds the replicas for failureThreshold syncs as upstream, then scales to the
    fallback replicas (FallbackStarted, Fallback=True); the one without a fallback holds and gets none of it.
    When the API is back the metrics decide again (FallbackEnded, Happy) and the scale-down follows."""
    await workload(kd, "web", 2, "100m", metrics=[cpu_metric(50), MEMORY], behavior=FAST,
                   fallback={"failureThreshold": 2, "replicas": 6})
    await workload(kd, "plain", 2, "100m", metrics=[cpu_metric(50), MEMORY])
    async with ControllerTask(kd, sync_period_seconds=0.3) as run:
        await wait_for(lambda: condition(kd, "web", "Fallback")[:2] == ("False", "MetricsHealthy"), what="healthy")
        assert [(h["numberOfFailures"], h["status"]) for h in health(kd, "web").values()] == [(0, "Happy")] * 2
        outage = kd.add_fault("GET", RESOURCE_API, status=503)
        await wait_for(lambda: health(kd, "web").get("Resource/cpu", {}).get("numberOfFailures") == 2,
                       what="two failed syncs counted")
        assert replicas(kd, "web") == 2 and condition(kd, "web", "Fallback")[:2] == ("False", "MetricsFailing")
        assert condition(kd, "web", "ScalingActive")[:2] == ("False", "FailedGetResourceMetric")
        await wait_for(lambda: replicas(kd, "web") == 6, what="the fallback replicas")
        await wait_for(lambda: condition(kd, "web", "Fallback")[:2] == ("True", "FallbackActive"), what="Fallback=True")
        h = health(kd, "web")
        assert {m: (x["status"], x.get("fallbackReplicas")) for m, x in h.items()} == {
            "Resource/cpu": ("Failing", 6), "Resource/memory": ("Failing", 6)}
        assert h["Resource/cpu"]["numberOfFailures"] >= 3 and "fallbackSince" in h["Resource/cpu"]
        failures = status(kd, "web")["pyhpa"]["metricFailures"]
        assert [f["metric"] for f in failures] == ["Resource/cpu", "Resource/memory"]
        assert condition(kd, "web", "ScalingActive")[:2] == ("True", "FallbackReplicas")
        await wait_for(lambda: {"FallbackStarted", "FailedGetResourceMetric", "SuccessfulRescale"} <= reasons(kd, "web"),
                       what="the events")
        started = [e for e in events(kd, "web") if e["reason"] == "FallbackStarted"]
        assert started[0]["type"] == "Warning" and "6 replicas (static)" in started[0]["note"]

        await run.syncs(3, "default/plain")
        assert replicas(kd, "plain") == 2 and "metricHealth" not in status(kd, "plain")
        assert condition(kd, "plain", "Fallback") == (None, None, "")
        assert "metricFailures" not in status(kd, "plain")["pyhpa"]
        assert not {"FallbackStarted", "FallbackEnded"} & reasons(kd, "plain")

        kd.remove_fault(outage)
        set_usage(kd, "web", 6, "20m", "30Mi")  # CPU 10 % of a 50 % target, memory 30 % of 100Mi: want 2
        await wait_for(lambda: replicas(kd, "web") == 2, what="the metrics to decide again")
        await wait_for(lambda: condition(kd, "web", "Fallback")[:2] == ("False", "MetricsHealthy"), what="healthy")
        assert [(x["numberOfFailures"], x["status"]) for x in health(kd, "web").values()] == [(0, "Happy")] * 2
        assert "metricFailures" not in status(kd, "web")["pyhpa"]
        await wait_for(lambda: "FallbackEnded" in reasons(kd, "web"), what="FallbackEnded")
        assert not run.task.done()
    assert kd.invalid_requests == []


async def test_a_healthy_metric_that_wants_more_wins_over_the_fallback(kd):
    """The resource metrics API is down, the external metric answers: the CPU fallback (3) is maxed with the
    queue (8): 8, not 3 (KEDA #6659); when the queue drops, the fallback floor holds the count at 3."""
    queue = {"type": "External", "external": {"metric": {"name": "queue"},
                                              "target": {"type": "AverageValue", "averageValue": "5"}}}
    kd.set_external_metric("default", "queue", [({}, "40")])  # 40 / 5: wants 8
    outage = kd.add_fault("GET", RESOURCE_API, status=503)
    await workload(kd, "web", 2, "100m", metrics=[cpu_metric(50), queue], behavior=FAST,
                   fallback={"failureThreshold": 0, "replicas": 3})
    async with ControllerTask(kd, sync_period_seconds=0.3) as run:
        await wait_for(lambda: replicas(kd, "web") == 8, what="the queue to scale up to 8")
        await wait_for(lambda: status(kd, "web").get("desiredReplicas") == 8, what="the status of that sync")
        assert health(kd, "web")["Resource/cpu"]["fallbackReplicas"] == 3
        assert health(kd, "web")["External/queue"]["status"] == "Happy"
        assert condition(kd, "web", "ScalingActive")[:2] == ("True", "ValidMetricFound")
        kd.set_external_metric("default", "queue", [({}, "5")])  # wants 1
        await wait_for(lambda: replicas(kd, "web") == 3, what="the scale-down to the fallback replicas, not below")
        await wait_for(lambda: condition(kd, "web", "ScalingActive")[:2] == ("True", "FallbackReplicas"),
                       what="ScalingActive=True FallbackReplicas")
        await run.syncs(3, "default/web")
        assert replicas(kd, "web") == 3
        kd.remove_fault(outage)
    assert kd.invalid_requests == []


async def test_each_behavior_and_the_duration_trigger_through_the_controller(kd):
    """Four autoscalers at 4 replicas, the metrics API down, one per behavior: static (2) scales down to 2,
    currentReplicas holds 4, currentReplicasIfHigher (6) scales up to 6, currentReplicasIfLower (6) holds 4 —
    each with Fallback=True. A fifth falls back only once 600 s of decision time have passed since its first
    failure (failureDurationSeconds), however many syncs failed before (its status counts 1 failure: more change
    nothing, and are not written)."""
    clock = Skew()
    cases = {"static": ({"replicas": 2}, 2), "current": ({"behavior": "currentReplicas"}, 4),
             "higher": ({"replicas": 6, "behavior": "currentReplicasIfHigher"}, 6),
             "lower": ({"replicas": 6, "behavior": "currentReplicasIfLower"}, 4)}
    for name, (fallback, _) in cases.items():
        await workload(kd, name, 4, "100m", behavior=FAST, fallback={"failureThreshold": 1, **fallback})
    await workload(kd, "slow", 4, "100m", behavior=FAST, fallback={"failureDurationSeconds": 600, "replicas": 9})
    kd.add_fault("GET", RESOURCE_API, status=503)
    async with ControllerTask(kd, clock, sync_period_seconds=0.3) as run:
        for name, (_, want) in cases.items():
            await wait_for(lambda: condition(kd, name, "Fallback")[:2] == ("True", "FallbackActive"),
                           what=f"{name} in fallback")
            await wait_for(lambda: replicas(kd, name) == want, what=f"{name} at {want}")
        await run.syncs(4, "default/slow")
        assert replicas(kd, "slow") == 4 and condition(kd, "slow", "Fallback")[:2] == ("False", "MetricsFailing")
        # a duration-only fallback: the count never decides, so it is written as 1 (no status write per failure)
        assert health(kd, "slow")["Resource/cpu"]["numberOfFailures"] == 1
        clock.offset += 600
        await wait_for(lambda: replicas(kd, "slow") == 9, what="the fallback once the duration has passed")
        for name, (_, want) in cases.items():
            assert replicas(kd, name) == want
    assert kd.invalid_requests == []


async def test_a_failover_keeps_the_failure_counts(kd):
    """Replica a counts failed syncs (threshold 6) and dies before the fallback applies; b takes the Lease over,
    loads status.pyhpa and continues the count from a's, same first failure time: its fallback applies within
    four syncs of its own (a new leader without the counts would need seven)."""
    clock = Skew()
    kd.add_fault("GET", EXTERNAL_API, status=503)
    queue = {"type": "External", "external": {"metric": {"name": "queue"},
                                              "target": {"type": "AverageValue", "averageValue": "5"}},
             "fallback": {"failureThreshold": 6, "replicas": 5}}
    await workload(kd, "web", 2, "100m", metrics=[queue])

    def leader(identity: str) -> ControllerTask:
        return ControllerTask(kd, clock, sync_period_seconds=0.3, leader_elect=True, leader_elect_namespace="default",
                              leader_elect_name="lease", leader_elect_identity=identity,
                              leader_elect_lease_duration_seconds=3.0, leader_elect_renew_deadline_seconds=2.0,
                              leader_elect_retry_period_seconds=0.25).start()

    a = leader("a")
    await wait_for(lambda: health(kd, "web").get("External/queue", {}).get("numberOfFailures", 0) >= 3,
                   what="a to count three failed syncs")
    b = leader("b")
    await a.kill()
    stored = status(kd, "web")["pyhpa"]["metricFailures"][0]
    assert replicas(kd, "web") == 2 and stored["numberOfFailures"] < 7
    await wait_for(lambda: replicas(kd, "web") == 5, what="b to apply the fallback", timeout=60)
    mine = [r for r in b.results if r.key == "default/web" and r.decision is not None]
    first = mine[0].decision.status.metric_health[0]
    assert first.number_of_failures >= stored["numberOfFailures"] + 1
    assert first.first_failure_time == timestamp(stored["firstFailureTime"])
    fell_back = next(i for i, r in enumerate(mine) if any(x.source == "Fallback" for x in r.decision.sources))
    assert fell_back < 4, [r.decision.status.metric_health[0].number_of_failures for r in mine]
    assert b.controller.memory.restored >= 1
    await b.shutdown()
    assert kd.invalid_requests == []


@pytest.mark.parametrize("spec,field", [
    ({"fallback": {"failureThreshold": 3}}, "spec.fallback.replicas: is required with behavior static"),
    ({"fallback": {"replicas": 3, "behavior": "sometimes"}}, "spec.fallback.behavior: must be one of static"),
    ({"fallback": {"replicas": 3, "failureThreshold": -1}}, "spec.fallback.failureThreshold: must be at least 0"),
    ({"fallback": {"replicas": 3, "failureTreshold": 2}}, "spec.fallback.failureTreshold: unknown field"),
    ({"metrics": [cpu_metric(50) | {"fallback": {"behavior": "currentReplicasIfHigher"}}]},
     "spec.metrics[0].fallback.replicas: is required with behavior currentReplicasIfHigher"),
    ({"fallback": {"failureThreshold": 1},
      "metrics": [cpu_metric(50) | {"fallback": {"behavior": "currentReplicas"}}, MEMORY]},
     "spec.fallback.replicas: is required with behavior static"),
])
def test_a_fallback_the_controller_cannot_use_is_invalid_spec_naming_the_field(spec, field):
    a = parse_autoscaler(autoscaler("x", "web", **spec), Settings())
    assert a.hpa is None and field in a.error


def test_a_metrics_own_fallback_and_the_spec_wide_one_are_read_into_the_core():
    spec = {"fallback": {"failureThreshold": 2, "replicas": 4},
            "metrics": [cpu_metric(50), MEMORY | {"fallback": {"replicas": 9, "behavior": "currentReplicasIfLower"}}]}
    a = parse_autoscaler(autoscaler("x", "web", **spec), Settings())
    assert a.error is None
    assert (a.hpa.fallback.replicas, a.hpa.fallback.failure_threshold) == (4, 2)
    assert a.hpa.metrics[0].fallback is None
    assert (a.hpa.metrics[1].fallback.replicas, a.hpa.metrics[1].fallback.behavior) == (9, "currentReplicasIfLower")


def test_a_snapshot_keeps_the_fallback_and_the_counts_and_explain_decides_as_the_controller(tmp_path):
    """What ``pyhpa snapshot`` writes for an autoscaler in an outage (its spec with ``fallback``, the memory with
    ``metricFailures``) round-trips, and ``pyhpa explain`` applies the fallback on the third failed sync."""
    import yaml
    from typer.testing import CliRunner

    from pyhpa.adapters.snapshot import memory_from_dict, memory_to_dict
    from pyhpa.cli.main import app
    from pyhpa.core import Memory
    from pyhpa.core.model import MetricFailures

    mem = Memory([(100.0, 3)], [], [], {"Resource/cpu": MetricFailures(number_of_failures=2, first_failure_time=70.5),
                                        "External/q{a=b}": MetricFailures(number_of_failures=9, first_failure_time=1.0,
                                                                          fallback_since=50.0)})
    assert memory_from_dict(memory_to_dict(mem)) == mem
    snap = yaml.safe_load((ROOT / "examples" / "explain" / "snapshot.yaml").read_text())
    snap["hpa"].update(apiVersion="pyhpa.dev/v1alpha1", kind="HorizontalAutoscaler")  # as pyhpa snapshot writes it
    snap["hpa"]["spec"]["fallback"] = {"failureThreshold": 2, "replicas": 7}
    snap["metrics"] = {"errors": ["resource"]}
    snap["history"] = {"metricFailures": [{"metric": "Resource/cpu", "numberOfFailures": 2,
                                           "firstFailureTime": "2026-11-21T09:59:30Z"}]}
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(snap))
    result = CliRunner().invoke(app, ["explain", "-o", "json", str(path)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["desiredReplicas"] == 6  # 7, through upstream's scale-up limit max(2 x 3, 4)
    assert {c["type"]: c["reason"] for c in out["conditions"]}["Fallback"] == "FallbackActive"
    snap["history"]["metricFailures"][0]["numberOfFailures"] = 1
    path.write_text(yaml.safe_dump(snap))
    out = json.loads(CliRunner().invoke(app, ["explain", "-o", "json", str(path)]).output)
    assert out["desiredReplicas"] == 3  # the second failed sync: not yet


def test_an_autoscaling_v2_hpa_has_no_fallback_not_even_on_a_metric():
    from pyhpa.adapters.autoscaler import read_autoscaler
    from pyhpa.adapters.errors import InputError

    doc = autoscaler("x", "web", metrics=[cpu_metric(50) | {"fallback": {"replicas": 3}}])
    doc.update(apiVersion="autoscaling/v2", kind="HorizontalPodAutoscaler")
    with pytest.raises(InputError) as err:
        read_autoscaler(doc)
    assert err.value.field == "spec.metrics[0].fallback" and "only a HorizontalAutoscaler" in err.value.message
    assert read_autoscaler(doc, extensions=True).hpa.metrics[0].fallback.replicas == 3  # a snapshot's v2 document
