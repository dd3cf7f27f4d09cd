"""The one gate of every test that needs the built v1.37.2 control plane (the e2e tier, hpa-decide).

The binaries are built once per run, by the root conftest's ``pytest_sessionstart`` (``start_build``): in the
foreground with its progress bar when the run holds nothing else, else in the background (``python -m controlplane
build --result-file``, its progress in ``<cache>/build.log``) while the other tests run, the tests that need it
waiting for its outcome (``build_or_reason``). A build that failed is not tried again in each test process: its
reason is read from the result file, whose path the xdist workers inherit in the environment (``RESULT``).

Outside CI a test that needs the control plane and did not get it is skipped with a reason that starts with
``controlplane.NOT_BUILT`` and names what failed and the command that fixes it (the root conftest counts those as
"control-plane tests not run" in pytest's summary line); in CI (``CI`` set) it fails instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable, Optional

import pytest

from controlplane import BINARIES, BuildError, build_with_bar, cache_dir, is_built, not_built_reason
from controlplane.build import MODULE, NOT_BUILT

RESULT = "PYHPA_CONTROL_PLANE_BUILD_RESULT"
"""A file the background build writes when it ends: empty when built, else the reason (``not_built_reason``)."""
BUILDER = "PYHPA_CONTROL_PLANE_BUILDER_PID"
IN_CI = bool(os.environ.get("CI"))
WAIT_SECONDS = 3 * 3600  # longer than any build: a bound, not a timing assumption


def build_log() -> Path:
    return cache_dir() / "build.log"


def start_build(*, background: bool) -> Optional[subprocess.Popen]:
    """Build the control plane unless built: now, with its progress on the terminal, or (``background``) in a
    process of its own whose outcome the tests that need it wait for; returns that process (None otherwise)."""
    if os.environ.get(RESULT) or is_built():
        return None
    result = Path(tempfile.mkdtemp(prefix="pyhpa-build-")) / "result"
    if not background:
        result.write_text(build_or_reason())  # the workers read the outcome instead of trying again
        os.environ[RESULT] = str(result)
        return None
    log = build_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "controlplane", "build", "--result-file", str(result)],
                                cwd=MODULE.parent.parent, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True)
    os.environ[RESULT] = str(result)
    os.environ[BUILDER] = str(proc.pid)
    return proc


def stop_build(proc: Optional[subprocess.Popen]) -> None:
    """End a background build the run no longer waits for (its process group: go build's children too)."""
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child of this very process (pytest -n 0) that ended but was not reaped yet is not alive
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def _wait_for_background_build(result: Path, names: tuple[str, ...] = BINARIES) -> str:
    """The background build's outcome ('' when built), once it ends or once ``names`` are built (it builds the
    cluster's binaries first: the e2e tier starts while it builds hpa-decide, prometheus-adapter and helm)."""
    pid = int(os.environ.get(BUILDER, "0") or 0)
    deadline = time.monotonic() + WAIT_SECONDS
    while not result.is_file():
        if is_built(names=names):
            return ""
        if pid and not _alive(pid) and not result.is_file():
            tail = build_log().read_text(errors="replace").strip().splitlines()[-1:] if build_log().is_file() else []
            return (f"{NOT_BUILT}: the background build ended without an outcome ({' '.join(tail) or 'no output'}; "
                    f"log: {build_log()}). Fix: python -m controlplane build")
        if time.monotonic() > deadline:
            return f"{NOT_BUILT}: the background build did not end within {WAIT_SECONDS} s (log: {build_log()})"
        time.sleep(2)
    return result.read_text().strip()


def build_or_reason(names: Iterable[str] = BINARIES) -> str:
    """'' when ``names`` are built (waiting for this run's background build, or building them now), else the
    one-line reason they are not."""
    names = tuple(names)
    result = os.environ.get(RESULT)
    if result:
        reason = _wait_for_background_build(Path(result), names)
        return reason if reason or is_built(names=names) else f"{NOT_BUILT}: {', '.join(names)} missing after the build"
    if is_built(names=names):
        return ""
    try:
        build_with_bar(names=names)
    except BuildError as e:
        return not_built_reason(e)
    return ""


def require_control_plane(names: Iterable[str] = BINARIES) -> None:
    """Skip the calling test (fail it in CI) unless ``names`` are built (building them, or waiting for the build)."""
    reason = build_or_reason(names)
    if not reason:
        return
    if IN_CI:
        pytest.fail(f"in CI the control plane must be built: {reason}", pytrace=False)
    pytest.skip(reason)
