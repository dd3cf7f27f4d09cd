"""The Helm chart deploy/helm/pyhpa (issue 42): linted and rendered with helm v4 as ``python -m controlplane build``
makes it, and held to the kustomize kit, rendered with the built ``kubectl kustomize`` as tests/test_deploy_kit.py
renders it. Both binaries come through the control-plane gate: a run that holds this file builds them (or waits for
the background build), and when they are not built its tests count as "control-plane tests not run".

What the comparison with the kit ignores, exactly:

- the labels ``helm.sh/chart``, ``app.kubernetes.io/managed-by``, ``app.kubernetes.io/instance`` and
  ``app.kubernetes.io/version`` (Helm's standard labels, which the chart adds to every object and pod template;
  a labels map left empty by removing them counts as absent);
- the kit's Namespace pyhpa-system: a chart does not create its release namespace (``helm install
  --create-namespace``), so uninstalling the release does not delete the namespace either.

Everything else of every object (kind, name, namespace, labels, annotations, spec, rules, roleRef, subjects, data)
must be equal. The CRD is rendered with ``--include-crds`` from the chart's ``crds/`` folder, which Helm installs and
never upgrades or deletes: ``helm uninstall`` leaves it and the users' HorizontalAutoscalers in place (as KEDA's).
"""

from __future__ import annotations

import copy
import json
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml
from control_plane_gate import require_control_plane
from test_deploy_kit import run_flags

import controlplane

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
CHART = DEPLOY / "helm" / "pyhpa"
NAMESPACE = "pyhpa-system"
RELEASE = "pyhpa"  # the release name that gives the kit's object names
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version")
#: values equivalent to each overlay of the kit
OVERLAYS = {
    "base": [],
    "overlays/single-replica": ["replicaCount=1"],
    "overlays/with-prometheus-operator": ["serviceMonitor.enabled=true", "prometheusRule.enabled=true"],
}


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    """helm and kubectl as ``python -m controlplane build`` makes them (waiting for this run's build)."""
    require_control_plane(("helm", "kubectl"))
    return {"helm": controlplane.helm(), "kubectl": controlplane.kubectl()}


def helm(tools, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tools["helm"], *args], capture_output=True, text=True, timeout=300)


def template(tools, *sets: str, values: dict | None = None, tmp_path: Path | None = None,
             crds: bool = True) -> list[dict]:
    """The objects ``helm template pyhpa deploy/helm/pyhpa -n pyhpa-system --set ...`` renders (with the CRD)."""
    out = helm(tools, *template_args(*sets, values=values, tmp_path=tmp_path, crds=crds))
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def template_args(*sets: str, values: dict | None = None, tmp_path: Path | None = None, crds: bool = True) -> list:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE] + (["--include-crds"] if crds else [])
    for s in sets:
        args += ["--set", s]
    if values is not None:
        assert tmp_path is not None
        file = tmp_path / "values.yaml"
        file.write_text(yaml.safe_dump(values) if isinstance(values, dict) else values)
        args += ["--values", str(file)]
    return args


def kustomize(tools, kit: str) -> list[dict]:
    out = subprocess.run([tools["kubectl"], "kustomize", str(DEPLOY / kit)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def without_helm_labels(o: dict) -> dict:
    """``o`` without Helm's four standard labels, in its metadata and its pod template (the only difference the
    comparison with the kit allows besides the Namespace)."""
    o = copy.deepcopy(o)
    holders = [o["metadata"], o.get("spec", {}).get("template", {}).get("metadata", {})]
    for meta in holders:
        labels = meta.get("labels")
        if labels is None:
            continue
        for key in HELM_LABELS:
            labels.pop(key, None)
        if not labels:
            del meta["labels"]
    return o


def by_key(objects: list[dict]) -> dict[tuple, dict]:
    out = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): without_helm_labels(o)
           for o in objects}
    assert len(out) == len(objects), "two objects of one kind, namespace and name"
    return out


def deployment_args(objects: list[dict]) -> list[str]:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "run"
    return container["args"]


# --- files the chart keeps in step with the kit (no helm needed) ---


