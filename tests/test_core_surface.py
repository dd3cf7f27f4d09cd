"""Nobody outside ``pyhpa/core`` imports a private core name (read with ``ast``, not by running anything).

Public: ``pyhpa.core.__all__``; every non-underscore name of ``pyhpa.core.model`` (the plain types);
the ``__all__`` of any other core submodule. Private: everything else — ``_``-prefixed names anywhere,
and any name of a core submodule that does not list it (``normalize.store_scale_event`` must come from
``pyhpa.core``). Checked for ``from ... import`` (absolute and relative), ``import pyhpa.core.x as y``
followed by ``y.name``, and ``from pyhpa.core import submodule`` followed by ``submodule.name``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = "pyhpa.core"
SCANNED = ["pyhpa", "kubedouble", "benchmarks", "deploy", "tests"]
#: Owned by the lead's rework of reconcile/status (issue 11, the status-folding function): reported, not fixed here.
KNOWN: set = set()


def _public(module: str, name: str) -> bool:
    if name.startswith("_"):
        return False
    core = importlib.import_module(CORE)
    if module == CORE:
        return name in core.__all__
    mod = importlib.import_module(module)
    if module == f"{CORE}.model":
        return hasattr(mod, name)
    return name in getattr(mod, "__all__", ())


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _is_core(module: str) -> bool:
    return module == CORE or module.startswith(CORE + ".")


def violations_in(path: Path) -> set[tuple[str, str, str]]:
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[tuple[str, str, str]] = set()
    aliases: dict[str, str] = {}  # local name -> core module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            if not _is_core(module):
                continue
            for a in node.names:
                sub = f"{module}.{a.name}"
                if module == CORE and a.name not in importlib.import_module(CORE).__all__ and \
                        importlib.util.find_spec(sub) is not None:
                    aliases[a.asname or a.name] = sub  # a submodule: check what is used of it
                    continue
                if not _public(module, a.name):
                    found.add((rel, module, a.name))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if _is_core(a.name) and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            module = aliases[node.value.id]
            if not _public(module, node.attr):
                found.add((rel, module, node.attr))
    return found


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*.py")):
            if p.is_relative_to(ROOT / "pyhpa" / "core"):
                continue
            files.append(p)
    return files


def test_no_private_core_name_is_imported_from_outside_the_core():
    found = set()
    for p in scanned_files():
        found |= violations_in(p)
    assert found == set()


def test_the_checker_sees_private_imports(tmp_path):
    fake = tmp_path / "probe.py"
    fake.write_text(
        "from pyhpa.core.calculator import ReplicaCalculator, ceil_saturate\n"
        "from pyhpa.core.normalize import store_scale_event, _record\n"
        "from pyhpa.core import reconcile, decide\n"
        "import pyhpa.core.metrics as m\n"
        "reconcile._Sync\n"
        "m._fail\n"
        "m.describe\n", encoding="utf-8")
    found = {(mod, name) for _, mod, name in violations_in(fake)}
    assert found == {("pyhpa.core.normalize", "store_scale_event"), ("pyhpa.core.normalize", "_record"),
                     ("pyhpa.core.reconcile", "_Sync"), ("pyhpa.core.metrics", "_fail")}
