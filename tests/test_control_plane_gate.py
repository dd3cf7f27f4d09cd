"""Issue 37: outside CI, a control plane that cannot be built must not pass quietly: the tests that need it are
skipped with what failed and the command that fixes it, and pytest's summary line counts them as
"control-plane tests not run"; in CI (``CI`` set) they fail. Checked by running pytest on the hpa-decide tests with
a ``go`` on PATH that fails as Go does when the module proxy cannot be reached, and an empty binary cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAILING_GO = """#!/bin/sh
echo "go: k8s.io/kubernetes@v1.37.2: Get \\"https://proxy.golang.org/k8s.io/kubernetes/@v/v1.37.2.info\\": dial tcp: lookup proxy.golang.org: no such host" >&2
exit 1
"""


def _pytest(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess:
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "go").write_text(FAILING_GO)
    (fake / "go").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYHPA_CONTROL_PLANE_UNAVAILABLE",
                                                           "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    env.update(PATH=f"{fake}{os.pathsep}{env.get('PATH', '')}", PYHPA_CONTROL_PLANE_CACHE=str(tmp_path / "cache"))
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "tests/test_upstream_decide.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_failed_build_is_counted_as_not_run_with_the_reason_and_the_fix(tmp_path):
    res = _pytest(tmp_path, ci=False)
    out = res.stdout.splitlines()
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    summary = out[-1]
    assert "control-plane tests not run" in summary and "passed" not in summary, summary
    reason = [line for line in out if line.startswith(tuple("0123456789")) and "control-plane tests not run:" in line]
    assert len(reason) == 1, out[-10:]
    # what failed (Go's own words) and the one command that fixes it
    assert "go mod download k8s.io/kubernetes failed" in reason[0] or "go list failed" in reason[0], reason[0]
    assert "no such host" in reason[0] and "Fix: " in reason[0], reason[0]
    assert "Traceback" not in res.stdout + res.stderr


def test_in_ci_a_failed_build_fails_the_tests_that_need_it(tmp_path):
    res = _pytest(tmp_path, ci=True)
    summary = res.stdout.splitlines()[-1]
    assert res.returncode == 1, res.stdout[-3000:]
    assert "failed" in summary or "error" in summary, summary
    assert "in CI the control plane must be built: control plane not built:" in res.stdout
