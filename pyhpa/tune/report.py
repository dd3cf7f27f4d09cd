"""tune's outputs: recommended.yaml (with a comment on why each field has its value), candidates.csv,
frontier.png, summary.json, and the terminal table (current against recommended)."""

from __future__ import annotations

import csv
import json
from dataclasses import fields
from pathlib import Path

import yaml
from rich.table import Table

from ..simulate import WorkloadFiles
from .search import COSTLIER, HELD_OUT_SLACK, OVER_LIMIT, Evaluation, Figures, Objective, Prepared, TuneResult, rank_key
from .space import DEFAULT_SCALE_DOWN_WINDOW, DEFAULT_SCALE_UP_PERCENT, TUNING, Setting

FIGURE_FIELDS = [f.name for f in fields(Figures)]


def _pct(x: float) -> str:
    return f"{100 * x:.3f} %"


def _target(p: Prepared, value: float) -> str:
    return f"{value:g} %" if p.kind.type == "Utilization" else f"{value / 1000:g}"


def _figures_text(f: Figures | None, objective: Objective) -> str:
    if f is None:
        return "not replayed"
    return (f"{f.pod_hours:.1f} pod-hours, overloaded {_pct(f.overloaded_fraction)} of the time, "
            f"unserved {_pct(f.unserved_fraction)} of requests, {f.scale_events} scale events")


# ------------------------------------------------------------------------------------------------ why
def _why(result: TuneResult, p: Prepared, name: str, shown) -> str:
    """Why the recommendation's ``name`` (a field of ``Setting``, or a source section: on or off) has its value:
    the cheapest setting tried with another value."""
    rec = result.recommended
    mine = _value(rec.setting, name)
    others = [e for e in result.evaluations if _value(e.setting, name) != mine]
    if not others:
        return "no setting with another value was tried"
    best = _cheapest(result, others)
    if best is None:
        return f"every setting tried with another value ({len(others)}) missed the objective in-sample or cost more"
    extra = best.in_sample.pod_hours - rec.in_sample.pod_hours
    return (f"the cheapest setting tried with {shown(_value(best.setting, name))} that met the objective "
            f"cost {best.in_sample.pod_hours:.1f} pod-hours ({extra:+.1f})")


def _value(s: Setting, name: str):
    return s.on(name) if name in TUNING else getattr(s, name)


def _on_off(name: str):
    """How ``_why`` shows a source section's value: ``<name> on`` or ``<name> off``."""
    return lambda v: f"{name} {'on' if v else 'off'}"


def _max_headroom(p: Prepared, s) -> str:
    """What the recommendation's max leaves above the tuning part's peak at its target ("" for a metric whose
    pods tune cannot size)."""
    if p.needed_per_target is None:
        return ""
    needed = p.needed_per_target(s.target)
    return (f"{s.max_replicas / max(needed, 1):.2g}x the {needed} pods the tuning part's peak needs at this target "
            "(a step or burst beyond that would be capped); ")


def inputs_of(files: WorkloadFiles, prepared: Prepared, live=None) -> dict:
    """What was tuned, as recommended.yaml and summary.json name it: the files (a ``pyhpa.simulate.WorkloadFiles``,
    bundled ones as ``pyhpa/data/...``), the load column, the tuning and held-out spans, the floor of
    ``--min-replicas-floor`` when above 1, and (``live``: a ``pyhpa.tune.live.LiveInputs``) where the inputs were
    read."""
    from ..simulate import display_path
    from ..simulate.trace import iso

    def span(part) -> str:
        tr = part.load.trace
        return f"{iso(tr.start, tr.tz)} to {iso(tr.end, tr.tz)}"

    out = {"hpa": display_path(files.hpa[0]), "target": display_path(files.target),
           "profile": display_path(files.profile) or "(built-in defaults)", "trace": display_path(files.trace),
           "column": files.column, "tuning": span(prepared.tuning),
           "held_out": span(prepared.held_out) if prepared.held_out is not None else "(none: --held-out 0)"}
    if prepared.min_replicas_floor > 1:  # --min-replicas-floor (1, the default, leaves the key out)
        out["min_replicas_floor"] = prepared.min_replicas_floor
    if live is not None:
        out["live"] = live.describe()
    return out


