"""forecast.png of ``pyhpa forecast``: the actual series against the forecast band (matplotlib, Agg)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from ..forecast.model import PREDICTING  # noqa: E402
from ..forecast.replay import Replay, describe_periods  # noqa: E402


def plot_replay(path: Path, r: Replay, *, title: str, unit: str, tz: timezone, quantile: float, lead: float) -> Path:
    """Write ``replay_figure`` to ``path`` (the format from its extension); returns ``path``."""
    fig = replay_figure(r, title=title, unit=unit, tz=tz, quantile=quantile, lead=lead)
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path


def replay_figure(r: Replay, *, title: str, unit: str, tz: timezone, quantile: float, lead: float):
    """Two panels sharing time (at least 2 rows): actual vs point forecast, (1-q, q) band and the highest q
    quantile over the lead window, the y axis labelled ``unit`` and high enough for the highest value; below,
    the forecast's error over a rolling hour as WAPE (sum of absolute errors / sum of actuals, so hours of
    near-zero load do not blow up as a percentage error would) and where the prediction stood aside. A matplotlib
    Figure; the caller closes it."""
    epoch = mdates.date2num(datetime(1970, 1, 1, tzinfo=timezone.utc))
    t = r.times / 86400.0 + epoch
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(13, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
    acc = r.accuracy
    fig.suptitle(f"{title}\nmodel {r.model}, periods {describe_periods(r.periods)}, lead {lead:g} s; "
                 f"MAPE {_pct(acc.mape)}, WAPE {_pct(acc.wape)}, under-forecasts {_pct(acc.under_share)} "
                 f"(q = {quantile:g})", fontsize=11, x=0.01, ha="left")
    # the actual rows (noisy, dense) in light grey beneath; the band over them, translucent with its edges drawn,
    # and the forecast on top, so the band stays visible; rows above the band (under-forecasts) as red dots
    ax.plot(t, r.actual, color="0.62", lw=0.6, label="actual", drawstyle="steps-post", zorder=1)
    ax.fill_between(t, r.low, r.high, facecolor=(0.12, 0.47, 0.71, 0.3), edgecolor=(0.12, 0.47, 0.71, 0.8),
                    lw=0.5, step="post", zorder=2,
                    label=f"forecast band ({1 - quantile:g}-{quantile:g} quantiles, {lead:g} s ahead)")
    ax.plot(t, r.point, color="tab:blue", lw=1.2, label="forecast", drawstyle="steps-post", zorder=3)
    ax.plot(t, r.upper, color="tab:red", lw=0.8, alpha=0.8, ls="--",
            label=f"forecast: highest {quantile:g} quantile over the next {lead:g} s", drawstyle="steps-post",
            zorder=3)
    with np.errstate(invalid="ignore"):
        under = r.actual > r.high
    if under.any():
        ax.plot(t[under], r.actual[under], ls="none", marker=".", ms=3, color="tab:red", zorder=4,
                label=f"actual above the band (under-forecast: {_pct(acc.under_share)} of the rows)")
    ax.set_ylabel(unit)
    ax.set_ylim(0, _top(r.actual, r.point))
    width = max(1, int(round(3600 / r.step)))
    err = np.abs(r.point - r.actual)
    ok = np.isfinite(err) & np.isfinite(r.actual)
    abs_sum = _rolling_sum(np.where(ok, err, 0.0), width)
    act_sum = _rolling_sum(np.where(ok, r.actual, 0.0), width)
    with np.errstate(divide="ignore", invalid="ignore"):
        wape = np.where(act_sum > 0, 100 * abs_sum / act_sum, np.nan)
    ax2.plot(t, wape, color="tab:purple", lw=1.0, label="WAPE over a rolling hour (sum |forecast - actual| / sum actual)")
    aside = np.array([x != PREDICTING for x in r.reasons])
    if aside.any():
        ax2.fill_between(t, 0, 1, where=aside, transform=ax2.get_xaxis_transform(), step="post", color="0.6",
                         alpha=0.35, lw=0, label="no forecast used (not predicting)")
    ax2.set_ylabel("WAPE, %")
    finite = wape[np.isfinite(wape)]
    ax2.set_ylim(0, max(10.0, float(finite.max()) * 1.1) if finite.size else 100.0)
    loc = mdates.AutoDateLocator(tz=tz, minticks=4, maxticks=12)
    ax2.xaxis.set_major_locator(loc)
    ax2.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=tz))
    ax2.set_xlabel(f"time ({_zone(tz)}); each forecast made {lead:g} s before the row's end")
    ax2.set_xlim(t[0], t[-1] + r.step / 86400.0)  # the forecast rows, edge to edge
    for a in (ax, ax2):
        a.grid(True, alpha=0.3)
        a.legend(loc="upper left", fontsize=8, framealpha=0.85)
    fig.tight_layout()
    return fig


def plot_formats() -> dict[str, str]:
    """File extensions a figure can be written as (``png`` -> "Portable Network Graphics", ...): matplotlib's
    Agg canvas, the backend every pyhpa plot uses."""
    return FigureCanvasAgg.get_supported_filetypes()


def axis_label(column: str, unit: str | None = None) -> str:
    """A y-axis label from a trace column's name: words instead of underscores, the unit in parentheses
    (``requests_per_second`` -> "requests (per second)", ``cpu_usage_percent`` -> "cpu usage (%)");
    ``unit`` given: "column words (unit)"."""
    words = column.replace("_", " ").replace("-", " ").strip()
    if unit:
        return f"{words} ({unit})"
    for suffix, shown in ((" per second", "per second"), (" per minute", "per minute"), (" percent", "%"),
                          (" bytes", "bytes"), (" millicores", "millicores"), (" cores", "cores")):
        if words.endswith(suffix) and words != suffix.strip():
            return f"{words[: -len(suffix)]} ({shown})"
    return words


def _top(*series: np.ndarray) -> float:
    """The y-axis top: 8 % above the highest finite value of the series (the actual and the forecast: never clips
    a peak of either)."""
    highs = [float(np.nanmax(x)) for x in series if np.isfinite(x).any()]
    top = max(highs) if highs else 0.0
    return top * 1.08 if top > 0 else 1.0


def _rolling_sum(x: np.ndarray, width: int) -> np.ndarray:
    """Centred rolling sum over ``width`` rows (fewer at the ends), same length as ``x``."""
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(x.size)
    lo = np.clip(i - width // 2, 0, x.size)
    hi = np.clip(i - width // 2 + width, 0, x.size)
    return c[hi] - c[lo]


def _zone(tz: timezone) -> str:
    name = tz.tzname(None) if hasattr(tz, "tzname") else None
    return name or str(tz)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f} %"
