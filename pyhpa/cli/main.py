"""The ``pyhpa`` command line (typer + rich).

Every command turns bad input into one line on stderr naming the file, object and field,
and exit code 2 (``InputError``); nothing prints a traceback for user mistakes.
"""

from __future__ import annotations

import functools
import sys

import typer
from rich.console import Console

from ..adapters.errors import InputError
from .help import CONTEXT_SETTINGS, Command, Group

app = typer.Typer(
    cls=Group,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
    context_settings=CONTEXT_SETTINGS,
    no_args_is_help=True,
    help="The Kubernetes Horizontal Pod Autoscaler, rebuilt in Python: explain, rehearse and run HPA decisions.",
)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def input_errors(fn):
    """Decorator: InputError -> one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as err:
            err_console.print(f"error: {err}", markup=False)
            raise typer.Exit(2) from None

    return wrapper


def _register() -> None:
    from . import explain_cmd, forecast_cmd, run_cmd, schedules_cmd, simulate_cmd, snapshot_cmd, thresholds_cmd, tune_cmd

    app.command("explain", cls=Command)(input_errors(explain_cmd.explain))
    app.command("snapshot", cls=Command)(input_errors(snapshot_cmd.snapshot))
    app.command("thresholds", cls=Command)(input_errors(thresholds_cmd.thresholds))
    app.command("simulate", cls=Command)(input_errors(simulate_cmd.simulate))
    app.command("schedules", cls=Command)(input_errors(schedules_cmd.schedules))
    app.command("forecast", cls=Command)(input_errors(forecast_cmd.forecast))
    app.command("tune", cls=Command)(input_errors(tune_cmd.tune))
    run_cmd.register(app, input_errors, Command)


_register()


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="pyhpa")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