def recommended_yaml(result: TuneResult, p: Prepared, inputs: dict) -> str:
    """recommended.yaml: the manifest, each tuned field preceded by a comment saying why it has its value."""
    m = result.manifest
    s, cur = result.recommended.setting, result.current.setting
    o = result.objective
    rec = result.recommended
    lines = [
        f"# Recommended by pyhpa tune: least pod-hours with {o.metric.replace('_', ' ')} <= {o.limit:g}",
        f"# ({o.option}), replayed through the exact HPA logic (pyhpa simulate) on {inputs['trace']}.",
        f"# Tuned on {inputs['tuning']}: {_figures_text(rec.in_sample, o)}.",
    ]
    if rec.held_out is not None:
        lines.append(f"# Held out {inputs['held_out']}: {_figures_text(rec.held_out, o)}; "
                     f"{result.held_out_headroom():.0%} headroom under the {_pct(o.limit * HELD_OUT_SLACK)} the check "
                     f"allows ({HELD_OUT_SLACK:g}x the limit).")
    lines.append(f"# Current object ({inputs['hpa']}) on the tuning part: {_figures_text(result.current.in_sample, o)}.")
    lines.append(f"# {len(result.evaluations)} settings tried; every one is in candidates.csv.")
    for note in result.notes:
        lines.append(f"# Note: {note}.")
    if m["kind"] == "HorizontalPodAutoscaler":
        lines.append("# An autoscaling/v2 HorizontalPodAutoscaler: no pyhpa extension was needed"
                     + (" (--upstream-only)." if p.upstream_only else "."))
    else:
        lines.append("# A pyhpa.dev/v1alpha1 HorizontalAutoscaler: it uses fields upstream's HPA does not have.")
    head = {k: m[k] for k in ("apiVersion", "kind", "metadata")}
    lines.append(_dump(head).rstrip())
    lines.append("spec:")
    spec = m["spec"]
    comments = {
        "minReplicas": f"min {cur.min_replicas} -> {s.min_replicas}: "
                       + _why(result, p, "min_replicas", lambda v: f"minReplicas {v}")
                       + (f" (none below {p.min_replicas_floor} was tried: --min-replicas-floor)"
                          if p.min_replicas_floor > 1 else ""),
        "maxReplicas": f"max {cur.max_replicas} -> {s.max_replicas}: {_max_headroom(p, s)}"
                       + _why(result, p, "max_replicas", lambda v: f"maxReplicas {v}"),
        "metrics": f"target of spec.metrics[0]: {_target(p, cur.target)} -> {_target(p, s.target)}: "
                   + _why(result, p, "target", lambda v: f"target {_target(p, v)}"),
        "behavior": (f"scale-down stabilization {s.scale_down_window_seconds} s, scale-up {s.scale_up_percent} % or 4 "
                     "pods per 15 s: " + _why(result, p, "scale_down_window_seconds", lambda v: f"a {v} s scale-down window")
                     + "; " + _why(result, p, "scale_up_percent", lambda v: f"scale-up {v} %")),
        **{name: f"{tuning.why}: " + _why(result, p, name, _on_off(name)) for name, tuning in TUNING.items()},
        "schedules": _schedules_comment(result, p),
    }
    absent = []
    if "behavior" not in spec:
        absent.append(f"no behavior: upstream's defaults (scale-down window {DEFAULT_SCALE_DOWN_WINDOW} s, scale-up "
                      f"{DEFAULT_SCALE_UP_PERCENT} % or 4 pods per 15 s) were the best; "
                      + _why(result, p, "scale_down_window_seconds", lambda v: f"a {v} s scale-down window"))
    absent += [f"no {name}: " + _why(result, p, name, _on_off(name)) for name in p.sources if name not in spec]
    if p.can_schedule and not s.schedules:
        absent.append("no schedule windows: " + _no_windows(result, p))
    for key, value in spec.items():
        if key in comments and comments[key]:
            lines.extend(f"  # {text}" for text in comments[key].split("\n"))
        elif key == "scaleTargetRef":
            pass
        else:
            lines.append("  # kept as in the current object")
        lines.append(_indent(_dump({key: value})))
    lines += [f"  # {text}" for text in absent]
    return "\n".join(lines) + "\n"


