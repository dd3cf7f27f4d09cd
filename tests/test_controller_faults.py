"""Faults survived, each isolated to what it touches: the production wiring of ``pyhpa run``
(``run_controller``: status-backed memory) against the HTTP double with faults injected.

Each test asserts the end state the cluster is left in (replicas, status conditions, events) while the
fault lasts and after it is removed, that the controller task is still running, and that every body
it sent was valid (``kd.invalid_requests == []``). Waits are event-based with generous timeouts; the
only bound on counts is an upper one that a slower machine can only make easier to meet.
"""

from __future__ import annotations

import asyncio

import pytest
from controller_util import ControllerTask, autoscaler, cpu_metric, deployment, pod, wait_for
from lightkube import codecs

from kubedouble import KubeDouble
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

HA = "pyhpa.dev/v1alpha1"


def replicas(kd: KubeDouble, name: str) -> int:
    return kd.get_object("apps/v1", "deployments", "default", name)["spec"]["replicas"]


def status(kd: KubeDouble, name: str) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", name) or {}).get("status") or {}


def condition(kd: KubeDouble, name: str, ctype: str) -> tuple:
    """(status, reason, message) of one condition of the stored status (Nones when absent)."""
    conds = [c for c in status(kd, name).get("conditions") or [] if isinstance(c, dict)]  # garbage, until rewritten
    c = {c.get("type"): c for c in conds}.get(ctype) or {}
    return c.get("status"), c.get("reason"), c.get("message", "")


def event_reasons(kd: KubeDouble, name: str) -> set[str]:
    return {e["reason"] for e in kd.list_objects("events.k8s.io/v1", "events", "default")
            if e["regarding"]["name"] == name}


async def workload(kd: KubeDouble, name: str, n: int, usage: str, **spec) -> None:
    """A Deployment of ``n`` ready pods using ``usage`` CPU of a 200m request, and its autoscaler (50 %)."""
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment(name, n)))
    for i in range(n):
        kd.put_object(pod(f"{name}-{i}", name))
        kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": usage}})
    await client.create(HorizontalAutoscaler(autoscaler(name, name, **spec)))


async def test_api_errors_and_timeouts_back_off_and_recover(kd):
    """The Scale GET of one target answers 503, then hangs past --api-timeout: that autoscaler reports
    FailedGetScale and retries with backoff (no hot loop), the other one scales meanwhile; when the faults
    go, a failed scale update (FailedRescale) is retried and the target is scaled as decided."""
    await workload(kd, "web", 2, "200m")  # 100 %: wants 4
    await workload(kd, "other", 2, "200m")
    loop = asyncio.get_running_loop()
    errors = kd.add_fault("GET", r"deployments/web/scale$", status=503)
    started = loop.time()
    async with ControllerTask(kd, sync_period_seconds=1.0, retry_base_seconds=0.1, api_timeout_seconds=1.0) as run:
        await wait_for(lambda: replicas(kd, "other") == 4, what="the healthy autoscaler to scale")
        await wait_for(lambda: condition(kd, "web", "AbleToScale")[1] == "FailedGetScale", what="FailedGetScale")
        assert "injected fault 503" in condition(kd, "web", "AbleToScale")[2]
        await wait_for(lambda: errors.hits >= 4, what="retries")
        kd.remove_fault(errors)
        hang = kd.add_fault("GET", r"deployments/web/scale$", hang=True)
        await wait_for(lambda: "timed out" in condition(kd, "web", "AbleToScale")[2], what="the timeout reported")
        await wait_for(lambda: hang.hits >= 2, what="a retry after the timeout")
        elapsed = loop.time() - started
        assert errors.hits + hang.hits <= 8 + 2 * elapsed, (errors.hits, hang.hits, elapsed)  # backoff, capped at the period
        failed = [r for r in run.results if r.key == "default/web"]
        assert len(failed) >= 3 and all(r.retry and r.error == "internal" for r in failed) and not run.task.done()
        assert replicas(kd, "web") == 2

        kd.remove_fault(hang)
        rescale = kd.add_fault("PUT", r"deployments/web/scale$", status=500, times=1)
        await wait_for(lambda: replicas(kd, "web") == 4, what="web scaled once the API answers again")
        await wait_for(lambda: condition(kd, "web", "AbleToScale")[1] == "SucceededRescale", what="the status")
        await wait_for(lambda: {"FailedGetScale", "FailedRescale", "SuccessfulRescale"} <= event_reasons(kd, "web"),
                       what="the events")
        assert rescale.hits == 1
        assert event_reasons(kd, "other") == {"SuccessfulRescale"}
    assert kd.invalid_requests == []


