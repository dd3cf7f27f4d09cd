"""``spec.saturation`` through ``pyhpa run`` (the production wiring: ``run_controller``, status-backed memory)
against the Kubernetes API double over real HTTP.

Pods pinned at their CPU limit make the first sync write more replicas to the Scale than upstream's rule does
(the same object without ``saturation`` beside it), with condition ``SaturationActive``, ``status.saturation`` and
a Warning event ``PinnedAtLimit``; pods without a CPU limit get upstream's decision; a steady state below the
limit writes nothing because of saturation; the CRD schema refuses values out of range and the controller
reports what the schema cannot check as an invalid spec. Every test that runs the controller checks
``kd.invalid_requests == []``: every body it sent passed the CRD's or the built-in schemas.
"""

from __future__ import annotations

import pytest
from controller_util import START, ControllerTask, autoscaler, cpu_metric, deployment, wait_for
from lightkube import ApiError, codecs
from lightkube.resources.apps_v1 import Deployment

from kubedouble import KubeDouble
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

HA = "pyhpa.dev/v1alpha1"
#: generous enough not to cap: 900 % per 15 s lets 4 pods go to 40
GENEROUS = {"scaleUp": {"stabilizationWindowSeconds": 0,
                        "policies": [{"type": "Percent", "value": 900, "periodSeconds": 15}]}}
MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}
BELOW = "the ready pods use less than 95 % of their CPU limit: their usage shows the demand"


# ----- the world ---------------------------------------------------------------------------------------------
def resources(limit: bool) -> dict:
    """1 CPU and 256Mi requested; with ``limit`` the same as limits (a Guaranteed pod), else no limits."""
    amounts = {"cpu": "1", "memory": "256Mi"}
    return {"requests": dict(amounts), "limits": dict(amounts)} if limit else {"requests": dict(amounts)}


def workload(name: str, replicas: int, limit: bool) -> dict:
    body = deployment(name, replicas)
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = resources(limit)
    return body


def pod(name: str, app: str, limit: bool) -> dict:
    """A ready pod of ``app`` (what kubelet would report), one container ``app`` of 1 CPU, limited or not."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": resources(limit)}]},
            "status": {"phase": "Running", "startTime": START, "qosClass": "Guaranteed" if limit else "Burstable",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": START}]}}


async def world(kd: KubeDouble, name: str, n: int = 4, cpu: str = "1000m", limit: bool = True,
                target: int = 70, **spec) -> None:
    """``name``: a Deployment of ``n`` ready pods of 1 CPU using ``cpu`` each, and its HorizontalAutoscaler at
    ``target`` % CPU utilization, min 1, max 20 (``spec`` adds saturation, behavior, ...)."""
    client = kd.async_client()
    await client.create(codecs.from_dict(workload(name, n, limit)))
    for i in range(n):
        kd.put_object(pod(f"{name}-{i}", name, limit))
    set_usage(kd, name, n, cpu)
    await client.create(HorizontalAutoscaler(autoscaler(name, name, [cpu_metric(target)], max_replicas=20, **spec)))


def set_usage(kd: KubeDouble, name: str, n: int, cpu: str) -> None:
    for i in range(n):
        kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": cpu, "memory": "100Mi"}})


# ----- what the cluster holds ----------------------------------------------------------------------------------
async def scale_replicas(kd: KubeDouble, name: str) -> int:
    """spec.replicas of the Deployment's Scale subresource, read through the API."""
    scale = await kd.async_client().get(Deployment.Scale, name, namespace="default")
    return scale.spec.replicas


def status(kd: KubeDouble, name: str) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", name) or {}).get("status") or {}


def condition(kd: KubeDouble, name: str, ctype: str = "SaturationActive") -> dict:
    return {c["type"]: c for c in status(kd, name).get("conditions") or []}.get(ctype, {})


def events(kd: KubeDouble, name: str) -> list[dict]:
    return [e for e in kd.list_objects("events.k8s.io/v1", "events", "default") if e["regarding"]["name"] == name]


def reasons(kd: KubeDouble, name: str) -> list[str]:
    return [e["reason"] for e in events(kd, name)]


def status_writes(kd: KubeDouble, name: str) -> int:
    return kd.count_requests("PUT", rf"/horizontalautoscalers/{name}/status$")