def _schedules_comment(result: TuneResult, p: Prepared) -> str:
    """spec.schedules' comment: why each window tune added exists (one line each), and what it is worth."""
    s = result.recommended.setting
    own = len(p.base.get("spec", {}).get("schedules") or [])
    lines = [f"{own} window(s) kept as in the current object" + ("; then the windows tune adds" if s.schedules else "")] if own else []
    if not s.schedules:
        return "\n".join(lines) or "kept as in the current object"
    peaks = {peak.name: peak for peak in result.peaks}
    for w in s.schedules:
        peak = peaks.get(w.name.removesuffix("-tune"))
        why = peak.why() if peak is not None else "a peak recurring at this clock time"
        lines.append(f"window {w.name} ({w.start}, {w.time_zone}, {w.duration_seconds // 60} min, floor "
                     f"{w.min_replicas}): {why}")
    lines.append("the windows are worth their pod-hours: " + _windows_cost(result, False))
    return "\n".join(lines)


def _windows_cost(result: TuneResult, with_windows: bool) -> str:
    """What the cheapest setting tried with (or without) windows that met the objective cost, against the
    recommendation."""
    what = "with windows" if with_windows else "without windows"
    tried = [e for e in result.evaluations if bool(e.setting.schedules) == with_windows]
    best = _cheapest(result, tried)
    if best is None:
        return f"none of the {len(tried)} settings tried {what} met the objective in-sample"
    return (f"the cheapest setting tried {what} that met the objective cost {best.in_sample.pod_hours:.1f} pod-hours "
            f"({best.in_sample.pod_hours - result.recommended.in_sample.pod_hours:+.1f})")


def _cheapest(result: TuneResult, tried: list[Evaluation]) -> Evaluation | None:
    ok = [e for e in tried if e.complete and result.objective.met(e.in_sample)]
    return min(ok, key=rank_key) if ok else None


def _no_windows(result: TuneResult, p: Prepared) -> str:
    if not result.peaks:
        return ("no peak recurred at the same clock time in the replays of the tuning part (a window would only "
                "add pod-hours)")
    names = ", ".join(f"{peak.name} ({peak.cron} UTC)" for peak in result.peaks)
    return f"windows for the recurring peaks {names} were tried and not worth their pod-hours: " + _windows_cost(result, True)


def _dump(obj) -> str:
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, width=1000)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.rstrip().splitlines())


# ------------------------------------------------------------------------------------------------ files
def _row(e: Evaluation, result: TuneResult, frontier_ids: set, label: str | None = None) -> dict:
    o = result.objective
    row = {"trial": label if label is not None else e.number}
    row.update(e.setting.columns())
    for part, f in (("in_sample", e.in_sample), ("held_out", e.held_out)):
        for k in FIGURE_FIELDS:
            row[f"{part}_{k}"] = "" if f is None else getattr(f, k)
        row[f"{part}_meets_objective"] = "" if f is None else o.met(f, 1.0 if part == "in_sample" else HELD_OUT_SLACK)
    row["frontier"] = id(e) in frontier_ids
    row["recommended"] = e is result.recommended
    row["origin"] = e.origin or ("the current object" if label == "current" else "search")
    return row