def test_the_chart_s_crd_is_the_generated_one():
    """One source of the CRD: the chart's crds/ holds deploy/crd.yaml byte for byte (deploy/generate_crd.py writes
    both; tests/test_api.py checks each against pyhpa.api)."""
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == ["horizontalautoscalers.yaml"]
    assert (CHART / "crds" / "horizontalautoscalers.yaml").read_bytes() == (DEPLOY / "crd.yaml").read_bytes()
    assert not [p for p in (CHART / "templates").rglob("*") if "CustomResourceDefinition" in p.read_text()]


def test_the_chart_s_monitoring_files_are_the_kit_s():
    """files/ holds deploy/monitoring's dashboard and alerts byte for byte (deploy/monitoring/build.py writes them)."""
    for name in ("dashboard.json", "alerts.yaml"):
        assert (CHART / "files" / name).read_bytes() == (DEPLOY / "monitoring" / name).read_bytes(), name


def test_chart_metadata():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (chart["apiVersion"], chart["name"], chart["version"], chart["appVersion"]) == ("v2", "pyhpa", "0.1.0",
                                                                                          version)
    json.loads((CHART / "values.schema.json").read_text())


# --- helm lint and helm template ---


@pytest.mark.parametrize("strict", [False, True], ids=["lint", "lint --strict"])
def test_helm_lint_is_clean(tools, strict):
    out = helm(tools, "lint", str(CHART), *(["--strict"] if strict else []))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[WARNING]" not in out.stdout and "[ERROR]" not in out.stdout, out.stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout, out.stdout


def test_helm_lint_finds_a_broken_chart(tools, tmp_path):
    """The lint check can fail: a template that does not parse is an error."""
    broken = tmp_path / "pyhpa"
    subprocess.run(["cp", "-r", str(CHART), str(broken)], check=True)
    (broken / "templates" / "broken.yaml").write_text("{{ if }}\n")
    out = helm(tools, "lint", str(broken))
    assert out.returncode != 0 and "[ERROR]" in out.stdout, out.stdout


@pytest.mark.parametrize("kit", list(OVERLAYS))
def test_default_values_render_the_kit_s_objects(tools, kit):
    """With the default values (plus the overlay's equivalent values) helm renders the kit's objects: all of them,
    the same, but the two differences the module docstring names."""
    kit_objects = by_key(kustomize(tools, kit))
    chart_objects = by_key(template(tools, *OVERLAYS[kit]))
    assert kit_objects.pop(("Namespace", None, NAMESPACE))
    assert set(chart_objects) == set(kit_objects)
    for key, expected in kit_objects.items():
        assert chart_objects[key] == expected, key


def test_the_comparison_sees_a_difference(tools):
    """The comparison can fail: another value of the chart changes an object the kit has."""
    kit_objects = by_key(kustomize(tools, "base"))
    chart_objects = by_key(template(tools, "controller.workers=6"))
    key = ("Deployment", NAMESPACE, "pyhpa-controller")
    assert chart_objects[key] != kit_objects[key]


def test_helm_labels_on_every_object(tools):
    for o in template(tools, crds=False):
        labels = o["metadata"]["labels"]
        assert set(HELM_LABELS) <= set(labels), o["kind"]
        assert labels["app.kubernetes.io/instance"] == RELEASE and labels["app.kubernetes.io/managed-by"] == "Helm"


def test_the_crd_comes_from_crds_only(tools):
    """The CRD is no template: rendered only with --include-crds (Helm installs crds/ once, never upgrades or
    deletes it, so uninstall leaves it and the users' HorizontalAutoscalers), and it is deploy/crd.yaml."""
    assert "CustomResourceDefinition" not in {o["kind"] for o in template(tools, crds=False)}
    (crd,) = [o for o in template(tools) if o["kind"] == "CustomResourceDefinition"]
    assert crd == yaml.safe_load((DEPLOY / "crd.yaml").read_text())
    shown = helm(tools, "show", "crds", str(CHART))
    assert shown.returncode == 0, shown.stderr
    assert [d for d in yaml.safe_load_all(shown.stdout) if d] == [crd]
    assert "Namespace" not in {o["kind"] for o in template(tools)}  # nor the namespace: uninstall leaves it


