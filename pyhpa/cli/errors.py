"""Bad input on the command line: one line on stderr naming the file, object and field, and exit code 2.

Shared by ``pyhpa`` (``pyhpa.cli.main``) and the kubectl plugin (``pyhpa.cli.kubectl_plugin``), which imports it
without the rest of ``pyhpa``'s commands (a plugin starts in a fraction of the time).
"""

from __future__ import annotations

import functools

import typer
from rich.console import Console

from ..adapters.errors import InputError

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
