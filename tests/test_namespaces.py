"""``pyhpa run --namespace A --namespace B``: the controller serves the autoscalers of the namespaces named and of no
other (each namespace listed and watched on its own: ``pyhpa.controller.cache.informer.Informers``), as the Helm
chart's ``rbac.scope: namespaces`` runs it with a Role in each; the flag's bounds."""

from __future__ import annotations

import pytest
from controller_util import ControllerTask, autoscaler, deployment, pod, wait_for
from typer.testing import CliRunner

from kubedouble import KubeDouble
from pyhpa.adapters.errors import InputError
from pyhpa.cli.main import app
from pyhpa.controller import Settings
from pyhpa.controller.settings import MAX_NAMESPACES

HA = "pyhpa.dev/v1alpha1"


def seed(kd: KubeDouble, ns: str) -> None:
    """A Deployment of two pods at twice their CPU target (it wants 4) and its HorizontalAutoscaler, in ``ns``."""
    kd.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    kd.put_object(deployment("web", 2, ns=ns))
    for i in range(2):
        kd.put_object(pod(f"web-{i}", "web", ns=ns))
        kd.set_pod_metrics(ns, f"web-{i}", {"app": {"cpu": "200m"}})
    kd.put_object(autoscaler("web", "web", ns=ns))


def replicas(kd: KubeDouble, ns: str) -> int:
    return kd.get_object("apps/v1", "deployments", ns, "web")["spec"]["replicas"]


async def test_only_the_namespaces_named_are_served(kd):
    for ns in ("team-a", "team-b", "team-c"):
        seed(kd, ns)
    async with ControllerTask(kd, namespaces=("team-a", "team-b")) as run:
        await wait_for(lambda: replicas(kd, "team-a") == 4 and replicas(kd, "team-b") == 4, what="both scaled")
        await run.syncs(2)  # more syncs: team-c would have been synced by now if it were served
        assert {r.key.partition("/")[0] for r in run.results} == {"team-a", "team-b"}
        assert replicas(kd, "team-c") == 2
        assert "status" not in (kd.get_object(HA, "horizontalautoscalers", "team-c", "web") or {})


@pytest.mark.parametrize("namespaces, problem", [
    (tuple(f"ns-{i}" for i in range(MAX_NAMESPACES + 1)), f"at most {MAX_NAMESPACES} namespaces"),
    (("a", "a"), "a namespace is given twice"),
    (("A",), "--namespace"),
])
def test_the_namespaces_are_checked(namespaces, problem):
    with pytest.raises(InputError) as err:
        Settings(namespaces=namespaces, health_port=None)
    assert problem in str(err.value) and err.value.field == "--namespace"


def test_the_flag_repeats():
    result = CliRunner().invoke(app, ["run", "-n", "a", "-n", "a", "--server", "http://127.0.0.1:9"])
    assert result.exit_code == 2 and "a namespace is given twice" in result.output, result.output
