"""The Helm chart on a real API server: ``helm install``, ``helm upgrade`` and ``helm uninstall`` (Helm v4, built
with the control plane) of ``deploy/helm/pyhpa``, and ``pyhpa run`` as the chart's ServiceAccount.

The control plane has no container runtime: the chart's Deployment gets its pods from the deployment controller,
kube-scheduler and KWOK, but the controller runs as the process the pod would run — ``pyhpa run`` with the arguments the
installed Deployment holds, read back from the API server, authenticated by a token of the chart's ServiceAccount
(so everything it does must be allowed by the chart's RBAC). The release serves two namespaces
(``rbac.scope: namespaces``: a Role in each, ``--namespace`` twice).

- install (one replica, ``--shards 1 --leader-elect``): pyhpa scales a Deployment as the ServiceAccount, with no 403;
- upgrade to the chart's defaults (two replicas, ``--shards auto``): the new replicas start before the old one stops,
  as a rolling update with surge does, and the autoscaler goes on being served: a load change after the old replica
  has stopped is followed, each new replica holds a shard Lease (the upgrade replaces the Lease rules of the
  leader election by those of the shards, so the old replica's renewals are refused from then on: it logs that);
- uninstall: the CRD and the users' HorizontalAutoscalers stay (as KEDA's chart leaves its CRDs), the release's
  objects go.
"""

from __future__ import annotations

import subprocess
import uuid

import pytest
from control_plane_gate import require_control_plane
from lightkube import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import Role

import controlplane

from .util import (
    HA,
    ROOT,
    apply,
    autoscaler,
    cpu_utilization,
    deployment,
    new_namespace,
    running_pods,
    service_account_token,
    set_pod_cpu,
    spec_replicas,
    wait_until,
)

CHART = ROOT / "deploy" / "helm" / "pyhpa"
LONG_AGO = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}

@pytest.fixture
def plane(real_plane):
    """This module runs on the real metrics pipeline (metrics-server scraping KWOK's nodes)."""
    return real_plane



def helm(plane, *args: str) -> subprocess.CompletedProcess:
    """``helm ARGS`` as the admin of ``plane``; fails the test with helm's stderr when it fails."""
    done = subprocess.run([controlplane.helm(), *args, "--kubeconfig", str(plane.admin_kubeconfig)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def controller_args(client, release_ns: str, name: str) -> list[str]:
    """The ``pyhpa run`` arguments of the installed Deployment (``$(POD_NAMESPACE)`` expanded, without the health
    port: the test serves none)."""
    container = client.get(Deployment, name, namespace=release_ns).spec.template.spec.containers[0]
    args = [a.replace("$(POD_NAMESPACE)", release_ns) for a in container.args]
    assert args[0] == "run"
    args = args[1:]
    i = args.index("--health-port")
    del args[i:i + 2]
    return args


def test_install_upgrade_and_uninstall_as_the_chart_s_serviceaccount(plane, client, ns, pyhpa, tmp_path):
    require_control_plane(("helm",))  # built after the cluster's binaries
    release, release_ns = "e2e", f"helm-{uuid.uuid4().hex[:6]}"
    other = new_namespace(client, f"{ns}-b")
    controller, account = "e2e-pyhpa-controller", "e2e-pyhpa-controller"
    scope = ["--set", "rbac.scope=namespaces", "--set", f"rbac.namespaces={{{ns},{other}}}"]
    try:
        helm(plane, "install", release, str(CHART), "-n", release_ns, "--create-namespace", *scope,
             "--set", "replicaCount=1", "--set", "shards=off", "--set", "leaderElection.enabled=true")
        assert {r.metadata.namespace for r in client.list(Role, namespace="*")
                if r.metadata.name == controller} == {ns, other}
        args = controller_args(client, release_ns, controller)
        assert args.count("--namespace") == 2 and "--leader-elect" in args

        token_file = tmp_path / "token"
        token_file.write_text(service_account_token(client, release_ns, account, "e2e-token"))
        kubeconfig = plane.kubeconfig(tmp_path / "sa.kubeconfig", token_file=token_file)
        apply(client, deployment("web", ns, replicas=2, annotations=LONG_AGO))
        wait_until(lambda: len(running_pods(plane, ns, "web")) == 2, what="2 running pods")
        set_pod_cpu(plane, ns, "web", 90)  # 2 pods at 180 % of a 50 % target: 4
        apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10))
        first = pyhpa(*args, "--leader-elect-identity", "first", kubeconfig=kubeconfig, name="first")
        wait_until(lambda: spec_replicas(client, ns, "web") == 4, what="the scale-up to 4 as the chart's account")

        # upgrade to the chart's defaults: two replicas, --shards auto; the new ones start, then the old one stops
        before_upgrade = len(first.records())  # the upgrade replaces the leader's Lease rules by the shards' ones
        helm(plane, "upgrade", release, str(CHART), "-n", release_ns, *scope)
        assert client.get(Deployment, controller, namespace=release_ns).spec.replicas == 2
        upgraded = controller_args(client, release_ns, controller)
        assert upgraded[upgraded.index("--shards") + 1] == "auto"
        new = [pyhpa(*upgraded, "--leader-elect-identity", who, kubeconfig=kubeconfig, name=who)
               for who in ("second", "third")]
        first.stop()
        wait_until(lambda: len(running_pods(plane, ns, "web")) == 4, what="4 running pods")
        set_pod_cpu(plane, ns, "web", 90)  # 4 pods at 180 %: 8
        wait_until(lambda: spec_replicas(client, ns, "web") == 8, timeout=120,
                   what="the scale-up to 8 by the upgraded replicas")
        holders = {lease.spec.holderIdentity for lease in client.list(Lease, namespace=release_ns)}
        assert {"second", "third"} <= holders, holders
        for records in (first.records()[:before_upgrade], *(run.records() for run in new)):
            forbidden = [r for r in records if "forbidden" in str(r).lower() or " 403" in str(r)]
            assert forbidden == [], forbidden[:3]
        assert all(run.proc.poll() is None for run in new)

        # uninstall: the CRD and the HorizontalAutoscaler stay, the release's objects go
        for run in new:
            run.stop()
        helm(plane, "uninstall", release, "-n", release_ns)
        client.get(CustomResourceDefinition, "horizontalautoscalers.pyhpa.dev")
        assert client.get(HA, "web", namespace=ns).spec["scaleTargetRef"]["name"] == "web"
        gone = wait_until(lambda: _absent(client, ServiceAccount, account, release_ns)
                          and _absent(client, Deployment, controller, release_ns), what="the release's objects gone")
        assert gone
    finally:
        subprocess.run([controlplane.helm(), "uninstall", release, "-n", release_ns, "--kubeconfig",
                        str(plane.admin_kubeconfig)], capture_output=True, timeout=300)
        for name in (release_ns, other):
            try:
                client.delete(Namespace, name)
            except ApiError:
                pass


def _absent(client, res, name: str, namespace: str) -> bool:
    try:
        client.get(res, name, namespace=namespace)
    except ApiError as err:
        return err.status.code == 404
    return False
