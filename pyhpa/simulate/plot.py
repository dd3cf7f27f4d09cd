"""plot.png (one run) and compare.png (several HPAs overlaid), drawn with matplotlib (Agg).

Panels, sharing the time axis (the trace's own UTC offset): load and Ready capacity
(requests/s, overload shaded); desired and Ready replicas with min/max (the effective bounds
when the autoscaler has ``spec.schedules``, whose active windows are shaded on every panel);
each metric against its target and tolerance band. ``--metrics-outage`` intervals are shaded
grey (hatched) in every panel.
"""

from __future__ import annotations

import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..adapters.metric_types import REGISTRY  # noqa: E402
from ..core import tolerances  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    from . import Simulation
    from .cluster import Cluster, SourceRecord
    from .trace import Trace

MAX_METRIC_PANELS = 3
LEGEND_WIDTH = 34  # characters per legend line (legends sit right of the panels)
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive")


def _times(cluster: Cluster, trace: Trace) -> np.ndarray:
    """Sync times as matplotlib date numbers (days since 1970-01-01 UTC)."""
    epoch = mdates.date2num(datetime(1970, 1, 1, tzinfo=timezone.utc))
    return np.array(cluster.timeline.column("time"), dtype=float) / 86400.0 + epoch


def _num(ts: float) -> float:
    """Epoch seconds as a matplotlib date number."""
    return ts / 86400.0 + _EPOCH


_EPOCH = mdates.date2num(datetime(1970, 1, 1, tzinfo=timezone.utc))
#: the narrowest a marked span is drawn, as a share of the time axis: a 30 s overload in a day is 0.03 % of it,
#: less than a pixel; widened to this, every episode shows (the legend says so)
MIN_SPAN = 0.004


def _spans(ax, spans, t0: float, t1: float, label: str | None, widen: bool = True, **kw) -> int:
    """Shade ``spans`` ((start, end) epoch s) across the panel, each at least ``MIN_SPAN`` of [t0, t1] wide (centred
    on itself when widened), overlapping ones merged; labelled once. Returns how many were drawn."""
    least = MIN_SPAN * (t1 - t0) if widen else 0.0
    merged: list[list[float]] = []
    for a, b in sorted(spans):
        if b - a < least:
            mid = (a + b) / 2
            a, b = max(t0, mid - least / 2), min(t1, mid + least / 2)
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for k, (a, b) in enumerate(merged):
        ax.axvspan(_num(a), _num(b), lw=0, label=label if k == 0 else None, **kw)
    return len(merged)


def _mask_spans(times: list[float], mask: list[bool], end: float) -> list[tuple[float, float]]:
    """The runs of consecutive True in ``mask`` as (start, end) epoch s: each row holds until the next (the last
    until ``end``)."""
    out, start = [], None
    for i, on in enumerate(mask):
        if on and start is None:
            start = times[i]
        elif not on and start is not None:
            out.append((start, times[i]))
            start = None
    if start is not None:
        out.append((start, end))
    return out


def zero_load_spans(cluster: Cluster) -> list[tuple[float, float]]:
    """Where the trace's load is 0 within the simulated span ((start, end) epoch s): hours a trace often has when
    the service it was recorded from was down; every panel shows them, so the dips they cause are not mistaken
    for the autoscaler's doing."""
    spans = []
    for a, b in _mask_spans(cluster.times, [v == 0 for v in cluster.rps_values], cluster.end):
        a, b = max(a, cluster.t0), min(b, cluster.end)
        if b > a:
            spans.append((a, b))
    return spans


def _mark_zero_load(axes, cluster: Cluster) -> None:
    spans = zero_load_spans(cluster)
    for i, ax in enumerate(axes):
        _spans(ax, spans, cluster.t0, cluster.end, f"no load in the trace (0 {_load_unit(cluster)})" if i == 0 else None, color="0.55",
               alpha=0.22, hatch="..", zorder=0)


def _column(cluster: Cluster, name: str) -> list:
    """The timeline's column ``name``, NaN where a sync has no value."""
    return [v if v is not None else float("nan") for v in cluster.timeline.column(name)]


def _axes(panels: int, title: str, ratios: list[float] | None = None):
    height = 2.6 + 2.4 * (panels if ratios is None else sum(ratios) / 3)
    fig, axes = plt.subplots(panels, 1, figsize=(13, height), sharex=True, squeeze=False, layout="constrained",
                             gridspec_kw=None if ratios is None else {"height_ratios": ratios})
    axes = [a[0] for a in axes]
    fig.suptitle(title, fontsize=12, x=0.01, ha="left")
    return fig, axes


