"""``pyhpa run`` with leader election (``--leader-elect``) and the memory in status, through the HTTP double.

Replicas are whole ``run_controller`` calls on the test's loop, each with its own HTTP clients, sharing
one Lease. Decisions use a shared clock that the test can move forward (``Skew``), so windows of
hundreds of seconds are checked without waiting for them and without timing assertions: what counts
is the decision time the controller itself used. Every test asserts ``kd.invalid_requests == []``.
"""

from __future__ import annotations

import asyncio

import pytest
from controller_util import CRD, ControllerTask, Skew, autoscaler, deployment, pod, wait_for
from lightkube import codecs
from prometheus_client import generate_latest
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.cli.main import app
from pyhpa.controller import LeadershipLost
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler
from pyhpa.controller.sync.memory import memory_from_status

HA = "pyhpa.dev/v1alpha1"
LEASE = "pyhpa-test"
WINDOW = 600  # scale-down stabilization window, seconds of decision time


def replica(kd: KubeDouble, identity: str, clock: Skew, **overrides) -> ControllerTask:
    """One ``pyhpa run --leader-elect`` process with fast Lease timings (generous for a loaded machine)."""
    lease = dict(leader_elect_lease_duration_seconds=3.0, leader_elect_renew_deadline_seconds=2.0,
                 leader_elect_retry_period_seconds=0.25)
    lease.update(overrides)
    return ControllerTask(kd, clock, sync_period_seconds=0.3, leader_elect=True, leader_elect_namespace="default",
                          leader_elect_name=LEASE, leader_elect_identity=identity,
                          reporting_instance=f"pyhpa.dev/controller-{identity}", **lease).start()


def holder(kd: KubeDouble) -> str | None:
    lease = kd.get_object("coordination.k8s.io/v1", "leases", "default", LEASE)
    return lease and lease["spec"].get("holderIdentity")


def replicas(kd: KubeDouble) -> int:
    return kd.get_object("apps/v1", "deployments", "default", "web")["spec"]["replicas"]


def stored_status(kd: KubeDouble) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", "web") or {}).get("status") or {}


def able_reason(kd: KubeDouble) -> str | None:
    conds = {c["type"]: c for c in stored_status(kd).get("conditions") or []}
    return conds.get("AbleToScale", {}).get("reason")


def set_cpu(kd: KubeDouble, n: int, usage: str) -> None:
    for i in range(n):
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": usage}})


async def world(kd: KubeDouble, n: int = 4, usage: str = "100m", **spec) -> None:
    """``web``: n replicas at ``usage`` of a 200m request, an autoscaler at 50 % with a 600 s scale-down window."""
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", n)))
    for i in range(n):
        kd.put_object(pod(f"web-{i}", "web"))
    set_cpu(kd, n, usage)
    spec.setdefault("behavior", {"scaleDown": {"stabilizationWindowSeconds": WINDOW}})
    await client.create(HorizontalAutoscaler(autoscaler("web", "web", **spec)))


async def test_failover_keeps_the_stabilization_window_of_the_old_leader(kd):
    """A holds 4 replicas while load is low (600 s window); A dies; B takes over, loads the memory from
    status and holds until the window counted from A's last 4 ends, not from its own start; then scales down."""
    clock = Skew()
    await world(kd)
    a = replica(kd, "a", clock)
    await wait_for(lambda: holder(kd) == "a", what="a to lead")
    b = replica(kd, "b", clock)
    await a.syncs(4)
    status_writes = kd.count_requests("PUT", r"horizontalautoscalers/web/status$")
    await a.syncs(4)
    assert kd.count_requests("PUT", r"horizontalautoscalers/web/status$") == status_writes == 1  # steady: no rewrite
    assert b.results == [] and holder(kd) == "a"  # the standby does not sync

    set_cpu(kd, 4, "25m")  # 12.5 %: the core wants 1; the window holds 4
    await wait_for(lambda: able_reason(kd) == "ScaleDownStabilized", what="a to hold the scale-down")
    clock.offset += WINDOW / 2
    await a.syncs(3)
    assert replicas(kd) == 4
    recs = memory_from_status(stored_status(kd)["pyhpa"]).recommendations
    assert [v for _, v in recs] == [4, 1]
    last_four = recs[0][0]  # A's last recommendation of 4: the window ends at last_four + WINDOW

    await a.kill()
    await wait_for(lambda: holder(kd) == "b", what="b to take the lease over")
    await b.syncs(2)
    assert b.controller.memory.restored >= 1 and replicas(kd) == 4
    assert f'leader_election_master_status{{name="{LEASE}"}} 1.0' in generate_latest(b.controller.monitor.registry).decode()
    assert all(r.decision.desired_replicas == 4 for r in b.results)

    clock.set(last_four + WINDOW - 20)  # a leader without memory would hold until its own start + 600 s
    await b.syncs(2)
    assert replicas(kd) == 4
    clock.set(last_four + WINDOW + 1)
    await wait_for(lambda: replicas(kd) == 1, what="b to scale down once a's window is over")
    down = (await wait_for(lambda: [r for r in b.results if r.decision is not None and r.decision.rescale],
                           what="the scale-down sync's result"))[0]
    assert down.gathered.inputs.now > last_four + WINDOW and down.decision.desired_replicas == 1
    evs = await wait_for(lambda: [e for e in kd.list_objects("events.k8s.io/v1", "events", "default")
                                  if e["reason"] == "SuccessfulRescale"], what="the rescale event")
    assert [(e["note"], e["reportingInstance"]) for e in evs] == [
        ("New size: 1; reason: All metrics below target", "pyhpa.dev/controller-b")]
    await b.shutdown()
    assert holder(kd) is None  # released on a graceful stop
    assert kd.invalid_requests == []


