"""``pyhpa adopt`` and ``pyhpa release`` (issue 42) against the HTTP API double with ``pyhpa run``'s wiring running
(``ControllerTask``): the hand-over's objects, its order (the HorizontalAutoscaler synced before the HPA goes), its
faults (nothing deleted, the state named, exit code 2) and running it twice. Upstream's controller is played by the
test where the double has none (``upstream_syncs``); tests/e2e/test_adoption_real.py runs it for real."""

from __future__ import annotations

import asyncio

from controller_util import ControllerTask, deployment, pod, wait_for
from lightkube import codecs
from test_controller_preview import native_hpa
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.adapters.adoption import adopted_autoscaler, carried_status, released_hpa
from pyhpa.cli.kubectl_plugin import plugin as kubectl
from pyhpa.cli.main import app

HA, HPA = "pyhpa.dev/v1alpha1", "autoscaling/v2"
LAST_SCALE = "2026-11-28T09:00:00Z"


def hza(kd: KubeDouble, name: str = "web") -> dict | None:
    return kd.get_object(HA, "horizontalautoscalers", "default", name)


def hpa(kd: KubeDouble, name: str = "web") -> dict | None:
    return kd.get_object(HPA, "horizontalpodautoscalers", "default", name)


def replicas(kd: KubeDouble, name: str = "web") -> int:
    return kd.get_object("apps/v1", "deployments", "default", name)["spec"]["replicas"]


async def cli(*args: str):
    """``pyhpa ARGS`` in a thread (the double serves on this loop)."""
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def world(kd: KubeDouble, name: str = "web", n: int = 3) -> dict:
    """A Deployment of ``n`` pods at 50 % of their CPU request (an HPA at 50 % keeps ``n``) and its native HPA,
    with the status upstream's controller wrote."""
    await kd.async_client().create(codecs.from_dict(deployment(name, n)))
    for i in range(n):
        kd.put_object(pod(f"{name}-{i}", name))
        kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": "100m"}})
    body = native_hpa(name, n, n)
    body["metadata"].update(labels={"team": "shop"}, annotations={
        "owner": "shop-team", "kubectl.kubernetes.io/last-applied-configuration": "{}"})
    body["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 120}}
    body["status"]["lastScaleTime"] = LAST_SCALE
    kd.put_object(body)
    return hpa(kd, name)


def test_the_objects_of_the_hand_over():
    source = {"apiVersion": HPA, "kind": "HorizontalPodAutoscaler",
              "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "labels": {"team": "shop"},
                           "annotations": {"owner": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}",
                                           "autoscaling.alpha.kubernetes.io/conditions": "[]"}},
              "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                       "minReplicas": 2, "maxReplicas": 9, "metrics": [{"type": "Pods", "pods": {
                           "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
              "status": {"currentReplicas": 3, "desiredReplicas": 4, "lastScaleTime": LAST_SCALE,
                         "observedGeneration": 1, "conditions": [{"type": "AbleToScale", "status": "True"}]}}
    made = adopted_autoscaler(source)
    assert made["apiVersion"] == HA and made["kind"] == "HorizontalAutoscaler"
    assert made["spec"] == source["spec"] and made["metadata"]["labels"] == {"team": "shop"}
    assert made["metadata"]["annotations"] == {"owner": "a", "pyhpa.dev/adopted-from": "u-1",
                                               "pyhpa.dev/paused": "true", "pyhpa.dev/handover-paused": "true"}
    assert adopted_autoscaler(source, handing_over=False)["metadata"]["annotations"] == {"owner": "a"}
    carried = carried_status(source)
    assert carried == {"lastScaleTime": LAST_SCALE}  # the rest the new owner writes from what it measures

    back, dropped = released_hpa({**made, "spec": {
        **made["spec"], "schedules": [{"name": "w", "start": "0 8 * * *", "durationSeconds": 60, "minReplicas": 3}],
        "tolerance": 0.05,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "utilizationBasis": "Limit", "target": {
            "type": "Utilization", "averageUtilization": 50}}, "fallback": {"replicas": 4}},
            {"type": "Prometheus", "prometheus": {"query": "up", "target": {"type": "Value", "value": "1"}}}]}})
    assert back["apiVersion"] == HPA and back["metadata"]["annotations"] == {"owner": "a"}
    assert back["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 50}}}]
    assert dropped == ["spec.metrics[0].resource.utilizationBasis", "spec.metrics[0].fallback",
                       "spec.metrics[1] (type Prometheus)", "spec.schedules", "spec.tolerance"]


async def test_adopt_hands_over_without_a_gap_and_twice_changes_nothing(kd):
    before = await world(kd)
    async with ControllerTask(kd) as run:
        result = await cli("adopt", "default/web", "--server", kd.url, "--timeout", "30")
        assert result.exit_code == 0, result.output
        assert result.output == "adopted default/web: pyhpa holds it at 3 replicas\n"
        assert hpa(kd) is None
        ours = hza(kd)
        assert ours["spec"] == before["spec"]
        assert ours["metadata"]["labels"] == {"team": "shop"}
        assert ours["metadata"]["annotations"] == {"owner": "shop-team"}  # the hand-over's are gone
        assert ours["status"]["lastScaleTime"] == LAST_SCALE and "pause" not in ours["status"]
        assert replicas(kd) == 3
        syncs = [r for r in run.results if r.key == "default/web"]
        assert syncs and all(r.decision is None or r.decision.desired_replicas == 3 for r in syncs)
        assert any(r.decision is not None and r.decision.error is None for r in syncs)

        version = ours["metadata"]["resourceVersion"]
        again = await cli("adopt", "default/web", "--server", kd.url)
        assert again.exit_code == 0 and again.output.startswith("already adopted default/web"), again.output
        assert hza(kd)["metadata"]["resourceVersion"] == version


async def test_a_refused_delete_deletes_nothing_and_says_the_state(kd):
    await world(kd)
    refusal = kd.add_fault("DELETE", r"horizontalpodautoscalers/web$", status=403,
                           message='horizontalpodautoscalers.autoscaling "web" is forbidden: User cannot delete')
    async with ControllerTask(kd):
        result = await cli("adopt", "default/web", "--server", kd.url, "--timeout", "30")
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: adopt default/web: could not delete the HPA: "
                                                       "the API server answered 403"), result.output
        assert "left: the HorizontalAutoscaler paused (pyhpa.dev/paused) beside the HPA" in lines[0]
        assert hpa(kd) is not None
        assert hza(kd)["metadata"]["annotations"]["pyhpa.dev/paused"] == "true"
        assert replicas(kd) == 3
        kd.remove_fault(refusal)
        result = await cli("adopt", "default/web", "--server", kd.url, "--timeout", "30")  # continues
        assert result.exit_code == 0, result.output
        assert hpa(kd) is None and "pyhpa.dev/paused" not in hza(kd)["metadata"].get("annotations", {})