def write_candidates(result: TuneResult, path: Path) -> None:
    ids = {id(e) for e in result.frontier}
    rows = [_row(result.current, result, ids, "current")] + [_row(e, result, ids) for e in result.evaluations]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _peak_dict(peak) -> dict:
    return {"name": peak.name, "start": peak.cron, "durationSeconds": peak.duration_seconds, "timeZone": "UTC",
            "late": peak.late,
            "hits": peak.hits, "seen": peak.seen, "replay": peak.replay, "demand_rps": round(peak.demand_rps, 4),
            "why": peak.why()}


def evaluation_dict(e: Evaluation, p: Prepared) -> dict:
    return {"setting": e.setting.as_dict(), "label": e.setting.label(p.kind),
            "in_sample": None if e.in_sample is None else {k: getattr(e.in_sample, k) for k in FIGURE_FIELDS},
            "held_out": None if e.held_out is None else {k: getattr(e.held_out, k) for k in FIGURE_FIELDS}}


def summary(result: TuneResult, p: Prepared, inputs: dict) -> dict:
    """summary.json."""
    o = result.objective
    return {
        "objective": {"metric": o.metric, "limit": o.limit, "option": o.option, "held_out_slack": HELD_OUT_SLACK},
        "inputs": inputs,
        "kind": result.manifest["kind"],
        "upstream_only": p.upstream_only,
        "extensions_searched": {**{name: name in p.sources for name in TUNING}, "schedules": p.can_schedule},
        "windows": [_peak_dict(peak) for peak in result.peaks],
        "target_type": p.kind.type,
        "current": evaluation_dict(result.current, p),
        "recommended": evaluation_dict(result.recommended, p),
        "candidates": len(result.evaluations),
        "stopped_early": {why: sum(1 for e in result.evaluations if e.in_sample.stopped == why)
                          for why in (OVER_LIMIT, COSTLIER)},
        "held_out_checked": result.held_out_tried,
        "held_out_check": held_out_check(result, p),
        "search_seconds": round(result.search_seconds, 2),
        "check_seconds": round(result.check_seconds, 2),
        "frontier": [evaluation_dict(e, p) for e in result.frontier],
        "notes": result.notes,
        "manifest": result.manifest,
    }


def held_out_check(result: TuneResult, p: Prepared) -> dict:
    """summary.json's ``held_out_check``: what the check allows, the recommendation's figure there and the
    headroom it keeps (the share of the allowance left unused), and the settings that met the objective in-sample
    but missed it there (cheapest first), with how each was found."""
    o = result.objective
    h = result.recommended.held_out
    headroom = result.held_out_headroom()
    return {
        "allowed": o.limit * HELD_OUT_SLACK,
        "recommended": None if h is None else o.value(h),
        "headroom": None if headroom is None else round(headroom, 4),
        "checked": result.held_out_tried,
        "derived": sum(1 for e in result.evaluations if e.origin),
        "missed": [{"label": e.setting.label(p.kind),
                    "origin": e.origin or ("the current object" if e is result.current else "search"),
                    "in_sample_pod_hours": e.in_sample.pod_hours, "in_sample": o.value(e.in_sample),
                    "held_out": o.value(e.held_out)} for e in result.missed],
    }


def held_out_text(result: TuneResult, p: Prepared, most: int = 5) -> str:
    """One paragraph for the terminal: the recommendation's held-out figure and headroom, the settings that missed
    there (at most ``most`` named). Empty without a held-out part."""
    o = result.objective
    h = result.recommended.held_out
    if h is None:
        return ""
    what = "overloaded" if o.metric == "overloaded_fraction" else "unserved"
    text = (f"held out: the recommendation was {what} {_pct(o.value(h))} of the "
            f"{'time' if o.metric == 'overloaded_fraction' else 'requests'}, "
            f"{result.held_out_headroom():.0%} headroom under the {_pct(o.limit * HELD_OUT_SLACK)} the check allows "
            f"({HELD_OUT_SLACK:g}x {o.option} {o.limit:g})")
    missed = result.missed
    if not missed:
        return text + "; no setting checked there missed"
    named = "; ".join(f"{e.setting.label(p.kind)} ({_pct(o.value(e.held_out))})" for e in missed[:most])
    more = f"; and {len(missed) - most} more (candidates.csv)" if len(missed) > most else ""
    return text + f"; {len(missed)} setting(s) that met it in-sample missed there: {named}{more}"