async def test_metrics_api_down_blocks_scale_down_but_not_a_scale_up_from_another_metric(kd):
    """metrics.k8s.io answers 503 while an external metric still answers: the external metric may scale up
    (ScalingActive stays True), but not down (ScalingActive=False FailedGetResourceMetric, as upstream);
    with every metric failing nothing scales; once the metrics API is back the scale-down happens."""
    queue = {"type": "External", "external": {"metric": {"name": "queue"},
                                              "target": {"type": "AverageValue", "averageValue": "5"}}}
    kd.set_external_metric("default", "queue", [({}, "40")])  # 40 / 5: wants 8
    down = kd.add_fault("GET", r"^/apis/metrics\.k8s\.io/", status=503)
    await workload(kd, "web", 2, "20m", metrics=[cpu_metric(50), queue],
                   behavior={"scaleDown": {"stabilizationWindowSeconds": 0}})
    async with ControllerTask(kd, sync_period_seconds=0.5) as run:
        await wait_for(lambda: replicas(kd, "web") == 6, what="the external metric to scale up (2 -> 6: policy limit)")
        await wait_for(lambda: condition(kd, "web", "ScalingActive")[:2] == ("True", "ValidMetricFound"),
                       what="ScalingActive=True")
        await wait_for(lambda: "FailedGetResourceMetric" in event_reasons(kd, "web"), what="the metric's event")

        kd.set_external_metric("default", "queue", [({}, "2")])  # wants 1, but the CPU metric is invalid
        await wait_for(lambda: condition(kd, "web", "ScalingActive")[:2] == ("False", "FailedGetResourceMetric"),
                       what="ScalingActive=False FailedGetResourceMetric")
        assert "unable to fetch metrics from resource metrics API" in condition(kd, "web", "ScalingActive")[2]
        await run.syncs(3, "default/web")
        assert replicas(kd, "web") == 6 and status(kd, "web")["desiredReplicas"] == 6

        external = kd.add_fault("GET", r"^/apis/external\.metrics\.k8s\.io/", status=503)  # every metric fails
        await wait_for(lambda: external.hits >= 2, what="syncs with every metric failing")
        await run.syncs(2, "default/web")
        assert replicas(kd, "web") == 6
        assert condition(kd, "web", "ScalingActive")[:2] == ("False", "FailedGetResourceMetric")
        assert "FailedComputeMetricsReplicas" in event_reasons(kd, "web")

        kd.remove_fault(external)
        kd.remove_fault(down)
        await wait_for(lambda: replicas(kd, "web") == 1, what="the scale-down once the metrics API is back")
        await wait_for(lambda: condition(kd, "web", "ScalingActive")[:2] == ("True", "ValidMetricFound"),
                       what="ScalingActive=True again")
        assert not run.task.done()
    assert kd.invalid_requests == []


@pytest.mark.parametrize("expire", [False, True], ids=["resume", "relist-after-410"])
async def test_a_change_made_while_the_watch_was_cut_is_acted_on(kd, expire):
    """Both watches are cut abruptly and cannot reconnect for a while; meanwhile the autoscaler's spec
    changes (its period is an hour: only the watch can make it sync again) and a pod appears. When the
    API answers again the informers resume (or re-list after 410 Gone) and the change is acted on."""
    await workload(kd, "web", 2, "100m", syncPeriodSeconds=3600)  # 50 % on a 50 % target: 2 replicas
    client = kd.async_client()
    async with ControllerTask(kd) as run:
        await wait_for(lambda: status(kd, "web").get("observedGeneration") == 1, what="the first sync")
        await wait_for(lambda: len([p for p in kd.open_watches if "horizontalautoscalers" in p or "pods" in p]) == 2,
                       what="both watches")
        blocked = kd.add_fault("GET", r"horizontalautoscalers$|/pods$", status=503, query_regex="watch=")
        assert kd.cut_watches("horizontalautoscalers|pods", abrupt=True) == 2
        obj = await client.get(HorizontalAutoscaler, "web", namespace="default")
        obj["spec"]["metrics"] = [cpu_metric(25)]  # 50 % on 25 %: wants 4
        await client.replace(obj)
        kd.put_object(pod("web-new", "other-app"))
        await wait_for(lambda: blocked.hits >= 2, what="both informers to fail reconnecting")
        if expire:
            kd.expire_history()
        kd.remove_fault(blocked)
        await wait_for(lambda: replicas(kd, "web") == 4, what="the spec change to be acted on")
        await wait_for(lambda: status(kd, "web").get("observedGeneration") == 2, what="the status of generation 2")
        await wait_for(lambda: len(run.controller.pods) == 3, what="the new pod in the cache")
        if expire:
            assert run.controller.autoscaler_informer.relists >= 2
    assert kd.invalid_requests == []