def _shade_outages(axes, outages) -> None:
    """Grey band over each metrics outage (epoch s pairs) in every panel, labelled once per panel."""
    epoch = mdates.date2num(datetime(1970, 1, 1, tzinfo=timezone.utc))
    for ax in axes:
        for k, (a, b) in enumerate(outages):
            ax.axvspan(a / 86400.0 + epoch, b / 86400.0 + epoch, color="0.45", alpha=0.18, lw=0, hatch="//",
                       label="metrics outage" if k == 0 else None, zorder=0)


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _finish(fig, axes, trace: Trace):
    """Time axis in the trace's offset; each panel's legend outside it, on the right, so no curve is hidden."""
    loc = mdates.AutoDateLocator(tz=trace.tz, minticks=4, maxticks=10)
    axes[-1].xaxis.set_major_locator(loc)
    axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=trace.tz))
    axes[-1].set_xlabel(f"time (UTC{_offset(trace)})")
    axes[-1].set_xlim(_num(trace.start), _num(trace.end))  # the simulated span, edge to edge
    for ax in axes:
        ax.grid(True, alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        labels = ["\n".join(textwrap.fill(part, LEGEND_WIDTH) for part in label.split("\n")) for label in labels]
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8,
                  frameon=False)
    return fig


def metric_title(view) -> str:
    """A metric as a person names it, without the unit: "CPU utilization", "memory per pod",
    "requests_per_second per pod", "queue_length" (the timeline column names stay for CSV readers)."""
    spec = view.spec
    t = REGISTRY.get(spec.type)
    if t is not None:  # as the metric's type names it (pyhpa.adapters.metric_types)
        return t.title(spec, view.utilization)
    return f"{spec.name} per pod" if spec.target_type == "AverageValue" else spec.name


def metric_unit(view) -> str:
    """The unit of a metric panel's axis."""
    return view.unit or "metric's own unit"