def test_namespaces_scope(tools):
    """rbac.scope namespaces: a Role and RoleBinding in the listed namespace with the kit's ClusterRole rules (and the
    preview's), no ClusterRole or ClusterRoleBinding at all, and `pyhpa run --namespace` serving that namespace."""
    kit = {o["kind"] + "/" + o["metadata"]["name"]: o for o in kustomize(tools, "base")}
    objects = template(tools, "rbac.scope=namespaces", "rbac.namespaces={team-a}", crds=False)
    kinds = {o["kind"] for o in objects}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}
    roles = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects
             if o["kind"] in ("Role", "RoleBinding")}
    assert set(roles) == {("Role", "team-a", "pyhpa-controller"), ("RoleBinding", "team-a", "pyhpa-controller"),
                          ("Role", NAMESPACE, "pyhpa-controller-shards"),
                          ("RoleBinding", NAMESPACE, "pyhpa-controller-shards")}
    role = roles[("Role", "team-a", "pyhpa-controller")]
    assert role["rules"] == kit["ClusterRole/pyhpa-controller"]["rules"] + kit["ClusterRole/pyhpa-preview"]["rules"]
    binding = roles[("RoleBinding", "team-a", "pyhpa-controller")]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pyhpa-controller"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pyhpa-controller", "namespace": NAMESPACE}]
    flags = run_flags(deployment_args(objects)[1:])
    assert flags["namespace"] == ["team-a"] and flags["shards"] == "auto"
    assert flags["lease_namespace"] == "$(POD_NAMESPACE)"  # the Leases stay in the release namespace


def test_namespaces_scope_serves_several_namespaces(tools):
    """rbac.namespaces lists several: a Role and RoleBinding in each, and `pyhpa run --namespace` once for each."""
    objects = template(tools, "rbac.scope=namespaces", "rbac.namespaces={team-a,team-b}", crds=False)
    roles = {(o["kind"], o["metadata"]["namespace"]) for o in objects if o["kind"] in ("Role", "RoleBinding")
             and o["metadata"]["name"] == "pyhpa-controller"}
    assert roles == {(k, ns) for k in ("Role", "RoleBinding") for ns in ("team-a", "team-b")}
    args = deployment_args(objects)
    assert [args[i + 1] for i, a in enumerate(args) if a == "--namespace"] == ["team-a", "team-b"]


def test_namespaces_scope_needs_a_namespace(tools):
    """The chart refuses the namespaces scope without a namespace (with the reason)."""
    out = helm(tools, *template_args("rbac.scope=namespaces"))
    assert out.returncode != 0
    assert "rbac.scope namespaces needs the namespaces to serve in rbac.namespaces" in out.stderr, out.stderr


def test_cluster_scope_is_the_default_and_serves_every_namespace(tools):
    objects = template(tools, crds=False)
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"} == {"pyhpa-controller",
                                                                                      "pyhpa-preview"}
    assert not run_flags(deployment_args(objects)[1:])["namespace"]
    out = helm(tools, *template_args("rbac.namespaces={team-a}"))  # a namespace list the cluster scope would ignore
    assert out.returncode != 0 and "rbac.namespaces is only for rbac.scope namespaces" in out.stderr, out.stderr


def test_the_packaged_chart_holds_the_crd_and_the_monitoring_files(tools, tmp_path):
    """``helm package`` (what a chart repository serves) carries crds/ and files/ as they are in the repository."""
    out = helm(tools, "package", str(CHART), "--destination", str(tmp_path))
    assert out.returncode == 0, out.stderr
    with tarfile.open(tmp_path / "pyhpa-0.1.0.tgz") as archive:
        def read(name: str) -> bytes:
            return archive.extractfile(f"pyhpa/{name}").read()

        assert read("crds/horizontalautoscalers.yaml") == (DEPLOY / "crd.yaml").read_bytes()
        assert read("files/dashboard.json") == (DEPLOY / "monitoring" / "dashboard.json").read_bytes()


@pytest.mark.parametrize("api,group", [("resource", "metrics.k8s.io"), ("custom", "custom.metrics.k8s.io"),
                                       ("external", "external.metrics.k8s.io")])
def test_a_metrics_api_turned_off_is_not_granted(tools, api, group):
    def groups(objects):
        (role,) = [o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "pyhpa-controller"]
        return {g for rule in role["rules"] for g in rule["apiGroups"]}

    assert group in groups(template(tools, crds=False))
    assert group not in groups(template(tools, f"rbac.metricsApis.{api}=false", crds=False))


