"""The one gate of every test that needs the built v1.37.2 control plane (the e2e tier, hpa-decide).

The binaries are built once per run, before the tests start, by the root conftest's ``pytest_sessionstart`` (with its
progress shown); a build that failed there is not tried again in each test process: its reason travels in the
environment (``UNAVAILABLE``) to the xdist workers. Outside CI such a test is skipped with a reason that starts with
``controlplane.NOT_BUILT`` and names what failed and the command that fixes it (the root conftest counts those as
"control-plane tests not run" in pytest's summary line); in CI (``CI`` set) it fails instead.
"""

from __future__ import annotations

import os
from typing import Iterable

import pytest

from controlplane import BINARIES, BuildError, build_with_bar, is_built, not_built_reason

UNAVAILABLE = "PYHPA_CONTROL_PLANE_UNAVAILABLE"
IN_CI = bool(os.environ.get("CI"))


def build_or_reason(names: Iterable[str] = BINARIES) -> str:
    """Build ``names`` unless built (or unless a build already failed in this run); '' when they are there, else the
    one-line reason they are not."""
    reason = os.environ.get(UNAVAILABLE, "")
    if reason or is_built(names=tuple(names)):
        return reason
    try:
        build_with_bar(names=tuple(names))
    except BuildError as e:
        reason = not_built_reason(e)
        os.environ[UNAVAILABLE] = reason
    return reason


def require_control_plane(names: Iterable[str] = BINARIES) -> None:
    """Skip the calling test (fail it in CI) unless ``names`` are built (building them if needed)."""
    reason = build_or_reason(names)
    if not reason:
        return
    if IN_CI:
        pytest.fail(f"in CI the control plane must be built: {reason}", pytrace=False)
    pytest.skip(reason)
