"""The end-to-end tier: pyhpa against a real Kubernetes v1.37.2 cluster (``controlplane``).

The tier runs in two pytest-xdist workers side by side (the root conftest's two ``xdist_group``s of about the same
length: ``control-plane``, real-pipeline modules; ``control-plane-2``, the rest and the real-pipeline modules of
its ``SECOND_PROCESS``), each starting the clusters its tests ask for; each test works in namespaces of its own.
Both kinds of cluster run kube-scheduler and KWOK's nodes:

* ``real_plane``: the real metrics pipeline, metrics-server scraping KWOK's kubelet endpoints and (``test_adapter``)
  prometheus-adapter on a Prometheus. The scaling, faults, deploy-kit, Helm, replicas, preview and pipeline tests
  run there (a module's ``plane`` fixture returns it).
* ``plane``: the metrics fixture (``controlplane/metrics.py``) in place of metrics-server and the adapter, for the
  tests that need an exact value at the instant of a read: the side-by-side comparisons with upstream's HPA
  controller (test_side_by_side, test_adoption_real, test_upstream_integration: upstream's own test, whose fake
  metrics client answers exact values, ported; test_crd_real's ``kubectl get`` columns of a native HPA and a
  HorizontalAutoscaler read at different instants), and the tests that read no metric at all.

The binaries are built once per run (Go needed; 25-45 minutes cold: ``tests/control_plane_gate.py``); when they cannot
be built the tier is skipped with what failed and the command that fixes it, and pytest's summary line counts its
tests as "control-plane tests not run", except in CI (``CI`` set), where a control plane that cannot be built fails
the run.

``pyhpa run`` runs as the real command (``python -m pyhpa.cli.main run``) in a subprocess, authenticated with a
kubeconfig; what it does is read back from the API server (helpers in ``util.py``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Optional

import pytest
from control_plane_gate import require_control_plane
from lightkube import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace

from controlplane import ControlPlane
from controlplane.build import CONTROL_PLANE
from controlplane.cluster import DEFAULT_CONTROLLERS

from .util import AFTER_RESTART, CRD_FILE, Pyhpa, has_default_sa, stop_loads, wait_until


def _established(client) -> bool:
    """The HorizontalAutoscaler CRD has condition Established=True (False while it has none yet)."""
    try:
        crd = client.get(CustomResourceDefinition, "horizontalautoscalers.pyhpa.dev")
    except ApiError:
        return False
    conditions = (crd.status.conditions if crd.status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def _running_with_crd(cp: ControlPlane):
    """Start ``cp``, install the HorizontalAutoscaler CRD, yield it until the session ends, then stop it."""
    cp.start()
    try:
        cp.run_kubectl("apply", "--server-side", "-f", str(CRD_FILE))
        # polled, not ``kubectl wait --for=condition=Established``: kubectl v1.37 fails at once ("accessor error:
        # <nil>") when it reads the CRD before the API server gave it any condition, which a busy machine allows
        client = cp.client()
        wait_until(lambda: _established(client), timeout=120, what="the HorizontalAutoscaler CRD Established")
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def plane(tmp_path_factory) -> ControlPlane:
    """The running control plane (kube-scheduler, KWOK's four nodes, and the metrics fixture: these tests set exact
    metric values), with the HorizontalAutoscaler CRD; its controller-manager also runs upstream's HPA controller
    (sync period 1 s) for native HPAs. The real metrics pipeline (metrics-server, prometheus-adapter) is
    ``real_plane``'s."""
    require_control_plane(CONTROL_PLANE)
    cp = ControlPlane(tmp_path_factory.mktemp("controlplane"),
                      controllers=DEFAULT_CONTROLLERS + ("horizontalpodautoscaling",),
                      # upstream's HPA controller at 1 s, as its integration tests run it; a client rate of 200/s
                      # (its default, 20, would stretch 20 HPAs' 1 s period to 2 s: test_side_by_side.py)
                      controller_manager_args=("--horizontal-pod-autoscaler-sync-period=1s", "--kube-api-qps=200",
                                               "--kube-api-burst=400"),
                      # room for test_side_by_side's twins (up to ~450 pods at once) beside the other tests' pods
                      nodes=4, node_cpu="32", node_pods=250, metrics="fixture")
    yield from _running_with_crd(cp)


@pytest.fixture(scope="session")
def real_plane(tmp_path_factory) -> ControlPlane:
    """A second cluster on the real metrics pipeline: kube-scheduler, KWOK's two nodes, metrics-server v0.9.0
    scraping KWOK's kubelet endpoints every 10 s (``--metric-resolution``: the lowest it accepts; its manifests
    say 15 s, what ``python -m controlplane up`` runs: every wait on a scrape here is a third shorter), with the
    HorizontalAutoscaler CRD; its controller-manager runs upstream's HPA controller at its default period (15 s),
    the period pyhpa runs at here too, so the two are compared as they run by default."""
    require_control_plane(CONTROL_PLANE)
    cp = ControlPlane(tmp_path_factory.mktemp("realplane"),
                      controllers=DEFAULT_CONTROLLERS + ("horizontalpodautoscaling",), metric_resolution=10)
    yield from _running_with_crd(cp)


@pytest.fixture(autouse=True)
def _stop_loads():
    """The pod annotators ``set_pod_cpu`` started on the real pipeline end with their test."""
    yield
    stop_loads()


@pytest.fixture
def client(plane):
    return plane.client()


@pytest.fixture
def ns(plane, client) -> str:
    """A fresh namespace (deleted after the test), with its default ServiceAccount made."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    client.create(Namespace(metadata={"name": name}))
    # right after a test restarted kube-apiserver, the serviceaccount controller's watch may be in its reflector's
    # backoff (its first requests were refused while the server's RBAC caches filled)
    wait_until(lambda: has_default_sa(client, name), timeout=AFTER_RESTART, what=f"the default ServiceAccount of {name}")
    yield name
    try:
        client.delete(Namespace, name)
    except ApiError:
        pass


@pytest.fixture
def pyhpa(request, tmp_path):
    """``pyhpa(*args, kubeconfig=None, on=None)`` starts ``pyhpa run`` against ``on`` (default: ``plane``), stopped
    after the test."""
    running: list[Pyhpa] = []

    def start(*args: str, kubeconfig: Optional[Path] = None, wait_synced: bool = True, name: str = "pyhpa",
              on: Optional[ControlPlane] = None) -> Pyhpa:
        p = Pyhpa(on or request.getfixturevalue("plane"), tmp_path, *args, kubeconfig=kubeconfig, name=name)
        running.append(p)
        return p.start(wait_synced)

    yield start
    for p in running:
        p.stop()
