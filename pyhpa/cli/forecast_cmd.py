"""``pyhpa forecast``: replay a trace through the forecaster, each point forecast from its past only."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Optional

import typer

from ..adapters.errors import InputError
from ..core import PredictionSpec, check_prediction
from .help import examples
from .options import GAPS_HELP, OUT, GapPolicy, Output, output_file
from .options import console as text_console

_DEFAULTS = PredictionSpec()  # the flags' defaults are spec.prediction's (the forecaster, scipy, loads on use)
#: The fewest rows a plot is drawn from (fewer: the numbers are printed, the plot is not drawn, a warning says so)
MIN_PLOT_ROWS = 2
#: the most rows one replay forecasts (each is a forecast from its past): about two years of minutes
MAX_FORECAST_ROWS = 1_000_000

EXAMPLES = examples(
    "pyhpa forecast \\",
    "  --trace benchmarks/data/nasa_http_1995-07_per_minute.csv.gz \\",
    "  --column requests_per_second --start 1995-07-08 --end 1995-07-10 \\",
    "  --plot-file out/nasa-forecast.png",
    "pyhpa forecast --trace examples/traces/bitbrains_rnd-411_2013-08_cpu.csv \\",
    "  --column cpu_usage_percent --where vm=rnd-411 --no-plot -o json",
)


def forecast(
    trace: Path = typer.Option(..., "--trace", help="CSV trace with a header; times ISO 8601 or seconds."),
    column: str = typer.Option(..., "--column", help="The column to forecast."),
    unit: Optional[str] = typer.Option(None, "--unit", help="The column's unit, for the plot's axis (e.g. requests/s). Default: read from the column's name (requests_per_second: per second)."),
    start: Optional[str] = typer.Option(None, "--start", help="Forecast rows at or after this time (earlier rows are history only). Default: one history length after the first row."),
    end: Optional[str] = typer.Option(None, "--end", help="Forecast rows before this time (later rows are never read)."),
    lead: float = typer.Option(_DEFAULTS.lead_seconds, "--lead", help="Seconds ahead each forecast is made (spec.prediction.leadSeconds)."),
    history: float = typer.Option(_DEFAULTS.history_seconds, "--history", help="Seconds of history each fit uses (spec.prediction.historySeconds)."),
    quantile: float = typer.Option(_DEFAULTS.quantile, "--quantile", help="Quantile of the forecast band (spec.prediction.quantile)."),
    refresh: float = typer.Option(_DEFAULTS.refresh_seconds, "--refresh", help="Seconds between refits (spec.prediction.refreshSeconds)."),
    where: Optional[list[str]] = typer.Option(None, "--where", metavar="COLUMN=VALUE", help="Keep only matching rows (long-format traces, e.g. vm=rnd-411); repeatable."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help="The time column (default: 'timestamp' or 'time')."),
    gaps: GapPolicy = typer.Option(GapPolicy.hold, "--gaps", help=GAPS_HELP.replace("(each row holds until the next)", "(each row holds until the next; no forecast inside the gap)")),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text for people, or json (one object)."),
    plot_file: Path = typer.Option(OUT / "forecast.png", "--plot-file", metavar="FILE", help="Where the plot goes (.png, .svg, .pdf, ...; its folder is created)."),
    old_format: Optional[Output] = typer.Option(None, "--format", hidden=True, help="Older spelling of -o/--output."),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Write the plot."),
) -> None:
    """Replay a trace through the forecaster: accuracy (MAPE, share of under-forecasts) and detected periods.

    Each row is forecast `--lead` seconds before its value is known, from the rows known by
    then only (a row counts as known at the end of its interval). Prints the accuracy and the
    seasonal periods found, and plots actual against the forecast band.
    """
    iso, load_trace, time_bound, plot_replay, axis_label, plot_formats = _simulate_extra()
    settings = _settings(lead, history, quantile, refresh)
    output = old_format or output
    if plot:
        output_file(plot_file, "--plot-file", plot_formats(), example="forecast.png")
    tr = load_trace(trace, column, time_column=time_column, where=tuple(where or ()), end=end, gaps=gaps.value)
    lo = time_bound(start, tr, "--start")
    if lo is None:
        lo = tr.start + settings.history_seconds
        if lo >= tr.end:
            lo = tr.start
    if lo >= tr.end:
        raise InputError(f"{start} is not before the end of the trace ({iso(tr.end, tr.tz)})", field="--start")
    rows = int(((tr.times >= lo) & (tr.times < tr.end)).sum())
    if rows > MAX_FORECAST_ROWS:
        raise InputError(f"{rows:,} rows to forecast from {iso(lo, tr.tz)} to {iso(tr.end, tr.tz)}; a replay forecasts at "
                         f"most {MAX_FORECAST_ROWS:,}: a shorter span (--start/--end)", file=str(trace))
    from ..forecast.replay import describe_periods, replay  # numpy and scipy: only when a trace is replayed

    r = replay(tr.times, tr.values[column], settings=settings, start=lo, end=tr.end)
    if r.times.size == 0:
        raise InputError("no rows of the trace to forecast between them", field="--start/--end")
    acc = r.accuracy
    reasons = Counter(r.reasons)
    out = {
        "trace": str(trace), "column": column, "from": iso(float(r.times[0]), tr.tz), "to": iso(tr.end, tr.tz),
        "rows": int(r.times.size), "forecast_rows": acc.evaluations, "lead_seconds": lead, "quantile": quantile,
        "model": r.model, "periods": describe_periods(r.periods), "periods_seconds": list(r.periods), "fits": r.fits,
        "mape": acc.mape, "wape": acc.wape, "under_forecast_share": acc.under_share, "reasons": dict(reasons),
    }
    written, not_drawn = None, None
    if plot and r.times.size < MIN_PLOT_ROWS:
        not_drawn = (f"no plot: {r.times.size} row(s) to forecast, a plot needs at least {MIN_PLOT_ROWS} "
                     "(a longer trace, or an earlier --start)")
    elif plot:
        written = plot_replay(plot_file, r, title=f"{trace.name} [{column}]", unit=axis_label(column, unit),
                              tz=tr.tz, quantile=quantile, lead=lead)
        out["plot"] = str(written)
    console = text_console()
    if output == Output.json:
        if not_drawn:
            out["warnings"] = [not_drawn]
        typer.echo(json.dumps(out, separators=(",", ":")))
        return
    console.print(f"trace: {trace} column {column}, forecast rows {out['from']} to {out['to']} ({out['rows']} rows), "
                  f"lead {lead:g} s, quantile {quantile:g}")
    console.print(f"periods: {out['periods']}")
    console.print(f"model: {r.model} ({r.fits} fits)")
    console.print(f"forecast_rows={acc.evaluations} of {out['rows']} "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))})")
    console.print(f"mape={_num(acc.mape)} wape={_num(acc.wape)} under_forecast_share={_num(acc.under_share)}")
    if not_drawn:
        console.print(f"warning: {not_drawn}")
    if written is not None:
        console.print(f"wrote {written}")


def _simulate_extra():
    """The trace reader and the plot (pandas, matplotlib: the simulate extra, which the controller's image does
    not install). Missing: one line saying what to install (InputError)."""
    try:
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401

        from ..simulate.forecast_plot import axis_label, plot_formats, plot_replay
        from ..simulate.trace import iso, load_trace, time_bound
    except ModuleNotFoundError as err:
        if err.name not in ("pandas", "matplotlib"):
            raise
        raise InputError(f"pyhpa forecast needs the simulate extra ({err.name} is not installed): "
                         "pip install 'pyhpa[simulate]'", field="forecast") from None
    return iso, load_trace, time_bound, plot_replay, axis_label, plot_formats


#: ``spec.prediction`` fields -> the flags of ``pyhpa forecast`` that set them
_FLAGS = {"leadSeconds": "--lead", "historySeconds": "--history", "quantile": "--quantile", "refreshSeconds": "--refresh"}


def _settings(lead: float, history: float, quantile: float, refresh: float):
    """The flags as ``ForecastSettings``, checked by the rules of ``spec.prediction`` (``check_prediction``)."""
    from ..forecast import settings_for

    spec = PredictionSpec(lead_seconds=lead, history_seconds=history, quantile=quantile, refresh_seconds=refresh)
    problems = check_prediction(spec)
    if problems:
        sub, message = problems[0]
        raise InputError(message, field=_FLAGS.get(sub, sub))
    return settings_for(spec)


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4f}"


__all__ = ["forecast"]
