"""The layer contracts of pyproject.toml (``[tool.importlinter]``) hold: ``lint-imports`` finds no import that runs
up a layer (core, api, adapters, forecast, simulate/controller, tune, cli) or between the controller's rooms in a
circle."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _lint_imports() -> list[str]:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert found, "lint-imports is missing: pip install -e '.[test]' installs import-linter"
    return [found, "--no-cache"]


def test_layer_contracts_are_kept():
    r = subprocess.run(_lint_imports(), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout and "2 kept" in r.stdout, r.stdout[-2000:]


def test_a_broken_contract_fails(tmp_path):
    """The check can fail: a copy of the package where the core imports the adapters breaks the layers."""
    pkg = tmp_path / "pyhpa"
    shutil.copytree(ROOT / "pyhpa", pkg, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (pkg / "core" / "leak.py").write_text("from ..adapters import errors  # noqa: F401\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    r = subprocess.run(_lint_imports(), cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode != 0
    assert "pyhpa.core.leak -> pyhpa.adapters.errors" in r.stdout
