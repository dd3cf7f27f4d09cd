"""The end-to-end tier: pyhpa against a real Kubernetes v1.37.2 control plane (``controlplane``).

One control plane serves the whole tier (every e2e test runs in one pytest-xdist worker: the root conftest puts
them in one ``xdist_group``); each test works in namespaces of its own. The binaries are built
once per run (Go needed; 15-35 minutes cold: ``tests/control_plane_gate.py``); when they cannot be built the tier is
skipped with what failed and the command that fixes it, and pytest's summary line counts its tests as "control-plane
tests not run", except in CI (``CI`` set), where a control plane that cannot be built fails the run.

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
from lightkube.resources.core_v1 import Namespace

from controlplane import ControlPlane
from controlplane.cluster import DEFAULT_CONTROLLERS

from .util import CRD_FILE, Pyhpa, has_default_sa, wait_until


@pytest.fixture(scope="session")
def plane(tmp_path_factory) -> ControlPlane:
    """The running control plane (kube-scheduler, KWOK's two nodes, and the metrics fixture: these tests set exact
    metric values), with the HorizontalAutoscaler CRD; its controller-manager also runs upstream's HPA controller
    (sync period 1 s) for native HPAs. The real metrics pipeline (metrics-server, prometheus-adapter) is
    ``real_plane``'s."""
    require_control_plane()
    cp = ControlPlane(tmp_path_factory.mktemp("controlplane"),
                      controllers=DEFAULT_CONTROLLERS + ("horizontalpodautoscaling",),
                      # upstream's HPA controller at 1 s, as its integration tests run it; a client rate of 200/s
                      # (its default, 20, would stretch 20 HPAs' 1 s period to 2 s: test_side_by_side.py)
                      controller_manager_args=("--horizontal-pod-autoscaler-sync-period=1s", "--kube-api-qps=200",
                                               "--kube-api-burst=400"),
                      metrics="fixture")
    cp.start()
    try:
        cp.run_kubectl("apply", "--server-side", "-f", str(CRD_FILE))
        cp.run_kubectl("wait", "--for=condition=Established", "crd/horizontalautoscalers.pyhpa.dev", "--timeout=60s")
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def real_plane(tmp_path_factory) -> ControlPlane:
    """A second cluster on the real metrics pipeline: kube-scheduler, KWOK's two nodes, metrics-server v0.9.0
    scraping KWOK's kubelet endpoints every 15 s (its manifests' ``--metric-resolution``), with the
    HorizontalAutoscaler CRD; its controller-manager runs upstream's HPA controller at its default period (15 s),
    the period pyhpa runs at here too, so the two are compared as they run by default."""
    require_control_plane()
    cp = ControlPlane(tmp_path_factory.mktemp("realplane"),
                      controllers=DEFAULT_CONTROLLERS + ("horizontalpodautoscaling",))
    cp.start()
    try:
        cp.run_kubectl("apply", "--server-side", "-f", str(CRD_FILE))
        cp.run_kubectl("wait", "--for=condition=Established", "crd/horizontalautoscalers.pyhpa.dev", "--timeout=60s")
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def client(plane):
    return plane.client()


@pytest.fixture
def ns(plane, client) -> str:
    """A fresh namespace (deleted after the test), with its default ServiceAccount made."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    client.create(Namespace(metadata={"name": name}))
    wait_until(lambda: has_default_sa(client, name), what=f"the default ServiceAccount of {name}")
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