async def test_without_pyhpa_running_nothing_is_deleted(kd):
    await world(kd)
    result = await cli("adopt", "default/web", "--server", kd.url, "--timeout", "1")
    assert result.exit_code == 2
    assert "pyhpa has not synced the HorizontalAutoscaler within 1 s (is pyhpa run running" in result.output
    assert hpa(kd) is not None and hza(kd) is not None


async def test_a_name_taken_by_another_horizontal_autoscaler_is_refused(kd):
    await world(kd)
    theirs = adopted_autoscaler(hpa(kd), handing_over=False)
    kd.put_object(theirs)
    result = await cli("adopt", "default/web", "--server", kd.url, "--timeout", "1")
    assert result.exit_code == 2 and "was not made from this HPA by pyhpa adopt: nothing changed" in result.output
    assert hpa(kd) is not None


async def test_dry_run_prints_what_it_would_create_and_changes_nothing(kd):
    await world(kd)
    result = await cli("adopt", "default/web", "--server", kd.url, "-o", "yaml")
    assert result.exit_code == 0, result.output
    assert "kind: HorizontalAutoscaler" in result.output and "pyhpa.dev/paused" not in result.output
    assert hza(kd) is None and hpa(kd) is not None
    assert (await cli("adopt", "--all", "--server", kd.url, "--dry-run")).output == result.output
    plugin = await asyncio.to_thread(CliRunner().invoke, kubectl, ["adopt", "web", "-n", "default", "--server",
                                                                   kd.url, "--dry-run"])
    assert plugin.exit_code == 0 and plugin.output == result.output, plugin.output


async def upstream_syncs(kd: KubeDouble, name: str, stop: asyncio.Event) -> None:
    """Upstream's HPA controller, as far as the hand-over sees it: it writes the HPA's status with
    ``observedGeneration`` (HPAGeneration), the replicas and conditions."""
    while not stop.is_set():
        obj = hpa(kd, name)
        if obj is not None and (obj.get("status") or {}).get("observedGeneration") != obj["metadata"]["generation"]:
            status = {**(obj.get("status") or {}), "observedGeneration": obj["metadata"]["generation"],
                      "currentReplicas": replicas(kd, name), "desiredReplicas": replicas(kd, name),
                      "conditions": [{"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale"}]}
            kd.put_object({**obj, "status": status})
        await asyncio.sleep(0.05)


