"""``pyhpa thresholds``: the measured value at which each replica count scales up or down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from ..adapters.errors import InputError
from ..adapters.kubectl import pod_items
from ..adapters.snapshot import pods_in_namespace, read_document, read_hpa, warning_json
from ..core import LIMIT, ControllerConfig, check_hpa, tolerances
from ..core.metrics import describe
from ..core.quantity import format_milli
from ..core.thresholds import metric_target, thresholds as threshold_rows
from .explain_cmd import Output


def _fmt(value: int | None, unit: str) -> str | int | None:
    if value is None:
        return None
    return value if unit == "percent" else format_milli(value)


def thresholds(
    hpa_file: Path = typer.Argument(..., metavar="HPA.yaml",
                                    help="autoscaling/v2 HorizontalPodAutoscaler or HorizontalAutoscaler manifest."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text table or json (one object)."),
    pods: Optional[Path] = typer.Option(None, "--pods", help="Pods of the target (kubectl get pods -l SELECTOR -o yaml): "
                                                   "warn where their requests and limits starve a target."),
    tolerance: float = typer.Option(0.1, "--tolerance", help="Controller-wide tolerance (--horizontal-pod-autoscaler-tolerance)."),
    no_configurable_tolerance: bool = typer.Option(False, "--no-configurable-tolerance", help="Ignore behavior.*.tolerance (HPAConfigurableTolerance off)."),
) -> None:
    """For each metric and replica count: scale up at (>=) / scale down at (<=), and to how many."""
    if not 0.0 <= tolerance < 1.0:
        raise InputError("must be in [0, 1)", field="--tolerance")
    config = ControllerConfig(tolerance=tolerance, configurable_tolerance=not no_configurable_tolerance)
    try:  # a HorizontalAutoscaler's own tolerance setting overrides --tolerance
        hpa, _, _, config = read_hpa(read_document(hpa_file), config)
    except InputError as err:
        raise err.at(file=str(hpa_file)) from None
    down, up = tolerances(hpa, config)
    result = {"hpa": f"{hpa.namespace}/{hpa.name}", "tolerance": {"scaleDown": down, "scaleUp": up}, "metrics": [],
              "warnings": []}
    if pods is not None:
        try:
            listed = pods_in_namespace(pod_items(read_document(pods), pods), hpa.namespace, "items")
        except InputError as err:
            raise err.at(file=str(pods)) from None
        found = check_hpa(hpa, None, listed, [], config)  # the given pods are the target's
        result["warnings"] = [warning_json(w) for w in found]
    for spec in hpa.metrics:
        target, unit = metric_target(spec)
        rows = threshold_rows(spec, hpa.min_replicas, hpa.max_replicas, down, up)
        result["metrics"].append({
            "metric": describe(spec),
            "target": _fmt(target, unit),
            "unit": ("percent of limit" if spec.utilization_basis == LIMIT else "percent of request")
            if unit == "percent" else "quantity",
            "rows": [
                {"replicas": r.replicas, "scale_up_at": _fmt(r.scale_up_at, unit), "scale_up_to": r.scale_up_to,
                 "scale_down_at": _fmt(r.scale_down_at, unit), "scale_down_to": r.scale_down_to}
                for r in rows
            ],
        })
    if output == Output.json:
        typer.echo(json.dumps(result, separators=(",", ":")))
        return
    _render(result)


def _render(result: dict) -> None:
    console = Console(highlight=False)
    tol = result["tolerance"]
    console.print(f"HPA {result['hpa']}  tolerance: scale-down {tol['scaleDown']:g}, scale-up {tol['scaleUp']:g}")
    for m in result["metrics"]:
        suffix = "%" if m["unit"].startswith("percent") else ""
        table = Table(title=f"{m['metric']} (target {m['target']}{suffix})", title_justify="left")
        for col in ("replicas", "scale up at (>=)", "to", "scale down at (<=)", "to"):
            table.add_column(col, justify="right")
        for r in m["rows"]:
            def cell(v):
                return "-" if v is None else f"{v}{suffix}"
            table.add_row(str(r["replicas"]), cell(r["scale_up_at"]), str(r["scale_up_to"] or "-"),
                          cell(r["scale_down_at"]), str(r["scale_down_to"] or "-"))
        console.print(table)
    for w in result["warnings"]:
        console.print(f"[bold yellow]warning {w['reason']}[/]: ", end="")
        console.print(w["message"], markup=False)
