"""A plain clone of the repository, for tests that must not see anything outside it (no ../shared, no
build leftovers): the files git tracks plus new files it does not ignore, copied to a directory."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SKIP = {".git", ".venv", "build", "dist", ".pytest_cache", ".hypothesis", "__pycache__", "simulate-output", "out"}


def repo_files() -> list[Path]:
    """Paths (relative to the root) a fresh clone of the current working tree would hold."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True, timeout=60).stdout
        return [Path(p) for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (e.g. an unpacked sdist)
        return [p.relative_to(ROOT) for p in ROOT.rglob("*")
                if p.is_file() and not _SKIP & set(p.relative_to(ROOT).parts) and not p.name.endswith(".egg-info")]


def clean_copy(dest: Path) -> Path:
    """Copy the repository's files to ``dest`` (created) and return it."""
    for rel in repo_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    return dest
