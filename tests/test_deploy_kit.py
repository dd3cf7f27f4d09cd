"""The kustomize deploy kit (issue 22): the base and each overlay rendered with ``kubectl kustomize`` (kubectl
v1.37.2 as ``python -m controlplane build`` makes it, which ``.ci/run`` runs; ``$KUBECTL`` names another binary,
else the one on PATH), and every object's
kind, namespace and image checked against the Dockerfile and the flags of ``pyhpa run``. No kustomization in the
repository and no snippet in its docs uses a field kustomize deprecated (issue 37): they render without a warning."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
import tomllib
from pathlib import Path

import pytest
import typer.main
import yaml

import controlplane
from pyhpa.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
KUBECTL = os.environ.get("KUBECTL") or controlplane.kubectl() or shutil.which("kubectl")
NAMESPACE = "pyhpa-system"
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
BASE_KINDS = {"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
              "RoleBinding", "Deployment", "PodDisruptionBudget", "Service"}
#: directory -> (kinds, Deployment replicas)
KITS = {
    "base": (BASE_KINDS, 2),
    "overlays/single-replica": (BASE_KINDS, 1),
    "overlays/with-prometheus-operator": (BASE_KINDS | {"ServiceMonitor", "PrometheusRule"}, 2),
}
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not built here (python -m controlplane build, "
                                                           "which .ci/run runs)")


#: the Kustomization fields kustomize deprecated: those its build warns about ("# Warning: 'bases' is deprecated.
#: Please use 'resources' instead. ..."; kubernetes-sigs/kustomize api/types/kustomization.go, CheckDeprecatedFields,
#: and the commonLabels warning kustomize v5.5 prints) and the others its type marks ``Deprecated:``
#: (helmChartInflationGenerator). ``kustomize edit fix`` rewrites each.
DEPRECATED_FIELDS = ("bases", "patchesStrategicMerge", "patchesJson6902", "imageTags", "vars", "commonLabels",
                     "helmChartInflationGenerator")
#: a deprecated field written as a YAML key (``bases:``), in a file, a YAML block or inline code of a doc
_DEPRECATED_KEY = re.compile(r"(?<![\w.-])(" + "|".join(DEPRECATED_FIELDS) + r")\s*:")


def render(kit: str) -> list[dict]:
    """The objects ``kubectl kustomize deploy/KIT`` prints; it must print no warning (a deprecated field)."""
    out = subprocess.run([KUBECTL, "kustomize", str(DEPLOY / kit)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "", out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def deprecated_fields(text: str) -> set[str]:
    """The deprecated kustomize fields ``text`` writes as keys (a kustomization, or a doc that shows one)."""
    return set(_DEPRECATED_KEY.findall(text))


def test_no_kustomization_or_doc_uses_a_deprecated_field():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    kustomizations = [f for f in files if Path(f).name in ("kustomization.yaml", "kustomization.yml",
                                                           "Kustomization")]
    assert len(kustomizations) == len(KITS), kustomizations  # the kits above: the check reads them all
    docs = [f for f in files if f.endswith(".md") and f != "CHANGELOG.md"]  # the changelog says what was replaced
    assert "README.md" in docs and "docs/operations.md" in docs
    for name in kustomizations:
        text = (ROOT / name).read_text()
        assert not deprecated_fields(text), (name, deprecated_fields(text))
        assert not set(yaml.safe_load(text)) & set(DEPRECATED_FIELDS), name
    for name in docs:
        text = (ROOT / name).read_text()
        assert not deprecated_fields(text), (name, deprecated_fields(text))


def test_the_deprecated_field_check_finds_them():
    """The check above can fail: each deprecated field is found as a key, in a block or inline, and only as a key."""
    old = textwrap.dedent("""\
        bases:
        - ../../base
        patchesStrategicMerge: [replicas.yaml]
        """)
    assert deprecated_fields(old) == {"bases", "patchesStrategicMerge"}
    assert deprecated_fields("an overlay with `commonLabels: {a: b}` and `vars:`") == {"commonLabels", "vars"}
    assert all(deprecated_fields(f"{field}: x") == {field} for field in DEPRECATED_FIELDS)
    assert not deprecated_fields("resources: [../../base]\npatches:\n- path: pdb.yaml\nthe bases of a search")


def dockerfile() -> dict:
    text = (ROOT / "Dockerfile").read_text()
    return {
        "image": re.search(r"docker build -t (\S+) \.$", text, re.M).group(1),
        "user": re.search(r"^USER (\d+):(\d+)$", text, re.M).groups(),
        "port": int(re.search(r"^EXPOSE (\d+)$", text, re.M).group(1)),
        "entrypoint": yaml.safe_load(re.search(r"^ENTRYPOINT (.+)$", text, re.M).group(1)),
    }


def run_flags(args: list[str]) -> dict:
    """``args`` (after ``run``) parsed by the ``pyhpa run`` command itself: unknown flags or bad values fail."""
    command = typer.main.get_command(app).commands["run"]
    ctx = command.make_context("run", list(args), resilient_parsing=False)
    return ctx.params


@needs_kubectl
@pytest.mark.parametrize("kit", list(KITS))
def test_kit_renders_with_the_right_objects(kit):
    objects = render(kit)
    kinds, replicas = KITS[kit]
    assert {o["kind"] for o in objects} == kinds
    for o in objects:
        meta = o["metadata"]
        if o["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, (o["kind"], meta)
        else:
            assert meta.get("namespace") == NAMESPACE, (o["kind"], meta)
        for subject in o.get("subjects", []):
            assert subject["namespace"] == NAMESPACE
    by_kind = {o["kind"]: o for o in objects}
    assert by_kind["Namespace"]["metadata"]["name"] == NAMESPACE
    crd = by_kind["CustomResourceDefinition"]
    assert crd == yaml.safe_load((DEPLOY / "crd.yaml").read_text())

    # the Deployment runs the Dockerfile's image as its user, on its port, with flags `pyhpa run` accepts
    docker = dockerfile()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert docker["image"] == f"pyhpa:{version}"
    deployment = by_kind["Deployment"]
    assert deployment["spec"]["replicas"] == replicas
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == docker["image"]
    assert container["command"] == docker["entrypoint"]
    assert (str(pod["securityContext"]["runAsUser"]), str(pod["securityContext"]["runAsGroup"])) == docker["user"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["args"][0] == "run"
    flags = run_flags(container["args"][1:])
    assert flags["shards"] == "auto" and flags["leader_elect"] is None  # --shards auto replaces --leader-elect
    assert flags["memory_store"].value == "status"
    (port,) = container["ports"]
    assert port["containerPort"] == flags["health_port"] == docker["port"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    assert flags["lease_namespace"] == "$(POD_NAMESPACE)"
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in container["env"]
    assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]
    assert pod["serviceAccountName"] == by_kind["ServiceAccount"]["metadata"]["name"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()

    # least privilege for --shards auto: Leases in its own namespace only, the verbs sharding uses
    role = by_kind["Role"]
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["create", "list", "update", "delete"]}]
    assert by_kind["RoleBinding"]["roleRef"]["name"] == role["metadata"]["name"]
    assert not any("*" in r["verbs"] for o in objects if o["kind"] in ("Role", "ClusterRole") for r in o["rules"])

    # the PodDisruptionBudget and the metrics Service select the controller's pods
    pdb = by_kind["PodDisruptionBudget"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    if replicas == 1:
        assert pdb["spec"] == {"maxUnavailable": 1, "selector": pdb["spec"]["selector"]}
    else:
        assert pdb["spec"]["minAvailable"] == 1
    service = by_kind["Service"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"] == [{"name": port["name"], "port": port["containerPort"],
                                         "targetPort": port["name"]}]
    if "ServiceMonitor" in by_kind:
        monitor = by_kind["ServiceMonitor"]["spec"]
        assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert monitor["namespaceSelector"] == {"matchNames": [NAMESPACE]}
        assert [e["port"] for e in monitor["endpoints"]] == [port["name"]]
        rule = by_kind["PrometheusRule"]
        alerts = yaml.safe_load((DEPLOY / "monitoring" / "alerts.yaml").read_text())
        assert rule["spec"]["groups"] == alerts["groups"]


def test_run_flags_refuses_what_pyhpa_run_refuses():
    """The flag check can fail: an unknown flag is refused."""
    with pytest.raises(Exception, match="no such option"):
        run_flags(["--shards", "auto", "--no-such-flag"])


def test_base_crd_is_the_generated_one():
    assert (DEPLOY / "base" / "crd.yaml").read_text() == (DEPLOY / "crd.yaml").read_text()
