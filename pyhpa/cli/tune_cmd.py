"""``pyhpa tune``: recommend an autoscaler from a workload's history by faithful replay.

The inputs are ``pyhpa simulate``'s, with simulate's own option definitions (taken from its signature,
not copied) and readers; live mode reads the autoscaler, its target and 7 days of the workload's total
from the cluster and Prometheus instead (``pyhpa.tune.live``).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from ..adapters.errors import InputError
from ..core import ControllerConfig
from . import options, run_cmd, simulate_cmd
from .help import examples
from .options import Output
from .options import console as text_console

_SIM = inspect.signature(simulate_cmd.simulate).parameters
#: the most settings one search tries (``--trials``; the default 200, and --timeout ends it first anyway)
MAX_TRIALS = 100_000
#: live mode's history (``--history``) when none is given: a week, which holds each weekday once
DEFAULT_HISTORY_SECONDS = 7 * 86400.0


def _simulate_option(name: str):
    """``pyhpa simulate``'s definition of an option (same flag, help and default)."""
    return _SIM[name].default


EXAMPLES = examples(
    "pyhpa tune --hpa examples/tune/web-hpa.yaml \\",
    "  --target benchmarks/proactive/deployment.yaml \\",
    "  --profile benchmarks/proactive/profile.yaml \\",
    "  --trace benchmarks/data/nasa_http_1995-07_per_minute.csv.gz \\",
    "  --column requests_per_second --load-scale 100 \\",
    "  --start 1995-07-08 --end 1995-07-15 --max-overloaded-fraction 0.005",
    "pyhpa tune shop/web --prometheus-url http://prometheus:9090   # live",
)


