"""The deploy kit on a real API server: applied with kubectl v1.37.2, and ``pyhpa run`` as its ServiceAccount.

The kit (deploy/base: CRD, namespace, ServiceAccount, least-privilege RBAC, Deployment) is applied with
``kubectl apply -k``. The controller runs with the arguments of the kit's own Deployment, authenticated by a
TokenRequest token (bound to a Secret, as the kubelet binds one to a pod) in a ``tokenFile`` of its kubeconfig,
which is rewritten while it runs; the old token is then revoked (its Secret deleted) so the next request with it
gets 401 and the client reads the file again. Everything the controller does must be allowed by the kit's RBAC
(no 403 in its log), and a verb removed from the ClusterRole must show up as a clear error naming the verb and
resource while the controller keeps running.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from lightkube.resources.core_v1 import Secret
from lightkube.resources.rbac_authorization_v1 import ClusterRole

from .util import (
    ROOT,
    apply,
    autoscaler,
    condition,
    cpu_utilization,
    deployment,
    events_of,
    ha_status,
    running_pods,
    service_account_token,
    set_pod_cpu,
    spec_replicas,
    wait_until,
)

KIT_NS, KIT_SA = "pyhpa-system", "pyhpa-controller"
LONG_AGO = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}

@pytest.fixture
def plane(real_plane):
    """This module runs on the real metrics pipeline (metrics-server scraping KWOK's nodes)."""
    return real_plane



def kit_args() -> list[str]:
    """The ``pyhpa run`` arguments of deploy/base/deployment.yaml (``$(POD_NAMESPACE)`` expanded)."""
    docs = list(yaml.safe_load_all((ROOT / "deploy" / "base" / "deployment.yaml").read_text()))
    container = next(d for d in docs if d and d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("$(POD_NAMESPACE)", KIT_NS) for a in container["args"]]
    assert args[0] == "run"
    args = args[1:]
    i = args.index("--health-port")
    del args[i:i + 2]  # the test serves no health port
    return args


def token(client, secret: str) -> str:
    """A token of the kit's ServiceAccount bound to the Secret ``secret`` (made here): valid until it is deleted."""
    return service_account_token(client, KIT_NS, KIT_SA, secret)


def test_the_kit_applied_with_kubectl_runs_pyhpa_as_its_serviceaccount(plane, client, ns, pyhpa, tmp_path):
    applied = plane.run_kubectl("apply", "--server-side", "--force-conflicts", "-k", str(ROOT / "deploy" / "base"))
    assert "clusterrole.rbac.authorization.k8s.io/pyhpa-controller serverside-applied" in applied.stdout
    assert "Warning" not in applied.stderr and "deprecated" not in applied.stderr, applied.stderr
    wait_until(lambda: len(running_pods(plane, KIT_NS, None)) == 2 or None, what="the kit's two controller pods")

    token_file = tmp_path / "token"
    token_file.write_text(token(client, "pyhpa-token-1"))
    kubeconfig = plane.kubeconfig(tmp_path / "sa.kubeconfig", token_file=token_file)
    who = plane.run_kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=kubeconfig)
    assert who.stdout == f"system:serviceaccount:{KIT_NS}:{KIT_SA}"

    apply(client, deployment("web", ns, replicas=2, annotations=LONG_AGO))
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 2, what="2 running pods")
    set_pod_cpu(plane, ns, "web", 90)  # 2 pods at 180 % of 50: ceil(2 * 3.6) = 4 (away from a rounding edge)
    apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10))
    run = pyhpa(*kit_args(), kubeconfig=kubeconfig)
    wait_until(lambda: spec_replicas(client, ns, "web") == 4, what="the scale-up to 4 as the ServiceAccount")
    wait_until(lambda: any(e.reason == "SuccessfulRescale" for e in events_of(client, ns, "web")),
               what="the SuccessfulRescale event")
    wait_until(lambda: condition(ha_status(client, ns, "web"), "AbleToScale"), what="status written")

    # Rotate the token: the new one in the file, the old one revoked.
    token_file.write_text(token(client, "pyhpa-token-2"))
    client.delete(Secret, "pyhpa-token-1", namespace=KIT_NS)
    wait_until(lambda: len(running_pods(plane, ns, "web")) == 4, what="4 running pods")
    set_pod_cpu(plane, ns, "web", 90)  # 4 pods at 180 % of 50: 8
    wait_until(lambda: spec_replicas(client, ns, "web") == 8, timeout=90, what="a scale-up with the rotated token")
    # The kit's controller watches every namespace, so it also meets autoscalers an earlier test left in a namespace
    # being deleted: the NamespaceLifecycle admission plugin refuses their events (403 too), which is not RBAC.
    forbidden = [r for r in run.records() if ("forbidden" in str(r).lower() or " 403" in str(r))
                 and "because it is being terminated" not in str(r)]
    assert forbidden == [], forbidden[:3]
    assert run.proc.poll() is None


def test_a_verb_removed_from_the_clusterrole_is_one_clear_error_not_a_crash(plane, client, ns, pyhpa, tmp_path):
    plane.run_kubectl("apply", "--server-side", "--force-conflicts", "-k", str(ROOT / "deploy" / "base"))
    token_file = tmp_path / "token"
    token_file.write_text(token(client, f"pyhpa-token-{ns}"))
    kubeconfig = plane.kubeconfig(tmp_path / "sa.kubeconfig", token_file=token_file)
    original = client.get(ClusterRole, KIT_SA)
    cut = copy.deepcopy(original)
    cut.rules = [r for r in cut.rules if r.resources != ["horizontalautoscalers/status"]]
    assert len(cut.rules) == len(original.rules) - 1
    client.replace(cut)
    try:
        apply(client, deployment("web", ns, replicas=1, annotations=LONG_AGO))
        wait_until(lambda: len(running_pods(plane, ns, "web")) == 1, what="1 running pod")
        set_pod_cpu(plane, ns, "web", 90)  # 180 % of 50: 2
        apply(client, autoscaler("web", ns, "web", [cpu_utilization(50)], 1, 10))
        run = pyhpa(*kit_args(), kubeconfig=kubeconfig)
        wait_until(lambda: any("horizontalautoscalers/status" in str(r) for r in run.records()),
                   what="the refused status write in the log")
        errors = [r for r in run.records() if "horizontalautoscalers/status" in str(r)]
        line = str(errors[0])
        assert "forbidden" in line.lower() and "update" in line, line
        assert f"system:serviceaccount:{KIT_NS}:{KIT_SA}" in line, line
        assert run.proc.poll() is None  # it keeps running (and scaling: the scale subresource is allowed)
        wait_until(lambda: spec_replicas(client, ns, "web") == 2, what="the scale-up without status writes")
        assert "Traceback" not in run.text()
    finally:
        restored = client.get(ClusterRole, KIT_SA)
        restored.rules = original.rules
        client.replace(restored)


def test_every_kit_renders_without_a_warning_with_kubectl_v1_37_2(plane):
    """No deprecated kustomize field (issue 37): kubectl v1.37.2's kustomize prints nothing on stderr for the base
    and each overlay (``# Warning: 'bases' is deprecated ...`` before)."""
    for kit in ("base", "overlays/single-replica", "overlays/with-prometheus-operator"):
        rendered = plane.run_kubectl("kustomize", str(ROOT / "deploy" / kit))
        assert rendered.stderr == "", (kit, rendered.stderr)
        assert "kind: Deployment" in rendered.stdout, kit
