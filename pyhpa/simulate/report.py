"""Results of a simulation: summary figures, timeline.csv, summary.json, plots, tables.

Definitions (docs/simulate.md): *overloaded* means the demand (requests/s) is above the
capacity of the Ready, serving pods; an *overload episode* is one such stretch, its
*reaction time* the seconds from its start to the HPA's first scale-up and its
*recovery time* its length; a *flap* is a rescale in the opposite direction of the
previous one within ``flap_window_seconds``. Pod-hours count every pod from creation
to deletion, Pending ones included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from rich.table import Table

from ..core import tolerances
from ..core.model import PREDICTING, SourceKind
from .sections import SHOWN
from .timeline import metric_columns
from .trace import Trace, iso, iso_array

if TYPE_CHECKING:  # pragma: no cover
    from . import Settings, Simulation
    from .cluster import Cluster

#: summary.json keys shown in the table, with their labels.
TABLE_ROWS = (
    ("simulated_seconds", "simulated seconds"),
    ("syncs", "HPA syncs"),
    ("pod_hours", "pod-hours"),
    ("mean_replicas", "mean pods"),
    ("min_replicas_seen", "min replicas seen"),
    ("max_replicas_seen", "max replicas seen"),
    ("mean_cpu_utilization_percent", "CPU use, true (mean % of request, all running pods)"),
    ("target", "first metric as the HPA sees it: mean / target"),
    ("overloaded_seconds", "overloaded seconds (load above all serving pods' capacity)"),
    ("overloaded_fraction", "overloaded share of time"),
    ("unserved_requests", "unserved requests (overload, uneven traffic, pods Ready before they serve)"),
    ("unserved_fraction", "unserved share of requests"),
    ("scale_ups", "scale-ups"),
    ("scale_downs", "scale-downs"),
    ("flaps", "flaps"),
    ("overload_episodes", "overload episodes"),
    ("reaction_time_mean_seconds", "reaction time, mean s"),
    ("reaction_time_max_seconds", "reaction time, max s"),
    ("recovery_time_mean_seconds", "recovery time, mean s"),
    ("recovery_time_max_seconds", "recovery time, max s"),
    ("failed_syncs", "syncs with a metric error"),
    ("fallback_syncs", "syncs with a metric in fallback"),
)


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarize(label: str, hpa_file: str, cluster: Cluster, trace: Trace, settings: Settings) -> dict:
    """The summary figures of one run (summary.json; keys snake_case, units in docs)."""
    s, tl, span = cluster.stats, cluster.timeline, cluster.end - cluster.t0
    replicas = tl.column("current_replicas") + tl.column("desired_replicas")
    ups = sum(1 for e in cluster.scale_events if e.desired_replicas > e.current_replicas)
    reactions = [e.reaction_seconds for e in s.episodes if e.reaction_seconds is not None]
    recoveries = [e.seconds for e in s.episodes]
    request = cluster.target.requests.get(("cpu", ""))
    util = 100.0 * s.cpu_millicore_seconds / (request * s.running_pod_seconds) if request and s.running_pod_seconds else None
    out = {
        "label": label,
        "hpa": f"{cluster.hpa.namespace}/{cluster.hpa.name}",
        "hpa_file": hpa_file,
        "target": cluster.target.label,
        "simulated_seconds": _r(span),
        "syncs": len(tl),
        "pod_hours": _r(s.pod_seconds / 3600.0, 4),
        "ready_pod_hours": _r(s.ready_pod_seconds / 3600.0, 4),
        "mean_replicas": _r(s.pod_seconds / span if span else 0.0, 4),
        "min_replicas_seen": min(replicas) if replicas else None,
        "max_replicas_seen": max(replicas) if replicas else None,
        "mean_cpu_utilization_percent": _r(util, 2),
        "requests": _r(s.requested_requests, 1),
        "unserved_requests": _r(s.unserved_requests, 1),
        "unserved_fraction": _r(s.unserved_requests / s.requested_requests if s.requested_requests else 0.0, 6),
        "overloaded_seconds": _r(s.overloaded_seconds),
        "overloaded_fraction": _r(s.overloaded_seconds / span if span else 0.0, 6),
        "scale_ups": ups,
        "scale_downs": len(cluster.scale_events) - ups,
        "flaps": count_flaps(cluster.scale_events, settings.flap_window_seconds),
        "flap_window_seconds": settings.flap_window_seconds,
        "overload_episodes": len(s.episodes),
        "reaction_time_mean_seconds": _r(_mean(reactions)),
        "reaction_time_max_seconds": _r(max(reactions) if reactions else None),
        "recovery_time_mean_seconds": _r(_mean(recoveries)),
        "recovery_time_max_seconds": _r(max(recoveries) if recoveries else None),
        "failed_syncs": cluster.failed_syncs,
        "fallback_syncs": cluster.fallback_syncs,
        "metrics_outages": [{"start": iso(a, trace.tz), "end": iso(b, trace.tz), "seconds": _r(b - a)}
                            for a, b in cluster.outages],
        "outage_syncs": cluster.outage_syncs,
        "metrics": _metric_summaries(cluster),
        "trace": trace.report.to_dict(trace.tz),
        "settings": _settings(cluster, settings),
    }
    if cluster.prediction is not None:
        out["prediction"] = cluster.prediction.summary()
    for name, record in cluster.sources.items():
        out[name] = record.summary(getattr(cluster.hpa, name))
    out["syncs_decided_by"] = dict(sorted(cluster.decided_by.items()))
    out["extensions"] = extension_activity(cluster, out)
    return out


#: The extensions of a HorizontalAutoscaler, as (key, source kind in decided_by, "active" in words): those with code
#: of their own here, then every source section simulate shows by its declarations (``Cluster.sources``)
EXTENSIONS = (
    ("prediction", SourceKind.PREDICTION, "predicting"),
    ("schedules", SourceKind.SCHEDULE, "a window active"),
    ("fallback", SourceKind.FALLBACK, "a metric in fallback"),
    *((name, shown.section.source.kind, shown.section.source.active_words) for name, shown in SHOWN.items()),
)
#: why each extension may never have been active over a run
NEVER_ACTIVE = {
    "fallback": "no metric failed failureThreshold syncs in a row",
    "schedules": "no window was active during the run",
    **{name: shown.section.source.never_active for name, shown in SHOWN.items()},
}


def extension_activity(cluster: Cluster, summary: dict) -> dict:
    """summary.json ``extensions``: for each extension the HPA configures, the syncs at which it was active
    (prediction: reason Predicting; schedules: a window active; fallback: a metric in fallback; a source section's:
    its status active, ``SourceRecord``) and the syncs whose final number it set (``decided_by``), as counts and as
    shares of all syncs."""
    hpa, syncs = cluster.hpa, summary["syncs"]
    active = {
        "prediction": summary.get("prediction", {}).get("syncs_by_reason", {}).get(PREDICTING, 0)
        if hpa.prediction is not None else None,
        "schedules": cluster.schedule_syncs if hpa.schedules else None,
        "fallback": cluster.fallback_syncs
        if hpa.fallback is not None or any(m.fallback is not None for m in hpa.metrics) else None,
        **{name: record.active_syncs for name, record in cluster.sources.items()},
    }
    out = {}
    for key, kind, _ in EXTENSIONS:
        if active.get(key) is None:
            continue
        decided = cluster.decided_by.get(kind, 0)
        out[key] = {"active_syncs": active[key], "decided_syncs": decided,
                    "active_share": _r(active[key] / syncs if syncs else 0.0, 4),
                    "decided_share": _r(decided / syncs if syncs else 0.0, 4)}
    return out


def extension_warnings(summary: dict) -> list[str]:
    """One line per extension the HPA configures that was never active over the run, with why where known."""
    out = []
    for key, _, what in EXTENSIONS:
        ext = summary.get("extensions", {}).get(key)
        if ext is None or ext["active_syncs"] > 0:
            continue
        syncs = summary["syncs"]
        reason = NEVER_ACTIVE.get(key, "")
        if key == "prediction":
            reasons = summary["prediction"]["syncs_by_reason"]
            reason = ", ".join(f"{r} on {n} of {syncs} syncs" for r, n in reasons.items())
            if "InsufficientHistory" in reasons:
                reason += (" (the forecaster needs 2 h of load history or more, a daily cycle 2 days: let the trace "
                           "begin that much before --start)")
            reason += "; it never changed a decision"
        out.append(f"{summary['label']}: {key} is configured but was never active ({what} on 0 of {syncs} syncs): "
                   f"{reason}")
    return out


def count_flaps(events: list[tuple[float, int, int]], window: float) -> int:
    """Rescales whose direction reverses the previous rescale's within ``window`` s."""
    flaps, last = 0, None
    for t, before, after in events:
        up = after > before
        if last is not None and up != last[1] and t - last[0] <= window:
            flaps += 1
        last = (t, up)
    return flaps