def tune(
    key: Optional[str] = typer.Argument(None, metavar="NAMESPACE/NAME", help="Live mode: the autoscaler to tune (with --prometheus-url)."),
    hpa: Optional[Path] = typer.Option(None, "--hpa", metavar="FILE", help="The current autoscaling/v2 HPA or pyhpa.dev/v1alpha1 HorizontalAutoscaler: its metrics, kind and bounds are the starting point."),
    target: Optional[Path] = _simulate_option("target"),
    trace: Optional[Path] = _simulate_option("trace"),
    column: Optional[str] = _simulate_option("column"),
    start: Optional[str] = _simulate_option("start"),
    end: Optional[str] = _simulate_option("end"),
    load_scale: float = _simulate_option("load_scale"),
    profile: Optional[Path] = _simulate_option("profile"),
    where: Optional[list[str]] = _simulate_option("where"),
    time_column: Optional[str] = _simulate_option("time_column"),
    gaps: simulate_cmd.GapPolicy = _simulate_option("gaps"),
    metric_column: Optional[list[str]] = _simulate_option("metric_column"),
    sync_period: float = _simulate_option("sync_period"),
    seed: int = _simulate_option("seed"),
    tolerance: float = _simulate_option("tolerance"),
    downscale_stabilization: float = _simulate_option("downscale_stabilization"),
    cpu_initialization_period: float = _simulate_option("cpu_initialization_period"),
    initial_readiness_delay: float = _simulate_option("initial_readiness_delay"),
    flap_window: float = _simulate_option("flap_window"),
    max_overloaded_fraction: Optional[float] = typer.Option(None, "--max-overloaded-fraction", metavar="F", help="Objective: share of time overloaded at most F (default 0.01)."),
    max_unserved_fraction: Optional[float] = typer.Option(None, "--max-unserved-fraction", metavar="F", help="Objective instead: share of requests unserved at most F."),
    upstream_only: bool = typer.Option(False, "--upstream-only", help="Search autoscaling/v2 fields only; the recommendation is a HorizontalPodAutoscaler."),
    min_replicas_floor: int = typer.Option(1, "--min-replicas-floor", metavar="N", help="Never try or recommend a minReplicas below N (the replicas you keep for redundancy); from 1 to the autoscaler's maxReplicas. Default 1: any."),
    held_out: float = typer.Option(86400.0, "--held-out", metavar="SECONDS", help="The last SECONDS of the window are not tuned on: the winner is checked there (0: no check)."),
    trials: int = typer.Option(200, "--trials", help="Most settings to try."),
    timeout: float = typer.Option(170.0, "--timeout", metavar="SECONDS", help="Search for at most SECONDS: no setting starts that would end after them at the replays' mean duration (the held-out check follows)."),
    jobs: int = typer.Option(0, "--jobs", help="Worker processes (0: one per core)."),
    output_dir: Path = typer.Option(Path("out/tune"), "--output-dir", metavar="DIR", help="Where recommended.yaml, candidates.csv, frontier.png and summary.json go."),
    output: Output = typer.Option(Output.text, "--output", "-o", help="What is printed: text (table), or json (summary.json)."),
    prometheus_url: Optional[str] = typer.Option(None, "--prometheus-url", metavar="URL", help="Live mode: the Prometheus holding the workload's history."),
    kubeconfig: Optional[str] = run_cmd.KUBECONFIG_OPTION,
    context: Optional[str] = run_cmd.CONTEXT_OPTION,
    server: Optional[str] = run_cmd.SERVER_OPTION,
    history: Optional[float] = typer.Option(None, "--history", metavar="SECONDS", help="Live mode: seconds of history read from Prometheus (default 7 days)."),
    no_progress: bool = _simulate_option("no_progress"),
) -> None:
    """Recommend target, min/max, behavior and extensions from a workload's history by replaying it.

    Every setting tried is replayed through the exact HPA logic (the simulator of pyhpa simulate) on the
    window without its last day; the cheapest setting that keeps the overload within the objective is checked
    on that held-out day, and written as recommended.yaml with the trade-off (candidates.csv, frontier.png).

    """
    from ..simulate import Settings, check_settings, input_files, require_inputs
    from ..tune import prepare
    from ..tune import tune as run_tune
    from ..tune.report import inputs_of, write_outputs

    simulate_cmd.simulator()  # the simulate extra, or one line saying what to install
    require_optuna()
    objective = objective_of(max_overloaded_fraction, max_unserved_fraction)
    cores = os.cpu_count() or 1
    _check_budget(trials, jobs, timeout, cores)
    config = ControllerConfig(
        tolerance=tolerance, cpu_initialization_period_seconds=cpu_initialization_period,
        initial_readiness_delay_seconds=initial_readiness_delay,
        downscale_stabilization_window_seconds=downscale_stabilization,
    )
    settings = Settings(sync_period, seed, config, flap_window)
    check_settings(settings)
    console = text_console()
    with options.output_dir(output_dir):
        live = None
        if key is not None or prometheus_url is not None:
            live = _fetch_live(key, prometheus_url, offline=bool(hpa or target or trace), kubeconfig=kubeconfig,
                               context=context, server=server, history=DEFAULT_HISTORY_SECONDS if history is None
                               else history, output_dir=output_dir, profile=profile)
            files = live.files
            column, time_column, where, load_scale, metric_column = live.column, None, None, 1.0, None
            gaps = simulate_cmd.GapPolicy.hold
        else:
            if history is not None:  # a live-mode flag given to an offline run is not silently ignored
                raise InputError("reads that much history from Prometheus in live mode (NAMESPACE/NAME with "
                                 "--prometheus-url); offline, --start and --end choose the trace's span",
                                 field="--history")
            require_inputs("tune", {"--hpa": hpa, "--target": target, "--trace": trace, "--column": column},
                           "or NAMESPACE/NAME with --prometheus-url (live)")
            files = input_files([hpa], target, trace, column, profile)
        prepared = prepare(files, metric_columns=tuple(metric_column or ()), time_column=time_column,
                           where=tuple(where or ()), start=start, end=end, load_scale=load_scale, gaps=gaps.value,
                           settings=settings, held_out_seconds=held_out, upstream_only=upstream_only,
                           warn=simulate_cmd.print_warning, min_replicas_floor=min_replicas_floor)
        n_jobs = jobs or cores
        with _Bar(no_progress or output == Output.json, trials, timeout) as bar:
            result = run_tune(prepared, objective, trials=trials, timeout=timeout, jobs=n_jobs, seed=seed, progress=bar)
        inputs = inputs_of(files, prepared, live)
        title = f"pyhpa tune: {inputs['trace']} ({inputs['tuning']})"
        try:
            written = write_outputs(result, prepared, inputs, output_dir, title)
        except OSError as err:
            raise InputError(f"cannot write the outputs: {err.strerror or err}", file=str(err.filename or output_dir),
                             field="--output-dir") from None
    if output == Output.json:
        typer.echo(written[3].read_text(), nl=False)
        return
    _print_result(console, result, prepared, inputs, written, n_jobs)


def _check_budget(trials: int, jobs: int, timeout: float, cores: int) -> None:
    """``--trials`` 1 to ``MAX_TRIALS``, ``--jobs`` 0 to the machine's ``cores``, ``--timeout`` > 0 seconds; else
    InputError naming the flag."""
    for name, value, low, high, why in (
            ("--trials", trials, 1, MAX_TRIALS, ""),
            ("--jobs", jobs, 0, cores, " (the cores of this machine: each replay keeps one busy)")):
        if not low <= value <= high:
            raise InputError(f"must be from {low} to {high:,}{why}, got {value:,}", field=name)
    if not timeout > 0:
        raise InputError(f"must be > 0 seconds, got {timeout!r}", field="--timeout")