def _offset(trace: Trace) -> str:
    off = trace.tz.utcoffset(None)
    if not off:
        return ""
    minutes = int(off.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _load_panel(ax, t, cluster: Cluster, with_capacity: bool = True, capacities=()) -> None:
    """Load and Ready capacity (``capacities``: other runs' (label, cluster, color, style, width) in compare.png).
    Overload episodes are shaded from the run's own accounting (each at least ``MIN_SPAN`` wide, so a short one
    shows). The axis reaches the highest capacity; when that is more than 3 times the peak load, it is
    logarithmic, so the load is not squeezed against the bottom."""
    load = _column(cluster, "load")
    unit = _load_unit(cluster)
    ax.plot(t, load, color="0.2", lw=0.9, label=f"load ({unit})", drawstyle="steps-post", zorder=4)
    caps: list[float] = []
    if with_capacity:
        cap = _column(cluster, "ready_capacity")
        caps += cap
        ax.plot(t, cap, color="tab:green", lw=1.0, label=f"Ready capacity ({unit})", drawstyle="steps-post", zorder=3)
        s = cluster.stats
        episodes = [(a, a + d) for a, d, _ in s.episodes]
        if episodes:
            _spans(ax, episodes, cluster.t0, cluster.end,
                   f"overloaded: {s.overloaded_seconds:,.0f} s in {len(episodes)} episode{'s' * (len(episodes) > 1)}"
                   " (short ones widened to show)", color="tab:red", alpha=0.3, zorder=1)
    for label, other, color, style, width in capacities:
        cap = _column(other, "ready_capacity")
        caps += cap
        ax.plot(_times(other, None), cap, color=color, lw=min(width, 1.4), ls=style, drawstyle="steps-post",
                label=f"{label}: Ready capacity", zorder=3)
    peak = max((x for x in load if x == x), default=1.0) or 1.0
    top = max([peak, *[c for c in caps if c == c]])
    low = min((x for x in load if x == x and x > 0), default=peak)
    if top > 3 * peak and low > 0:
        ax.set_yscale("log")
        positive = [x for x in load if x == x and x > 0]
        floor = float(np.percentile(positive, 1)) / 2  # the odd near-zero row dips to the axis, it does not set it
        ax.set_ylim(max(floor, peak / 1e3), top * 1.5)  # at most 3 decades below the peak load
        ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_ylabel(f"{unit}\n(log scale)")
    else:
        ax.set_ylim(0, top * 1.08)  # the whole Ready capacity too: nothing is cut off
        ax.set_ylabel(unit)


def _load_unit(cluster: Cluster) -> str:
    """requests/s, or (CPU load units) work units of cpu_millicore_seconds_per_request each."""
    p = cluster.profile
    if p.load_unit.startswith("cpu"):
        return f"work units/s of {p.cpu_millicore_seconds_per_request:g} millicore-s"
    return "requests/s"


#: colours of the sources shown by their sections' declarations (``Cluster.sources``), in order: (what it asks for,
#: the spans it is active)
_SOURCE_COLORS = (("tab:brown", "tab:red"), ("tab:olive", "tab:purple"), ("tab:cyan", "tab:pink"))


def _asked(cluster: Cluster, record: SourceRecord) -> list[float]:
    """The replicas a source asked for at each sync (its first ``timeline`` column; NaN while it was not active)."""
    return _column(cluster, record.shown.timeline[0][0])


def _replica_panel(ax, t, cluster: Cluster) -> None:
    ax.plot(t, _column(cluster, "ready_replicas"), color="tab:orange", lw=2.2, alpha=0.7, label="Ready replicas", drawstyle="steps-post")
    ax.plot(t, _column(cluster, "desired_replicas"), color="tab:blue", lw=0.9, label="desired replicas", drawstyle="steps-post")
    if cluster.prediction is not None:
        ax.plot(t, _column(cluster, "predicted_replicas"), color="tab:red", lw=0.8, ls=":", label="predicted replicas",
                drawstyle="steps-post")
    for k, (name, record) in enumerate(cluster.sources.items()):  # the syncs each was active, shaded
        marks, shade = _SOURCE_COLORS[k % len(_SOURCE_COLORS)]
        asked = _asked(cluster, record)
        active = [x == x for x in asked]
        if any(active):
            _spans(ax, _mask_spans(cluster.timeline.column("time"), active, cluster.end), cluster.t0, cluster.end,
                   record.shown.section.source.active_text(getattr(cluster.hpa, name)), color=shade, alpha=0.15, zorder=0)
            ax.plot(t, asked, color=marks, lw=0 if len(t) > 3000 else 1.0, marker=".", ms=3,
                    label=f"{name} asks for", drawstyle="steps-post")
    hpa = cluster.hpa
    top = hpa.max_replicas
    seen = max([x for name in ("ready_replicas", "desired_replicas") for x in _column(cluster, name) if x == x],
               default=top)
    for record in cluster.sources.values():
        seen = max([seen, *[x for x in _asked(cluster, record) if x == x]])
    if hpa.schedules:  # the bounds move with the windows: draw the effective ones
        lo = _column(cluster, "min_replicas_effective")
        hi = _column(cluster, "max_replicas_effective")
        top = max([top, *[x for x in lo if x == x]])
    # a maxReplicas far above what the run used would flatten the lines: the axis shows what happened, the
    # legend says which bound lies above it
    ymax = (top if top <= 2 * seen else seen * 1.25) * 1.08 + 0.5
    above = " (max above the axis)" if hpa.max_replicas > ymax else ""
    if hpa.schedules:
        ax.plot(t, hi, color="0.35", ls="--", lw=0.9, drawstyle="steps-post",
                label=f"effective min/max (spec {hpa.min_replicas}/{hpa.max_replicas}){above}")
        ax.plot(t, lo, color="0.35", ls="--", lw=0.9, drawstyle="steps-post")
    else:
        ax.axhline(hpa.max_replicas, color="0.5", ls="--", lw=0.8,
                   label=f"min/max ({hpa.min_replicas}/{hpa.max_replicas}){above}")
        ax.axhline(hpa.min_replicas, color="0.5", ls="--", lw=0.8)
    ax.set_ylabel("replicas")
    ax.set_ylim(0, ymax)


WINDOW_COLORS = ("tab:green", "tab:purple", "tab:brown", "tab:cyan", "tab:olive", "tab:pink")


def shade_windows(axes, t, cluster: Cluster) -> None:
    """Shade, on every panel, the syncs at which each schedule window was active (one color per window; the
    legend of the replicas panel names them)."""
    windows = cluster.hpa.schedules
    if not windows or len(t) == 0:
        return
    active = [set(filter(None, (v or "").split(";"))) for v in cluster.timeline.column("active_schedules")]
    for k, w in enumerate(windows):
        on = [w.name in a for a in active]
        if not any(on):
            continue
        bounds = ", ".join(b for b in (f"floor {w.min_replicas}" if w.min_replicas is not None else "",
                                       f"cap {w.max_replicas}" if w.max_replicas is not None else "") if b)
        for i, ax in enumerate(axes):
            ax.fill_between(t, 0, 1, where=on, step="post", transform=ax.get_xaxis_transform(),
                            color=WINDOW_COLORS[k % len(WINDOW_COLORS)], alpha=0.13, lw=0,
                            label=f"window {w.name} ({bounds})" if i == 1 else None)


def _metric_panel(ax, t, cluster: Cluster, i: int, color: str = "tab:purple", name: str = "") -> None:
    view = cluster.views[i]
    down, up = tolerances(cluster.hpa, cluster.config)
    target = view.target
    values = _column(cluster, view.label)
    smooth = _smoothing(len(values))
    title = metric_title(view)
    ax.plot(t, values, color=color, lw=0.7, alpha=0.45 if smooth else 1.0,
            label=f"{name}{title}, as the HPA sees it (ready pods with samples, at each sync)")
    if smooth:
        mean = pd.Series(values).rolling(smooth, center=True, min_periods=1).mean()
        ax.plot(t, mean, color=color, lw=1.6, label=f"rolling mean over {_span(smooth, cluster)}")
    ax.axhline(target, color="k", lw=1.0, label=f"target {target:g} {view.unit}".rstrip())
    ax.axhspan(target * (1 - down), target * (1 + up), color="0.6", alpha=0.25,
               label=f"tolerance band (-{down:g}/+{up:g})")
    ax.set_ylabel(f"{title}\n({metric_unit(view)})")
    ax.set_ylim(bottom=0)


def _prediction_panel(ax, t, cluster: Cluster) -> None:
    """The predicted metric's workload total: observed, the forecast band for the time it targets
    (lead seconds later) and the forecast the core was given (quantile over the lead window)."""
    p = cluster.prediction
    lead_days = p.spec.lead_seconds / 86400.0
    ax.plot(t, p.observed, color="0.25", lw=0.8, label=f"observed total ({p.unit})", drawstyle="steps-post",
            zorder=4)
    # the band above the forecast lines (zorder 3, translucent, edges drawn), so lines that coincide with it or
    # with each other never hide it (the observed total on top); the two forecast lines interleave their dashes
    ax.fill_between(t + lead_days, p.low, p.high, color="tab:blue", alpha=0.3, lw=0.6, edgecolor="tab:blue",
                    step="post", zorder=3,
                    label=f"forecast band ({1 - p.spec.quantile:g}-{p.spec.quantile:g} quantiles) at its target time")
    ax.plot(t, p.upper, color="tab:red", lw=1.0, ls=(0, (4, 4)), label=f"forecast: {p.spec.quantile:g} quantile "
            f"over the next {p.spec.lead_seconds} s", drawstyle="steps-post")
    if len(p.provisioned) == len(t):
        ax.plot(t, p.provisioned, color="tab:purple", lw=1.0, ls=(4, (4, 4)), drawstyle="steps-post",
                label="provisioned for (the band in proportion to the target's headroom)")
    ax.set_ylabel(p.unit)
    ax.set_ylim(bottom=0)


def _span(syncs: int, cluster: Cluster) -> str:
    """A rolling window of ``syncs`` syncs as time ("35 min")."""
    times = cluster.timeline.column("time")
    step = (times[-1] - times[0]) / max(len(times) - 1, 1) if len(times) > 1 else 15.0
    minutes = syncs * step / 60.0
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def _smoothing(n: int) -> int:
    """Rolling-mean width (syncs) for long runs, 0 for short ones."""
    return n // 300 if n > 3000 else 0


def plot_run(path: Path, cluster: Cluster, trace: Trace, label: str) -> Path:
    """plot.png of one run (``run_figure``)."""
    return _save(run_figure(cluster, trace, label), path)


def plot_compare(path: Path, sim: Simulation) -> Path:
    """compare.png of several runs (``compare_figure``)."""
    return _save(compare_figure(sim), path)


def run_figure(cluster: Cluster, trace: Trace, label: str):
    """The figure of one run (a matplotlib Figure; the caller closes it)."""
    n_metrics = min(len(cluster.views), MAX_METRIC_PANELS)
    title = (f"{label}: HPA {cluster.hpa.namespace}/{cluster.hpa.name} on {Path(trace.report.file).name} "
             f"[{trace.report.column} x {trace.report.load_scale:g}]")
    predicted = cluster.prediction is not None
    fig, axes = _axes(2 + n_metrics + predicted, title)
    t = _times(cluster, trace)
    _load_panel(axes[0], t, cluster)
    _replica_panel(axes[1], t, cluster)
    if predicted:
        _prediction_panel(axes[2], t, cluster)
    for i in range(n_metrics):
        _metric_panel(axes[2 + predicted + i], t, cluster, i)
    shade_windows(axes, t, cluster)
    _shade_outages(axes, cluster.outages)
    _mark_zero_load(axes, cluster)
    return _finish(fig, axes, trace)


#: Line styles of the runs in compare.png, in order (with a width falling from the first): two runs that behave
#: the same still show both lines.
RUN_STYLES = ("-", (0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)))