def _metric_summaries(cluster: Cluster) -> list[dict]:
    down, up = tolerances(cluster.hpa, cluster.config)
    out = []
    for view in cluster.views:
        values = [v for v in cluster.timeline.column(view.label) if v is not None]
        mean = _mean(values)
        target = view.target
        out.append({
            "metric": view.label,
            "type": view.spec.type,
            "unit": view.unit,
            "target": _r(target, 6),
            "tolerance_band": [_r(target * (1 - down), 6), _r(target * (1 + up), 6)],
            "mean": _r(mean, 4),
            "mean_ratio_to_target": _r(mean / target, 4) if mean is not None and target else None,
            "syncs_without_value": len(cluster.timeline) - len(values),
        })
    return out


def _settings(cluster: Cluster, settings: Settings) -> dict:
    c = cluster.config  # the flags with a HorizontalAutoscaler's own settings applied
    return {
        "sync_period_seconds": cluster.sync_period,
        "seed": settings.seed,
        "metrics_scrape_offset_seconds": _r(cluster.scrape_offset, 6),
        "pod_capacity_rps_effective": _r(cluster.cap, 6),
        "controller": {
            "tolerance": c.tolerance, "cpu_initialization_period_seconds": c.cpu_initialization_period_seconds,
            "initial_readiness_delay_seconds": c.initial_readiness_delay_seconds,
            "downscale_stabilization_window_seconds": c.downscale_stabilization_window_seconds,
            "scale_up_limit_factor": c.scale_up_limit_factor, "scale_up_limit_minimum": c.scale_up_limit_minimum,
        },
        "profile": cluster.profile.to_dict(),
    }