class Recorded(ControllerTask):
    """``pyhpa run``'s wiring with its Scale writes recorded: ``scaled`` holds, per write, the target's name, the
    replicas written and spec.replicas the API double stored right after it (the Scale each sync left)."""

    def __init__(self, kd: KubeDouble, **settings) -> None:
        super().__init__(kd, **settings)
        self.scaled: list[tuple[str, int, int]] = []

    def _started(self, controller, health) -> None:
        super()._started(controller, health)
        writer = controller.writer
        original = writer.update_scale

        async def spy(namespace, ref, handle, replicas):
            await original(namespace, ref, handle, replicas)
            stored = self.kd.get_object("apps/v1", "deployments", namespace, ref.name)["spec"]["replicas"]
            self.scaled.append((ref.name, replicas, stored))

        writer.update_scale = spy

    def scales(self, name: str) -> list[int]:
        """spec.replicas the double held after each Scale write to ``name``, in order."""
        return [stored for target, _, stored in self.scaled if target == name]


def syncs_of(run: ControllerTask, key: str) -> list:
    return [r for r in run.results if r.key == key and r.decision is not None]


async def first_sync(run: ControllerTask, name: str):
    return (await wait_for(lambda: syncs_of(run, f"default/{name}"), what=f"a sync of {name}"))[0]


# ----- 1. pinned pods: a faster scale-up ----------------------------------------------------------------------
@pytest.mark.parametrize("behavior, scales, decided_by", [
    (GENEROUS, [12], "Saturation/"),  # ceil(2 x 4000m / 700m): the policy lets it through at once
    # no behavior: upstream's scale-up limit max(2 x 4, 4) caps the 12 at 8; the next sync (limit 16) gets 12
    (None, [8, 12], "Policy/scaleUpLimit"),
], ids=["generous-policy", "upstream-scale-up-limit"])
async def test_pods_pinned_at_their_limit_scale_up_further_in_the_first_sync(kd, behavior, scales, decided_by):
    """4 Guaranteed pods (1 CPU request = limit) at 1000m each, a 70 % target: upstream reads 100 % and writes 6
    (ceil(4 x 100 / 70)); with ``saturation: {}`` the first sync writes more (12, or 8 under upstream's scale-up
    limit), with SaturationActive=True PinnedAtLimit, status.saturation and one Warning event PinnedAtLimit (not
    one per sync). The double scales no pods: the 4 ready pods stay pinned and keep asking for 12."""
    want = scales[0]
    extra = {} if behavior is None else {"behavior": behavior}
    await world(kd, "web", saturation={}, **extra)
    await world(kd, "plain", **extra)
    async with Recorded(kd, sync_period_seconds=0.3) as run:
        web, plain = await first_sync(run, "web"), await first_sync(run, "plain")
        await run.syncs(3, "default/web")  # still 4 ready pods pinned, the Scale at `want`
        await wait_for(lambda: all("SuccessfulRescale" in reasons(kd, n) for n in ("web", "plain")),
                       what="the rescale events")
        assert await run.controller.events.flush(10)

    assert (web.decision.current_replicas, web.decision.desired_replicas) == (4, want) and web.decision.rescale
    assert str(web.decision.decided_by).startswith(decided_by)
    assert (plain.decision.current_replicas, plain.decision.desired_replicas) == (4, 6) and plain.decision.rescale
    assert run.scales("web") == scales  # the first sync's Scale: 12 or 8, where upstream writes 6
    assert run.scales("plain") == [6]
    assert await scale_replicas(kd, "web") == 12
    assert await scale_replicas(kd, "plain") == 6

    message = ("the 4 ready pods use 100 % of their CPU limit: the demand is above what they can show; assuming 2x "
               "their usage (8000m CPU) asks for 12 replicas")
    cond = condition(kd, "web")
    assert (cond["status"], cond["reason"], cond["message"]) == ("True", "PinnedAtLimit", message)
    assert status(kd, "web")["saturation"] == {"reason": "PinnedAtLimit", "message": message, "mode": "Enforce",
                                               "pinned": True, "usagePercentOfLimit": 100, "readyPods": 4,
                                               "replicas": 12}
    pinned = [e for e in events(kd, "web") if e["reason"] == "PinnedAtLimit"]
    assert len(pinned) == 1 and pinned[0]["type"] == "Warning" and pinned[0]["note"] == message
    assert not pinned[0].get("series"), "PinnedAtLimit is sent when the pods become pinned, not at every sync"
    assert [e.reason for e in web.decision.events] == ["PinnedAtLimit", "SuccessfulRescale"]
    assert all("PinnedAtLimit" not in [e.reason for e in r.decision.events] for r in syncs_of(run, "default/web")[1:])

    # the same object without spec.saturation: upstream's decision, none of the saturation state
    assert "saturation" not in status(kd, "plain") and condition(kd, "plain") == {}
    assert "PinnedAtLimit" not in reasons(kd, "plain")
    assert kd.invalid_requests == []


