"""``pyhpa run`` (the live controller) and ``pyhpa manifests`` (its CRD, RBAC and Deployment)."""

from __future__ import annotations

import asyncio
import logging
import re
from enum import Enum
from importlib import resources
from typing import Optional

import typer

from .. import __version__
from ..adapters.errors import InputError
from ..adapters.parse import server_url

MANIFESTS = ("crd", "rbac", "deployment")


class Http(str, Enum):
    aiohttp = "aiohttp"
    httpx = "httpx"


# Options shared with `pyhpa snapshot` (same meaning, same defaults).
KUBECONFIG_OPTION = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config).")
CONTEXT_OPTION = typer.Option(None, "--context", help="kubeconfig context (default: the current one).")
SERVER_OPTION = typer.Option(None, "--server", help="API server URL without credentials, e.g. a kubedouble at http://127.0.0.1:8001.")
METRICS_TIMEOUT_OPTION = typer.Option(10.0, "--metrics-timeout", help="Seconds one metrics API call may take.")
API_TIMEOUT_OPTION = typer.Option(10.0, "--api-timeout", help="Seconds any other API call may take.")
TOLERANCE_OPTION = typer.Option(0.1, "--tolerance", help="Default tolerance, a fraction (spec.tolerance overrides; upstream: --horizontal-pod-autoscaler-tolerance).")
CPU_INITIALIZATION_PERIOD_OPTION = typer.Option(300.0, "--cpu-initialization-period", help="Seconds (spec.cpuInitializationPeriodSeconds overrides).")
INITIAL_READINESS_DELAY_OPTION = typer.Option(30.0, "--initial-readiness-delay", help="Seconds (spec.initialReadinessDelaySeconds overrides).")
DOWNSCALE_STABILIZATION_OPTION = typer.Option(300.0, "--downscale-stabilization", help="Seconds of the scale-down window when spec.behavior does not set one.")
SCALE_TO_ZERO_OPTION = typer.Option(True, "--scale-to-zero/--no-scale-to-zero", help="Feature gate HPAScaleToZero (minReplicas 0 with Object/External metrics; beta and on by default in Kubernetes v1.37).")
HTTP_OPTION = typer.Option(Http.aiohttp, "--http", help="Transport under lightkube: aiohttp (faster) or httpx (lightkube's stock).")
PROMETHEUS_URL_OPTION = typer.Option(None, "--prometheus-url", help="Default Prometheus server of type: Prometheus metrics (their prometheus.server overrides), and the history source of spec.prediction, e.g. http://prometheus:9090.")


class LogFormat(str, Enum):
    text = "text"
    json = "json"