def _fetch_live(key: Optional[str], prometheus_url: Optional[str], *, offline: bool, kubeconfig: Optional[str],
                context: Optional[str], server: Optional[str], history: float, output_dir: Path,
                profile: Optional[Path]):
    """Live mode (``pyhpa.tune.live.fetch_live``): the autoscaler ``key`` from the cluster and ``history`` seconds
    of its workload from Prometheus, written under ``<output_dir>/live``. InputError when only one of NAMESPACE/NAME
    and --prometheus-url is given, or offline inputs (--hpa/--target/--trace) are given too."""
    from ..tune.live import fetch_live

    if key is None or prometheus_url is None:
        raise InputError("missing: --prometheus-url is live mode, which reads the autoscaler to tune from the "
                         "cluster" if key is None else "missing: NAMESPACE/NAME is live mode, which reads the "
                         "autoscaler's history from Prometheus at this URL", field="NAMESPACE/NAME" if key is None
                         else "--prometheus-url")
    if offline:
        raise InputError("give either NAMESPACE/NAME with --prometheus-url (live) or --hpa/--target/--trace "
                         "(offline), not both", field="--hpa")
    return fetch_live(key, prometheus_url=prometheus_url, kubeconfig=kubeconfig, context=context, server=server,
                      history_seconds=history, directory=output_dir / "live", profile=profile)


#: what the held-out check adds a setting for (``pyhpa.tune.search.Derived``'s values), in words
_DERIVED_WORDS = {"robust": "more robust", "between": "a target in between", "floor": "a lower floor (minReplicas)"}


def settings_count(evaluations) -> str:
    """"N settings", and when the held-out check added some to the search's (``--trials`` counts the search's
    only), how many of each: "8 settings (6 searched, then 2 with a lower floor (minReplicas) for the held-out
    check)" (issue 60: the reason came only later, in a note)."""
    from collections import Counter

    derived = Counter(e.derived_by for e in evaluations if e.derived_by is not None)
    text = f"{len(evaluations)} setting{'s' if len(evaluations) != 1 else ''}"
    if not derived:
        return text
    parts = ", ".join(f"{n} with {_DERIVED_WORDS[kind.value]}" for kind, n in derived.items())
    return f"{text} ({len(evaluations) - sum(derived.values())} searched, then {parts} for the held-out check)"


def _print_result(console, result, prepared, inputs: dict, written: list, n_jobs: int) -> None:
    """The text output: what was tuned and held out, the search's size and time, the table of the recommendation
    against the current object, the held-out check, the notes and the files written."""
    from ..tune.report import held_out_text, table

    console.print(f"tuned on {inputs['tuning']}; held out {inputs['held_out']}; {settings_count(result.evaluations)} "
                  f"in {result.search_seconds:.0f} s ({n_jobs} process{'es' if n_jobs > 1 else ''})")
    console.print(table(result, prepared))
    if held_out_text(result, prepared):
        console.print(held_out_text(result, prepared), markup=False)
    for note in result.notes:
        console.print(f"note: {note}")
    console.print("wrote " + ", ".join(str(p) for p in written))


def require_optuna() -> None:
    try:
        import optuna  # noqa: F401
    except ModuleNotFoundError:
        raise InputError("pyhpa tune needs the tune extra (optuna is not installed): pip install 'pyhpa[tune]'",
                         field="tune") from None


def objective_of(overloaded: float | None, unserved: float | None):
    from ..tune import Objective

    if overloaded is not None and unserved is not None:
        raise InputError("give one of them: tune has one objective", field="--max-overloaded-fraction, --max-unserved-fraction")
    metric, limit, option = (("unserved_fraction", unserved, "--max-unserved-fraction") if unserved is not None
                             else ("overloaded_fraction", 0.01 if overloaded is None else overloaded,
                                   "--max-overloaded-fraction"))
    if not 0 <= limit < 1:
        raise InputError(f"must be a fraction in [0, 1), got {limit!r}", field=option)
    return Objective(metric, limit)


class _Bar:
    """A rich progress bar over the candidates (stderr), or nothing."""

    def __init__(self, off: bool, trials: int, timeout: float):
        self.bar = options.progress_bar(off, TextColumn("tuning"), BarColumn(), MofNCompleteColumn(),
                                        TextColumn("settings"), TextColumn("{task.fields[left]}"), TimeElapsedColumn())
        self.trials, self.timeout = trials, timeout
        self.task = None

    def __enter__(self):
        if self.bar is None:
            return None
        self.bar.__enter__()
        self.task = self.bar.add_task("tuning", total=self.trials, left=f"(stops at {self.timeout:.0f} s)")
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False

    def __call__(self, done: int, total: int, elapsed: float) -> None:
        self.bar.update(self.task, completed=done, left=f"({max(0.0, self.timeout - elapsed):.0f} s left)")
