"""Build kube-apiserver, kube-controller-manager, kubectl and etcd v1.37.2 from the Go modules, cached by version.

The Go module is ``tools/kube`` (its go.mod requires ``k8s.io/kubernetes v1.37.2`` and replaces each staging
module with its published ``v0.37.2``; etcd is the version upstream's go.mod pins). The binaries go to
``<cache>/bin`` where ``<cache>`` is ``$PYHPA_CONTROL_PLANE_CACHE`` or ``~/.cache/pyhpa/control-plane/v1.37.2``;
a stamp there holds a hash of the module's sources, so a changed go.mod or main rebuilds and an unchanged one is
reused (a cold build takes 15-35 minutes on two cores; Go's own build cache, ``go env GOCACHE``, is kept too).

Errors: ``BuildError`` with one line saying what is missing (no ``go``) or the last lines Go printed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

KUBERNETES_VERSION = "v1.37.2"
MODULE = Path(__file__).resolve().parent.parent / "tools" / "kube"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
_VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


class BuildError(RuntimeError):
    """The control plane could not be built (one line: why)."""


def cache_dir(version: str = KUBERNETES_VERSION) -> Path:
    """Where this version's binaries, certificates and run folders live (created on use)."""
    root = os.environ.get("PYHPA_CONTROL_PLANE_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "pyhpa" / "control-plane" / version


def bin_dir(version: str = KUBERNETES_VERSION) -> Path:
    return cache_dir(version) / "bin"


def ldflags(version: str = KUBERNETES_VERSION) -> str:
    """``-X`` flags that make the binaries report ``version`` (``kube-apiserver --version`` prints it), as
    upstream's hack/lib/version.sh sets them."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in _VERSION_PACKAGES:
        flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}", f"-X {pkg}.gitMinor={minor}",
                  f"-X {pkg}.gitTreeState=clean"]
    return " ".join(flags)


def source_hash(version: str = KUBERNETES_VERSION) -> str:
    """A hash of what the build depends on: go.mod, go.sum, every .go file of the module, the flags."""
    h = hashlib.sha256(ldflags(version).encode())
    for path in sorted(p for p in MODULE.rglob("*") if p.is_file() and (p.suffix == ".go" or p.name in ("go.mod", "go.sum"))):
        h.update(str(path.relative_to(MODULE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def kubectl(version: str = KUBERNETES_VERSION) -> Optional[str]:
    """The built kubectl of ``version`` (what tests and CI use: Debian's is 1.20), or None before the build."""
    path = bin_dir(version) / "kubectl"
    return str(path) if path.is_file() else None


def is_built(version: str = KUBERNETES_VERSION) -> bool:
    """Whether the cached binaries were built from today's sources."""
    stamp = cache_dir(version) / "bin" / ".stamp"
    return stamp.is_file() and stamp.read_text().strip() == source_hash(version) \
        and all((bin_dir(version) / b).is_file() for b in BINARIES)


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
    if go is None:
        raise BuildError("the control plane is built with Go (1.26 or newer), and `go` is not on PATH: "
                         "install it (https://go.dev/dl/) and run again")
    return go


def build(version: str = KUBERNETES_VERSION, *, force: bool = False,
          progress: Optional[Callable[[int, int], None]] = None, log: Callable[[str], None] = print) -> Path:
    """Build the binaries into ``bin_dir(version)`` unless they are there already; returns that folder.

    ``progress(done, total)`` is called as Go compiles packages (``go build -v`` names each package it compiles;
    the total is the module's dependency count from ``go list -deps``). Raises ``BuildError``."""
    out = bin_dir(version)
    if not force and is_built(version):
        return out
    go = _go()
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false -mod=readonly"}
    total = _count_packages(go, env)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / "bin.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    log(f"building kube-apiserver, kube-controller-manager, kubectl and etcd {version} from the Go modules into "
        f"{out} (cold: 15-35 minutes on two cores; cached afterwards)")
    started = time.monotonic()
    cmd = [go, "build", "-v", "-trimpath", "-ldflags", ldflags(version), "-o", str(tmp) + "/", "./cmd/..."]
    proc = subprocess.Popen(cmd, cwd=MODULE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done, tail = 0, []
    assert proc.stderr is not None
    for line in proc.stderr:
        tail = (tail + [line.rstrip()])[-20:]
        if not line.startswith(("go: ", "#")) and " " not in line.strip():
            done += 1
            if progress:
                progress(min(done, total), total)
    if proc.wait() != 0:
        raise BuildError(f"go build failed in {MODULE}: " + " | ".join(l for l in tail if l)[-2000:])
    for name in BINARIES:
        os.replace(tmp / name, out / name)
    shutil.rmtree(tmp, ignore_errors=True)
    (out / ".stamp").write_text(source_hash(version) + "\n")
    if progress:
        progress(total, total)
    log(f"built in {time.monotonic() - started:.0f} s")
    return out


def _count_packages(go: str, env: dict) -> int:
    res = subprocess.run([go, "list", "-deps", "./cmd/..."], cwd=MODULE, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise BuildError(f"go list failed in {MODULE}: {res.stderr.strip().splitlines()[-1:] or ['?']}")
    return max(1, len(res.stdout.split()))


def build_with_bar(version: str = KUBERNETES_VERSION) -> Path:
    """``build`` with a progress bar on a terminal (rich), or a line each 10 % otherwise (CI logs)."""
    if is_built(version):
        return bin_dir(version)
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("go build"), BarColumn(), MofNCompleteColumn(), TextColumn("packages"),
                      TimeElapsedColumn(), transient=True) as bar:
            task = bar.add_task("build", total=None)
            return build(version, progress=lambda d, t: bar.update(task, completed=d, total=t),
                         log=lambda s: bar.console.print(s))
    shown = [-1]

    def tenths(done: int, total: int) -> None:
        step = done * 10 // total
        if step > shown[0]:
            shown[0] = step
            print(f"go build: {done}/{total} packages ({step * 10} %)", file=sys.stderr, flush=True)

    return build(version, progress=tenths, log=lambda s: print(s, file=sys.stderr, flush=True))
