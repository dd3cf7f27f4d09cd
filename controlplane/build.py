"""Build the local cluster's binaries from the Go modules, cached by version: kube-apiserver,
kube-controller-manager, kube-scheduler, kubectl, etcd and hpa-decide v1.37.2, KWOK v0.8.0, metrics-server v0.9.0,
prometheus-adapter v0.12.0 and helm v4.3.1.

The Go module is ``tools/kube`` (its go.mod requires ``k8s.io/kubernetes v1.37.2`` and replaces each staging
module with its published ``v0.37.2``; etcd is the version upstream's go.mod pins). KWOK and metrics-server are
``tool`` packages of the same module: they build against the same ``k8s.io/*`` v0.37.2 (their own go.mod asks for
v0.36), so the packages they share with the control plane compile once; the few libraries they would raise above
upstream's pins are replaced back to upstream's versions, so the upstream binaries are built from upstream's own
versions. The binaries go to ``<cache>/bin`` where ``<cache>`` is ``$PYHPA_CONTROL_PLANE_CACHE`` or
``~/.cache/pyhpa/control-plane/v1.37.2``; a stamp per binary there (``.stamp-<name>``) holds a hash of what it is
built from (go.mod, go.sum, the flags, its main's folder and the module's packages it uses), so a changed go.mod or
main rebuilds and an unchanged one is reused (a cold build takes 25-45 minutes on two cores; Go's own build cache,
``go env GOCACHE``, is kept too).

``hpa-decide`` (tools/kube/cmd/hpa-decide: upstream's HPA controller deciding pyhpa's snapshots) is built with
``go build -tags pyhpa_harness -overlay``: the overlay makes the package ``tools/kube/internal/podautoscaler``
out of upstream's own files of ``k8s.io/kubernetes/pkg/controller/podautoscaler`` (read from the module cache,
unchanged; Go refuses to overlay files inside the module cache itself) plus ``zz_pyhpa_harness.go``, a door into
the package's unexported state (its controller memory, one worker step).

``helm`` (Helm v4, what tests/test_helm_chart.py lints and renders deploy/helm/pyhpa with) is built in its own
module, helm's own go.mod at the pinned version (``go install <package>@<version>``, GOBIN the same folder), not
tools/kube's; its stamp hashes the package, the version and the flags. ``prometheus-adapter`` (its go.mod pins
``k8s.io/*`` v0.30 and custom-metrics-apiserver v1.30, which do not build against v0.37) is the ``tool`` of a
module of its own, ``tools/adapter``, which requires nothing else: it builds with exactly its go.mod's versions
(``go install ...@v0.12.0`` would too, but it first asks the module proxy for the version list, which the proxy
this project uses refuses).

Errors: ``BuildError`` with one line saying what is missing (no ``go``) or the last lines Go printed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

KUBERNETES_VERSION = "v1.37.2"
MODULE = Path(__file__).resolve().parent.parent / "tools" / "kube"
HELM_VERSION = "v4.3.1"
HELM_PACKAGE = "helm.sh/helm/v4/cmd/helm"
KWOK_VERSION = "v0.8.0"
METRICS_SERVER_VERSION = "v0.9.0"
PROMETHEUS_ADAPTER_VERSION = "v0.12.0"
ADAPTER_MODULE = MODULE.parent / "adapter"
#: binaries built by ``go install <package>@<version>`` in their own module (their go.mod, not MODULE's): name ->
#: (package, version, ldflags); helm's ldflags are those of its Makefile (``helm version`` prints the version)
OWN_MODULE = {
    "helm": (HELM_PACKAGE, HELM_VERSION, f"-s -w -X helm.sh/helm/v4/internal/version.version={HELM_VERSION} "
                                         "-X helm.sh/helm/v4/internal/version.gitTreeState=clean"),
}
#: binaries that are not our own mains (``MODULE/cmd/<name>``) but ``tool`` packages of a go.mod of ours: name ->
#: (package, version its go.mod requires, ldflags as the project's Makefile sets them, the module's folder).
#: prometheus-adapter's own module is ADAPTER_MODULE (tools/adapter: its k8s.io/* v0.30 do not build against
#: v0.37); its Makefile sets no version flag and it has no --version
TOOL_PACKAGES = {
    "kwok": ("sigs.k8s.io/kwok/cmd/kwok", KWOK_VERSION, "-s -w", MODULE),  # pkg/consts.Version is "0.8.0" already
    "metrics-server": ("sigs.k8s.io/metrics-server/cmd/metrics-server", METRICS_SERVER_VERSION,
                       f"-s -w -X k8s.io/client-go/pkg/version.gitVersion={METRICS_SERVER_VERSION}", MODULE),
    "prometheus-adapter": ("sigs.k8s.io/prometheus-adapter/cmd/adapter", PROMETHEUS_ADAPTER_VERSION, "-s -w",
                           ADAPTER_MODULE),
}
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "hpa-decide", "kwok",
            "metrics-server", "prometheus-adapter", "helm")
#: the control plane's own binaries (what ``ControlPlane`` starts; the rest are for tests, the chart and the
#: metrics pipeline's adapter)
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok",
                 "metrics-server")
#: mains built against upstream's podautoscaler package rebuilt with the harness (``harness_overlay``)
HARNESS_BINARIES = ("hpa-decide",)
HARNESS_TAG = "pyhpa_harness"
HARNESS_PACKAGE = "internal/podautoscaler"  # in MODULE: the harness file, and upstream's files by the overlay
UPSTREAM_PACKAGE = "pkg/controller/podautoscaler"  # in the k8s.io/kubernetes module
_VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


class BuildError(RuntimeError):
    """The control plane could not be built: ``str(e)`` is one line saying what failed, ``e.fix`` the one command
    (or step) that fixes it."""

    def __init__(self, message: str, fix: str = "python -m controlplane build"):
        super().__init__(message)
        self.fix = fix


#: the skip reason of every test that needs the built control plane and did not get it starts with this (the root
#: conftest counts those tests as not run in pytest's summary line)
NOT_BUILT = "control plane not built"


def not_built_reason(error: BuildError) -> str:
    """The one-line skip reason of a test that needs the control plane: what failed and the command that fixes it."""
    return f"{NOT_BUILT}: {error}. Fix: {error.fix}"


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


def binary_ldflags(name: str, version: str = KUBERNETES_VERSION) -> str:
    """The ``-ldflags`` binary ``name`` of MODULE is linked with: Kubernetes' version flags (``ldflags``) for
    upstream's mains, the project's own for a ``TOOL_PACKAGES`` binary (KWOK, metrics-server)."""
    return TOOL_PACKAGES[name][2] if name in TOOL_PACKAGES else ldflags(version)


def package(name: str) -> str:
    """The Go package binary ``name`` of MODULE is built from: ``./cmd/<name>`` or its ``TOOL_PACKAGES`` path."""
    return TOOL_PACKAGES[name][0] if name in TOOL_PACKAGES else f"./cmd/{name}"


def module_of(name: str) -> Path:
    """The folder of the go.mod binary ``name`` is built in (MODULE, or tools/adapter for prometheus-adapter)."""
    return TOOL_PACKAGES[name][3] if name in TOOL_PACKAGES else MODULE


def source_hash(version: str = KUBERNETES_VERSION, name: str = "kube-apiserver") -> str:
    """A hash of what binary ``name`` is built from: go.mod, go.sum, the flags, every .go file of its main's
    folder and, for a harness binary, of the harness package (upstream's files are pinned by go.sum); for a binary
    of its own module (``OWN_MODULE``: helm), its package, version and flags (go.sum of that version pins the rest)."""
    if name in OWN_MODULE:
        return hashlib.sha256(" ".join((name, *OWN_MODULE[name])).encode()).hexdigest()[:16]
    h = hashlib.sha256(binary_ldflags(name, version).encode())
    h.update(name.encode())
    dirs = [] if name in TOOL_PACKAGES else [MODULE / "cmd" / name]  # a tool's version is in go.mod and go.sum
    dirs += [MODULE / HARNESS_PACKAGE] if name in HARNESS_BINARIES else []
    module = module_of(name)
    files = [module / "go.mod", module / "go.sum"] + sorted(p for d in dirs for p in d.rglob("*.go") if p.is_file())
    for path in files:
        h.update(str(path.relative_to(module)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def kubectl(version: str = KUBERNETES_VERSION) -> Optional[str]:
    """The built kubectl of ``version`` (what tests and CI use: Debian's is 1.20), or None before the build."""
    path = bin_dir(version) / "kubectl"
    return str(path) if path.is_file() else None


def helm(version: str = KUBERNETES_VERSION) -> Optional[str]:
    """The built helm (``HELM_VERSION``), or None before the build."""
    path = bin_dir(version) / "helm"
    return str(path) if path.is_file() else None


def is_built(version: str = KUBERNETES_VERSION, names: Iterable[str] = BINARIES) -> bool:
    """Whether the cached binaries ``names`` were built from today's sources."""
    return not _stale(version, names)


def _stale(version: str, names: Iterable[str]) -> list[str]:
    out = []
    for name in names:
        stamp = bin_dir(version) / f".stamp-{name}"
        if not ((bin_dir(version) / name).is_file() and stamp.is_file()
                and stamp.read_text().strip() == source_hash(version, name)):
            out.append(name)
    return out


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
    if go is None:
        raise BuildError("the control plane is built with Go (1.26 or newer), and `go` is not on PATH",
                         fix="install Go 1.26 or newer (https://go.dev/dl/), then python -m controlplane build")
    return go


def build(version: str = KUBERNETES_VERSION, *, force: bool = False,
          progress: Optional[Callable[[int, int], None]] = None, log: Callable[[str], None] = print,
          names: Iterable[str] = BINARIES) -> Path:
    """Build the binaries ``names`` into ``bin_dir(version)`` unless they are there already; returns that folder.

    ``progress(done, total)`` is called as Go compiles packages (``go build -v`` names each package it compiles;
    the total is the dependency count from ``go list -deps``). Raises ``BuildError``."""
    out = bin_dir(version)
    names = tuple(names)
    unknown = [n for n in names if n not in BINARIES]
    if unknown:
        raise BuildError(f"unknown binary {unknown[0]!r} (known: {', '.join(BINARIES)})")
    if not force and not _stale(version, names):
        return out
    go = _go()
    out.mkdir(parents=True, exist_ok=True)
    with _exclusive(cache_dir(version) / ".build.lock", log):
        # another process (a second test suite on this machine) may have built them while this one waited
        todo = list(names) if force else _stale(version, names)
        if todo:
            _build(go, version, todo, progress, log)
    return out


@contextlib.contextmanager
def _exclusive(path: Path, log: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (``flock``): two builds into one cache folder would overwrite each
    other's half-built files; the second waits for the first (and then finds the binaries built)."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another build of the control plane holds {path}: waiting for it to end")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(go: str, version: str, todo: list[str], progress: Optional[Callable[[int, int], None]],
           log: Callable[[str], None]) -> None:
    started = time.monotonic()
    out = bin_dir(version)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false -mod=readonly"}
    tmp = out.parent / "bin.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    plain = [n for n in todo if n not in HARNESS_BINARIES and n not in OWN_MODULE and n not in TOOL_PACKAGES]
    harness = [n for n in todo if n in HARNESS_BINARIES]
    own = [n for n in todo if n in OWN_MODULE]
    # (go build flags, binaries): one `go build` each (its own -ldflags; shared packages compile once), the
    # cluster's binaries (CONTROL_PLANE) first, so what waits for them (the e2e tier) starts before the rest is built
    groups = []
    if plain:
        groups.append(([], plain))
    groups += [([], [n]) for n in todo if n in TOOL_PACKAGES and module_of(n) == MODULE]
    if harness:
        overlay = tmp / "overlay.json"
        overlay.write_text(json.dumps(harness_overlay(go, env)))
        groups.append((["-tags", HARNESS_TAG, "-overlay", str(overlay)], harness))
    groups += [([], [n]) for n in todo if n in TOOL_PACKAGES and module_of(n) != MODULE]  # shares nothing
    log("resolving the Go modules (from the module proxy when the module cache is empty: a few minutes)")
    total = sum(_count_packages(go, env, flags, group, module_of(group[0])) for flags, group in groups)
    total += sum(_count_own_packages(go, env, tmp, name) for name in own)
    pinned = {**{n: v[1] for n, v in OWN_MODULE.items()}, **{n: v[1] for n, v in TOOL_PACKAGES.items()}}
    what = ", ".join(f"{n} {pinned[n]}" if n in pinned else n for n in todo)
    log(f"building {what} (Kubernetes {version}) from the Go modules into {out} (cold: 25-45 minutes on two "
        f"cores; cached afterwards)")
    done = 0
    for flags, group in groups:
        # one tool a build, written under its own name (prometheus-adapter's package is called adapter)
        out_path = str(tmp / group[0]) if group[0] in TOOL_PACKAGES else str(tmp) + "/"
        cmd = [go, "build", "-v", "-trimpath", *flags, "-ldflags", binary_ldflags(group[0], version),
               "-o", out_path, *(package(n) for n in group)]
        module = module_of(group[0])
        code, tail, done = _run_go(cmd, module, env, done, total, progress)
        if code != 0:
            raise BuildError(f"go build failed in {module}: " + " | ".join(t for t in tail if t)[-2000:])
        for name in group:
            os.replace(tmp / name, out / name)
            (out / f".stamp-{name}").write_text(source_hash(version, name) + "\n")
    for name in own:
        done = _install_own(go, env, tmp, name, done, total, progress)
        os.replace(tmp / name, out / name)
        (out / f".stamp-{name}").write_text(source_hash(version, name) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    if progress:
        progress(total, total)
    log(f"built in {time.monotonic() - started:.0f} s")


def _run_go(cmd: list[str], cwd: Path, env: dict, done: int, total: int,
            progress: Optional[Callable[[int, int], None]]) -> tuple[int, list[str], int]:
    """Run ``go build -v`` or ``go install -v`` (``cmd``) in ``cwd``: (its exit code, its last 20 lines of stderr,
    ``done`` plus the packages it compiled: ``-v`` names each on a line of its own), ``progress(done, total)``
    called at each."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tail: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        tail = (tail + [line.rstrip()])[-20:]
        if not line.startswith(("go: ", "#")) and " " not in line.strip():
            done += 1
            if progress:
                progress(min(done, total), total)
    return proc.wait(), tail, done


def _own_env(env: dict, gobin: Path) -> dict:
    """The environment of ``go install <package>@<version>``: outside any module or workspace (its own go.mod
    decides; ``-mod`` is not for it), into ``gobin``."""
    return {**env, "GOBIN": str(gobin), "GOWORK": "off", "GOFLAGS": "-buildvcs=false"}


def _install_own(go: str, env: dict, tmp: Path, name: str, done: int, total: int,
                 progress: Optional[Callable[[int, int], None]]) -> int:
    """``go install -v <package>@<version>`` of binary ``name`` of ``OWN_MODULE`` into ``tmp``; returns ``done``
    plus the packages it compiled. Raises ``BuildError`` with the command, its exit code and Go's last lines."""
    package, pinned, flags = OWN_MODULE[name]
    cmd = [go, "install", "-v", "-trimpath", "-ldflags", flags, f"{package}@{pinned}"]
    code, tail, done = _run_go(cmd, tmp, _own_env(env, tmp), done, total, progress)
    if code != 0 or not (tmp / name).is_file():
        last = " | ".join(t for t in tail if t)[-2000:] or "no output"
        raise BuildError(f"go install {package}@{pinned} failed (exit code {code}): {last}",
                         fix=f"make the Go module proxy reachable (go env GOPROXY; {name} {pinned} is "
                             f"{package.split('/cmd/')[0]} there), then python -m controlplane build")
    return done


def _count_own_packages(go: str, env: dict, tmp: Path, name: str) -> int:
    """How many packages ``go install`` of ``name`` compiles: ``go list -deps`` in its module, downloaded first
    (``go mod download -json <module>@<version>``; the module cache may be empty)."""
    package, pinned, _ = OWN_MODULE[name]
    module = package.split("/cmd/")[0]
    res = subprocess.run([go, "mod", "download", "-json", f"{module}@{pinned}"], cwd=tmp,
                         env=_own_env(env, tmp), capture_output=True, text=True)
    try:
        folder = json.loads(res.stdout).get("Dir", "") if res.stdout.strip() else ""
    except json.JSONDecodeError:
        folder = ""
    if res.returncode != 0 or not folder:
        why = res.stdout.strip()[-500:] or res.stderr.strip()[-500:] or "no output"
        raise BuildError(f"go mod download {module}@{pinned} failed (exit code {res.returncode}): {why}",
                         fix="make the Go module proxy reachable (go env GOPROXY), then python -m controlplane build")
    res = subprocess.run([go, "list", "-deps", "./" + package[len(module) + 1:]], cwd=folder,
                         env={**_own_env(env, tmp), "GOFLAGS": "-buildvcs=false -mod=readonly"},
                         capture_output=True, text=True)
    return max(1, len(res.stdout.split())) if res.returncode == 0 else 1  # only the progress bar's total


def harness_overlay(go: str, env: dict) -> dict:
    """``go build -overlay`` contents: ``MODULE/internal/podautoscaler/<file>.go`` for each non-test .go file of
    upstream's ``pkg/controller/podautoscaler`` in the module cache (the harness file is there already)."""
    src = module_dir(go, env, "k8s.io/kubernetes") / UPSTREAM_PACKAGE
    files = sorted(p for p in src.glob("*.go") if not p.name.endswith("_test.go"))
    if not files:
        raise BuildError(f"no Go files in {src}: the module cache is incomplete",
                         fix="go clean -modcache, then python -m controlplane build")
    return {"Replace": {str(MODULE / HARNESS_PACKAGE / p.name): str(p) for p in files}}


def module_dir(go: str, env: dict, module: str) -> Path:
    """The folder of ``module`` (at the version MODULE's go.mod requires) in the module cache, downloaded first if
    it is not there: ``go mod download -json`` (``go list -m -f {{.Dir}}`` does not download, and prints an empty
    folder on a machine whose module cache is empty). Raises ``BuildError`` with what Go said."""
    res = subprocess.run([go, "mod", "download", "-json", module], cwd=MODULE, env=env, capture_output=True, text=True)
    try:
        info = json.loads(res.stdout) if res.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    folder = info.get("Dir") or ""
    if res.returncode != 0 or not folder or not Path(folder).is_dir():
        why = info.get("Error") or res.stderr.strip()[-500:] or f"exit code {res.returncode}, no folder"
        raise BuildError(f"go mod download {module} failed in {MODULE}: {why}",
                         fix=f"make the Go module proxy reachable (go env GOPROXY), then cd {MODULE} && go mod download")
    return Path(folder)


def _count_packages(go: str, env: dict, flags: list[str], names: list[str], module: Path = MODULE) -> int:
    res = subprocess.run([go, "list", *flags, "-deps", *(package(n) for n in names)], cwd=module, env=env,
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise BuildError(f"go list failed in {module}: {res.stderr.strip().splitlines()[-1:] or ['?']}")
    return max(1, len(res.stdout.split()))


def build_with_bar(version: str = KUBERNETES_VERSION, names: Iterable[str] = BINARIES) -> Path:
    """``build`` with a progress bar on a terminal (rich), or a line each 10 % otherwise (CI logs)."""
    names = tuple(names)
    if is_built(version, names):
        return bin_dir(version)
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("go build"), BarColumn(), MofNCompleteColumn(), TextColumn("packages"),
                      TimeElapsedColumn(), transient=True) as bar:
            task = bar.add_task("build", total=None)
            return build(version, progress=lambda d, t: bar.update(task, completed=d, total=t),
                         log=lambda s: bar.console.print(s), names=names)
    shown = [-1]

    def tenths(done: int, total: int) -> None:
        step = done * 10 // total
        if step > shown[0]:
            shown[0] = step
            print(f"go build: {done}/{total} packages ({step * 10} %)", file=sys.stderr, flush=True)

    return build(version, progress=tenths, log=lambda s: print(s, file=sys.stderr, flush=True), names=names)
