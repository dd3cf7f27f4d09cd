"""The ``pyhpa`` command line (typer + rich).

Every command turns bad input into one line on stderr naming the file, object and field,
and exit code 2 (``InputError``); nothing prints a traceback for user mistakes. click's own usage
errors look the same (``pyhpa.cli.help``). The conventions every command follows: docs/cli.md.
"""

from __future__ import annotations

import sys

import typer

from .. import __version__
from .errors import err_console, input_errors  # noqa: F401 - err_console: part of this module's surface
from .help import Command, typer_app

app = typer_app(add_completion=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pyhpa {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """The Kubernetes Horizontal Pod Autoscaler, rebuilt in Python: explain, rehearse and run HPA decisions.

    Conventions of every command (-o/--output, files, errors, exit codes): docs/cli.md.
    """


def _register() -> None:
    from . import (
        adopt_cmd,
        explain_cmd,
        fleet_cmd,
        forecast_cmd,
        run_cmd,
        schedules_cmd,
        simulate_cmd,
        snapshot_cmd,
        thresholds_cmd,
        tune_cmd,
    )

    for name, module in (("explain", explain_cmd), ("snapshot", snapshot_cmd), ("thresholds", thresholds_cmd),
                         ("simulate", simulate_cmd), ("schedules", schedules_cmd), ("forecast", forecast_cmd),
                         ("tune", tune_cmd)):
        app.command(name, cls=Command, epilog=module.EXAMPLES)(input_errors(getattr(module, name)))
    run_cmd.register(app, input_errors, Command)
    fleet_cmd.register(app, input_errors, Command)
    app.command("adopt", cls=Command, epilog=adopt_cmd.ADOPT_EXAMPLES)(input_errors(adopt_cmd.adopt))
    app.command("release", cls=Command, epilog=adopt_cmd.RELEASE_EXAMPLES)(input_errors(adopt_cmd.release))


_register()


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="pyhpa")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
