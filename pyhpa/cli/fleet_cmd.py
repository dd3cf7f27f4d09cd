"""``pyhpa fleet``: many autoscalers on shared node pools (docs/fleet.md).

``pyhpa fleet simulate FLEET.yaml`` runs a fleet file (``pyhpa.fleet``): every workload's autoscaler through the
decision core on one clock, kube-scheduler placing pods on the pools' nodes, and the node autoscaler (Cluster
Autoscaler or Karpenter) adding and removing nodes; it prints the bill and the worst workloads and writes
summary.json, workloads.csv, timeline.csv and events.csv.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..adapters.errors import InputError
from ..adapters.parse import format_time
from ..fleet.gaps import TraceGaps
from . import options, run_cmd
from .help import Command, examples, typer_app
from .options import OUT, Output
from .options import console as text_console

EXAMPLES = examples(
    "pyhpa fleet simulate examples/fleet/shop.yaml",
    "pyhpa fleet simulate examples/fleet/shop.yaml --output-dir out/shop --seed 3",
    "pyhpa fleet simulate examples/fleet/shop.yaml \\",
    "  --what-if nodeAutoscaler=karpenter --output-dir out/shop-vs",
)
#: how many of the worst workloads (by unserved requests) the printed table shows
WORST_SHOWN = 10


def simulate(
    fleet_files: list[Path] = typer.Argument(..., metavar="FLEET.yaml [B.yaml]", help="A fleet file (kind: Fleet; docs/fleet.md); a second one to compare with it."),
    what_if: Optional[list[str]] = typer.Option(None, "--what-if", metavar="KEY=VALUE", help="Compare the fleet with itself changed: nodeAutoscaler=karpenter, scoringStrategy=MostAllocated, prediction=on, saturation=on, targets=+10%, nodePools=FILE; repeatable."),
    output_dir: Path = typer.Option(OUT / "fleet", "--output-dir", metavar="DIR", help="The folder summary.json, workloads.csv, timeline.csv, events.csv, the plots and report.html go to (created if missing); comparing, a and b in it, and compare.csv and compare.png."),
    start: Optional[str] = typer.Option(None, "--start", help="Simulate from this time (ISO 8601; without offset: the traces' offset, as simulate reads it); default: the start of the span every trace covers."),
    end: Optional[str] = typer.Option(None, "--end", help="Simulate until this time (ISO 8601, as --start); default: the end of that span."),
    sync_period: float = typer.Option(15.0, "--sync-period", help="HPA sync period, seconds, of autoscalers that set none (--horizontal-pod-autoscaler-sync-period)."),
    seed: int = typer.Option(0, "--seed", help="Seed: workload i's cluster gets seed + i; the scheduler's ties and the nodes' provisioning delays have streams of their own."),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Write nodes.png, cpu.png, pending.png, overload.png, worst.png and report.html (one self-contained page)."),
    gaps: Optional[TraceGaps] = typer.Option(None, "--gaps", help="A gap in the span a workload replays (rows more than 1.5 steps apart): refused (error) or the load holds its last row (hold), for every workload; default: each workload's trace.gaps (error unless it says hold), as pyhpa simulate --gaps (its zero, interpolate and skip add rows or move time, which a fleet's one clock does not)."),
    twin: bool = typer.Option(False, "--twin", help="Also run the fleet's instant-nodes twin (each workload with nodes always there, as pyhpa simulate runs it alone) and say how much of the overload is the node pool's: waiting for nodes, evictions. About doubles the work."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text for people, or json: one object on one line (summary.json's; comparing, {\"a\": its, \"b\": its, \"compare\": compare.csv's rows and total})."),
) -> None:
    """Simulate a fleet: many autoscalers on shared node pools that take minutes to grow, and their bill.

    Prints the node pools' node-hours and cost, the fleet's unserved requests and Pending pod-seconds, and the
    workloads that drop the most requests. With a second fleet file, or --what-if, runs both and prints and plots
    the difference in cost and unserved requests, per workload and in total.
    """
    from . import simulate_cmd

    simulate_cmd.simulator()  # the simulate extra, or one line saying what to install
    from ..fleet.spec import load_fleet
    from ..fleet.whatif import compare, load_what_if, parse_overlays, write_compare, write_what_if
    from ..fleet.whatif import what_if as overlaid
    from ..simulate import Settings, check_settings

    settings = Settings(sync_period_seconds=sync_period, seed=seed)
    check_settings(settings)
    overlays = parse_overlays(list(what_if or ()))
    if len(fleet_files) > 2:
        raise InputError(f"{len(fleet_files)} fleet files given: one, or two to compare", field="FLEET.yaml")
    if len(fleet_files) == 2 and overlays:
        raise InputError("compares a fleet with itself changed: give one fleet file with it, not two", field="--what-if")
    console = text_console()
    no_progress = no_progress or output == Output.json
    first = load_fleet(fleet_files[0], settings, start, end, gaps=gaps)
    if len(fleet_files) == 1 and not overlays:
        summary = _run(first, output_dir, settings, plot, no_progress, "fleet", twin)
        if output == Output.json:
            _print_json(summary)
            return
        console.print(_tables(summary))
        if twin:
            console.print(_twin_line(summary["fleet"]))
        console.print("wrote " + ", ".join(str(output_dir / f) for f in _files(plot)))
        return
    # both fleets read and checked before either runs: a bad second one costs no simulation of the first
    changed = overlaid(fleet_files[0], overlays, output_dir / "b" / "input") if overlays else None
    second_fleet = load_fleet(fleet_files[1], settings, start, end, gaps=gaps) if changed is None else \
        load_what_if(changed, settings, start, end, gaps)
    if changed is not None:
        with options.output_dir(output_dir):
            written_b = write_what_if(changed)
        # its summary names the fleet file written for it, which runs again on its own (as before the what-if was
        # made in memory); its input errors above named the user's file and overlays
        second_fleet = dataclasses.replace(second_fleet, file=str(written_b))
    second = fleet_files[1] if changed is None else overlays
    labels = ("a", "b")
    a = _run(first, output_dir / "a", settings, plot, no_progress, "a", twin)
    b = _run(second_fleet, output_dir / "b", settings, plot, no_progress, "b", twin)
    result = compare(a, b)
    what = f"{second}" if changed is None else f"{fleet_files[0]} with " + ", ".join(f"{k}={v}" for k, v in overlays)
    report = ((str(fleet_files[0]), what), f"{first.name or Path(first.file).name}: a against b") if plot else None
    written = write_compare(result, output_dir, labels, report)
    if output == Output.json:
        _print_json({"a": a, "b": b, "compare": result})
        return
    console.print(_compare_table(result, fleet_files[0], second))
    if twin:
        for label, s in zip(labels, (a, b)):
            console.print(f"{label}: " + _twin_line(s["fleet"]))
    console.print("wrote " + ", ".join(str(p) for p in [output_dir / "a", output_dir / "b", *written]))


SNAPSHOT_EXAMPLES = examples(
    "pyhpa fleet snapshot --prometheus-url http://prometheus:9090 \\",
    "  --price m5.xlarge=0.192 --output-dir out/snap",
    "pyhpa fleet snapshot -n shop --prometheus-url http://127.0.0.1:9090 \\",
    "  --history 172800",
)


def snapshot(
    prometheus_url: str = typer.Option(..., "--prometheus-url", help="Prometheus with the pods' CPU history (container_cpu_usage_seconds_total)."),
    namespace: Optional[list[str]] = typer.Option(None, "--namespace", "-n", help="Autoscalers of this namespace only (default: all); repeatable (at most 100)."),
    history: float = typer.Option(7 * 86400.0, "--history", metavar="SECONDS", help="Seconds of history read from Prometheus (default 7 days; 2 to 90 days)."),
    price: Optional[list[str]] = typer.Option(None, "--price", metavar="TYPE=DOLLARS", help="Dollars per node-hour of an instance type (node.kubernetes.io/instance-type); repeatable; 0 without."),
    output_dir: Path = typer.Option(OUT / "fleet-snapshot", "--output-dir", metavar="DIR", help="The folder fleet.yaml and workloads/ go to (created if missing)."),
    kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
    context: Optional[str] = run_cmd.CONTEXT_OPTION,
    server: Optional[str] = run_cmd.SERVER_OPTION,
) -> None:
    """Write a fleet file from a cluster: every autoscaler with its target, and its history from Prometheus.

    Reads every HorizontalAutoscaler, and every native HPA whose target none scales, as pyhpa tune's live mode
    reads one; the nodes become one node pool. pyhpa fleet simulate runs the result as it is.
    """
    from ..adapters.parse import object_name
    from ..fleet.snapshot import fleet_snapshot, parse_prices

    namespaces = tuple(dict.fromkeys(namespace or ()))
    if len(namespaces) > 100:
        raise InputError(f"{len(namespaces)} given; at most 100", field="--namespace")
    for ns in namespaces:
        object_name(ns, "--namespace")
    prices = parse_prices(list(price or ()))
    console = text_console()
    with options.output_dir(output_dir):
        result = fleet_snapshot(prometheus_url=prometheus_url, kubeconfig=kubeconfig, context=context, server=server,
                                namespaces=namespaces, history_seconds=history, directory=output_dir, prices=prices)
    console.print(f"{len(result.workloads)} workloads on {sum(result.instance_types.values())} nodes "
                  f"({', '.join(f'{n} {k}' for k, n in result.instance_types.items())})")
    for key, why in result.skipped:
        console.print(f"left out {key}: {why}", markup=False)
    console.print(f"wrote {result.fleet_file}; run: pyhpa fleet simulate {result.fleet_file}")


TUNE_EXAMPLES = examples(
    "pyhpa fleet tune examples/fleet/shop-week.yaml \\",
    "  --end 1995-07-14T00:00:00Z --check 86400 --trials 3 \\",
    "  --output-dir out/shop-tune",
    "pyhpa fleet tune fleet.yaml --scheduler tcp://10.0.0.5:8786  # your Dask",
)


def tune(
    fleet_file: Path = typer.Argument(..., metavar="FLEET.yaml", help="A fleet file (kind: Fleet; docs/fleet.md)."),
    start: Optional[str] = typer.Option(None, "--start", help="The fleet's span from this time (ISO 8601; without offset: the traces' offset, as simulate reads it); default: the start of the span every trace covers."),
    end: Optional[str] = typer.Option(None, "--end", help="The fleet's span until this time (ISO 8601, as --start); the check is its last --check seconds."),
    check: float = typer.Option(7 * 86400.0, "--check", metavar="SECONDS", help="The last seconds of the fleet's span: the recommendations are checked together there; tune learns from what comes before (default: a week)."),
    trials: int = typer.Option(30, "--trials", help="Settings tried per workload (pyhpa tune's search)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", help="A Dask scheduler (tcp://host:port) whose workers have pyhpa installed; default: a local Dask cluster."),
    processes: int = typer.Option(0, "--processes", help="Worker processes of the local Dask cluster (0: one per core)."),
    serial: bool = typer.Option(False, "--serial", help="No Dask: one workload after another in this process."),
    max_overloaded_fraction: Optional[float] = typer.Option(None, "--max-overloaded-fraction", help="The objective (pyhpa tune's): at most this share of time overloaded (default 0.01)."),
    max_unserved_fraction: Optional[float] = typer.Option(None, "--max-unserved-fraction", help="The objective instead: at most this share of requests unserved."),
    output_dir: Path = typer.Option(OUT / "fleet-tune", "--output-dir", metavar="DIR", help="The folder the recommendations, both checks and compare.csv go to (created if missing)."),
    seed: int = typer.Option(0, "--seed", help="Seed: workload i's search gets seed + i; the checks run with it."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    min_replicas_floor: int = typer.Option(1, "--min-replicas-floor", metavar="N", help="No workload's minReplicas tried or recommended below N (pyhpa tune --min-replicas-floor); from 1 to each workload's maxReplicas. Default 1: any."),
    gaps: Optional[TraceGaps] = typer.Option(None, "--gaps", help="A gap in the span a workload replays (its history and the check): refused (error) or the load holds its last row (hold), for every workload; default: each workload's trace.gaps, as fleet simulate --gaps."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="text for people, or json: one object on one line (tune.json's, with \"compare\": compare.csv's rows and total)."),
) -> None:
    """Recommend settings for every workload of a fleet, then the bill of all of them together.

    Tunes each workload on the fleet's history as pyhpa tune tunes one, on a Dask cluster (a local one by
    default), then runs the fleet over the last --check seconds with its autoscalers as they are and as
    recommended, on its node pools, and compares cost and unserved requests per workload and in total.
    """
    import os

    from ..fleet.spec import load_fleet
    from ..fleet.tune import (
        MAX_PROCESSES,
        MAX_TRIALS,
        check_span,
        jobs_of,
        recommended,
        run_jobs,
        write_recommended,
        write_tune_json,
    )
    from ..fleet.whatif import compare, write_compare
    from ..simulate import Settings, check_settings
    from . import tune_cmd

    tune_cmd.require_optuna()
    if not serial:
        try:
            import distributed  # noqa: F401
        except ModuleNotFoundError:
            raise InputError("needs Dask (distributed is not installed): pip install 'pyhpa[tune]', or --serial",
                             field="--scheduler") from None
    objective = tune_cmd.objective_of(max_overloaded_fraction, max_unserved_fraction)
    if not 1 <= trials <= MAX_TRIALS:
        raise InputError(f"must be from 1 to {MAX_TRIALS:,}, got {trials:,}", field="--trials")
    if not 0 <= processes <= MAX_PROCESSES:
        raise InputError(f"must be from 0 to {MAX_PROCESSES}, got {processes}", field="--processes")
    if serial and scheduler:
        raise InputError("runs on the Dask scheduler given; --serial runs here: give one", field="--serial")
    if scheduler:
        from ..fleet.tasks import check_scheduler

        check_scheduler(scheduler)
    settings = Settings(seed=seed)
    check_settings(settings)
    fleet = load_fleet(fleet_file, settings, start, end, gaps=gaps)
    history_end = check_span(fleet, check)
    console = text_console()
    no_progress = no_progress or output == Output.json
    with options.output_dir(output_dir):
        jobs = jobs_of(fleet, history_end, trials, seed, (objective.metric, objective.limit), settings,
                       min_replicas_floor)
        bar = options.progress_bar(no_progress, TextColumn("{task.description}"), BarColumn(),
                                   TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn())
        if bar is None:
            results = run_jobs(jobs, scheduler=scheduler, processes=processes or os.cpu_count() or 1, serial=serial)
        else:
            with bar:
                task = bar.add_task("tuning workloads", total=len(jobs))
                results = run_jobs(jobs, scheduler=scheduler, processes=processes or os.cpu_count() or 1,
                                   serial=serial, progress=lambda done, total: bar.update(task, completed=done))
        made = recommended(fleet, results, output_dir)
        written_fleet = write_recommended(made)
        check_start, check_end = (format_time(history_end), format_time(fleet.end))
        current_fleet = load_fleet(fleet_file, settings, check_start, check_end, gaps=gaps)
        recommended_fleet = load_fleet(made.file, settings, check_start, check_end, raw=made.doc,
                                       autoscalers=made.autoscalers, gaps=gaps)
        a = _run(current_fleet, output_dir / "current", settings, True, no_progress, "current")
        b = _run(recommended_fleet, output_dir / "recommended" / "run", settings, True, no_progress, "recommended")
        result = compare(a, b)
        written = write_compare(result, output_dir, ("current", "recommended"), (
            (f"{fleet_file}, its autoscalers as they are", f"{written_fleet}, every workload as fleet tune recommends"),
            f"{fleet.name or Path(fleet.file).name}: fleet tune's recommendation against today's"))
        tune_json = write_tune_json(results, output_dir, {"objective": {"metric": objective.metric, "limit": objective.limit},
                                              "history": [format_time(fleet.start), check_start],
                                              "check": [check_start, check_end],
                                              "trials": trials, "seed": seed,
                                              "ran_on": "serial" if serial else scheduler or "local Dask cluster"})
    if output == Output.json:
        _print_json({**json.loads(tune_json.read_text()), "compare": result})
        return
    console.print(_changes_table(results))
    console.print(_compare_table(result, fleet_file, written_fleet))
    console.print("wrote " + ", ".join(str(p) for p in [written_fleet, output_dir / "current",
                                                        output_dir / "recommended" / "run", *written,
                                                        output_dir / "tune.json"]))


#: a tuned setting's fields (``pyhpa.tune.Setting``, as tune.json has them) by the names a manifest gives them
CHANGED_FIELDS = (("target", "target"), ("min_replicas", "minReplicas"), ("max_replicas", "maxReplicas"),
                  ("scale_down_window_seconds", "scaleDown stabilizationWindowSeconds"),
                  ("scale_up_percent", "scaleUp Percent"),
                  ("prediction", "prediction"), ("quantile", "quantile"), ("lead_seconds", "leadSeconds"),
                  ("saturation", "saturation"), ("demand_factor", "demandFactor"), ("schedules", "schedules"))


def changes(current: dict, recommended: dict) -> list[str]:
    """What tune changed of one workload's setting (tune.json's ``setting`` of ``current`` and ``recommended``), as
    ``minReplicas 2 → 1``, in ``CHANGED_FIELDS``' order; a schedule list as its length; [] when nothing."""
    out = []
    for key, name in CHANGED_FIELDS:
        a, b = current.get(key), recommended.get(key)
        if a == b:
            continue
        if key == "schedules":
            a, b = len(a or ()), len(b or ())
        out.append(f"{name} {_value(a)} → {_value(b)}")
    return out