def _run_style(k: int, n: int) -> tuple:
    """(line style, width) of run ``k`` of ``n``: solid and widest first, then dashed, dotted, dash-dotted, each
    thinner, so identical lines stay distinguishable."""
    return RUN_STYLES[k % len(RUN_STYLES)], 2.4 - 1.4 * k / max(n - 1, 1)


def compare_figure(sim: Simulation):
    """Several HPAs on the same load: the load with each HPA's Ready capacity; what differs in the outcome (each
    HPA's overload episodes, share of time overloaded and unserved requests); Ready replicas; each HPA's first
    metric as it sees it (one panel per unit, so different units never share an axis). One color and line style
    per HPA (``_run_style``); equal targets interleave their dashes. The caller closes the figure."""
    trace = sim.trace
    units = list(dict.fromkeys(metric_unit(r.cluster.views[0]) for r in sim.runs if r.cluster.views))
    n = len(sim.runs)
    fig, axes = _axes(3 + len(units), f"compare on {Path(trace.report.file).name} "
                                      f"[{trace.report.column} x {trace.report.load_scale:g}]",
                      ratios=[3, 0.5 + 0.45 * n, 3] + [3] * len(units))
    load_ax, outcome_ax, replicas_ax, metric_axes = axes[0], axes[1], axes[2], axes[3:]
    first = sim.runs[0].cluster
    t = _times(first, trace)
    _load_panel(load_ax, t, first, with_capacity=False,
                capacities=[(r.label, r.cluster, COLORS[k % len(COLORS)], *_run_style(k, n))
                            for k, r in enumerate(sim.runs)])
    _outcome_panel(outcome_ax, sim)
    for k, run in enumerate(sim.runs):
        color = COLORS[k % len(COLORS)]
        style, width = _run_style(k, n)
        c = run.cluster
        replicas_ax.plot(_times(c, trace), _column(c, "ready_replicas"), color=color, lw=width, ls=style, drawstyle="steps-post",
                         label=f"{run.label}: Ready replicas")
        if c.views:
            view = c.views[0]
            ax = metric_axes[units.index(metric_unit(view))]
            values = _column(c, view.label)
            smooth = _smoothing(len(values))
            if smooth:
                values = pd.Series(values).rolling(smooth, center=True, min_periods=1).mean()
            what = f"{metric_title(view)}, HPA's view" + (f" (rolling mean, {_span(smooth, c)})" if smooth else "")
            ax.plot(_times(c, trace), values, color=color, lw=width, ls=style, label=f"{run.label}: {what}")
            ax.axhline(view.target, color=color, ls=(6 * k, (6, 6 * (n - 1) or 6)), lw=1.2,
                       label=f"{run.label}: target {view.target:g} {view.unit}".rstrip())
    replicas_ax.set_ylabel("Ready replicas")
    replicas_ax.set_ylim(bottom=0)
    for ax, unit in zip(metric_axes, units):
        ax.set_ylabel(f"first metric\n({unit})")
        ax.set_ylim(bottom=0)
    _shade_outages(axes, first.outages)
    _mark_zero_load(axes, first)
    return _finish(fig, axes, trace)


