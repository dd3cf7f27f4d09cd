"""Shared pytest fixtures, and hypothesis' profile: no deadline (a test never depends on how fast the machine is;
hypothesis' default of 200 ms per example failed property tests on a loaded machine)."""

import pytest
from hypothesis import settings

settings.register_profile("pyhpa", deadline=None)
settings.load_profile("pyhpa")

from kubedouble import KubeDouble

from controller_util import CRD


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
