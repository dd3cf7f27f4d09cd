"""Shared pytest fixtures, and hypothesis' profile: no deadline (a test never depends on how fast the machine is;
hypothesis' default of 200 ms per example failed property tests on a loaded machine)."""

import pytest
from hypothesis import settings

settings.register_profile("pyhpa", deadline=None)
settings.load_profile("pyhpa")

from kubedouble import KubeDouble

from controller_util import CRD


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test file is one pytest-xdist group (module fixtures and the ports a file's servers share stay in
    one process), and the end-to-end tier (tests/e2e) is one group: one process, one real control plane."""
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group("e2e" if path.startswith("tests/e2e/") or path.startswith("e2e/")
                                                else path))


@pytest.fixture
async def kube_double():
    """A Kubernetes API double serving on the test's event loop (use lightkube's AsyncClient with it)."""
    async with KubeDouble() as kd:
        yield kd


@pytest.fixture
def kube_double_thread():
    """A Kubernetes API double serving from a background thread (use lightkube's sync Client with it)."""
    kd = KubeDouble.start_in_thread()
    try:
        yield kd
    finally:
        kd.stop()


@pytest.fixture
async def kd():
    """A Kubernetes API double on the test's event loop with the HorizontalAutoscaler CRD registered (the
    controller tests' world)."""
    async with KubeDouble() as double:
        double.register_crd(CRD)
        yield double
