"""``pyhpa explain``: why an HPA decided what it decided ("why didn't it scale?")."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..adapters.errors import InputError
from ..adapters.kubectl import snapshot_from_kubectl
from ..adapters.parse import format_time, int32_value, timestamp
from ..adapters.snapshot import Snapshot, decision_json, load_snapshots, run_snapshot, snapshot_warnings
from ..api.sections import SOURCE_SECTIONS, SourceSection
from ..core import LIMIT, Decision, HPAWarning, Proposal, SourceProposal, active_windows, tolerances
from ..core.model import SourceKind
from . import readable
from .help import examples
from .options import Output, rule
from .options import console as text_console

EXAMPLES = examples(
    "pyhpa explain examples/explain/snapshot.yaml",
    "pyhpa explain -o json examples/explain/snapshot.yaml",
    "pyhpa explain --recommendation 1 examples/explain/snapshot.yaml",
    "pyhpa explain --hpa examples/explain/hpa.yaml \\",
    "  --pods examples/explain/pods.yaml \\",
    "  --pod-metrics examples/explain/podmetrics.json --now 2026-11-21T10:00:00Z",
)


def explain(
    snapshots: Optional[list[Path]] = typer.Argument(None, help="Snapshot files (JSON or YAML, FORMAT.md); a file may hold {\"cases\": [...]}."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text for people, json: one object per snapshot per line."),
    recommendation: Optional[int] = typer.Option(None, "--recommendation", help="Skip metrics: normalize this recommended replica count."),
    hpa: Optional[Path] = typer.Option(None, "--hpa", help="HPA manifest (kubectl get hpa NAME -o yaml)."),
    pods: Optional[Path] = typer.Option(None, "--pods", help="Pods of the target (kubectl get pods -l SELECTOR -o yaml)."),
    pod_metrics: Optional[Path] = typer.Option(None, "--pod-metrics", help="kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods"),
    replicas: Optional[int] = typer.Option(None, "--replicas", help="The target's current replicas (default: the HPA's status.currentReplicas)."),
    selector: Optional[str] = typer.Option(None, "--selector", help="The target's pod selector (default: the labels all given pods share)."),
    now: Optional[str] = typer.Option(None, "--now", help="The controller's clock, RFC 3339 (default: the wall clock)."),
    lenient: bool = typer.Option(False, "--lenient", help="Accept objects the API server would refuse (as upstream's unit tests do); the controller then reports them in conditions."),
) -> None:
    """Explain the decision of one HPA sync, per metric and per normalization step."""
    check_inputs(snapshots or [], hpa, pods, pod_metrics, replicas, selector, now, recommendation)
    explain_snapshots(_gather(snapshots or [], hpa, pods, pod_metrics, replicas, selector, now, lenient), output,
                      recommendation)


def explain_snapshots(snaps: list[Snapshot], output: Output, recommendation: int | None = None) -> None:
    """Decide each snapshot and print why: text for people, or one JSON object per line (``decision_json``).
    Also what ``kubectl pyhpa explain`` prints for the live snapshot it takes."""
    console = text_console(markup=False)  # user text (metric names, selectors, messages) is printed as written
    for snap in snaps:
        decision = run_snapshot(snap, recommendation)
        warnings = snapshot_warnings(snap)
        if output == Output.json:
            typer.echo(json.dumps(decision_json(snap.name, decision, snap.inputs.hpa, snap.inputs.now, warnings),
                                  separators=(",", ":")))
        else:
            render(console, snap, decision, warnings)


def check_inputs(files, hpa, pods, pod_metrics, replicas, selector, now, recommendation) -> None:
    """The combinations ``explain`` accepts; anything else is an InputError naming the flag:
    snapshot files alone, or ``--hpa`` with ``--pods`` and ``--pod-metrics`` (``--hpa`` alone only
    with ``--recommendation``, which needs no metrics); never both; no negative counts."""
    kubectl_only = [flag for flag, value in (("--pods", pods), ("--pod-metrics", pod_metrics), ("--replicas", replicas),
                                             ("--selector", selector), ("--now", now)) if value is not None]
    if files and hpa is not None:
        raise InputError("not with snapshot files: explain reads snapshots or kubectl output, not both", field="--hpa")
    if hpa is None and kubectl_only:
        raise InputError("goes with --hpa (kubectl output); a snapshot file holds its own",
                         field=kubectl_only[0])
    if not files and hpa is None:
        raise InputError("give snapshot files, or --hpa with --pods and --pod-metrics", field="SNAPSHOT")
    if hpa is not None and recommendation is None:
        if pods is None:
            raise InputError("missing: --hpa needs the pods (kubectl get pods -l SELECTOR -o yaml) and --pod-metrics, "
                             "or --recommendation N to skip metrics", field="--pods")
        if pod_metrics is None:
            raise InputError("missing: --hpa needs the pods' metrics (kubectl get --raw "
                             "/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods), or --recommendation N to skip metrics",
                             field="--pod-metrics")
    for flag, value in (("--replicas", replicas), ("--recommendation", recommendation)):
        if value is not None:
            int32_value(value, flag)


def _gather(files, hpa, pods, pod_metrics, replicas, selector, now, lenient) -> list[Snapshot]:
    snaps: list[Snapshot] = []
    for f in files:
        snaps.extend(load_snapshots(f, lenient=lenient))
    if hpa is not None:
        clock = timestamp(now, "--now") if now else time.time()
        snaps.append(snapshot_from_kubectl(hpa, pods, pod_metrics, replicas, selector, clock, lenient))
    return snaps


def _value(p: Proposal, milli: int | None) -> str:
    return readable.quantity(milli, p.spec)


def _target_text(p: Proposal) -> str:
    s = p.spec
    if s.target_type == "Utilization":
        return f"{s.target_utilization}% of {_basis(p)}"
    if s.target_type == "AverageValue" and s.target_average_milli is not None:
        return f"{readable.quantity(s.target_average_milli, s)} average"
    if s.target_value_milli is not None:
        return f"{readable.quantity(s.target_value_milli, s)} value"
    return "-"


def _basis(p: Proposal) -> str:
    return "limit" if p.spec.utilization_basis == LIMIT else "request"


def _current_text(p: Proposal) -> str:
    if p.utilization is not None:
        return f"{p.utilization}% of {_basis(p)} (average {_value(p, p.raw_milli)})"
    kind = {"AverageValue": " average", "Value": " value"}.get(p.spec.target_type, "")
    return _value(p, p.raw_milli) + ("" if p.raw_milli is None else kind)


def _ratio_line(p: Proposal) -> str:
    lo, hi = p.band or (0.0, 0.0)
    inside = p.ratio is not None and lo <= p.ratio <= hi
    verdict = "inside the tolerance band: no change" if inside else "outside the tolerance band"
    return f"ratio {p.ratio:.4f} vs band [{lo:.4f}, {hi:.4f}] -> {verdict}"


def _pod_lines(p: Proposal) -> list[str]:
    g = p.groups
    if g is None:
        return []
    lines = [f"pods counted: {g.ready} ready with metrics"]
    if g.ignored:
        lines.append(f"left out (deleted or Failed): {', '.join(g.ignored)}")
    for name in g.unready:
        lines.append(f"left out as unready: {name} ({g.unready_why.get(name, 'unready')})")
    if g.missing:
        lines.append(f"no metric sample: {', '.join(g.missing)}")
    if p.filled:
        assumed = ", ".join(f"{n}={readable.quantity(v, p.spec)}" for n, v in p.filled.items())
        direction = "scale-up: assumed 0" if p.ratio and p.ratio > 1.0 else "scale-down: assumed at target/request"
        lines.append(f"filled in ({direction}): {assumed}")
        if p.new_ratio is not None:
            lines.append(f"ratio after fill-in {p.new_ratio:.4f} (a fill-in never reverses the direction)")
    return lines


def _marked(template: str, *values) -> Text:
    """``template``'s rich markup (``[bold]...[/]``) styles the line; ``values`` (what the user wrote: names,
    selectors, messages) are put in ``{}`` as they are, never read as markup (``map[string]string{...}``)."""
    return Text.from_markup(template.format(*(escape(str(v)) for v in values)))


def render(console: Console, snap: Snapshot, d: Decision, warnings: list[HPAWarning] = ()) -> None:
    """The human explanation of one decision, then the warnings of ``pyhpa.core.check_hpa``."""
    h = snap.inputs.hpa
    down, up = tolerances(h, snap.inputs.config)
    rule(console, _marked("[bold]{}[/]", snap.name))
    console.print(f"HPA {h.namespace}/{h.name}   now {format_time(snap.inputs.now)}   source {snap.source}")
    console.print(
        f"current replicas {d.current_replicas} (min {h.min_replicas}, max {h.max_replicas}); "
        f"tolerance: scale-down {down:g}, scale-up {up:g}"
    )
    if h.schedules:
        _render_schedules(console, snap, d)
    if d.prenormalized is not None and not d.proposals:
        console.print(f"recommendation given: {d.prenormalized} (metrics not evaluated)")
    for i, p in enumerate(d.proposals, 1):
        console.print(_marked("\n[bold]metric {}:[/] {}", i, p.metric))
        if p.error:
            console.print(_marked("  [red]cannot compute[/]: {}", p.error))
            for line in _pod_lines(p):
                console.print(f"  {line}")
            continue
        console.print(f"  current {_current_text(p)}  target {_target_text(p)}")
        if p.ratio is not None:
            console.print(f"  {_ratio_line(p)}")
        for line in _pod_lines(p):
            console.print(f"  {line}")
        console.print(_marked("  proposes [bold]{}[/] replicas", p.replicas))
    for section in SOURCE_SECTIONS.values():
        if getattr(h, section.field) is not None:
            _OWN_RENDERING.get(section.source.kind, _render_source)(console, snap, d, section)
    _render_result(console, d)
    for w in warnings:
        console.print(_marked("[bold yellow]warning {}[/]: ", w.reason), end="")
        console.print(w.message, markup=False)


def _render_prediction(console: Console, snap: Snapshot, d: Decision, section: SourceSection) -> None:
    """What spec.prediction asked for, and whether it set the number (the values of ``-o json``'s ``prediction``,
    with the quantities in readable units)."""
    spec = snap.inputs.hpa.prediction
    st = d.status.prediction
    src = d.source(section.source.kind)
    console.print(_marked("\n[bold]prediction:[/] metric {}, lead {} s, quantile {}, mode {}", spec.metric + 1,
                          spec.lead_seconds, f"{spec.quantile:g}", spec.mode))
    if st is None or src is None:
        console.print(NOT_EVALUATED)
        return
    if st.forecast_milli is not None:
        metric = snap.inputs.hpa.metrics[spec.metric] if spec.metric < len(snap.inputs.hpa.metrics) else None
        console.print(f"  forecast: {readable.quantity(st.forecast_milli, metric)} (the {spec.quantile:g} quantile "
                      f"of the metric's "
                      f"workload total over the next {spec.lead_seconds} s)", markup=False)
        if st.expected_milli is not None and st.provisioned_milli is not None:
            console.print(f"  expected: {readable.quantity(st.expected_milli, metric)}; provisioned for: "
                          f"{readable.quantity(st.provisioned_milli, metric)} (the band above the expected value "
                          "counts in proportion to the target's headroom it would use)", markup=False)
    if st.replicas is None:
        console.print(f"  steps aside [{st.reason}]: {src.note}", markup=False)
        return
    _asks_for(console, d, src, st.replicas, src.note or st.reason)


#: the sources ``render`` shows by code of their own (the forecast's quantities in the metric's units); every other
#: source section is shown by ``_render_source``
_OWN_RENDERING = {SourceKind.PREDICTION: _render_prediction}
NOT_EVALUATED = "  not evaluated (the sync stopped before the sources were combined)"


def _render_source(console: Console, snap: Snapshot, d: Decision, section: SourceSection) -> None:
    """What the source of ``spec.<field>`` (``section``: its core source is ``Explained``) made of the sync: its spec
    in one line, its status's lines, what it asked for and whether it set the number (the values of ``-o json``'s
    ``<field>``)."""
    source = section.source
    console.print(_marked("\n[bold]{}:[/] {}", section.field, source.summary(getattr(snap.inputs.hpa, section.field))))
    st = getattr(d.status, section.field)
    src = d.source(source.kind)
    if st is None or src is None:
        console.print(NOT_EVALUATED)
        return
    for line in source.explain(st):
        console.print(f"  {line}", markup=False)
    if src.replicas is not None:
        _asks_for(console, d, src, src.replicas, st.reason)


def _asks_for(console: Console, d: Decision, src: SourceProposal, replicas: int, why: str) -> None:
    """The replicas a source asked for and what became of them: not applied (``why``), set the number, or not the
    deciding source."""
    if not (src.applied and src.active):
        console.print(_marked("  asks for [bold]{}[/] replicas; not applied ({})", replicas, why))
        return
    if src.won:
        console.print(_marked("  asks for [bold]{}[/] replicas: [bold green]it set the number[/]", replicas))
    else:
        console.print(_marked("  asks for [bold]{}[/] replicas: not the deciding source (decided by {})", replicas,
                              d.decided_by))


def _render_result(console: Console, d: Decision) -> None:
    if d.prenormalized is not None:
        console.print(f"\nrecommendation before normalization: {d.prenormalized} ({d.metric_name})")
    for s in d.steps:
        console.print(f"  {s.stage}: {s.before} -> {s.after}  [{s.reason}] {s.message}", markup=False)
    if d.prenormalized is not None and not d.steps:
        console.print("  normalization changed nothing (no stabilization, rate limit or min/max applied)")
    _render_sources(console, d)
    if d.rescale:
        console.print(_marked("\n[bold green]scale {} -> {}[/]: {}", d.current_replicas, d.desired_replicas,
                              d.rescale_reason))
    else:
        console.print(_marked("\n[bold]no rescale[/]: stays at {}", d.current_replicas))
    if d.error:
        console.print(f"error: {d.error}", markup=False)
    table = Table("condition", "status", "reason", "message", show_lines=False)
    for c in d.conditions:
        table.add_row(c.type, c.status, c.reason, c.message)
    console.print(table)
    for e in d.events:
        console.print(f"event {e.type} {e.reason}: {e.message}", markup=False)


def local_time(ts: float, tz) -> str:
    """Epoch seconds as wall-clock time in ``tz`` with the zone's abbreviation (``2026-06-10 08:00 EDT``;
    seconds only when not zero)."""
    t = local_datetime(ts, tz)
    return f"{t.year:04d}-" + t.strftime("%m-%d %H:%M:%S %Z" if t.second or t.microsecond else "%m-%d %H:%M %Z")


def local_datetime(ts: float, tz) -> datetime:
    """Epoch seconds in ``tz``; in UTC where that local time would fall outside the calendar (the last hours of
    9999-12-31 east of Greenwich, the first of 0001-01-01 west of it)."""
    try:
        return datetime.fromtimestamp(ts, tz)
    except (OverflowError, ValueError):
        return datetime.fromtimestamp(ts, timezone.utc)


def _bounds_text(w) -> str:
    parts = []
    if w.min_replicas is not None:
        parts.append(f"floor {w.min_replicas}")
    if w.max_replicas is not None:
        parts.append(f"cap {w.max_replicas}")
    return ", ".join(parts)


def _render_schedules(console: Console, snap: Snapshot, d: Decision) -> None:
    """The windows active at the snapshot's ``now`` and how they changed the bounds."""
    h = snap.inputs.hpa
    active = {a.name: a for a in active_windows(h.schedules, snap.inputs.now)}
    console.print(_marked("\n[bold]schedules[/] at now: {} of {} window(s) active", len(active), len(h.schedules)))
    for w in h.schedules:
        a = active.get(w.name)
        if a is None and w.dated:
            when = (f"expired: ended {local_time(w.end_time, w.time_zone)}" if snap.inputs.now >= w.end_time else
                    f"dated, starts {local_time(w.start_time, w.time_zone)}")
            console.print(f"  {w.name}: not active ({when}; {_bounds_text(w)})", markup=False)
            continue
        if a is None:
            console.print(f"  {w.name}: not active ({_bounds_text(w)}; {w.time_zone_name})", markup=False)
            continue
        console.print(f"  {w.name}: active from {local_time(a.start, w.time_zone)} to {local_time(a.end, w.time_zone)} "
                      f"({format_time(a.start)} to {format_time(a.end)}): {_bounds_text(w)}", markup=False)
    lo, hi = (h.min_replicas, d.min_replicas_effective), (h.max_replicas, d.max_replicas_effective)
    console.print(f"  bounds: minReplicas {lo[0]}" + (f" -> {lo[1]}" if lo[1] != lo[0] else " (unchanged)")
                  + f", maxReplicas {hi[0]}" + (f" -> {hi[1]}" if hi[1] != hi[0] else " (unchanged)"))
    change = d.status.schedules.next_change if d.status.schedules is not None else None
    if change is not None:
        console.print(f"  next start or end of a window: {format_time(change)}")


def _asks(s: SourceProposal) -> str:
    if s.replicas is not None:
        return f"{s.replicas} replicas"
    if s.min_replicas is not None or s.max_replicas is not None:
        return _bounds_text(s)
    return "-"


def _render_sources(console: Console, d: Decision) -> None:
    """Per source: what it asked for; and which source set the final number."""
    if not d.sources:
        return
    table = Table("source", "name", "asks for", "note", title="sources", title_justify="left")
    for s in d.sources:
        note = s.error or s.note or ("" if s.applied else "not applied")
        mark = " (decided)" if s.won else ""
        table.add_row(s.source.value, s.name + mark, _asks(s), note)
    console.print(table)
    if d.decided_by:
        console.print(f"decided by: {d.decided_by}", markup=False)