# ----- 2. no CPU limit: never pinned --------------------------------------------------------------------------
async def test_pods_without_a_cpu_limit_get_the_upstream_decision(kd):
    """The same load on pods with a CPU request and no limit: their usage shows the whole demand, so the
    source stays out (SaturationActive=False NoCPULimit), the Scale gets upstream's 6, no PinnedAtLimit."""
    await world(kd, "web", limit=False, saturation={}, behavior=GENEROUS)
    async with ControllerTask(kd, sync_period_seconds=0.3) as run:
        first = await first_sync(run, "web")
        await run.syncs(2, "default/web")
        await wait_for(lambda: "SuccessfulRescale" in reasons(kd, "web"), what="the rescale event")
        assert await run.controller.events.flush(10)

    assert (first.decision.current_replicas, first.decision.desired_replicas) == (4, 6)
    assert first.decision.decided_by.kind == "Metric"
    assert await scale_replicas(kd, "web") == 6
    cond = condition(kd, "web")
    assert (cond["status"], cond["reason"]) == ("False", "NoCPULimit")
    assert "no CPU limit" in cond["message"]
    saturation = status(kd, "web")["saturation"]
    assert (saturation["reason"], saturation["pinned"], saturation["mode"]) == ("NoCPULimit", False, "Enforce")
    assert saturation["message"] == cond["message"]
    assert not {"usagePercentOfLimit", "readyPods", "replicas"} & set(saturation)
    assert "PinnedAtLimit" not in reasons(kd, "web")
    assert all("PinnedAtLimit" not in [e.reason for e in r.decision.events] for r in syncs_of(run, "default/web"))
    assert kd.invalid_requests == []


