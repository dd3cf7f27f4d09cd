"""``pyhpa snapshot NAMESPACE/NAME``: write the inputs of one sync as a snapshot for ``pyhpa explain``."""

from __future__ import annotations

import asyncio
import json
import time
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
import yaml

from ..adapters.errors import InputError
from ..adapters.parse import timestamp
from . import run_cmd
from .help import examples
from .options import DocumentFormat as Format
from .options import output_file
from .run_cmd import Http

EXAMPLES = examples(
    "pyhpa snapshot prod/web --output-file out/web.yaml",
    "pyhpa explain out/web.yaml                 # the same decision, offline",
    "pyhpa snapshot default/web --kind hpa -o json     # a native HPA, as JSON",
    "pyhpa snapshot default/web --now 2026-11-21T10:00:00Z --tolerance 0.05",
)


def _default(option) -> object:
    return option.default


def live_snapshot(key: str, kubeconfig: str | None = None, context: str | None = None, server: str | None = None,
                  kind: str = "horizontalautoscaler", clock: float | None = None, *,
                  metrics_timeout: float = _default(run_cmd.METRICS_TIMEOUT_OPTION),
                  api_timeout: float = _default(run_cmd.API_TIMEOUT_OPTION),
                  tolerance: float = _default(run_cmd.TOLERANCE_OPTION),
                  cpu_initialization_period: float = _default(run_cmd.CPU_INITIALIZATION_PERIOD_OPTION),
                  initial_readiness_delay: float = _default(run_cmd.INITIAL_READINESS_DELAY_OPTION),
                  downscale_stabilization: float = _default(run_cmd.DOWNSCALE_STABILIZATION_OPTION),
                  scale_to_zero: bool = _default(run_cmd.SCALE_TO_ZERO_OPTION), prometheus_url: str | None = None,
                  http: str = "aiohttp") -> dict:
    """The snapshot document (FORMAT.md) of one sync of the live autoscaler ``key`` (``NAMESPACE/NAME``) at epoch
    ``clock`` (default: the wall clock), read from the cluster of ``kubeconfig``/``context`` (or ``server``)
    through the controller's own code path; the keyword settings are ``pyhpa run``'s flags, with its defaults.
    ``kind``: ``horizontalautoscaler`` or ``hpa``. Writes nothing; InputError naming what failed."""
    from ..adapters.kubeconfig import load_config
    from ..controller import Settings
    from ..controller.snapshot import parse_key, take_snapshot

    namespace, name = parse_key(key)
    settings = Settings(
        namespaces=(namespace,), metrics_timeout_seconds=metrics_timeout, api_timeout_seconds=api_timeout,
        health_port=None, tolerance=tolerance, cpu_initialization_period_seconds=cpu_initialization_period,
        initial_readiness_delay_seconds=initial_readiness_delay,
        downscale_stabilization_window_seconds=downscale_stabilization, scale_to_zero=scale_to_zero,
        prometheus_url=prometheus_url,
    )
    config = load_config(kubeconfig, server, context)
    now = time.time() if clock is None else clock
    return asyncio.run(take_snapshot(settings, config, namespace, name, kind, now, http))


class Kind(str, Enum):
    horizontalautoscaler = "horizontalautoscaler"
    hpa = "hpa"


def snapshot(
    key: str = typer.Argument(..., metavar="NAMESPACE/NAME", help="The autoscaler to snapshot."),
    kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
    context: Optional[str] = run_cmd.CONTEXT_OPTION,
    server: Optional[str] = run_cmd.SERVER_OPTION,
    kind: Kind = typer.Option(Kind.horizontalautoscaler, "--kind", help="horizontalautoscaler (pyhpa.dev) or hpa (a native autoscaling/v2 HPA)."),
    fmt: Format = typer.Option(Format.yaml, "--output", "-o", help="The snapshot's format: yaml or json."),
    output_path: Optional[Path] = typer.Option(None, "--output-file", metavar="FILE", help="Write the snapshot to FILE (its folder is created) instead of stdout."),
    old_fmt: Optional[Format] = typer.Option(None, "--format", hidden=True, help="Older spelling of -o/--output."),
    now: Optional[str] = typer.Option(None, "--now", help="The sync's clock, RFC 3339 (default: the wall clock)."),
    metrics_timeout: float = run_cmd.METRICS_TIMEOUT_OPTION,
    api_timeout: float = run_cmd.API_TIMEOUT_OPTION,
    tolerance: float = run_cmd.TOLERANCE_OPTION,
    cpu_initialization_period: float = run_cmd.CPU_INITIALIZATION_PERIOD_OPTION,
    initial_readiness_delay: float = run_cmd.INITIAL_READINESS_DELAY_OPTION,
    downscale_stabilization: float = run_cmd.DOWNSCALE_STABILIZATION_OPTION,
    scale_to_zero: bool = run_cmd.SCALE_TO_ZERO_OPTION,
    prometheus_url: Optional[str] = run_cmd.PROMETHEUS_URL_OPTION,
    http: Http = run_cmd.HTTP_OPTION,
) -> None:
    """Write the inputs of one sync of an autoscaler as a snapshot for pyhpa explain.

    Gathers what one sync would gather (scale, pods, metrics, memory, flags) through the controller's own
    code path, and writes it in the snapshot format (tests/data/conformance/FORMAT.md). Writes nothing to
    the cluster.
    """
    fmt = old_fmt or fmt
    if output_path is not None:
        output_file(output_path, "--output-file", example="out/web.yaml")
    doc = live_snapshot(key, kubeconfig, context, server, kind.value, timestamp(now, "--now") if now else None,
                        metrics_timeout=metrics_timeout, api_timeout=api_timeout, tolerance=tolerance,
                        cpu_initialization_period=cpu_initialization_period,
                        initial_readiness_delay=initial_readiness_delay,
                        downscale_stabilization=downscale_stabilization, scale_to_zero=scale_to_zero,
                        prometheus_url=prometheus_url, http=http.value)
    text = (json.dumps(doc, indent=2) + "\n") if fmt == Format.json else yaml.safe_dump(doc, sort_keys=False)
    if output_path is None:
        typer.echo(text, nl=False)
        return
    try:
        output_path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot write the snapshot: {err.strerror}", file=str(output_path),
                         field="--output-file") from None
