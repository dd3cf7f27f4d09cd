"""Issue 37: ``tools/cold_ci.sh`` runs CI as a new machine would. What it sets up is checked here without running
the 40 minutes of CI (``--clone-only``): a clone of the repository's HEAD, a fresh virtual environment without the
project installed, and HOME, GOPATH, GOMODCACHE, GOCACHE, the XDG and pip caches all new empty folders."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_cold_run_starts_from_a_clone_and_empty_caches():
    res = subprocess.run(["bash", "tools/cold_ci.sh", "--clone-only"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    first, env_line = res.stdout.strip().splitlines()[-2:]
    root = Path(re.match(r"cold CI in (\S+) \(commit (\w+)\)", first).group(1))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        assert f"(commit {head})" in first
        assert first.endswith("caches empty: 4.0K 4.0K 4.0K"), first
        env = dict(pair.split("=", 1) for pair in env_line.split())
        for name in ("HOME", "GOPATH", "GOMODCACHE", "GOCACHE", "XDG_CACHE_HOME"):
            folder = Path(env[name])
            assert folder.parent == root and folder.is_dir() and not any(folder.iterdir()), name
        assert env["PATH"].split(os.pathsep)[0] == str(root / "venv" / "bin")
        clone = root / "clone"
        assert (clone / ".ci" / "run").is_file() and (clone / "tools" / "kube" / "go.mod").is_file()
        # the fresh venv holds pip only: nothing of the project or its dependencies
        listed = subprocess.run([str(root / "venv" / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
                                capture_output=True, text=True, check=True).stdout
        assert not re.search(r"^(pyhpa|pytest|lightkube|numpy)==", listed, re.M), listed
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_an_unknown_argument_is_one_line_and_exit_code_2():
    res = subprocess.run(["bash", "tools/cold_ci.sh", "--frobnicate"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        "error: tools/cold_ci.sh: unknown argument --frobnicate (known: --keep, --clone-only, --help)"]


def test_under_load_refuses_a_count_out_of_bounds_before_loading_the_machine():
    for bad, shown in (("0", "0"), ("21", "21"), ("three", "'three'")):
        res = subprocess.run(["bash", "tools/under_load.sh", bad], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 2, bad
        assert res.stderr.strip().splitlines() == [
            f"error: tools/under_load.sh: RUNS must be a whole number from 1 to 20, got {shown}"], res.stderr
