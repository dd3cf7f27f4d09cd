"""``pyhpa run`` (the live controller) and ``pyhpa manifests`` (its CRD, RBAC and Deployment)."""

from __future__ import annotations

import asyncio
import logging
from enum import Enum
from importlib import resources
from typing import Optional

import typer

from ..adapters.errors import InputError

MANIFESTS = ("crd", "rbac", "deployment")


class Http(str, Enum):
    aiohttp = "aiohttp"
    httpx = "httpx"


class Part(str, Enum):
    all = "all"
    crd = "crd"
    rbac = "rbac"
    deployment = "deployment"


def run(
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)."),
    context: Optional[str] = typer.Option(None, "--context", help="kubeconfig context (default: the current one)."),
    server: Optional[str] = typer.Option(None, "--server", help="API server URL without credentials, e.g. a kubedouble at http://127.0.0.1:8001."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Serve autoscalers of this namespace only (default: all)."),
    workers: int = typer.Option(5, "--workers", help="Concurrent syncs (upstream: --concurrent-horizontal-pod-autoscaler-syncs)."),
    sync_period: float = typer.Option(15.0, "--sync-period", help="Default seconds between syncs of one autoscaler (spec.syncPeriodSeconds overrides)."),
    jitter: float = typer.Option(0.1, "--jitter", help="Each resync lands within period*(1±jitter), so autoscalers do not sync in bursts."),
    metrics_timeout: float = typer.Option(10.0, "--metrics-timeout", help="Seconds one metrics API call may take."),
    api_timeout: float = typer.Option(10.0, "--api-timeout", help="Seconds any other API call may take."),
    health_host: str = typer.Option("0.0.0.0", "--health-host", help="Address of /healthz, /readyz and /metrics."),
    health_port: int = typer.Option(8080, "--health-port", help="Port of /healthz, /readyz and /metrics (-1: do not serve)."),
    tolerance: float = typer.Option(0.1, "--tolerance", help="Default tolerance, a fraction (spec.tolerance overrides; upstream: --horizontal-pod-autoscaler-tolerance)."),
    cpu_initialization_period: float = typer.Option(300.0, "--cpu-initialization-period", help="Seconds (spec.cpuInitializationPeriodSeconds overrides)."),
    initial_readiness_delay: float = typer.Option(30.0, "--initial-readiness-delay", help="Seconds (spec.initialReadinessDelaySeconds overrides)."),
    downscale_stabilization: float = typer.Option(300.0, "--downscale-stabilization", help="Seconds of the scale-down window when spec.behavior does not set one."),
    scale_to_zero: bool = typer.Option(False, "--scale-to-zero", help="Feature gate HPAScaleToZero (minReplicas 0 with Object/External metrics)."),
    http: Http = typer.Option(Http.aiohttp, "--http", help="Transport under lightkube: aiohttp (faster) or httpx (lightkube's stock)."),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
) -> None:
    """Run the HPA controller: sync HorizontalAutoscaler objects (pyhpa.dev/v1alpha1) until SIGTERM/SIGINT."""
    from ..controller import Settings, load_config, run_controller

    _logging(log_level)
    settings = Settings(
        namespace=namespace, workers=workers, sync_period_seconds=sync_period, jitter=jitter,
        metrics_timeout_seconds=metrics_timeout, api_timeout_seconds=api_timeout, health_host=health_host,
        health_port=None if health_port < 0 else health_port, tolerance=tolerance,
        cpu_initialization_period_seconds=cpu_initialization_period,
        initial_readiness_delay_seconds=initial_readiness_delay,
        downscale_stabilization_window_seconds=downscale_stabilization, scale_to_zero=scale_to_zero,
    )
    config = load_config(kubeconfig, server, context)
    asyncio.run(run_controller(settings, config, http.value))


def _logging(level: str) -> None:
    value = getattr(logging, level.upper(), None)
    if not isinstance(value, int):
        raise InputError(f"unknown log level {level!r} (want debug, info, warning or error)", field="--log-level")
    logging.basicConfig(level=value, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(max(value, logging.WARNING))


def manifest_text(part: str) -> str:
    """One manifest file of ``pyhpa/data/deploy`` (identical to the repository's ``deploy/``)."""
    return resources.files("pyhpa").joinpath("data", "deploy", f"{part}.yaml").read_text(encoding="utf-8")


def manifests(
    only: Part = typer.Option(Part.all, "--only", help="Print one part: crd, rbac or deployment."),
) -> None:
    """Print the CRD, RBAC and Deployment of the controller (kubectl apply -f - ready)."""
    parts = MANIFESTS if only == Part.all else (only.value,)
    texts = [manifest_text(p).rstrip("\n") for p in parts]
    typer.echo("\n---\n".join(texts))


def register(app: typer.Typer, input_errors) -> None:
    """Add ``run`` and ``manifests`` to the CLI, with the one-line InputError wrapper."""
    app.command("run")(input_errors(run))
    app.command("manifests")(input_errors(manifests))
