"""``pyhpa schedules``: when the windows of a HorizontalAutoscaler start and end (``spec.schedules``)."""

from __future__ import annotations

import json
import math
import time
from datetime import timezone
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..adapters.autoscaler import ParsedAutoscaler, find_autoscaler, read_autoscaler
from ..adapters.errors import InputError
from ..adapters.parse import LAST_SECOND, format_time, timestamp
from ..adapters.promql import OFFLINE_SERVER
from ..adapters.snapshot import read_document
from ..core import expired_windows, occurrences
from .explain_cmd import local_datetime, local_time
from .help import examples
from .options import Output
from .options import console as text_console

WEEK = 7 * 86400.0
#: the most occurrences listed per window (``--limit``): a minute's cron over a week is 10,080
MAX_LIMIT = 100_000
UTC = timezone.utc


def schedules(
    file: Path = typer.Argument(..., metavar="FILE", help="A HorizontalAutoscaler (pyhpa.dev/v1alpha1) manifest with spec.schedules."),
    since: Optional[str] = typer.Option(None, "--from", help="From this time, RFC 3339 (without offset: UTC). Default: now."),
    until: Optional[str] = typer.Option(None, "--to", help="Up to this time, RFC 3339 (without offset: UTC). Default: 7 days after --from."),
    limit: int = typer.Option(100, "--limit", help="At most this many occurrences per window."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text table or json (one object)."),
) -> None:
    """List the windows' starts and ends between --from and --to, in each window's time zone and in UTC.

    An occurrence already running at --from is listed first. Dates in excludeDates are left out;
    DST rules are the decision core's (docs/schedules.md): a window inside the hour skipped when the
    clocks spring forward is listed empty that day (start = end), and is not active. A dated window
    that has ended by --from is reported as expired (it never applies again).
    """
    start, end = schedule_span(since, until, limit)
    try:
        parsed = read_autoscaler(find_autoscaler(read_document(file)), prometheus_server=OFFLINE_SERVER)
    except InputError as err:
        raise err.at(file=str(file)) from None
    report_schedules(parsed, start, end, limit, output)


def schedule_span(since: str | None, until: str | None, limit: int) -> tuple[float, float]:
    """``--from``/``--to`` as epoch seconds (defaults: now, and 7 days later); InputError naming the flag."""
    start = timestamp(since, "--from") if since else float(math.floor(time.time()))
    if start >= LAST_SECOND:
        raise InputError(f"must be before {format_time(LAST_SECOND)}, the end of the calendar", field="--from")
    end = timestamp(until, "--to") if until else min(start + WEEK, LAST_SECOND)
    if end <= start:
        raise InputError(f"must be after --from ({format_time(start)})", field="--to")
    if limit < 1:
        raise InputError("must be at least 1", field="--limit")
    if limit > MAX_LIMIT:
        raise InputError(f"must be at most {MAX_LIMIT:,} occurrences per window, got {limit:,}", field="--limit")
    return start, end


def report_schedules(parsed: ParsedAutoscaler, start: float, end: float, limit: int, output: Output) -> None:
    """Print the occurrences of ``parsed``'s windows between ``start`` and ``end`` (epoch s; at most ``limit`` per
    window) and its expired dated windows, as a table or one JSON object. Also what ``kubectl pyhpa
    schedules`` prints for the live autoscaler."""
    rows, truncated = [], []
    for w in parsed.hpa.schedules:
        for k, (s, e) in enumerate(occurrences(w, start, end)):
            if k == limit:
                truncated.append(w.name)
                break
            rows.append((s, e, w))
    rows.sort(key=lambda r: (r[0], r[2].name))
    gone = set(expired_windows(parsed.hpa.schedules, start))
    expired = [w for w in parsed.hpa.schedules if w.name in gone]
    if output == Output.json:
        typer.echo(json.dumps({
            "autoscaler": parsed.label, "from": format_time(start), "to": format_time(end), "truncated": truncated,
            "occurrences": [{
                "window": w.name, "timeZone": w.time_zone_name,
                "start": format_time(s), "end": format_time(e),
                "startLocal": local_datetime(s, w.time_zone).isoformat(),
                "endLocal": local_datetime(e, w.time_zone).isoformat(),
                "running": s < start, "minReplicas": w.min_replicas, "maxReplicas": w.max_replicas,
            } for s, e, w in rows],
            "expired": [{"window": w.name, "timeZone": w.time_zone_name, "start": format_time(w.start_time),
                         "end": format_time(w.end_time), "minReplicas": w.min_replicas,
                         "maxReplicas": w.max_replicas} for w in expired]}, separators=(",", ":")))
        return
    _render(parsed, rows, start, end, truncated, expired)


def _render(parsed, rows, start: float, end: float, truncated: list[str], expired: list) -> None:
    console = text_console()
    hpa = parsed.hpa
    console.print(f"{parsed.label}: {len(hpa.schedules)} window(s), from {format_time(start)} to {format_time(end)}")
    if not hpa.schedules:
        console.print("no spec.schedules: the bounds are always minReplicas "
                      f"{hpa.min_replicas} and maxReplicas {hpa.max_replicas}")
        return
    table = Table("window", "start\n(window's zone / UTC)", "end\n(window's zone / UTC)", "floor", "cap")
    for s, e, w in rows:
        running = "\n(running at --from)" if s < start else ""
        empty = "\n(empty: in the DST gap)" if e == s else ""
        table.add_row(f"{w.name}\n{w.time_zone_name}", f"{local_time(s, w.time_zone)}\n{local_time(s, UTC)}{running}",
                      f"{local_time(e, w.time_zone)}\n{local_time(e, UTC)}{empty}", _num(w.min_replicas),
                      _num(w.max_replicas))
    console.print(table)
    if not rows:
        console.print("no window starts or runs in this span")
    for w in expired:
        console.print(f"{w.name}: expired (dated window that ended {local_time(w.end_time, w.time_zone)}, "
                      f"{format_time(w.end_time)}); it never applies again", markup=False)
    for name in truncated:
        console.print(f"{name}: more occurrences than --limit; narrow --from/--to or raise --limit")


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


EXAMPLES = examples(
    "pyhpa schedules examples/schedules/php-apache-schedules.yaml   # next 7 days",
    "pyhpa schedules examples/schedules/php-apache-schedules.yaml \\",
    "  --from 1995-07-12T00:00:00-04:00 --to 1995-07-14T00:00:00-04:00 -o json",
)
