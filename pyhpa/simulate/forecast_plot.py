"""forecast.png of ``pyhpa forecast``: the actual series against the forecast band (matplotlib, Agg)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..forecast.model import PREDICTING  # noqa: E402
from ..forecast.replay import Replay, describe_periods  # noqa: E402


def plot_replay(path: Path, r: Replay, *, title: str, unit: str, tz: timezone, quantile: float, lead: float) -> Path:
    """Two panels sharing time: actual vs point forecast, (1-q, q) band and the highest q quantile over the lead
    window; below, the absolute percentage error (rolling hourly mean) and where the prediction stood aside."""
    epoch = mdates.date2num(datetime(1970, 1, 1, tzinfo=timezone.utc))
    t = r.times / 86400.0 + epoch
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(13, 7.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
    acc = r.accuracy
    fig.suptitle(f"{title}\nmodel {r.model}, periods {describe_periods(r.periods)}, lead {lead:g} s; "
                 f"MAPE {_pct(acc.mape)}, WAPE {_pct(acc.wape)}, under-forecasts {_pct(acc.under_share)} "
                 f"(q = {quantile:g})", fontsize=11, x=0.01, ha="left")
    ax.plot(t, r.actual, color="0.2", lw=0.7, label="actual", drawstyle="steps-post")
    ax.fill_between(t, r.low, r.high, color="tab:blue", alpha=0.25, lw=0, step="post",
                    label=f"forecast band ({1 - quantile:g}-{quantile:g} quantiles, {lead:g} s ahead)")
    ax.plot(t, r.point, color="tab:blue", lw=0.9, label="forecast", drawstyle="steps-post")
    ax.plot(t, r.upper, color="tab:red", lw=0.7, alpha=0.7, label=f"forecast: highest {quantile:g} quantile over the next {lead:g} s",
            drawstyle="steps-post")
    ax.set_ylabel(unit)
    finite = r.actual[np.isfinite(r.actual)]
    top = float(np.percentile(finite, 99.9)) if finite.size else 1.0
    ax.set_ylim(0, top * 1.3 or 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ape = np.abs(r.point - r.actual) / r.actual
    ape[~np.isfinite(ape)] = np.nan
    width = max(1, int(round(3600 / r.step)))
    kernel = np.ones(width)
    ok = np.isfinite(ape)
    sums = np.convolve(np.where(ok, ape, 0.0), kernel, mode="same")
    cnt = np.convolve(ok.astype(float), kernel, mode="same")
    with np.errstate(divide="ignore", invalid="ignore"):
        rolling = sums / cnt
    ax2.plot(t, 100 * rolling, color="tab:purple", lw=1.0, label="absolute % error (rolling hour)")
    aside = np.array([x != PREDICTING for x in r.reasons])
    if aside.any():
        ax2.fill_between(t, 0, 1, where=aside, transform=ax2.get_xaxis_transform(), step="post", color="0.6",
                         alpha=0.35, lw=0, label="no forecast used (not predicting)")
    ax2.set_ylabel("% error")
    ax2.set_ylim(bottom=0)
    loc = mdates.AutoDateLocator(tz=tz, minticks=4, maxticks=12)
    ax2.xaxis.set_major_locator(loc)
    ax2.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=tz))
    for a in (ax, ax2):
        a.grid(True, alpha=0.3)
        a.legend(loc="upper left", fontsize=8, framealpha=0.85)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f} %"