async def test_release_brings_it_back_and_names_what_upstream_cannot_carry(kd):
    await world(kd)
    async with ControllerTask(kd):
        assert (await cli("adopt", "default/web", "--server", kd.url, "--timeout", "30")).exit_code == 0
        await wait_for(lambda: hza(kd) is not None and "status" in hza(kd), what="the adopted status")
        ours = hza(kd)
        kd.put_object({**ours, "spec": {**ours["spec"], "schedules": [
            {"name": "w", "start": "0 8 * * *", "durationSeconds": 60, "minReplicas": 1}]}})
        stop = asyncio.Event()
        upstream = asyncio.create_task(upstream_syncs(kd, "web", stop))
        try:
            result = await cli("release", "default/web", "--server", kd.url, "--timeout", "30")
        finally:
            stop.set()
            await upstream
        assert result.exit_code == 0, result.output
        assert result.output.splitlines() == [
            "warning: default/web: spec.schedules has no autoscaling/v2 field: not in the HPA",
            "released default/web: upstream's HPA controller holds it at 3 replicas"]
        assert hza(kd) is None
        back = hpa(kd)
        assert back["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 120
        assert back["metadata"]["annotations"] == {"owner": "shop-team"} and replicas(kd) == 3
        assert back["status"]["lastScaleTime"] == LAST_SCALE
        again = await cli("release", "default/web", "--server", kd.url)
        assert again.exit_code == 0 and again.output.startswith("already released default/web"), again.output


async def test_adopt_all_of_a_namespace_at_once(kd):
    await world(kd, "web")
    await world(kd, "api", n=2)
    async with ControllerTask(kd):
        result = await cli("adopt", "--all", "-n", "default", "--server", kd.url, "--timeout", "30")
        assert result.exit_code == 0, result.output
        assert sorted(result.output.splitlines()) == ["adopted default/api: pyhpa holds it at 2 replicas",
                                                      "adopted default/web: pyhpa holds it at 3 replicas"]
        assert hpa(kd, "web") is None and hpa(kd, "api") is None
        assert replicas(kd, "web") == 3 and replicas(kd, "api") == 2


def test_the_command_line_is_checked_before_anything_is_read():
    for args, field in ((["adopt"], "NAMESPACE/NAME"), (["adopt", "a/b", "--all"], "--all"),
                        (["release", "a/b", "-n", "a"], "--namespace"), (["adopt", "ab"], "NAMESPACE/NAME")):
        result = CliRunner().invoke(app, [*args, "--server", "http://127.0.0.1:9"])
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
        assert field in result.output, result.output
    for flag, value in (("--timeout", "0"), ("--timeout", "3601"), ("--api-timeout", "0")):
        result = CliRunner().invoke(app, ["adopt", "a/b", flag, value])
        assert result.exit_code == 2 and result.output.startswith(f"error: {flag}: must be"), result.output
    # issue 60: a namespace the API server would refuse is not sent; credentials in --server are one line, not
    # aiohttp's traceback; a refused connection is no "answer 0"
    for args, line in (
            (["adopt", "--all", "-n", "Bad_NS", "--server", "http://127.0.0.1:9"],
             "error: --namespace: 'Bad_NS' is not a valid name: an RFC 1123 label"),
            (["adopt", "--all", "--server", "http://user:pass@127.0.0.1:9"],
             "error: --server: takes the API server's URL without credentials"),
            (["adopt", "--all", "--server", "http://127.0.0.1:9"],
             "error: --all: cannot list the autoscalers: no answer from the API server (")):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
        assert result.output.startswith(line), result.output


async def test_a_failed_read_while_waiting_is_asked_again():
    """The API server failing a read (a timeout, a 5xx) while the hand-over waits for a controller is no failure of
    the hand-over: the next poll asks again (``handover._wait``)."""
    from pyhpa.controller import handover
    from pyhpa.controller.kube.api import ApiFailure

    answers = [ApiFailure(503, "unavailable"), ApiFailure(504, "timeout"), {"synced": True}]

    async def check():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert await handover._wait(check, timeout=60, clock=lambda: 0.0) == {"synced": True}
    assert answers == []
