"""``pyhpa thresholds``: the measured value at which each replica count scales up or down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.text import Text

from ..adapters.autoscaler import find_autoscaler
from ..adapters.errors import InputError
from ..adapters.kubectl import pod_items
from ..adapters.snapshot import pods_in_namespace, read_document, read_hpa, warning_json
from ..core import HPA, LIMIT, ControllerConfig, Pod, check_hpa, tolerances
from ..core.metrics import describe
from ..core.quantity import format_milli
from ..core.thresholds import metric_target
from ..core.thresholds import thresholds as threshold_rows
from . import readable
from .help import examples
from .options import Output
from .options import console as text_console


def _fmt(value: int | None, unit: str) -> str | int | None:
    if value is None:
        return None
    return value if unit == "percent" else format_milli(value)


def thresholds(
    hpa_file: Path = typer.Argument(..., metavar="HPA.yaml", help="autoscaling/v2 HorizontalPodAutoscaler or HorizontalAutoscaler (pyhpa.dev/v1alpha1) manifest."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text table or json (one object)."),
    pods: Optional[Path] = typer.Option(None, "--pods", help="Pods of the target (kubectl get pods -l SELECTOR -o yaml): "
                                                             "warn where their requests and limits starve a target."),
    tolerance: float = typer.Option(0.1, "--tolerance", help="Controller-wide tolerance (--horizontal-pod-autoscaler-tolerance)."),
    no_configurable_tolerance: bool = typer.Option(False, "--no-configurable-tolerance", help="Ignore behavior.*.tolerance (HPAConfigurableTolerance off)."),
) -> None:
    """For each metric and replica count: the value above which it scales up and at or below which it scales down, and to how many."""
    if not 0.0 <= tolerance < 1.0:
        raise InputError("must be in [0, 1)", field="--tolerance")
    config = ControllerConfig(tolerance=tolerance, configurable_tolerance=not no_configurable_tolerance)
    try:  # one autoscaler document; a HorizontalAutoscaler's own tolerance setting overrides --tolerance
        hpa, model, _, config = read_hpa(find_autoscaler(read_document(hpa_file)), config)
    except InputError as err:
        raise err.at(file=str(hpa_file)) from None
    status = model.status
    current = [status.currentReplicas] if status is not None and status.currentReplicas is not None else []
    listed = None
    if pods is not None:
        try:
            listed = pods_in_namespace(pod_items(read_document(pods), pods), hpa.namespace, "items")
        except InputError as err:
            raise err.at(file=str(pods)) from None
    report_thresholds(hpa, config, listed, output, current)


def report_thresholds(hpa: HPA, config: ControllerConfig, pods: list[Pod] | None, output: Output,
                      current: list[int] = ()) -> None:
    """Print the thresholds of ``hpa`` under ``config`` (text tables or one JSON object); with ``pods`` (the
    target's), the warnings where their requests and limits starve a target. A table of more than ``MAX_ROWS``
    rows keeps those around status.desiredReplicas and ``current`` (status.currentReplicas) and says which
    rows it left out. Also what ``kubectl pyhpa thresholds`` prints for the live autoscaler."""
    down, up = tolerances(hpa, config)
    observed = [n for n in (hpa.status_desired_replicas, *current) if n is not None]
    counts, elided = shown_replicas(max(hpa.min_replicas, 1), hpa.max_replicas, observed)
    result = {"hpa": f"{hpa.namespace}/{hpa.name}", "tolerance": {"scaleDown": down, "scaleUp": up}, "metrics": [],
              "elided": [{"from": a, "to": b} for a, b in elided], "warnings": []}
    if pods is not None:
        found = check_hpa(hpa, None, pods, [], config)  # the given pods are the target's
        result["warnings"] = [warning_json(w) for w in found]
    tables = []
    for spec in hpa.metrics:
        target, unit = metric_target(spec)
        rows = threshold_rows(spec, hpa.min_replicas, hpa.max_replicas, down, up, counts)
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
        tables.append((spec, target, unit, rows))
    if output == Output.json:
        typer.echo(json.dumps(result, separators=(",", ":")))
        return
    _render(result["hpa"], down, up, tables, result["warnings"], elided)


#: a table longer than this many rows shows its first and last rows and those around the observed counts
MAX_ROWS = 100
_HEAD, _TAIL, _AROUND = 40, 10, 20


def shown_replicas(lo: int, hi: int, observed: list[int]) -> tuple[list[int] | None, list[tuple[int, int]]]:
    """(replica counts to show, elided (from, to) ranges) for a table from ``lo`` to ``hi``: every count
    (None) up to ``MAX_ROWS`` rows; beyond, the first 40 and the last 10 counts and 20 either side of each
    ``observed`` count (the HPA's status.currentReplicas and status.desiredReplicas), so that time and output
    stay bounded for any maxReplicas up to 2147483647."""
    if hi - lo + 1 <= MAX_ROWS:
        return None, []
    keep = set(range(lo, lo + _HEAD)) | set(range(hi - _TAIL + 1, hi + 1))
    for n in observed:
        keep |= set(range(max(lo, n - _AROUND), min(hi, n + _AROUND) + 1))
    counts = sorted(keep)
    elided = [(a + 1, b - 1) for a, b in zip(counts, counts[1:]) if b - a > 1]
    return counts, elided


#: the columns of a thresholds table
HEADERS = ("replicas", "scale up above (>)", "to", "scale down at or below (<=)", "to")


def thresholds_table(title: str, rows: list[tuple[str, ...]]) -> Table:
    """rich's ``Table`` of ``rows`` (one string a column, one word each: a number, a quantity, "-", "...", or
    "") under ``title``, each column right-justified, every character as given: title and cells are
    ``rich.text.Text``, which rich prints without reading console markup or emoji codes in them (a selector's
    ``map[string]string`` stays whole).

    rich lays out each cell on its own (measure, pad, wrap, justify, crop: about 0.1 ms), so the rows go in as
    ONE cell per column, its rows one line each (``no_wrap``: a cell never takes two lines; a column narrower
    than a cell cuts it with "…", as rich cuts a one-word cell): rich prints it as it prints one cell per row, a
    rule-less table showing no boundary between rows (tests/test_thresholds_output.py compares the two on
    terminals and pipes 18 to 400 columns wide; with room for 16 or fewer no character of a cell fits and the rows
    are one blank line). For the 1,000 tables of 10 rows of issue 37, rich's work is 2.4 times smaller (5 cells a table,
    not 55)."""
    table = Table(title=Text(title, style="table.title"), title_justify="left")  # rich's style for a str title
    for header in HEADERS:
        table.add_column(Text(header), justify="right")
    if rows:
        table.add_row(*(Text("\n".join(column), no_wrap=True) for column in zip(*rows)))
    return table


def _render(name: str, down: float, up: float, tables: list, warnings: list, elided: list) -> None:
    """The text tables, values as a user writes them (``pyhpa.cli.readable``; -o json keeps them exact).

    Measured values are integers (percent, or milli-units), so "scales up at >= v" is "scales up above
    v - 1": the table shows that bound, which is the round number target x (1 + tolerance). Rounded
    values err on the safe side: scale-up bounds up, scale-down bounds down, so every line stays true."""
    console = text_console()
    console.print(Text(f"HPA {name}  tolerance: scale-down {down:g}, scale-up {up:g}"))
    gaps = dict(elided)
    for spec, target, unit, rows in tables:
        def cell(v, rounding="nearest", spec=spec, unit=unit):
            if v is None:
                return "-"
            return f"{v}%" if unit == "percent" else readable.quantity(v, spec, rounding)

        lines = []
        for r in rows:
            above = None if r.scale_up_at is None else r.scale_up_at - 1
            lines.append((str(r.replicas), cell(above, "up"), str(r.scale_up_to or "-"),
                          cell(r.scale_down_at, "down"), str(r.scale_down_to or "-")))
            if r.replicas + 1 in gaps:
                lines.append(("...", "", "", "", ""))
        console.print(thresholds_table(f"{describe(spec)} (target {cell(target)})", lines))
    if elided:
        ranges = ", ".join(f"{a:,}-{b:,}" for a, b in elided)
        console.print(f"{sum(b - a + 1 for a, b in elided):,} rows elided (replicas {ranges}): the table shows the "
                      f"first and last rows and those around status.currentReplicas and status.desiredReplicas")
    for w in warnings:
        console.print(f"[bold yellow]warning {w['reason']}[/]: ", end="")
        console.print(w["message"], markup=False)


EXAMPLES = examples(
    "pyhpa thresholds examples/explain/hpa.yaml",
    "pyhpa thresholds -o json examples/explain/hpa.yaml",
    "pyhpa thresholds --pods examples/explain/starved/pods.yaml \\",
    "  examples/explain/starved/hpa.yaml        # can the pods reach the target?",
)
