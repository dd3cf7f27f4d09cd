"""Shared pytest fixtures, and hypothesis' profile: no deadline (a test never depends on how fast the machine is;
hypothesis' default of 200 ms per example failed property tests on a loaded machine).

The real control plane (the e2e tier, hpa-decide) is built once per run when the run needs it, in the background
while the other tests run (``pytest_sessionstart``); tests that needed it and did not get it are counted in the
summary line as "control-plane tests not run", and a line above it says why and the command that fixes it
(``control_plane_gate``)."""

import os
import time
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("pyhpa", deadline=None)
settings.load_profile("pyhpa")

from control_plane_gate import RESULT, build_log, start_build, stop_build
from controller_util import CRD

from controlplane import KUBERNETES_VERSION, NOT_BUILT
from kubedouble import KubeDouble

TESTS = Path(__file__).resolve().parent
#: the tests that need the built control plane: the e2e tier, upstream's HPA controller as hpa-decide, and the Helm
#: chart's (helm and kubectl)
NEEDS_CONTROL_PLANE = (TESTS / "e2e", TESTS / "test_upstream_decide.py", TESTS / "test_controlplane_build.py",
                       TESTS / "test_helm_chart.py")
NOT_RUN = "control-plane tests not run"
FIRST_GROUP, SECOND_GROUP = "control-plane", "control-plane-2"
#: the end-to-end modules on the real metrics pipeline that run in the second group, beside the first (measured on
#: two cores: the first group's real-pipeline modules about 15 minutes, these and the second group's others about 14)
SECOND_PROCESS = ("test_deploy_kit.py", "test_helm_real.py", "test_preview_snapshot_explain.py", "test_replicas.py")
NEEDS_EVERY_BINARY = ("test_controlplane_cli.py", "test_helm_real.py", "test_helm_chart.py", "test_controlplane_build.py",
                      "test_upstream_decide.py")


def _control_plane_paths(config) -> tuple[bool, bool]:
    """Whether the command line's paths include a test that needs the control plane (a path that is one of them,
    inside one, or a folder holding one), and whether they hold nothing else."""
    some, only = False, bool(config.args)
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve()
        inside = any(path == need or need in path.parents for need in NEEDS_CONTROL_PLANE)
        some = some or inside or any(path in need.parents for need in NEEDS_CONTROL_PLANE)
        only = only and inside
    return some, only


def pytest_sessionstart(session):
    """Build the control plane once when the run includes tests that need it (in the xdist controller only: its
    workers inherit the outcome): in the background while the other tests run (progress in its log), or, when the
    run holds nothing else, in the foreground with its progress bar (25-45 minutes cold)."""
    config = session.config
    some, only = _control_plane_paths(config)
    if hasattr(config, "workerinput") or not some:
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        config._pyhpa_build = start_build(background=not only)
        if config._pyhpa_build is not None:
            config._pyhpa_build_started = time.time()
            terminal = config.pluginmanager.getplugin("terminalreporter")
            terminal.write_line(f"control plane: building {KUBERNETES_VERSION} in the background while the other "
                                f"tests run (cold: 25-45 minutes on two cores); progress: {build_log()}")


def pytest_sessionfinish(session):
    """A background build nothing waits for any more (an early stop, -x) ends with the run."""
    stop_build(getattr(session.config, "_pyhpa_build", None))


def _not_built(report) -> bool:
    return bool(report.skipped and isinstance(report.longrepr, tuple) and NOT_BUILT in str(report.longrepr[2]))


def pytest_report_teststatus(report, config):
    """A test skipped because the control plane is not built is counted apart: the summary line says
    "N control-plane tests not run", never hides it among the other skips."""
    if _not_built(report):
        return NOT_RUN, "n", "NOT RUN"
    return None


def pytest_terminal_summary(terminalreporter):
    """One line on the control-plane tests: how many ran against kube-apiserver v1.37.2, or why they did not run and
    the command that fixes it."""
    stats = terminalreporter.stats
    not_run = stats.get(NOT_RUN, [])
    ran = [r for key in ("passed", "failed", "error") for r in stats.get(key, [])
           if r.when == "call" or key == "error"]
    needs = tuple(str(p.relative_to(TESTS.parent)) for p in NEEDS_CONTROL_PLANE)
    ran = [r for r in ran if r.nodeid.startswith(needs)]
    if not_run:
        reasons: dict[str, int] = {}
        for r in not_run:
            reason = str(r.longrepr[2]).removeprefix("Skipped: ")
            reasons[reason] = reasons.get(reason, 0) + 1
        for reason, count in sorted(reasons.items()):
            terminalreporter.write_line(f"{count} {NOT_RUN}: {reason}", yellow=True, bold=True)
    elif ran:
        terminalreporter.write_line(f"control plane: {len(ran)} test{'s' * (len(ran) != 1)} ran with the built {KUBERNETES_VERSION} "
                                    f"control plane (the e2e tier on a real kube-apiserver, hpa-decide)")
    build = getattr(terminalreporter.config, "_pyhpa_build", None)
    if build is not None and build.poll() is not None:
        # the build's own time: its result file is written as it ends (the run's time bounds it only from above)
        result = Path(os.environ.get(RESULT, ""))
        ended = result.stat().st_mtime if result.is_file() else time.time()
        minutes = (ended - terminalreporter.config._pyhpa_build_started) / 60
        outcome = "built" if build.returncode == 0 else f"not built (exit code {build.returncode})"
        terminalreporter.write_line(f"control plane: {outcome} in the background in {minutes:.0f} min "
                                    f"(log: {build_log()})")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each test file is one pytest-xdist group (module fixtures and the ports a file's servers share stay in
    one process), and the tests that need the built control plane are two groups of about the same length, each
    one process and its own clusters: ``control-plane`` (end-to-end tests on the real metrics pipeline,
    ``real_plane``), first, so its process waits for the background build while the other runs everything else,
    and ``control-plane-2`` (the tests on the metrics fixture's cluster, hpa-decide, the build and Helm chart tests,
    and the end-to-end modules of ``SECOND_PROCESS`` on a real-pipeline cluster of that process), last, so the
    second process reaches it after the other tests and the two groups then run side by side."""
    first, middle, last = [], [], []
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        needs = any(Path(item.path) == need or need in Path(item.path).parents for need in NEEDS_CONTROL_PLANE)
        if not needs:
            group, bucket = path, middle
        elif "real_plane" in getattr(item, "fixturenames", ()) and Path(item.path).name not in SECOND_PROCESS:
            group, bucket = FIRST_GROUP, first
        else:
            group, bucket = SECOND_GROUP, last
        item.add_marker(pytest.mark.xdist_group(group))
        bucket.append(item)
    # in the second group, the modules that need every binary (helm, prometheus-adapter, hpa-decide: built after
    # the cluster's) come after the others, which can start as soon as the cluster's binaries are built
    last.sort(key=lambda item: Path(item.path).name in NEEDS_EVERY_BINARY)
    items[:] = first + middle + last


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