async def test_malformed_autoscalers_get_a_condition_and_an_event_and_the_others_keep_syncing(kd):
    """Objects the API server accepts but the controller cannot use (minReplicas > maxReplicas, a Resource
    metric without ``resource``, an unknown selectPolicy) each get ScalingActive=False InvalidSpec naming the
    field and a Warning InvalidSpec event; a status written past validation (garbage) is rewritten, not
    reported as a spec error; the good autoscalers scale meanwhile."""
    await workload(kd, "web", 2, "200m")  # wants 4
    await workload(kd, "gs", 2, "200m", max_replicas=3)  # its status is made garbage below
    client = kd.async_client()
    bad = {"minmax": ({"minReplicas": 5, "maxReplicas": 2}, "spec.minReplicas"),
           "noresource": ({"metrics": [{"type": "Resource"}]}, "spec.metrics[0].resource"),
           "policy": ({"behavior": {"scaleUp": {"selectPolicy": "Sometimes"}}}, "spec.behavior.scaleUp.selectPolicy")}
    for name, (spec, _) in bad.items():
        body = autoscaler(name, "web")
        body["spec"].update(spec)
        await client.create(HorizontalAutoscaler(body))
    garbage = kd.get_object(HA, "horizontalautoscalers", "default", "gs")
    kd.put_object(garbage | {"status": {"desiredReplicas": "many", "conditions": ["x"], "pyhpa": "?"}})
    async with ControllerTask(kd, sync_period_seconds=0.5) as run:
        await wait_for(lambda: replicas(kd, "web") == 4 and replicas(kd, "gs") == 3, what="the good ones to scale")
        for name, (_, field) in bad.items():
            await wait_for(lambda: condition(kd, name, "ScalingActive")[:2] == ("False", "InvalidSpec"),
                           what=f"InvalidSpec on {name}")
            assert field in condition(kd, name, "ScalingActive")[2]
            await wait_for(lambda: "InvalidSpec" in event_reasons(kd, name), what=f"the event on {name}")
        await wait_for(lambda: condition(kd, "gs", "ScalingActive")[0] == "True", what="the status rewritten")
        assert status(kd, "gs")["desiredReplicas"] == 3 and isinstance(status(kd, "gs")["pyhpa"], dict)
        await run.syncs(4, "default/web")
        assert replicas(kd, "web") == 4 and not run.task.done()
    assert kd.invalid_requests == []


async def test_a_target_that_disappears_gives_failed_get_scale_until_it_comes_back(kd):
    """The Deployment is deleted: FailedGetScale condition and event, retries (never slower than the
    period), the other autoscaler unaffected; recreated, the autoscaler scales it as decided."""
    await workload(kd, "web", 2, "100m")  # 50 %: steady at 2
    await workload(kd, "other", 2, "200m")  # wants 4
    client = kd.async_client()
    async with ControllerTask(kd, sync_period_seconds=0.5, retry_base_seconds=0.1) as run:
        await wait_for(lambda: condition(kd, "web", "AbleToScale")[0] == "True", what="the first sync")
        kd.delete_object("apps/v1", "deployments", "default", "web")
        await wait_for(lambda: condition(kd, "web", "AbleToScale")[:2] == ("False", "FailedGetScale"),
                       what="FailedGetScale")
        assert "not found" in condition(kd, "web", "AbleToScale")[2]
        await wait_for(lambda: "FailedGetScale" in event_reasons(kd, "web"), what="the event")
        await run.syncs(3, "default/web")
        assert all(r.retry and r.error == "internal" for r in run.results[-3:] if r.key == "default/web")
        await wait_for(lambda: replicas(kd, "other") == 4, what="the other autoscaler to scale meanwhile")

        await client.create(codecs.from_dict(deployment("web", 2)))
        for i in range(2):
            kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})  # and it is busy now
        await wait_for(lambda: replicas(kd, "web") == 4, what="the recreated target scaled")
        await wait_for(lambda: condition(kd, "web", "AbleToScale")[:2] == ("True", "SucceededRescale"),
                       what="AbleToScale=True")
        assert not run.task.done()
    assert kd.invalid_requests == []


@pytest.mark.parametrize("obj,problem", [
    ({"spec": "scale it please"}, "spec: must be an object, got str"),
    ({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": "ten"}}, "spec.maxReplicas"),
    ({"status": "garbage"}, None),
    ({"status": {"desiredReplicas": 2, "conditions": ["x", {"type": "AbleToScale"}]}}, None),
])
def test_objects_written_past_validation_never_crash_the_parser(obj, problem):
    """What the informer hands over is parsed once; a shape no schema allows is an InvalidSpec error (or,
    in the controller's own status, simply dropped and rewritten), never an exception that would make the
    informer skip the object silently."""
    from pyhpa.controller import Settings
    from pyhpa.controller.cache.autoscaler import parse_autoscaler
    from pyhpa.controller.outputs.status import status_with_condition

    a = parse_autoscaler(autoscaler("x", "web") | obj, Settings())
    assert a.error == problem if problem is None else problem in a.error
    written = status_with_condition(a, "ScalingActive", "False", "InvalidSpec", "m", 0.0)
    assert [c["type"] for c in written["conditions"]] == ["ScalingActive"]
