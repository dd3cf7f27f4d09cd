"""Issue 37: the control-plane build from an empty Go module cache. ``harness_overlay`` once asked ``go list -m -f
{{.Dir}} k8s.io/kubernetes`` for the module's folder before anything had downloaded it; ``go list -m`` does not
download, so every new machine failed before the build began (a machine that had built once hid it).

Offline: the module proxy is this machine's own module download cache (``GOPROXY=file://...``, which Go documents
for this), the module cache a new empty folder. Needs the control plane built once (so the download cache holds the
modules): counted as "control-plane tests not run" otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from control_plane_gate import require_control_plane

from controlplane.build import (
    HELM_PACKAGE,
    HELM_VERSION,
    MODULE,
    UPSTREAM_PACKAGE,
    BuildError,
    _go,
    build,
    harness_overlay,
    module_dir,
)


@pytest.fixture
def empty_module_cache(tmp_path) -> dict:
    require_control_plane()
    go = _go()
    warm = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    proxy = Path(warm) / "cache" / "download"
    assert (proxy / "k8s.io" / "kubernetes" / "@v").is_dir(), f"{proxy} holds no k8s.io/kubernetes"
    env = {**os.environ, "GOMODCACHE": str(tmp_path / "modcache"), "GOPROXY": f"file://{proxy}",
           "GOFLAGS": "-mod=readonly", "GONOSUMDB": "*", "GOSUMDB": "off"}
    yield env
    subprocess.run(["chmod", "-R", "u+w", str(tmp_path / "modcache")], check=False)  # Go's cache is read-only


def test_go_list_alone_does_not_download_the_module(empty_module_cache):
    """What the build once relied on: on an empty module cache Go prints an empty folder."""
    res = subprocess.run([_go(), "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"], cwd=MODULE,
                         env=empty_module_cache, capture_output=True, text=True)
    assert res.stdout.strip() == ""


def test_the_harness_overlay_downloads_upstream_s_package_into_an_empty_module_cache(empty_module_cache):
    folder = module_dir(_go(), empty_module_cache, "k8s.io/kubernetes")
    assert folder.is_relative_to(empty_module_cache["GOMODCACHE"])
    overlay = harness_overlay(_go(), empty_module_cache)["Replace"]
    upstream = {Path(src).name for src in overlay.values()}
    assert {"horizontal.go", "replica_calculator.go"} <= upstream
    assert all(Path(src).is_file() and Path(src).parent == folder / UPSTREAM_PACKAGE for src in overlay.values())
    assert all(Path(dst).parent == MODULE / "internal" / "podautoscaler" for dst in overlay)


FAKE_GO = """#!/bin/sh
case "$1 $2" in
  "mod download") echo '{"Dir": "%s"}' ;;
  "list -deps") echo "helm.sh/helm/v4/cmd/helm" ;;
  "install -v") echo "go: helm.sh/helm/v4@v4.3.1: Get \\"https://proxy.golang.org/helm.sh/helm/v4/@v/v4.3.1.zip\\": dial tcp: lookup proxy.golang.org: no such host" >&2; exit 1 ;;
  *) exit 2 ;;
esac
"""


def test_a_failed_helm_install_says_the_command_its_exit_code_go_s_words_and_the_fix(tmp_path, monkeypatch):
    """helm is built in its own module (``go install <package>@<version>``): when Go fails, the BuildError names that
    command, its exit code and Go's last lines, and the fix (no control plane needed: a ``go`` that fails)."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "go").write_text(FAKE_GO % tmp_path)
    (fake / "go").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYHPA_CONTROL_PLANE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BuildError) as caught:
        build(names=("helm",), log=lambda _: None)
    message = str(caught.value)
    assert message.startswith(f"go install {HELM_PACKAGE}@{HELM_VERSION} failed (exit code 1): go: helm.sh/helm/v4")
    assert "no such host" in message
    assert "go env GOPROXY" in caught.value.fix and caught.value.fix.endswith("python -m controlplane build")
    assert not (tmp_path / "cache" / "bin" / "helm").exists() and not (tmp_path / "cache" / "bin" / ".stamp-helm").exists()


def test_the_pinned_versions_are_the_ones_the_go_modules_build():
    """``python -m controlplane version`` and the docs name KWOK_VERSION, METRICS_SERVER_VERSION and
    PROMETHEUS_ADAPTER_VERSION; the binaries are what tools/kube's and tools/adapter's go.mod require, as tools."""
    import re

    from controlplane.build import ADAPTER_MODULE, MODULE, TOOL_PACKAGES

    for name, (package, version, _, module) in TOOL_PACKAGES.items():
        text = (module / "go.mod").read_text()
        root = "/".join(package.split("/")[:2])  # sigs.k8s.io/<project>
        assert re.search(rf"^\s+{re.escape(root)} {re.escape(version)}\b", text, re.M), (name, root, version)
        tools = re.search(r"^tool \(?([^)]*)\)?", text, re.M | re.S).group(1)
        assert package in tools.split(), (name, tools)
    assert TOOL_PACKAGES["prometheus-adapter"][3] == ADAPTER_MODULE and TOOL_PACKAGES["kwok"][3] == MODULE
    # the adapter's module requires nothing but the adapter: it builds with exactly its go.mod's versions
    direct = [line.split()[0] for line in (ADAPTER_MODULE / "go.mod").read_text().splitlines()
              if line.startswith("\t") and "// indirect" not in line]
    assert direct in ([], ["sigs.k8s.io/prometheus-adapter"])