class LogLevel(str, Enum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


class Shards(str, Enum):
    one = "1"
    auto = "auto"


class MemoryStoreKind(str, Enum):
    status = "status"
    process = "process"


class Part(str, Enum):
    all = "all"
    crd = "crd"
    rbac = "rbac"
    deployment = "deployment"


def run(
    kubeconfig: Optional[str] = KUBECONFIG_OPTION,
    context: Optional[str] = CONTEXT_OPTION,
    server: Optional[str] = SERVER_OPTION,
    namespace: Optional[list[str]] = typer.Option(None, "--namespace", "-n", help="Serve autoscalers of this namespace only (default: all); repeat it for several (at most 100)."),
    workers: int = typer.Option(5, "--workers", help="Concurrent syncs (upstream: --concurrent-horizontal-pod-autoscaler-syncs)."),
    sync_period: float = typer.Option(15.0, "--sync-period", help="Default seconds between syncs of one autoscaler (spec.syncPeriodSeconds overrides)."),
    jitter: float = typer.Option(0.1, "--jitter", help="Each resync lands within period*(1±jitter), at its namespace's own phase of the period, so autoscalers do not sync in bursts."),
    metrics_timeout: float = METRICS_TIMEOUT_OPTION,
    api_timeout: float = API_TIMEOUT_OPTION,
    health_host: str = typer.Option("0.0.0.0", "--health-host", help="Address of /healthz, /readyz and /metrics."),
    health_port: int = typer.Option(8080, "--health-port", help="Port of /healthz, /readyz and /metrics (-1: do not serve)."),
    tolerance: float = TOLERANCE_OPTION,
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD_OPTION,
    initial_readiness_delay: float = INITIAL_READINESS_DELAY_OPTION,
    downscale_stabilization: float = DOWNSCALE_STABILIZATION_OPTION,
    scale_to_zero: bool = SCALE_TO_ZERO_OPTION,
    http: Http = HTTP_OPTION,
    log_level: LogLevel = typer.Option(LogLevel.info, "--log-level", help="Least severe records logged."),
    log_format: LogFormat = typer.Option(LogFormat.text, "--log-format", help="text: one logfmt line per record (key=value); json: one JSON object per line."),
    prometheus_url: Optional[str] = PROMETHEUS_URL_OPTION,
    preview: bool = typer.Option(False, "--preview", help="Read-only: watch native autoscaling/v2 HPAs, log and export what pyhpa would decide next to what the cluster did; never writes."),
    leader_elect: Optional[bool] = typer.Option(None, "--leader-elect/--no-leader-elect", help="Only the holder of a coordination.k8s.io/v1 Lease syncs and writes; losing it exits with code 1 (default: on; off with --server or --preview)."),
    lease_duration: float = typer.Option(15.0, "--leader-elect-lease-duration", help="Seconds a standby waits after the last renewal it saw before taking the Lease over."),
    renew_deadline: float = typer.Option(10.0, "--leader-elect-renew-deadline", help="Seconds the leader may fail to renew before it stops writing and exits."),
    retry_period: float = typer.Option(2.0, "--leader-elect-retry-period", help="Seconds between attempts to acquire or renew the Lease."),
    lease_namespace: str = typer.Option("pyhpa-system", "--leader-elect-resource-namespace", help="Namespace of the Lease."),
    lease_name: str = typer.Option("pyhpa-controller", "--leader-elect-resource-name", help="Name of the Lease."),
    identity: str = typer.Option("", "--leader-elect-identity", help="Holder identity (default: <hostname>_<random>)."),
    memory_store: MemoryStoreKind = typer.Option(MemoryStoreKind.status, "--memory-store", help="Controller memory: status (kept in status.pyhpa, a new leader continues it) or process (upstream's: lost on restart)."),
    shards: Shards = typer.Option(Shards.one, "--shards", help="1: one replica syncs every autoscaler (with --leader-elect, the leader). auto: every replica holds a Lease of its own (group --leader-elect-resource-name, timings --leader-elect-*) and syncs its share, split by consistent hashing of namespace/name."),
) -> None:
    """Run the HPA controller: sync HorizontalAutoscaler objects (pyhpa.dev/v1alpha1) until SIGTERM/SIGINT."""
    from ..adapters.kubeconfig import load_config
    from ..controller import Settings, run_controller

    _logging(log_level.value, log_format.value)
    if server is not None:  # (--prometheus-url: checked by Settings)
        server_url(server, "--server")
    settings = Settings(
        namespaces=tuple(namespace or ()), workers=workers, sync_period_seconds=sync_period, jitter=jitter,
        metrics_timeout_seconds=metrics_timeout, api_timeout_seconds=api_timeout, health_host=health_host,
        health_port=None if health_port < 0 else health_port, tolerance=tolerance,
        cpu_initialization_period_seconds=cpu_initialization_period,
        initial_readiness_delay_seconds=initial_readiness_delay,
        downscale_stabilization_window_seconds=downscale_stabilization, scale_to_zero=scale_to_zero,
        prometheus_url=prometheus_url, preview=preview,
        leader_elect=(not server and not preview and shards != Shards.auto) if leader_elect is None else leader_elect,
        leader_elect_lease_duration_seconds=lease_duration, leader_elect_renew_deadline_seconds=renew_deadline,
        leader_elect_retry_period_seconds=retry_period, leader_elect_namespace=lease_namespace,
        leader_elect_name=lease_name, leader_elect_identity=identity, memory_store=memory_store.value,
        shards=shards.value,
    )
    config = load_config(kubeconfig, server, context)
    _run(run_controller(settings, config, http.value))


def _run(main) -> None:
    """Run the controller; a lost Lease is one line on stderr and exit code 1 (kube-controller-manager:
    "leaderelection lost", exit 1), so Kubernetes restarts the container as a standby."""
    from ..controller import LeadershipLost

    try:
        asyncio.run(main)
    except LeadershipLost as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None


def _logging(level: str, log_format: str = "text") -> None:
    """Root logging of ``pyhpa run``: one structured line per record on stderr (``pyhpa.controller.outputs.logs``)."""
    from ..controller.outputs.logs import formatter

    value = getattr(logging, level.upper(), None)
    if not isinstance(value, int):
        raise InputError(f"unknown log level {level!r} (want debug, info, warning or error)", field="--log-level")
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(log_format))
    logging.basicConfig(level=value, handlers=[handler])
    logging.getLogger("httpx2").setLevel(max(value, logging.WARNING))


