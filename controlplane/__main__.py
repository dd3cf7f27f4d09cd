"""``python -m controlplane build|up|version``: build and start the local v1.37.2 cluster.

    python -m controlplane build      # go build into ~/.cache/pyhpa/control-plane/v1.37.2/bin (cached)
    python -m controlplane up         # build if needed, start, install the HorizontalAutoscaler CRD; Ctrl-C stops
    python -m controlplane version    # what each cached binary says of its version

Its help and errors follow pyhpa's conventions (docs/cli.md; ``pyhpa.cli.help``): plain help ending with
examples, ``-h``, click's errors as one line with exit code 2.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from pyhpa.cli.help import Command, examples, typer_app

from .build import (
    HELM_VERSION,
    KUBERNETES_VERSION,
    KWOK_VERSION,
    METRICS_SERVER_VERSION,
    PROMETHEUS_ADAPTER_VERSION,
    BuildError,
    bin_dir,
    build_with_bar,
    cache_dir,
    not_built_reason,
)
from .cluster import DEFAULT_CONTROLLERS, ControlPlane, ControlPlaneError
from .prometheus import PrometheusError, PrometheusServer, prometheus_binary

EXAMPLES = {
    "build": examples("python -m controlplane build    # once: 25-45 minutes on two cores"),
    "version": examples("python -m controlplane version  # what the cached build is"),
    "up": examples("python -m controlplane up            # then export the KUBECONFIG",
                   "python -m controlplane up --nodes 5  # five KWOK nodes",
                   "python -m controlplane up --prometheus  # Prometheus + adapter too",
                   "python -m controlplane up --prometheus-url http://127.0.0.1:9090",
                   "python -m controlplane up --no-crd   # without pyhpa's CRD"),
}
app = typer_app(help="Build and run a local Kubernetes v1.37.2 cluster without containers (etcd, kube-apiserver, "
                     f"kube-controller-manager, kube-scheduler, kubectl; KWOK {KWOK_VERSION} nodes, metrics-server "
                     f"{METRICS_SERVER_VERSION}, prometheus-adapter {PROMETHEUS_ADAPTER_VERSION}; and helm "
                     f"{HELM_VERSION}) for pyhpa, on loopback only.",
                epilog=examples("python -m controlplane build", "python -m controlplane up",
                                "python -m controlplane version"))
CRD = Path(__file__).resolve().parent.parent / "pyhpa" / "data" / "deploy" / "crd.yaml"


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@app.command(cls=Command, epilog=EXAMPLES["build"])
def build(result_file: Optional[Path] = typer.Option(
        None, "--result-file", metavar="FILE",
        help="Also write the outcome there when done: an empty file when built, else the one-line reason and the "
             "command that fixes it (the test suite's background build reads it).")) -> None:
    """Build the binaries, hpa-decide (upstream's HPA controller deciding snapshots: tools/upstream/hpa-decide)
    and helm (Helm v4, pinned; the Helm chart's tests) (25-45 minutes cold on two cores; then cached by version)."""
    try:
        folder = build_with_bar()
    except BuildError as e:
        _write_result(result_file, not_built_reason(e))
        _fail(f"{e}. Fix: {e.fix}")
    _write_result(result_file, "")
    typer.echo(folder)


def _write_result(path: Optional[Path], reason: str) -> None:
    if path is not None:
        partial = path.with_name(path.name + ".partial")
        partial.write_text(reason)
        partial.replace(path)  # whole or absent: a reader never sees half of it


#: binary -> the arguments that make it print its version (prometheus-adapter has no such flag: the module version
#: Go recorded in the binary, ``go version -m``)
VERSION_FLAGS = {"kube-apiserver": ["--version"], "kube-controller-manager": ["--version"],
                 "kube-scheduler": ["--version"], "kubectl": ["version", "--client"], "etcd": ["--version"],
                 "kwok": ["--version"], "metrics-server": ["--version"], "prometheus-adapter": None,
                 "helm": ["version", "--short"]}


@app.command(cls=Command, epilog=EXAMPLES["version"])
def version() -> None:
    """Print what each cached binary says of its version (one line each: the binary, then its first line)."""
    import subprocess

    for name, flags in VERSION_FLAGS.items():
        exe = bin_dir() / name
        if not exe.is_file():
            _fail(f"{exe} is not built yet: run python -m controlplane build")
        if flags is None:
            res = subprocess.run(["go", "version", "-m", str(exe)], capture_output=True, text=True, timeout=60)
            said = [" ".join(line.split()[1:3]) for line in res.stdout.splitlines()
                    if line.split()[:2] in (["mod", "sigs.k8s.io/prometheus-adapter"],
                                            ["dep", "sigs.k8s.io/prometheus-adapter"])]
        else:
            res = subprocess.run([str(exe), *flags], capture_output=True, text=True, timeout=60)
            said = (res.stdout.strip() or res.stderr.strip()).splitlines()
        typer.echo(f"{name}: {said[0] if said else '(printed nothing, exit code ' + str(res.returncode) + ')'}")


@app.command(cls=Command, epilog=EXAMPLES["up"])
def up(home: Optional[Path] = typer.Option(None, "--home", metavar="DIR",
                                          help="Certificates, logs and kubeconfigs (default: <cache>/run)."),
       controllers: str = typer.Option(",".join(DEFAULT_CONTROLLERS), "--controllers", metavar="LIST",
                                       help="kube-controller-manager --controllers (add horizontalpodautoscaling "
                                            "to run upstream's HPA controller beside pyhpa)."),
       nodes: int = typer.Option(2, "--nodes", min=1, max=1000, metavar="N",
                                 help="KWOK nodes to start (each 16 CPUs, 64Gi, 110 pods allocatable)."),
       prometheus_url: Optional[str] = typer.Option(
           None, "--prometheus-url", metavar="URL",
           help="Also run prometheus-adapter on this Prometheus (http://HOST:PORT) with the repository's rules "
                "(controlplane/manifests/prometheus-adapter-config.yaml): custom.metrics.k8s.io and "
                "external.metrics.k8s.io."),
       prometheus: bool = typer.Option(
           False, "--prometheus",
           help="Also start a Prometheus (Debian's prometheus on PATH) scraping every KWOK node's kubelet "
                "/metrics/resource each 15 s, and prometheus-adapter on it (as --prometheus-url does): the Pods "
                "metric cpu_usage of every pod, and whatever the rules make of what you add to it."),
       crd: bool = typer.Option(True, "--crd/--no-crd", help="Install the HorizontalAutoscaler CRD and the namespace pyhpa-system.")) -> None:
    """Build if needed, start the cluster (control plane, KWOK nodes, metrics-server; Prometheus and
    prometheus-adapter when asked), serve until Ctrl-C."""
    if prometheus_url is not None and not prometheus_url.startswith(("http://", "https://")):
        _fail(f"--prometheus-url: expected http://HOST:PORT or https://HOST:PORT, got {prometheus_url!r}")
    if prometheus and prometheus_url is not None:
        _fail("--prometheus and --prometheus-url: give one (--prometheus starts its own)")
    if prometheus and prometheus_binary() is None:
        _fail("--prometheus: prometheus is not on PATH (Debian: apt-get install prometheus; or give --prometheus-url)")
    try:
        build_with_bar()
    except BuildError as e:
        _fail(f"{e}. Fix: {e.fix}")
    plane = ControlPlane(home or cache_dir() / "run", controllers=tuple(c for c in controllers.split(",") if c),
                         nodes=nodes)
    prom: Optional[PrometheusServer] = None
    try:
        plane.start()
        if prometheus:
            prom = PrometheusServer(jobs=[plane.kubelet_scrape_job("15s")], scrape_interval="15s").__enter__()
            prometheus_url = prom.url
        if prometheus_url is not None:
            plane.start_adapter(prometheus_url)
        if crd:
            plane.run_kubectl("apply", "--server-side", "-f", str(CRD))
            # the namespace of pyhpa run's default Lease (--leader-elect-resource-namespace), as the deploy kit has it
            plane.run_kubectl("create", "namespace", "pyhpa-system")
    except (ControlPlaneError, PrometheusError, OSError) as e:
        _stop(plane, prom)
        _fail(str(e))
    kubeconfig = plane.admin_kubeconfig
    adapter = ""
    if prometheus_url is not None:
        scraping = " (it scrapes every node's kubelet /metrics/resource)" if prom is not None else ""
        adapter = (f"Prometheus: {prometheus_url}{scraping}; prometheus-adapter serves custom.metrics.k8s.io and "
                   "external.metrics.k8s.io from it.\n")
    typer.echo(f"Kubernetes {KUBERNETES_VERSION} is up at {plane.url} (logs: {plane.home / 'logs'}).\n"
               f"  export KUBECONFIG={kubeconfig}\n"
               f"  {plane.kubectl} get nodes\n"
               f"  pyhpa run --kubeconfig {kubeconfig}\n"
               "Pod usage (KWOK reports it, metrics-server serves it): annotate pods (or a pod template) "
               "kwok.x-k8s.io/usage-cpu=250m.\n"
               f"{adapter}"
               "Ctrl-C stops it.", err=False)
    sys.stdout.flush()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1):
        for comp in plane.components.values():
            if not comp.running():
                _stop(plane, prom)
                _fail(f"{comp.name} exited: {comp.tail()} (log: {comp.log})")
        if prom is not None and not prom.running():
            _stop(plane, prom)
            _fail("prometheus exited")
    _stop(plane, prom)


def _stop(plane: ControlPlane, prom: Optional[PrometheusServer]) -> None:
    plane.stop()
    if prom is not None:
        prom.__exit__()


if __name__ == "__main__":
    app(prog_name="python -m controlplane")