# --------------------------------------------------------------------- files
def timeline_frame(cluster: Cluster, trace: Trace) -> pd.DataFrame:
    """One row per sync; times ISO 8601 in the trace's offset, loads requests/s."""
    tl = cluster.timeline
    header = list(tl.header)
    df = pd.DataFrame(tl.rows, columns=header, dtype=object)
    df["time"] = iso_array(np.array(tl.column("time"), dtype=float), trace.tz)
    metric_cols = metric_columns([v.label for v in cluster.views])
    digits = {"load": 6, "ready_capacity": 4, "unserved_requests": 3, **{c: 4 for c in metric_cols}}
    if "forecast" in header:
        digits["forecast"] = 4
        digits["provisioned"] = 4
    for col, d in digits.items():
        df[col] = [None if x is None else round(x, d) for x in df[col]]
    return df


def write_run(out: Path, run_cluster: Cluster, trace: Trace, summary: dict, plot: bool = True) -> list[Path]:
    """timeline.csv, summary.json and (``plot``) plot.png of one run into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "timeline.csv", out / "summary.json"]
    timeline_frame(run_cluster, trace).to_csv(written[0], index=False, lineterminator="\n")
    written[1].write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")  # strict JSON
    if plot:
        from .plot import plot_run

        written.append(plot_run(out / "plot.png", run_cluster, trace, summary["label"]))
    return written


def write_outputs(sim: Simulation, output_dir: str | Path, plot: bool = True) -> list[Path]:
    """Write every run: one HPA into ``output_dir``, several into ``output_dir/LABEL/`` plus
    ``compare.json`` and the overlay ``compare.png``."""
    out = Path(output_dir)
    if len(sim.runs) == 1:
        run = sim.runs[0]
        return write_run(out, run.cluster, sim.trace, run.summary, plot)
    written: list[Path] = []
    for run in sim.runs:
        written += write_run(out / run.label, run.cluster, sim.trace, run.summary, plot)
    compare = out / "compare.json"
    compare.write_text(json.dumps({"runs": [r.summary for r in sim.runs]}, indent=2, allow_nan=False) + "\n",
                       encoding="utf-8")
    written.append(compare)
    if plot:
        from .plot import plot_compare

        written.append(plot_compare(out / "compare.png", sim))
    return written


# --------------------------------------------------------------------- table
def _cell(summary: dict, key: str) -> str:
    if key == "target":
        m = summary["metrics"][0] if summary["metrics"] else None
        if m is None or m["mean"] is None:
            return "-"
        return f"{m['mean']:.1f} / {m['target']:g} {m['unit']}".rstrip()
    value = summary.get(key)
    if value is None:
        return "-"
    if key.endswith("_fraction"):
        return f"{100 * value:.2f} %"
    if isinstance(value, float):
        if abs(value) >= 1000 or (value == int(value) and abs(value) >= 100):
            return f"{value:,.0f}"
        return f"{value:.1f}" if abs(value) >= 1 or value == 0 else f"{value:.3g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _share(summary: dict, key: str, which: str) -> str:
    ext = summary.get("extensions", {}).get(key)
    if ext is None:
        return "-"
    return f"{100 * ext[which + '_share']:.1f} % ({ext[which + '_syncs']:,})"


def summary_table(sim: Simulation) -> Table:
    """A rich table of the summary figures, one column per HPA."""
    table = Table(title="pyhpa simulate", title_justify="left")
    table.add_column("figure")
    for run in sim.runs:
        table.add_column(run.label, justify="right")
    for key, label in TABLE_ROWS:
        table.add_row(label, *[_cell(r.summary, key) for r in sim.runs])
    for key, _, what in EXTENSIONS:
        if not any(key in r.summary.get("extensions", {}) for r in sim.runs):
            continue
        table.add_row(f"{key}: {what}, share of syncs", *[_share(r.summary, key, "active") for r in sim.runs])
        table.add_row(f"{key}: decided the replicas, share of syncs",
                      *[_share(r.summary, key, "decided") for r in sim.runs])
    trace = sim.trace.report
    if trace.gaps:
        verb = "skipped" if trace.gap_policy == "skip" else f"filled ({trace.gap_policy})"
        table.caption = f"trace: {len(trace.gaps)} gap(s), {trace.gap_seconds:,.0f} s {verb}"
    return table