def _outcome_panel(ax, sim: Simulation) -> None:
    """What differs between the runs: one row per run with its overload episodes (each at least ``MIN_SPAN``
    wide) and, in its label, the share of time overloaded, the unserved requests and what it cost (pod-hours)."""
    n = len(sim.runs)
    for k, run in enumerate(sim.runs):
        c, s = run.cluster, run.summary
        y = n - 1 - k
        color = COLORS[k % len(COLORS)]
        least = MIN_SPAN * (c.end - c.t0)
        for a, d, _ in c.stats.episodes:
            mid = a + d / 2
            a, b = (mid - least / 2, mid + least / 2) if d < least else (a, a + d)
            ax.fill_between([_num(a), _num(b)], y + 0.15, y + 0.85, color=color, lw=0)
        ax.plot([], [], color=color, lw=6, label=f"{run.label}: overloaded {100 * s['overloaded_fraction']:.2f} %\nof "
                f"the time ({s['overloaded_seconds']:,.0f} s);\n{s['unserved_requests']:,.0f} requests unserved "
                f"({100 * s['unserved_fraction']:.2f} %);\n{s['pod_hours']:,.1f} pod-hours")
    ax.set_yticks([n - 1 - k + 0.5 for k in range(n)], [r.label for r in sim.runs], fontsize=8)
    ax.set_ylim(0, n)
    ax.set_ylabel("overloaded")
    ax.grid(False, axis="y")