async def test_a_leader_that_cannot_renew_stops_writing_at_once_then_exits(kd):
    """The Lease renewal hangs (API partition): past the renew deadline the leader's syncs still run but
    write nothing (the gate refuses), and once the renewal fails the controller stops with LeadershipLost."""
    clock = Skew()
    await world(kd, behavior={"scaleDown": {"stabilizationWindowSeconds": 0}})
    a = replica(kd, "a", clock, api_timeout_seconds=6.0)
    await wait_for(lambda: holder(kd) == "a", what="a to lead")
    await a.syncs(3)
    kd.add_fault("PUT", r"/leases/" + LEASE + "$", hang=True)
    await wait_for(lambda: not a.controller.writer.gate(), what="the renew deadline to pass")
    writes = kd.count_requests("PUT", r"(/scale|/status)$") + kd.count_requests("POST", r"/events$")
    set_cpu(kd, 4, "200m")  # the core wants 8 now
    await wait_for(lambda: a.controller.writer.refused >= 2 or a.task.done(), what="syncs refused by the gate")
    with pytest.raises(LeadershipLost, match="lost lease default/pyhpa-test"):
        await asyncio.wait_for(a.task, 60)
    assert a.controller.writer.refused >= 2 and replicas(kd) == 4
    assert kd.count_requests("PUT", r"(/scale|/status)$") + kd.count_requests("POST", r"/events$") == writes
    assert kd.invalid_requests == []


def test_run_exits_1_with_one_line_when_the_lease_is_lost(kube_double_thread):
    kd = kube_double_thread
    kd.register_crd(CRD)
    kd.add_fault("PUT", r"/leases/pyhpa-cli$", status=503, times=None)
    kd.add_fault("POST", r"/leases$", status=None)  # creating works; every renewal fails
    result = CliRunner().invoke(app, [
        "run", "--server", kd.url, "--leader-elect", "--leader-elect-resource-namespace", "default",
        "--leader-elect-resource-name", "pyhpa-cli", "--leader-elect-lease-duration", "1.5",
        "--leader-elect-renew-deadline", "1", "--leader-elect-retry-period", "0.2", "--health-port", "-1"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert lines == [lines[0]] and "lost lease default/pyhpa-cli" in lines[0]
    assert kd.invalid_requests == []


@pytest.mark.parametrize("args,message", [
    (["--leader-elect-lease-duration", "5"], "error: --leader-elect-lease-duration: must be greater than"),
    (["--leader-elect-retry-period", "0"], "error: --leader-elect-retry-period: must be greater than 0"),
    (["--memory-store", "disk"], "error: --memory-store: 'disk' is not one of 'status', 'process'"),
])
def test_bad_leader_election_flags_are_one_line_errors(args, message):
    result = CliRunner().invoke(app, ["run", "--server", "http://127.0.0.1:9", *args])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_the_shipped_deployment_runs_two_sharded_replicas_with_least_privilege_lease_access():
    """The shipped Deployment (deploy/base, issue 22) runs two replicas with --shards auto, which replaces
    --leader-elect; the Role grants the Lease verbs sharding uses, in the controller's namespace only."""
    import typer
    import yaml

    from pyhpa.cli.run_cmd import manifest_text

    deploy = next(d for d in yaml.safe_load_all(manifest_text("deployment")) if d and d["kind"] == "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert deploy["spec"]["replicas"] == 2 and args[args.index("--shards") + 1] == "auto"
    assert "--leader-elect" not in args  # giving both is an error
    options = {o for p in typer.main.get_command(app).commands["run"].params for o in p.opts + p.secondary_opts}
    assert {a for a in args if a.startswith("--")} <= options  # every flag exists
    namespace = args[args.index("--leader-elect-resource-namespace") + 1]
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert namespace == "$(POD_NAMESPACE)" and env["POD_NAMESPACE"] == "metadata.namespace"
    docs = list(yaml.safe_load_all(manifest_text("rbac")))
    role = next(d for d in docs if d["kind"] == "Role")
    binding = next(d for d in docs if d["kind"] == "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == deploy["metadata"]["namespace"]
    assert binding["subjects"][0]["name"] == deploy["spec"]["template"]["spec"]["serviceAccountName"]
    rules = [(r["apiGroups"], r["resources"], r.get("resourceNames"), set(r["verbs"])) for r in role["rules"]]
    assert rules == [(["coordination.k8s.io"], ["leases"], None, {"create", "list", "update", "delete"})]


def test_leader_election_is_on_by_default_and_off_for_a_local_server_unless_asked(monkeypatch, tmp_path):
    seen = []

    async def fake_run(settings, config, http):
        seen.append(settings)

    monkeypatch.setattr("pyhpa.controller.run_controller", fake_run)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    for args in (["--kubeconfig", str(kubeconfig)], ["--server", "http://127.0.0.1:9"],
                 ["--server", "http://127.0.0.1:9", "--leader-elect"]):
        result = CliRunner().invoke(app, ["run", "--health-port", "-1", *args])
        assert result.exit_code == 0, result.output
    assert [s.leader_elect for s in seen] == [True, False, True]
    s = seen[0]
    assert (s.leader_elect_namespace, s.leader_elect_name, s.leader_elect_identity, s.memory_store) == (
        "pyhpa-system", "pyhpa-controller", "", "status")
    assert (s.leader_elect_lease_duration_seconds, s.leader_elect_renew_deadline_seconds,
            s.leader_elect_retry_period_seconds) == (15.0, 10.0, 2.0)