@pytest.mark.parametrize("shards", ["--set", "yaml"])
def test_shards_off_runs_one_leader(tools, tmp_path, shards):
    """shards off (also as YAML's bare off, which reads as false): `--shards 1 --leader-elect` on the one Lease,
    whose Role grants get and update on it by name (create cannot be limited by name)."""
    if shards == "--set":
        objects = template(tools, "shards=off", "leaderElection.leaseDuration=20", crds=False)
    else:
        objects = template(tools, values="shards: off\nleaderElection:\n  leaseDuration: 20\n", tmp_path=tmp_path,
                           crds=False)
    flags = run_flags(deployment_args(objects)[1:])
    assert flags["shards"] == "1" and flags["leader_elect"] is True and flags["lease_duration"] == 20
    assert flags["lease_name"] == "pyhpa-controller" and flags["lease_namespace"] == "$(POD_NAMESPACE)"
    (role,) = [o for o in objects if o["kind"] == "Role"]
    assert role["metadata"] == {**role["metadata"], "name": "pyhpa-controller-leader", "namespace": NAMESPACE}
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["pyhpa-controller"],
         "verbs": ["get", "update"]},
    ]


def test_no_leader_election_allows_one_replica_only(tools):
    objects = template(tools, "shards=off", "leaderElection.enabled=false", "replicaCount=1", crds=False)
    flags = run_flags(deployment_args(objects)[1:])
    assert flags["shards"] == "1" and flags["leader_elect"] is False
    assert not [o for o in objects if o["kind"] in ("Role", "RoleBinding")]  # no Lease to hold
    out = helm(tools, *template_args("shards=off", "leaderElection.enabled=false"))
    assert out.returncode != 0 and "replicaCount above 1 needs shards auto or leaderElection.enabled" in out.stderr


def test_every_value_of_the_controller_is_a_pyhpa_run_flag(tools):
    objects = template(tools, "controller.workers=3", "controller.syncPeriod=30", "controller.memoryStore=process",
                       "controller.logLevel=debug", "controller.logFormat=json",
                       "controller.prometheusUrl=http://prometheus:9090", "leaderElection.renewDeadline=8",
                       "leaderElection.retryPeriod=3", "controller.extraArgs={--jitter,0.2}", "metrics.port=9000",
                       crds=False)
    flags = run_flags(deployment_args(objects)[1:])
    assert (flags["workers"], flags["sync_period"], flags["memory_store"].value) == (3, 30, "process")
    assert (flags["log_level"].value, flags["log_format"].value) == ("debug", "json")
    assert flags["prometheus_url"] == "http://prometheus:9090" and flags["jitter"] == 0.2
    assert (flags["renew_deadline"], flags["retry_period"], flags["health_port"]) == (8, 3, 9000)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "9000"
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "http-metrics", "containerPort": 9000}]


def test_the_dashboard_config_map(tools):
    objects = template(tools, "dashboard.enabled=true", "dashboard.annotations.grafana_folder=pyhpa", crds=False)
    (board,) = [o for o in objects if o["kind"] == "ConfigMap"]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert board["metadata"]["annotations"] == {"grafana_folder": "pyhpa"}
    assert board["data"] == {"pyhpa.json": (DEPLOY / "monitoring" / "dashboard.json").read_text()}
    assert "ConfigMap" not in {o["kind"] for o in template(tools, crds=False)}


@pytest.mark.parametrize("bad,where", [
    ("replicaCount=-1", "replicaCount"),
    ("rbac.scope=foo", "scope"),
    ("shards=2", "shards"),
    ("metrics.port=0", "port"),
    ("controller.memoryStore=disk", "memoryStore"),
    ("serviceMonitor.enabled=yes", "enabled"),
    ("replicas=3", "replicas"),  # a misspelt key: additionalProperties false
])
def test_the_schema_refuses_bad_values(tools, bad, where):
    out = helm(tools, *template_args(bad))
    assert out.returncode != 0, out.stdout
    assert "values don't meet the specifications of the schema" in out.stderr, out.stderr
    assert where in out.stderr, out.stderr