def plot_frontier(result: TuneResult, p: Prepared, path: Path, title: str) -> None:
    """frontier.png: every candidate's pod-hours against its objective figure (in-sample), the frontier, the
    current object, the recommendation and the limit. A candidate whose replay stopped early is drawn at what it
    had reached by then (``Objective.at_least``: its overload over the whole part, its pod-hours so far): lower
    bounds of both, marked with an arrow up and right. Current and recommended are drawn so that both show when
    they coincide; the legend sits below the axes, the title is wrapped."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    o = result.objective
    scale = 100.0
    fig, ax = plt.subplots(figsize=(9, 6.4), dpi=110, layout="constrained")
    whole = result.current.in_sample  # a replay to the end of the tuning part: its seconds and requests
    ev = [e for e in result.evaluations if e.complete]
    stopped = [e for e in result.evaluations if not e.complete]
    xs: list[float] = []
    for group, color, label in (([e for e in ev if not e.setting.extended], "#7f8fa6", "upstream fields only"),
                                ([e for e in ev if e.setting.extended], "#dd8a2e",
                                 f"with {'/'.join(TUNING)}/windows")):
        if group:
            x = [o.value(e.in_sample) * scale for e in group]
            xs += x
            ax.scatter(x, [e.in_sample.pod_hours for e in group], s=28, color=color, alpha=0.85,
                       label=f"candidate, {label}", zorder=2)
    if stopped:
        x = [o.at_least(e.in_sample, whole) * scale for e in stopped]
        xs += x
        ax.scatter(x, [e.in_sample.pod_hours for e in stopped], s=150, marker=r"$\nearrow$", color="#7f8fa6",
                   label="stopped early (over the limit, or costlier than the best):\nat least this overload and "
                         "these pod-hours", zorder=2)
    fr = sorted(result.frontier, key=lambda e: o.value(e.in_sample))  # least overload first: pod-hours fall
    fx = [o.value(e.in_sample) * scale for e in fr]
    xs += fx
    ax.step(fx, [e.in_sample.pod_hours for e in fr], where="post", color="#2b6cb0", lw=2.2, marker="o", ms=5,
            label="frontier (in-sample): least pod-hours at that overload or less", zorder=3)
    c, r = result.current, result.recommended
    cx, cy = o.value(c.in_sample) * scale, c.in_sample.pod_hours
    rx, ry = o.value(r.in_sample) * scale, r.in_sample.pod_hours
    ax.scatter([cx], [cy], marker="s", s=260, facecolors="none", edgecolors="#c53030", linewidths=2.2,
               label="current object", zorder=6)
    ax.scatter([rx], [ry], marker="*", s=170, color="#2f855a", edgecolors="white", linewidths=0.6,
               label="recommended", zorder=7)
    same = c.setting == r.setting
    ax.annotate("current = recommended" if same else "current", (cx, cy), xytext=(14, 0), textcoords="offset points",
                color="#c53030", fontsize=9, va="center", zorder=8)
    if not same:
        ax.annotate("recommended", (rx, ry), xytext=(0, -16), textcoords="offset points", color="#2f855a",
                    fontsize=9, ha="center", va="top", zorder=8)
    limit = o.limit * scale
    right = max(xs + [limit * 1.25]) * 1.1 + 1e-9
    ax.axvline(limit, color="#555", ls="--", lw=1.2, label=f"the limit: {o.option} {o.limit:g}")
    ax.axvspan(limit, right, color="#c53030", alpha=0.05, lw=0, label="over the limit")
    ax.set_xlim(0, right)
    ax.set_xlabel(("overloaded share of time" if o.metric == "overloaded_fraction" else "unserved share of requests")
                  + ", % (in-sample)")
    ax.set_ylabel("pod-hours (in-sample)")
    ax.set_title("\n".join(textwrap.wrap(title, 95)), fontsize=10, loc="left")
    ax.grid(alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8, loc="outside lower center", ncol=2, frameon=False)
    fig.savefig(path)
    plt.close(fig)


def write_outputs(result: TuneResult, p: Prepared, inputs: dict, out: Path, title: str) -> list[Path]:
    """Write recommended.yaml, candidates.csv, frontier.png and summary.json into ``out``; returns the paths."""
    paths = [out / "recommended.yaml", out / "candidates.csv", out / "frontier.png", out / "summary.json"]
    paths[0].write_text(recommended_yaml(result, p, inputs))
    write_candidates(result, paths[1])
    plot_frontier(result, p, paths[2], title)
    paths[3].write_text(json.dumps(summary(result, p, inputs), indent=2, allow_nan=False) + "\n")  # strict JSON
    return paths


# ------------------------------------------------------------------------------------------------ table
def table(result: TuneResult, p: Prepared) -> Table:
    """Current against recommended: the fields, the figures in-sample and held out, the differences."""
    t = Table(title="pyhpa tune: current vs recommended", title_justify="left")
    for name, justify in (("", "left"), ("current", "right"), ("recommended", "right"), ("difference", "right")):
        t.add_column(name, justify=justify)
    c, r = result.current, result.recommended
    cs, rs = c.setting, r.setting
    rows = [
        ("kind", p.base.get("kind", ""), result.manifest["kind"], ""),
        ("target (spec.metrics[0])", _target(p, cs.target), _target(p, rs.target), _diff(cs.target, rs.target, "g")),
        ("minReplicas", cs.min_replicas, rs.min_replicas, _diff(cs.min_replicas, rs.min_replicas, "d")),
        ("maxReplicas", cs.max_replicas, rs.max_replicas, _diff(cs.max_replicas, rs.max_replicas, "d")),
        ("scale-down window, s", cs.scale_down_window_seconds, rs.scale_down_window_seconds,
         _diff(cs.scale_down_window_seconds, rs.scale_down_window_seconds, "d")),
        ("scale-up, % per 15 s", cs.scale_up_percent, rs.scale_up_percent, _diff(cs.scale_up_percent, rs.scale_up_percent, "d")),
        *((name, _brief(cs, name), _brief(rs, name), "") for name in TUNING),
        ("schedule windows added", "", "; ".join(w.label() for w in rs.schedules) or "none", ""),
    ]
    for part, a, b in (("in-sample", c.in_sample, r.in_sample), ("held-out", c.held_out, r.held_out)):
        if a is None or b is None:
            continue
        rows += [
            (f"{part}: pod-hours", f"{a.pod_hours:.1f}", f"{b.pod_hours:.1f}", _diff(a.pod_hours, b.pod_hours, ".1f", True)),
            (f"{part}: overloaded share", _pct(a.overloaded_fraction), _pct(b.overloaded_fraction),
             _diff(100 * a.overloaded_fraction, 100 * b.overloaded_fraction, ".3f") + " pt"),
            (f"{part}: unserved share", _pct(a.unserved_fraction), _pct(b.unserved_fraction),
             _diff(100 * a.unserved_fraction, 100 * b.unserved_fraction, ".3f") + " pt"),
            (f"{part}: scale events", a.scale_events, b.scale_events, _diff(a.scale_events, b.scale_events, "d")),
        ]
    for row in rows:
        t.add_row(*(str(x) for x in row))
    return t


def _brief(s: Setting, name: str) -> str:
    """The source section ``name`` of ``s`` in the table: ``off``, or ``on`` and its values (``TUNING``'s ``brief``)."""
    values = s.source(name)
    return "off" if values is None else "on " + TUNING[name].brief.format(**values)


def _diff(a: float, b: float, fmt: str, relative: bool = False) -> str:
    if a == b:
        return "="
    text = format(b - a, "+" + fmt)
    if relative and a:
        text += f" ({(b - a) / a:+.1%})"
    return text