def manifest_text(part: str) -> str:
    """One manifest file of ``pyhpa/data/deploy`` (identical to the repository's ``deploy/``)."""
    return resources.files("pyhpa").joinpath("data", "deploy", f"{part}.yaml").read_text(encoding="utf-8")


#: The image the shipped Deployment runs: what ``docker build -t pyhpa:VERSION .`` (the repository's Dockerfile) makes.
DEFAULT_IMAGE = f"pyhpa:{__version__}"
# An image reference as docker/containerd accept it: [registry[:port]/]path[:tag][@digest].
_IMAGE_REF = re.compile(r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
                        r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
_IMAGE_LINE = re.compile(r"^(\s*image:\s*)" + re.escape(DEFAULT_IMAGE) + r"\s*$", re.M)


def with_image(deployment: str, image: str) -> str:
    """The Deployment manifest text running ``image`` instead of ``DEFAULT_IMAGE``; InputError for a malformed
    reference."""
    if not _IMAGE_REF.match(image):
        raise InputError(f"not an image reference (want e.g. registry.example.com/pyhpa:{__version__}): {image!r}",
                         field="--image")
    text, n = _IMAGE_LINE.subn(lambda m: m.group(1) + image, deployment)
    if n != 1:  # pragma: no cover - the shipped file has exactly one
        raise InputError(f"the Deployment manifest has {n} lines 'image: {DEFAULT_IMAGE}'", field="--image")
    return text


def manifests(
    only: Part = typer.Option(Part.all, "--only", help="Print one part: crd, rbac or deployment."),
    image: str = typer.Option(DEFAULT_IMAGE, "--image", metavar="REF", help="The controller image the Deployment runs (build it with the repository's Dockerfile: docker build -t REF .)."),
) -> None:
    """Print the CRD, RBAC and Deployment of the controller (kubectl apply -f - ready)."""
    parts = MANIFESTS if only == Part.all else (only.value,)
    texts = [manifest_text(p).rstrip("\n") for p in parts]
    if "deployment" in parts and image != DEFAULT_IMAGE:
        i = parts.index("deployment")
        texts[i] = with_image(texts[i], image)
    typer.echo("\n---\n".join(texts))


RUN_EXAMPLES = (
    "pyhpa run --workers 5 --sync-period 15   # your kubeconfig (or in-cluster)",
    "pyhpa run --preview             # read-only beside native HPAs",
    "python -m kubedouble --port 8001 &       # no cluster: the API double",
    "pyhpa run --server http://127.0.0.1:8001",
)
MANIFESTS_EXAMPLES = (
    "pyhpa manifests | kubectl apply -f -",
    "pyhpa manifests --only crd",
    "pyhpa manifests --image registry.example.com/pyhpa:0.1.0 \\",
    "  | kubectl apply -f -",
)


def register(app: typer.Typer, input_errors, cls=None) -> None:
    """Add ``run`` and ``manifests`` to the CLI, with the one-line InputError wrapper (``cls``: the command class)."""
    from .help import examples

    app.command("run", cls=cls, epilog=examples(*RUN_EXAMPLES))(input_errors(run))
    app.command("manifests", cls=cls, epilog=examples(*MANIFESTS_EXAMPLES))(input_errors(manifests))
