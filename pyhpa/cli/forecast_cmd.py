"""``pyhpa forecast``: replay a trace through the forecaster, each point forecast from its past only."""

from __future__ import annotations

import json
from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from ..adapters.errors import InputError
from ..core import PredictionSpec, check_prediction
from ..forecast import DAY, ForecastSettings, settings_for

_DEFAULTS = ForecastSettings()


class GapPolicy(str, Enum):
    keep = "keep"
    zero = "zero"
    interpolate = "interpolate"


def forecast(
    trace: Path = typer.Option(..., "--trace", help="CSV trace with a header; times ISO 8601 or seconds."),
    column: str = typer.Option(..., "--column", help="The column to forecast."),
    start: Optional[str] = typer.Option(None, "--start", help="Forecast rows at or after this time (earlier rows are history only). Default: one history length after the first row."),
    end: Optional[str] = typer.Option(None, "--end", help="Forecast rows before this time (later rows are never read)."),
    lead: float = typer.Option(_DEFAULTS.lead_seconds, "--lead", help="Seconds ahead each forecast is made (spec.prediction.leadSeconds)."),
    history: float = typer.Option(_DEFAULTS.history_seconds, "--history", help="Seconds of history each fit uses (spec.prediction.historySeconds)."),
    quantile: float = typer.Option(_DEFAULTS.quantile, "--quantile", help="Quantile of the forecast band (spec.prediction.quantile)."),
    refresh: float = typer.Option(_DEFAULTS.refresh_seconds, "--refresh", help="Seconds between refits (spec.prediction.refreshSeconds)."),
    where: Optional[list[str]] = typer.Option(None, "--where", metavar="COLUMN=VALUE", help="Keep only matching rows (long-format traces, e.g. vm=rnd-411); repeatable."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help="The time column (default: 'timestamp' or 'time')."),
    gaps: GapPolicy = typer.Option(GapPolicy.keep, "--gaps", help="Missing rows: keep them missing (the forecaster skips gaps), or fill with zero / interpolation."),
    output: Path = typer.Option(Path("forecast.png"), "--output", "-o", help="Where the plot goes."),
    output_format: str = typer.Option("text", "--format", help="text, or json (one object)."),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Write the plot."),
) -> None:
    """Replay a trace through the forecaster: accuracy (MAPE, share of under-forecasts) and detected periods.

    Each row is forecast `--lead` seconds before its value is known, from the rows known by
    then only (a row counts as known at the end of its interval). Prints the accuracy and the
    seasonal periods found, and plots actual against the forecast band.
    """
    iso, load_trace, time_bound, plot_replay = _simulate_extra()
    settings = _settings(lead, history, quantile, refresh)
    if output_format not in ("text", "json"):
        raise InputError(f"want text or json, got {output_format!r}", field="--format")
    policy = {"keep": "hold", "zero": "zero", "interpolate": "interpolate"}[gaps.value]
    tr = load_trace(trace, column, time_column=time_column, where=tuple(where or ()), end=end, gaps=policy)
    lo = time_bound(start, tr, "--start")
    if lo is None:
        lo = tr.start + settings.history_seconds
        if lo >= tr.end:
            lo = tr.start
    if lo >= tr.end:
        raise InputError(f"--start {start} is not before the end of the trace ({iso(tr.end, tr.tz)})", field="--start")
    from ..forecast.replay import describe_periods, replay  # numpy and scipy: only when a trace is replayed

    r = replay(tr.times, tr.values[column], settings=settings, start=lo, end=tr.end)
    if r.times.size == 0:
        raise InputError("no rows to forecast between --start and --end", field="--start")
    acc = r.accuracy
    reasons = Counter(r.reasons)
    out = {
        "trace": str(trace), "column": column, "from": iso(float(r.times[0]), tr.tz), "to": iso(tr.end, tr.tz),
        "rows": int(r.times.size), "forecast_rows": acc.evaluations, "lead_seconds": lead, "quantile": quantile,
        "model": r.model, "periods": describe_periods(r.periods), "periods_seconds": list(r.periods), "fits": r.fits,
        "mape": acc.mape, "wape": acc.wape, "under_forecast_share": acc.under_share, "reasons": dict(reasons),
    }
    written = None
    if plot:
        output.parent.mkdir(parents=True, exist_ok=True)
        written = plot_replay(output, r, title=f"{trace.name} [{column}]", unit=column, tz=tr.tz, quantile=quantile,
                              lead=lead)
        out["plot"] = str(written)
    console = Console(highlight=False)
    if output_format == "json":
        console.print_json(json.dumps(out))
        return
    console.print(f"trace: {trace} column {column}, forecast rows {out['from']} to {out['to']} ({out['rows']} rows), "
                  f"lead {lead:g} s, quantile {quantile:g}")
    console.print(f"periods: {out['periods']}")
    console.print(f"model: {r.model} ({r.fits} fits)")
    console.print(f"forecast_rows={acc.evaluations} of {out['rows']} "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))})")
    console.print(f"mape={_num(acc.mape)} wape={_num(acc.wape)} under_forecast_share={_num(acc.under_share)}")
    if written is not None:
        console.print(f"wrote {written}")


def _simulate_extra():
    """The trace reader and the plot (pandas, matplotlib: the simulate extra, which the controller's image does
    not install). Missing: one line saying what to install (InputError)."""
    try:
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401

        from ..simulate.forecast_plot import plot_replay
        from ..simulate.trace import iso, load_trace, time_bound
    except ModuleNotFoundError as err:
        if err.name not in ("pandas", "matplotlib"):
            raise
        raise InputError(f"pyhpa forecast needs the simulate extra ({err.name} is not installed): "
                         "pip install 'pyhpa[simulate]'", field="forecast") from None
    return iso, load_trace, time_bound, plot_replay


#: ``spec.prediction`` fields -> the flags of ``pyhpa forecast`` that set them
_FLAGS = {"leadSeconds": "--lead", "historySeconds": "--history", "quantile": "--quantile", "refreshSeconds": "--refresh"}


def _settings(lead: float, history: float, quantile: float, refresh: float) -> ForecastSettings:
    """The flags as ``ForecastSettings``, checked by the rules of ``spec.prediction`` (``check_prediction``)."""
    spec = PredictionSpec(lead_seconds=lead, history_seconds=history, quantile=quantile, refresh_seconds=refresh)
    problems = check_prediction(spec)
    if problems:
        sub, message = problems[0]
        raise InputError(message, field=_FLAGS.get(sub, sub))
    return settings_for(spec)


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4f}"


__all__ = ["forecast", "DAY"]
