"""The import contracts of pyproject.toml (``[tool.importlinter]``) hold: ``lint-imports`` finds no import that runs
up a layer (core, api, adapters, forecast, simulate/controller, tune, cli) or between the controller's rooms, and no
import circle among the siblings of any package of pyhpa, kubedouble and controlplane. And no private name
(``_name``) crosses a module: ruff's import-private-name (PLC2701) skips imports within one top-level package, so
this file reads the imports itself (``ast``)."""

from __future__ import annotations

import ast
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
    assert "0 broken" in r.stdout and "4 kept" in r.stdout, r.stdout[-2000:]


def test_a_broken_contract_fails(tmp_path):
    """The checks can fail: a copy where the core imports the adapters breaks the layers, two modules of the
    core that import each other make a circle, and a node autoscaler model that reaches into the fleet's engine
    breaks the rule that models decide and the engine acts."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "data"))
    core = tmp_path / "pyhpa" / "core"
    (core / "leak.py").write_text("from ..adapters import errors  # noqa: F401\n")
    (core / "ring_a.py").write_text("from . import ring_b  # noqa: F401\n")
    (core / "ring_b.py").write_text("from . import ring_a  # noqa: F401\n")
    (tmp_path / "pyhpa" / "fleet" / "nodeautoscalers" / "reach.py").write_text("from .. import engine  # noqa: F401\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    r = subprocess.run(_lint_imports(), cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode != 0
    assert "pyhpa.core.leak -> pyhpa.adapters.errors" in r.stdout
    assert "No cycles are allowed in pyhpa.core" in r.stdout, r.stdout[-3000:]
    assert "pyhpa.fleet.nodeautoscalers is not allowed to import pyhpa.fleet.engine" in r.stdout, r.stdout[-3000:]
    assert "1 kept, 3 broken" in r.stdout, r.stdout[-3000:]


PACKAGES = ("pyhpa", "kubedouble", "controlplane")
CHECKED = PACKAGES + ("benchmarks", "tools")
#: top-level names of this repository's modules: its packages and folders, and the benchmarks' scripts, which import
#: each other by bare name (``import world``)
OURS = frozenset(CHECKED) | {path.stem for path in (ROOT / "benchmarks").glob("*.py")}


def private_crossings(path: Path, source: str) -> list[str]:
    """Where the module at ``path`` takes another module's private name: ``from m import _x``, or ``m._x`` of a
    module ``m`` it imported from this repository (a standard library's documented ``os._exit`` is not ours)."""
    tree = ast.parse(source, str(path))
    ours: set[str] = set()  # names bound to modules of this repository
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            local = node.level > 0 or (node.module or "").split(".")[0] in OURS
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}")
                elif local:
                    ours.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    ours.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ours
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{path}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_a_module():
    """Each private name stays in its module (issue 41): what another module needs is public, with a docstring."""
    found = []
    for folder in CHECKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += private_crossings(path.relative_to(ROOT), path.read_text())
    assert found == [], "\n".join(found)


def test_a_private_name_taken_from_another_module_is_found():
    source = ("from .combine import _per_pod_target\nfrom . import sources\nimport os\n"
              "sources._samples()\nos._exit(0)\nfrom .x import __version__\n")
    assert private_crossings(Path("core/a.py"), source) == [
        "core/a.py:1: from .combine import _per_pod_target", "core/a.py:4: sources._samples"]
