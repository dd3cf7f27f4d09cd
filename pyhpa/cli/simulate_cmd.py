"""``pyhpa simulate``: replay a load trace through the exact HPA logic and show what it costs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn

from ..adapters.errors import InputError
from ..core import ControllerConfig
from . import options
from .errors import err_console
from .help import examples
from .options import GAPS_HELP, OUT, GapPolicy
from .options import console as text_console

if TYPE_CHECKING:
    from ..simulate import Simulation

_DEFAULTS = ControllerConfig()


EXAMPLES = examples(
    "pyhpa simulate          # the bundled example, into out/simulate/",
    "pyhpa simulate --hpa examples/simulate/nasa/hpa.yaml \\",
    "  --target examples/simulate/nasa/deployment.yaml \\",
    "  --profile examples/simulate/nasa/profile.yaml \\",
    "  --trace examples/traces/nasa_http_1995-07-10_16_per_minute.csv \\",
    "  --column requests_per_second --load-scale 30 \\",
    "  --start 1995-07-12 --end 1995-07-14 --output-dir out/nasa",
    "pyhpa simulate --hpa A.yaml --hpa B.yaml ...   # compared: compare.png",
)


def simulate(
    hpa: Optional[list[Path]] = typer.Option(None, "--hpa", metavar="FILE", help="autoscaling/v2 HPA or pyhpa.dev/v1alpha1 HorizontalAutoscaler (with fallback) manifest; repeat to compare several on the same load."),
    target: Optional[Path] = typer.Option(None, "--target", help="The HPA's target: an apps/v1 Deployment or StatefulSet manifest (pod template: requests, limits, readinessProbe)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Load trace CSV with a header; times ISO 8601 or seconds."),
    column: Optional[str] = typer.Option(None, "--column", help="The trace column with the load (requests/s unless the profile's load_unit says otherwise)."),
    start: Optional[str] = typer.Option(None, "--start", help="Keep rows at or after this time (ISO 8601; without offset: the trace's offset)."),
    end: Optional[str] = typer.Option(None, "--end", help="Keep rows before this time (ISO 8601)."),
    load_scale: float = typer.Option(1.0, "--load-scale", help="Multiply the load column by this factor."),
    profile: Optional[Path] = typer.Option(None, "--profile", help="Workload profile YAML (docs/profile.md); default: built-in defaults."),
    output_dir: Path = typer.Option(OUT / "simulate", "--output-dir", metavar="DIR", help="The folder timeline.csv, summary.json and plot.png go to (created if missing)."),
    sync_period: float = typer.Option(15.0, "--sync-period", help="HPA sync period, seconds (--horizontal-pod-autoscaler-sync-period)."),
    seed: int = typer.Option(0, "--seed", help="Seed for scrape phase, start-up jitter and traffic imbalance."),
    where: Optional[list[str]] = typer.Option(None, "--where", metavar="COLUMN=VALUE", help="COLUMN=VALUE: keep only matching rows (long-format traces, e.g. vm=rnd-411); repeatable."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help="The time column (default: 'timestamp' or 'time')."),
    gaps: GapPolicy = typer.Option(GapPolicy.error, "--gaps", help=GAPS_HELP.replace("(each row holds until the next)", "(the load holds its last value)").replace("the output", "summary.json")),
    metric_column: Optional[list[str]] = typer.Option(None, "--metric-column", metavar="METRIC=COLUMN", help="METRIC=COLUMN: feed a Pods/Object/External metric from a trace column; repeatable."),
    metrics_outage: Optional[list[str]] = typer.Option(None, "--metrics-outage", metavar="START/END", help="START/END (ISO 8601; END may be a duration, e.g. PT3H): every metrics API call fails in this interval; repeatable. Shown in the timeline's error column and shaded in the plot."),
    tolerance: float = typer.Option(_DEFAULTS.tolerance, "--tolerance", help="--horizontal-pod-autoscaler-tolerance (fraction)."),
    downscale_stabilization: float = typer.Option(_DEFAULTS.downscale_stabilization_window_seconds, "--downscale-stabilization", help="--horizontal-pod-autoscaler-downscale-stabilization, seconds."),
    cpu_initialization_period: float = typer.Option(_DEFAULTS.cpu_initialization_period_seconds, "--cpu-initialization-period", help="--horizontal-pod-autoscaler-cpu-initialization-period, seconds."),
    initial_readiness_delay: float = typer.Option(_DEFAULTS.initial_readiness_delay_seconds, "--initial-readiness-delay", help="--horizontal-pod-autoscaler-initial-readiness-delay, seconds."),
    flap_window: float = typer.Option(600.0, "--flap-window", help="A rescale reversing the previous one within this many seconds is a flap."),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Write plot.png (and compare.png)."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> None:
    """Replay a load trace through the exact HPA logic: pod-hours, overload, unserved requests, flaps.

    With no --hpa/--target/--trace it runs the bundled example: the php-apache HPA of the
    Kubernetes walkthrough on two days of the NASA 1995 web trace.
    """
    config = ControllerConfig(
        tolerance=tolerance, cpu_initialization_period_seconds=cpu_initialization_period,
        initial_readiness_delay_seconds=initial_readiness_delay,
        downscale_stabilization_window_seconds=downscale_stabilization,
    )
    Settings, run_simulation, summary_table, write_outputs, extension_warnings = simulator()
    settings = Settings(sync_period, seed, config, flap_window)
    console = text_console()
    kwargs = dict(profile=profile, time_column=time_column, where=tuple(where or ()), start=start, end=end,
                  load_scale=load_scale, gaps=gaps.value, metric_columns=tuple(metric_column or ()),
                  metrics_outages=tuple(metrics_outage or ()), settings=settings)
    with options.output_dir(output_dir), _progress(no_progress) as bar:
        sim = run_simulation(hpa or (), target, trace, column, progress=bar, warn=print_warning, **kwargs)
    _print_inputs(console, sim)
    console.print(summary_table(sim))
    for run in sim.runs:
        for line in extension_warnings(run.summary):
            console.print(f"warning: {line}", markup=False)
    try:
        written = write_outputs(sim, output_dir, plot=plot)
    except OSError as err:
        where = err.filename or output_dir
        raise InputError(f"cannot write the outputs: {err.strerror or err}", file=str(where), field="--output-dir") from None
    console.print("wrote " + ", ".join(str(p) for p in written))


def print_warning(line: str) -> None:
    """A warning before the run (``pyhpa.simulate.request_warnings``): one line on stderr."""
    err_console.print(f"warning: {line}", markup=False)


def simulator():
    """The simulator, imported on use: it needs the ``simulate`` extra (pandas, matplotlib), which the
    controller's image does not install. Missing: one line saying what to install (InputError)."""
    try:
        import matplotlib  # noqa: F401  (plots; imported when drawn)
        import pandas  # noqa: F401

        from ..simulate import Settings, run_simulation
        from ..simulate.report import extension_warnings, summary_table, write_outputs
    except ModuleNotFoundError as err:
        if err.name not in ("pandas", "matplotlib", "numpy"):
            raise
        raise InputError(f"pyhpa simulate needs the simulate extra ({err.name} is not installed): "
                         "pip install 'pyhpa[simulate]'", field="simulate") from None
    return Settings, run_simulation, summary_table, write_outputs, extension_warnings