# ----- 3. below the limit: nothing written because of saturation ---------------------------------------------
async def test_a_steady_state_below_the_limit_writes_no_status_because_of_saturation(kd):
    """Guaranteed pods at 50 % then 55 % of their limit, a 52 % target (both within the tolerance: 4 replicas
    stay): status.saturation and the SaturationActive condition do not change with the usage, and syncs at an
    unchanged usage PUT no status at all."""
    await world(kd, "web", cpu="500m", target=52, saturation={})
    async with ControllerTask(kd, sync_period_seconds=0.3) as run:
        def synced_at(percent: int):
            return lambda: [r for r in syncs_of(run, "default/web")
                            if r.decision.status.saturation.usage_percent == percent]

        await wait_for(synced_at(50), what="a sync at 50 % of the limit")
        at_50 = status(kd, "web")
        assert at_50["saturation"] == {"reason": "BelowLimit", "message": BELOW, "mode": "Enforce", "pinned": False}
        assert at_50["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 50
        writes = status_writes(kd, "web")
        await run.syncs(3, "default/web")
        assert status_writes(kd, "web") == writes, "a steady state at 50 % rewrote the status"

        set_usage(kd, "web", 4, "550m")
        await wait_for(synced_at(55), what="a sync at 55 % of the limit")
        at_55 = status(kd, "web")
        assert at_55["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 55  # the usage was seen
        assert at_55["saturation"] == at_50["saturation"]
        assert condition(kd, "web") == {c["type"]: c for c in at_50["conditions"]}["SaturationActive"]
        assert (condition(kd, "web")["status"], condition(kd, "web")["reason"]) == ("False", "BelowLimit")
        writes = status_writes(kd, "web")
        await run.syncs(3, "default/web")
        assert status_writes(kd, "web") == writes, "a steady state at 55 % rewrote the status"

    syncs = syncs_of(run, "default/web")
    assert all(not r.decision.rescale and r.decision.desired_replicas == 4 for r in syncs)
    assert await scale_replicas(kd, "web") == 4
    assert "PinnedAtLimit" not in reasons(kd, "web")
    assert kd.invalid_requests == []


# ----- 4. the schema and the controller on spec.saturation ----------------------------------------------------
async def test_the_api_double_stores_spec_saturation_with_its_fields_and_the_defaults(kd):
    client = kd.async_client()
    given = {"metric": 0, "pinnedPercent": 90, "demandFactor": 3.5, "mode": "Observe"}
    await client.create(HorizontalAutoscaler(autoscaler("full", "web", saturation=given)))
    await client.create(HorizontalAutoscaler(autoscaler("empty", "web", saturation={})))
    def stored(name: str) -> dict:
        return kd.get_object(HA, "horizontalautoscalers", "default", name)["spec"]["saturation"]

    assert stored("full") == given
    assert stored("empty") == {"pinnedPercent": 95, "demandFactor": 2.0, "mode": "Enforce"}  # the CRD's defaults


@pytest.mark.parametrize("saturation, field", [
    ({"pinnedPercent": 40}, "spec.saturation.pinnedPercent"),
    ({"pinnedPercent": 101}, "spec.saturation.pinnedPercent"),
    ({"demandFactor": 1}, "spec.saturation.demandFactor"),  # exclusive minimum: more than what the pods show
    ({"demandFactor": 0.5}, "spec.saturation.demandFactor"),
    ({"demandFactor": 10.5}, "spec.saturation.demandFactor"),
    ({"metric": -1}, "spec.saturation.metric"),
    ({"mode": "Panic"}, "spec.saturation.mode"),
    ({"demandFactor": "2"}, "spec.saturation.demandFactor"),
    ({"factor": 2}, "factor"),  # unknown field (the real server would prune it; the double refuses it)
])
async def test_the_crd_schema_refuses_a_bad_spec_saturation_naming_the_field(kd, saturation, field):
    with pytest.raises(ApiError) as err:
        await kd.async_client().create(HorizontalAutoscaler(autoscaler("web", "web", saturation=saturation)))
    assert err.value.status.code == 422 and field in err.value.status.message, err.value.status.message
    assert kd.get_object(HA, "horizontalautoscalers", "default", "web") is None


@pytest.mark.parametrize("spec, message", [
    ({"saturation": {"metric": 3}},
     "spec.saturation.metric: 3 names no entry of spec.metrics (1 metric)"),
    ({"saturation": {"metric": 0}, "metrics": [MEMORY, cpu_metric(70)]},
     "spec.saturation.metric: spec.metrics[0] is not a Resource or ContainerResource cpu metric"),
    ({"saturation": {}, "metrics": [MEMORY]},
     "spec.saturation.metric: spec.metrics has no Resource or ContainerResource cpu metric to watch"),
], ids=["index-out-of-range", "not-cpu", "no-cpu-metric"])
async def test_what_the_schema_cannot_check_is_an_invalid_spec_and_the_others_keep_syncing(kd, spec, message):
    """Which metric is watched depends on spec.metrics: the schema accepts it, the controller reports the field
    (ScalingActive=False InvalidSpec, a Warning event) and leaves the Scale alone; another autoscaler syncs."""
    await world(kd, "api", saturation={}, behavior=GENEROUS)
    client = kd.async_client()
    await client.create(codecs.from_dict(workload("web", 4, True)))
    for i in range(4):
        kd.put_object(pod(f"web-{i}", "web", True))
    set_usage(kd, "web", 4, "1000m")
    await client.create(HorizontalAutoscaler(autoscaler("web", "web", max_replicas=20,
                                                        **{"metrics": [cpu_metric(70)], **spec})))
    async with ControllerTask(kd, sync_period_seconds=0.3) as run:
        await wait_for(lambda: condition(kd, "web", "ScalingActive").get("reason") == "InvalidSpec",
                       what="the InvalidSpec condition")
        await first_sync(run, "api")
        await wait_for(lambda: "InvalidSpec" in reasons(kd, "web"), what="the InvalidSpec event")
    cond = condition(kd, "web", "ScalingActive")
    assert cond["status"] == "False"
    assert cond["message"].startswith(f"the HPA spec is invalid: {message}"), cond["message"]
    assert "saturation" not in status(kd, "web")
    assert await scale_replicas(kd, "web") == 4
    assert await scale_replicas(kd, "api") == 12  # the valid one, pinned, was not held up
    assert kd.invalid_requests == []
