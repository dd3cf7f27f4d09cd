"""``pyhpa run`` honours ``spec.schedules``, against the Kubernetes API double over real HTTP.

The controller runs with its production wiring (``run_controller``: status-backed memory) and a skewed
decision clock (``Skew``), so windows at chosen dates and time zones are exercised without waiting for
them. Every test checks ``kd.invalid_requests == []``: the CRD's schema accepted every spec and status.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from controller_util import CRD, ControllerTask, Skew, autoscaler, deployment, pod, wait_for
from lightkube import ApiError, codecs

from kubedouble import KubeDouble
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler
from pyhpa.controller.outputs.status import status_from_decision
from pyhpa.core import decide

HA = "pyhpa.dev/v1alpha1"
NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def at(tz, *fields, fold=0) -> float:
    return datetime(*fields, tzinfo=tz, fold=fold).timestamp()


def replicas(kd: KubeDouble) -> int:
    return kd.get_object("apps/v1", "deployments", "default", "web")["spec"]["replicas"]


def stored_status(kd: KubeDouble) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", "web") or {}).get("status") or {}


def condition(status: dict, ctype: str) -> dict:
    return {c["type"]: c for c in status.get("conditions") or []}.get(ctype, {})


async def world(kd: KubeDouble, schedules: list[dict], current: int = 1, usage: str = "20m", **spec) -> None:
    """``web`` at ``current`` replicas; 3 pods at ``usage`` of a 200m request (20m: 10 %, the metric asks for 1);
    an autoscaler at 50 % CPU, min 1, max 10, with ``schedules``."""
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", current)))
    for i in range(3):
        kd.put_object(pod(f"web-{i}", "web"))
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": usage}})
    await client.create(HorizontalAutoscaler(autoscaler("web", "web", schedules=schedules, **spec)))


async def synced(run: ControllerTask, key: str = "default/web", n: int = 1) -> list:
    """Wait until ``key`` has been synced ``n`` times in all; its results."""
    return await wait_for(lambda: (lambda rs: rs if len(rs) >= n else None)([r for r in run.results if r.key == key]),
                          what=f"{n} syncs of {key}")


def decided_as_core(result) -> None:
    """The sync's status is the decision core's on the inputs that sync gathered."""
    again = decide(result.gathered.inputs)
    assert again.desired_replicas == result.decision.desired_replicas
    generation = result.gathered.autoscaler.generation
    assert status_from_decision(again, generation) == status_from_decision(result.decision, generation)


SCENARIOS = {
    "over midnight": dict(
        windows=[{"name": "night", "start": "0 22 * * *", "end": "0 6 * * *", "timeZone": "Europe/Berlin",
                  "minReplicas": 4}],
        now=at(BERLIN, 2026, 6, 11, 1, 30), current=1, want=4, active=["night"], reason="WindowActive"),
    "overlap": dict(
        windows=[{"name": "day", "start": "0 6 * * *", "end": "0 20 * * *", "minReplicas": 3},
                 {"name": "peak", "start": "0 11 * * *", "durationSeconds": 10800, "minReplicas": 5}],
        now=at(timezone.utc, 2026, 6, 10, 12, 0), current=1, want=5, active=["day", "peak"], reason="WindowActive"),
    "floor above cap": dict(
        windows=[{"name": "budget", "start": "0 0 * * *", "end": "0 23 * * *", "maxReplicas": 4},
                 {"name": "launch", "start": "0 9 * * *", "end": "0 17 * * *", "minReplicas": 6}],
        now=at(timezone.utc, 2026, 6, 10, 12, 0), current=1, want=6, active=["budget", "launch"],
        reason="FloorAndCapConflict"),
    "cap": dict(
        windows=[{"name": "night", "start": "0 0 * * *", "end": "0 6 * * *", "timeZone": "America/New_York",
                  "maxReplicas": 2}],
        now=at(NY, 2026, 6, 10, 3, 0), current=8, want=2, active=["night"], reason="WindowActive"),
    "spring forward": dict(  # 02:30 does not exist on 2026-03-08 in New York: the window starts at 03:00 EDT
        windows=[{"name": "early", "start": "30 2 * * *", "durationSeconds": 3600, "timeZone": "America/New_York",
                  "minReplicas": 5}],
        now=at(NY, 2026, 3, 8, 3, 0, 30), current=1, want=5, active=["early"], reason="WindowActive"),
    "fall back": dict(  # 01:15 EST, 45 minutes after the window started at 01:30 EDT
        windows=[{"name": "batch", "start": "30 1 * * *", "durationSeconds": 3600, "timeZone": "America/New_York",
                  "minReplicas": 5}],
        now=at(NY, 2026, 11, 1, 1, 15, fold=1), current=1, want=5, active=["batch"], reason="WindowActive"),
    "excluded date": dict(
        windows=[{"name": "business", "start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "timeZone": "Europe/Berlin",
                  "minReplicas": 4, "excludeDates": ["2026-12-24", "2026-12-25"]}],
        now=at(BERLIN, 2026, 12, 25, 12, 0), current=1, want=1, active=[], reason="NoActiveWindow"),
}


@pytest.mark.parametrize("name", SCENARIOS)
async def test_the_controller_applies_the_windows_active_at_its_clock(kd, name):
    s = SCENARIOS[name]
    await world(kd, s["windows"], current=s["current"])
    clock = Skew()
    clock.set(s["now"])
    async with ControllerTask(kd, clock, sync_period_seconds=60) as run:
        await synced(run)
        await wait_for(lambda: stored_status(kd).get("schedules") is not None, what="the status")
    first = run.results[0]
    decided_as_core(first)
    assert replicas(kd) == s["want"] == first.decision.desired_replicas
    status = stored_status(kd)
    assert status["schedules"]["active"] == s["active"]
    assert status["schedules"]["nextChangeTime"].endswith("Z")
    cond = condition(status, "ScheduleActive")
    assert (cond["status"], cond["reason"]) == ("True" if s["active"] else "False", s["reason"])
    assert kd.invalid_requests == []


#: seconds of decision time between the controller's start and the window's (its start-up and first sync, on a busy
#: machine, fit well in them), and the window's length
LEAD, LASTS = 10.0, 10
#: how late a sync at a window's start or end may come (the event loop's timer on a busy machine): far less than the
#: 60 s sync period
LATE = 2.0


async def through_a_window(kd: KubeDouble, start: float, ended: Callable[[], bool], what: str) -> list:
    """The controller (sync period 60 s) from ``LEAD`` seconds before ``start`` (epoch seconds) of a window with a
    floor of 3 replicas that lasts ``LASTS`` s: its first sync schedules the next at ``start``, the floor applies, the
    sync at the window's end follows, then ``ended`` (``what``) holds; returns the results of ``default/web``'s
    syncs."""
    clock = Skew()
    clock.set(start - LEAD)
    async with ControllerTask(kd, clock, sync_period_seconds=60) as run:
        first = (await synced(run))[0].decision
        assert not first.rescale and first.status.schedules.next_change == start
        await wait_for(lambda: replicas(kd) == 3, timeout=LEAD + 20, what="the floor at the window's start")
        await synced(run, n=3)  # the sync at the window's end, LASTS s after its start
        await wait_for(ended, what=what)
    return [r for r in run.results if r.key == "default/web"]


async def test_a_floor_applies_at_its_start_not_a_period_later(kd):
    """Sync period 60 s; the window starts ``LEAD`` s after the controller's start and lasts ``LASTS`` s: the
    controller syncs again at its start (floor applied) and at its end (scale-down held by the stabilization
    window), each within ``LATE`` s of it."""
    start = at(timezone.utc, 2026, 6, 10, 8, 0)
    await world(kd, [{"name": "burst", "start": "0 8 * * *", "durationSeconds": LASTS, "minReplicas": 3}])
    syncs = await through_a_window(kd, start, lambda: condition(stored_status(kd), "ScheduleActive").get("status")
                                   == "False", "the status after the end")
    times = [r.gathered.inputs.now for r in syncs]
    assert len(syncs) == 3
    assert start <= times[1] < start + LATE  # the floor, at the start
    assert syncs[1].decision.rescale and syncs[1].decision.desired_replicas == 3
    assert str(syncs[1].decision.decided_by) == "Schedule/burst"
    assert start + LASTS <= times[2] < start + LASTS + LATE  # the end: the metric asks for 1, the floor holds 300 s
    end = syncs[2].decision
    assert not end.rescale and end.desired_replicas == 3 and str(end.decided_by) == "Stabilization/downscale"
    assert end.status.schedules.next_change == start + 86400
    assert stored_status(kd)["schedules"] == {"active": [], "nextChangeTime": "2026-06-11T08:00:00Z"}
    assert kd.invalid_requests == []


async def test_restart_mid_window_keeps_the_floor_and_the_scale_down_after_it_waits_for_stabilization(kd):
    """A controller starts in the middle of a window: the floor applies at its first sync. Another controller
    process takes over mid-window and holds it; after the window ends the scale-down waits 300 s."""
    start, end = at(NY, 2026, 6, 10, 8, 0), at(NY, 2026, 6, 10, 18, 0)
    await world(kd, [{"name": "business", "start": "0 8 * * 1-5", "end": "0 18 * * 1-5",
                      "timeZone": "America/New_York", "minReplicas": 4}])
    clock = Skew()
    clock.set(start + 3600)
    async with ControllerTask(kd, clock, sync_period_seconds=0.3) as run:
        first = (await synced(run))[0]
        assert first.decision.rescale and str(first.decision.decided_by) == "Schedule/business"
        assert replicas(kd) == 4
    clock.set(end - 30)
    async with ControllerTask(kd, clock, sync_period_seconds=0.3) as run:
        await run.syncs(3, "default/web")
        assert replicas(kd) == 4 and not any(r.decision.rescale for r in run.results)
        clock.set(end + 1)
        await run.syncs(3, "default/web")
        after = [r.decision for r in run.results if r.gathered.inputs.now >= end]
        assert after and all(d.desired_replicas == 4 and str(d.decided_by) == "Stabilization/downscale" for d in after)
        assert stored_status(kd)["schedules"]["active"] == []
        clock.set(end + 300)  # the last recommendation of 4 was at most 30 s before the end
        # the scale write lands before the sync's result is recorded: wait for both
        await wait_for(lambda: replicas(kd) == 1 and any(r.decision is not None and r.decision.rescale
                                                         for r in run.results),
                       what="the scale-down after the stabilization window")
        down = next(r for r in run.results if r.decision is not None and r.decision.rescale)
        assert down.gathered.inputs.now >= end + 270 and down.decision.desired_replicas == 1
    assert kd.invalid_requests == []


async def test_a_window_the_controller_cannot_use_is_an_invalid_spec_and_the_others_keep_syncing(kd):
    """The schema cannot check a time zone name or the cron syntax: the controller reports the field."""
    await world(kd, [{"name": "x", "start": "0 8 * * *", "end": "0 9 * * *", "timeZone": "Mars/Olympus",
                      "minReplicas": 2}])
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("api", 1)))
    await client.create(HorizontalAutoscaler(autoscaler("api", "api", schedules=[
        {"name": "y", "start": "0 8 * * *", "durationSeconds": 60, "minReplicas": 2}])))
    async with ControllerTask(kd, sync_period_seconds=60) as run:
        await synced(run)
        await synced(run, "default/api")
        await wait_for(lambda: condition(stored_status(kd), "ScalingActive"), what="the condition")
    cond = condition(stored_status(kd), "ScalingActive")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert cond["message"] == ("the HPA spec is invalid: spec.schedules[0].timeZone: unknown time zone "
                               "'Mars/Olympus' (want an IANA name such as Europe/Berlin or UTC)")
    api = kd.get_object(HA, "horizontalautoscalers", "default", "api")["status"]
    assert condition(api, "ScheduleActive")["status"] in ("True", "False")
    assert kd.invalid_requests == []


@pytest.mark.parametrize("window, words", [
    ({"start": "0 8 * * *", "end": "0 9 * * *", "minReplicas": 2}, "name"),  # no name
    ({"name": "w", "start": "every day", "end": "0 9 * * *", "minReplicas": 2}, "start"),  # not 5 fields
    ({"name": "w", "start": "0 8 * * *", "end": "0 9 * * *", "maxReplicas": 0}, "maxReplicas"),
    ({"name": "w", "start": "0 8 * * *", "end": "0 9 * * *", "minReplicas": 2, "floor": 3}, "floor"),
    ({"name": "w", "start": "0 8 * * *", "end": "0 9 * * *", "minReplicas": -1}, "minReplicas"),
])
async def test_the_crd_schema_rejects_malformed_windows(kd, window, words):
    client = kd.async_client()
    with pytest.raises(ApiError) as err:
        await client.create(HorizontalAutoscaler(autoscaler("web", "web", schedules=[window])))
    assert err.value.status.code == 422 and words in err.value.status.message


def test_the_crd_schema_states_the_rules_it_cannot_check_by_shape():
    spec = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    schedules = spec["schedules"]
    assert (schedules["x-kubernetes-list-type"], schedules["x-kubernetes-list-map-keys"]) == ("map", ["name"])
    rules = {r["rule"] for r in schedules["items"]["x-kubernetes-validations"]}
    assert rules >= {  # and the dated windows' rules (tests/test_crd_cel.py)"has(self.minReplicas) || has(self.maxReplicas)", "has(self.end) != has(self.durationSeconds)",
                     "!has(self.end) || self.end != self.start",
                     "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas"}
    assert schedules["items"]["properties"]["timeZone"]["default"] == "UTC"


async def test_pyhpa_snapshot_keeps_the_windows_and_explain_decides_as_the_controller(kd, tmp_path):
    import asyncio
    import json

    import yaml
    from typer.testing import CliRunner

    from pyhpa.adapters.parse import format_time
    from pyhpa.cli.main import app

    now = at(NY, 2026, 6, 10, 3, 0)  # the night cap is active
    await world(kd, [{"name": "night", "start": "0 0 * * *", "durationSeconds": 21600,
                      "timeZone": "America/New_York", "maxReplicas": 2}], current=5, tolerance=0.05)
    clock = Skew()
    clock.set(now)
    async with ControllerTask(kd, clock, sync_period_seconds=60) as run:
        sync = (await synced(run))[0]
    assert sync.decision.desired_replicas == 2 and str(sync.decision.decided_by) == "Schedule/night"
    path = tmp_path / "web.yaml"
    runner = CliRunner()
    result = await asyncio.to_thread(runner.invoke, app, ["snapshot", "default/web", "--server", kd.url, "--now",
                                                          format_time(sync.gathered.inputs.now), "--output-file", str(path)])
    assert result.exit_code == 0, result.output
    snap = yaml.safe_load(path.read_text())
    assert (snap["hpa"]["apiVersion"], snap["hpa"]["kind"]) == (HA, "HorizontalAutoscaler")
    assert snap["hpa"]["spec"]["schedules"] == [{"name": "night", "start": "0 0 * * *", "durationSeconds": 21600,
                                                 "timeZone": "America/New_York", "maxReplicas": 2}]
    assert "tolerance" not in snap["hpa"]["spec"] and snap["controller"]["tolerance"] == 0.05
    explained = await asyncio.to_thread(runner.invoke, app, ["explain", "-o", "json", str(path)])
    assert explained.exit_code == 0, explained.output
    out = json.loads(explained.output)
    assert out["decidedBy"] == "Schedule/night" and out["activeSchedules"] == ["night"]
    assert out["maxReplicasEffective"] == 2
    # the snapshot holds the replicas after the controller's rescale (2) and its memory (5, seeded at the first
    # sync); the metric asks for 1, stabilization for 5, the cap keeps 2
    assert out["desiredReplicas"] == 2 and out["proposals"][0]["replicas"] == 1
    assert kd.invalid_requests == []