class _progress:
    """A rich progress bar over simulated time, one task per HPA (or nothing)."""

    def __init__(self, off: bool):
        self.bar = options.progress_bar(off, TextColumn("{task.description}"), BarColumn(),
                                        TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn())
        self.tasks: dict[str, int] = {}

    def __enter__(self):
        if self.bar is None:
            return None
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False

    def __call__(self, label: str, done: float, total: float) -> None:
        if label not in self.tasks:
            self.tasks[label] = self.bar.add_task(f"simulating {label}", total=total)
        self.bar.update(self.tasks[label], completed=done)


def _print_inputs(console: Console, sim: Simulation) -> None:
    files, tr = sim.inputs, sim.trace
    rep = tr.report
    console.print(f"hpa:     {files['hpa']}")
    console.print(f"target:  {files['target']} ({sim.target.label})")
    console.print(f"profile: {files['profile'] or '(built-in defaults: no --profile)'}")
    where = f" where {' and '.join(rep.where)}" if rep.where else ""
    console.print(f"trace:   {files['trace']}{where}, column {rep.column} x {rep.load_scale:g} ({sim.profile.load_unit}), "
                  f"{rep.rows_used} rows, step {rep.step_seconds:g} s")
    for g in rep.gaps:
        verb = {"hold": "filled by holding the last value", "zero": "filled with zero load",
                "interpolate": "filled by linear interpolation", "skip": "cut out"}[rep.gap_policy]
        console.print(f"  gap at line {g.line}: {g.seconds:,.0f} s {verb}")
    from ..simulate.trace import iso  # the simulator is imported on use (see simulator)

    for a, b in sim.outages:
        console.print(f"metrics outage: {iso(a, tr.tz)} to {iso(b, tr.tz)} ({b - a:,.0f} s): every metrics API call fails")