def _value(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _changes_table(results: list[dict]) -> Table:
    """What tune changed per workload (``changes``), one row each."""
    t = Table(title="what tune changed", title_justify="left")
    t.add_column("workload", justify="left")
    t.add_column("changed", justify="left")
    for r in results:
        done = changes(r["current"]["setting"], r["recommended"]["setting"])
        t.add_row(r["name"], ", ".join(done) if done else "(kept as it is)")
    return t


def _print_json(obj: dict) -> None:
    """``-o json``: ``obj`` on one line of stdout."""
    typer.echo(json.dumps(obj, separators=(",", ":")))


def _files(plot: bool) -> tuple[str, ...]:
    return ("summary.json", "workloads.csv", "timeline.csv", "events.csv") + \
        (("nodes.png", "cpu.png", "pending.png", "overload.png", "worst.png", "report.html") if plot else ())


def _run(fleet, out: Path, settings, plot: bool, no_progress: bool, label: str, twin: bool = False) -> dict:
    """Simulate and write one fleet (loaded: ``pyhpa.fleet.spec.Fleet``), with its instant-nodes twin when ``twin``;
    its summary."""
    from ..fleet.engine import FleetRun, instant_twin
    from ..fleet.report import write_fleet

    with options.output_dir(out):
        bar = options.progress_bar(no_progress, TextColumn("{task.description}"), BarColumn(),
                                   TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn())
        twins = None
        if bar is None:
            run = FleetRun(fleet, settings).run()
            if twin:
                twins = instant_twin(fleet, settings)
        else:
            with bar:
                task = bar.add_task(f"{label}: {len(fleet.workloads)} workloads", total=fleet.end - fleet.start)
                run = FleetRun(fleet, settings).run(lambda done, total: bar.update(task, completed=done))
                if twin:
                    other = bar.add_task(f"{label}: instant-nodes twin", total=len(fleet.workloads))
                    twins = instant_twin(fleet, settings, lambda done, total: bar.update(other, completed=done))
        try:
            return write_fleet(run, out, plot=plot, twin=twins)
        except OSError as err:
            raise InputError(f"cannot write the outputs: {err.strerror or err}", file=str(err.filename or out),
                             field="--output-dir") from None


def _compare_table(result: dict, first: Path, second) -> Table:
    what = f"{second}" if isinstance(second, Path) else ", ".join(f"{k}={v}" for k, v in second)
    t = Table(title=f"a: {first}   b: {what}", title_justify="left")
    for col in ("", "a", "b", "change"):
        t.add_column(col, justify="left" if not col else "right")
    for key, label, fmt in (("cost", "cost $", "{:,.2f}"), ("node_hours", "node-hours", "{:,.1f}"),
                            ("unserved_requests", "unserved requests", "{:,.0f}"),
                            ("overloaded_seconds", "overloaded s", "{:,.0f}"),
                            ("node_wait_seconds", "node wait pod-s", "{:,.0f}")):
        v = result["total"][key]
        t.add_row(label, fmt.format(v["a"]), fmt.format(v["b"]), ("+" if v["change"] > 0 else "") + fmt.format(v["change"]))
    rows = sorted(result["workloads"], key=lambda r: -abs(r["unserved_change"]))[:WORST_SHOWN]
    if rows:
        t.add_row("workload", "unserved a", "unserved b", "cost change $", style="bold", end_section=False)
        for r in rows:
            t.add_row(r["workload"], f"{r['unserved_requests_a']:,.0f}", f"{r['unserved_requests_b']:,.0f}",
                      f"{r['cost_change']:+,.2f}")
    return t


def _tables(summary: dict) -> Table:
    f = summary["fleet"]
    t = Table(title=f"fleet: {f['workloads']} workloads, {f['node_autoscaler']}, "
                    f"{f['simulated_seconds'] / 3600:.1f} simulated hours", title_justify="left")
    for col in ("node pool", "node-hours", "cost $", "max nodes", "requested CPU", "used CPU", ""):
        t.add_column(col, justify="right" if col != "node pool" else "left")
    for p in summary["node_pools"]:
        t.add_row(p["name"], f"{p['node_hours']:.1f}", f"{p['cost']:.2f}", str(p["max_nodes_seen"]),
                  _pct(p["requested_cpu_utilization"]), _pct(p["used_cpu_utilization"]), "")
    t.add_row("total", f"{f['node_hours']:.1f}", f"{f['cost']:.2f}", "", "", "", "", end_section=True)
    worst = sorted(summary["workloads"], key=lambda w: -w["unserved_requests"])[:WORST_SHOWN]
    t.add_row("workload", "unserved", "unserved %", "overloaded s", "pending pod-s", "node wait pod-s", "evicted",
              style="bold")
    for w in worst:
        x = w["fleet"]
        t.add_row(w["label"], f"{w['unserved_requests']:,.0f}", f"{100 * w['unserved_fraction']:.3f}",
                  f"{w['overloaded_seconds']:,.0f}", f"{x['pending_pod_seconds']:,.0f}",
                  f"{x['node_wait_seconds']:,.0f}", str(x["evicted_pods"]))
    t.add_row("fleet", f"{f['unserved_requests']:,.0f}", f"{100 * f['unserved_fraction']:.3f}",
              f"{f['overloaded_seconds']:,.0f}", f"{f['pending_pod_seconds']:,.0f}", f"{f['node_wait_seconds']:,.0f}",
              str(f["evicted_pods"]))
    return t


def _twin_line(f: dict) -> str:
    from ..fleet.plots import twin_sentence

    return twin_sentence(f) or ""


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def register(app: typer.Typer, input_errors, command_cls=Command) -> None:
    """Add ``pyhpa fleet`` and its commands to ``app``."""
    fleet = typer_app(help="Many autoscalers on shared node pools: simulate a fleet and its bill (docs/fleet.md).",
                      epilog=EXAMPLES)
    fleet.command("simulate", cls=command_cls, epilog=EXAMPLES)(input_errors(simulate))
    fleet.command("snapshot", cls=command_cls, epilog=SNAPSHOT_EXAMPLES)(input_errors(snapshot))
    fleet.command("tune", cls=command_cls, epilog=TUNE_EXAMPLES)(input_errors(tune))
    app.add_typer(fleet, name="fleet")
