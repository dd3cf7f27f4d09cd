"""``--help`` as command-line users read it, and click's own errors as one line (docs/cli.md).

``--help``: click's plain layout, conventional metavars, nothing cut, an "Examples:" section kept as written.

Typer's defaults show Python types as metavars (``<bool>``, ``<list[Path]>``, ``<str>``), draw tables that
cut long flag names with "…" on narrower terminals, and shorten command summaries. ``Command`` and
``Group`` (the ``cls`` of every ``pyhpa`` command) use click's plain help instead, with metavars in the
usual style: ``INTEGER``, ``NUMBER``, ``TEXT``, ``FILE``, ``DIR``, ``[text|json]``, nothing for flags;
arguments show their metavar and no type; command summaries are the docstring's first sentence, whole.

Errors: click's usage errors (unknown option or command, bad choice, missing argument) are shown like every
other pyhpa error, one line ``error: FLAG: problem (see pyhpa CMD -h)`` on stderr, exit code 2, instead of
click's usage block.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import typing
from contextlib import contextmanager
from enum import Enum
from typing import Any, Iterator

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# click's exception classes as the installed typer raises them (recent typer releases vendor click)
_exceptions = sys.modules[typer.BadParameter.__module__]
UsageError = _exceptions.UsageError

#: ``context_settings`` of the app: help fills terminals up to 120 columns; ``-h`` works as ``--help``.
CONTEXT_SETTINGS = {"max_content_width": 120, "help_option_names": ["-h", "--help"]}


def metavar_for(param: Any) -> str | None:
    """The conventional metavar of an option or argument from its type (None: keep typer's)."""
    desc = param.type_descriptor
    if desc.is_choice:
        values = [c.value if isinstance(c, Enum) else c for c in desc.choices]
        return "[" + "|".join(str(v) for v in values) + "]"
    if desc.is_path:
        info = desc.parameter_info
        return "DIR" if info.dir_okay and not info.file_okay else "FILE"
    annotation = desc.annotation
    if desc.is_list and typing.get_args(annotation):
        annotation = typing.get_args(annotation)[0]
    return {int: "INTEGER", float: "NUMBER", str: "TEXT", bool: "BOOLEAN"}.get(annotation)


#: what a flag takes, by its name, the same in every command: a file, a time, a URL, a column, seconds, a fraction
#: (flags not listed show their type: INTEGER, NUMBER, TEXT)
FLAG_METAVARS = {
    "--kubeconfig": "FILE", "--context": "CONTEXT", "--server": "URL", "--prometheus-url": "URL",
    "--now": "TIME", "--from": "TIME", "--to": "TIME", "--start": "TIME", "--end": "TIME",
    "--column": "COLUMN", "--time-column": "COLUMN", "--unit": "UNIT", "--selector": "SELECTOR",
    "--namespace": "NAMESPACE", "--leader-elect-resource-namespace": "NAMESPACE",
    "--leader-elect-resource-name": "NAME", "--leader-elect-identity": "NAME", "--health-host": "ADDRESS",
    "--health-port": "PORT", "--load-scale": "FACTOR", "--quantile": "QUANTILE",
    **dict.fromkeys(("--tolerance", "--jitter", "--max-overloaded-fraction", "--max-unserved-fraction"), "FRACTION"),
    **dict.fromkeys(("--sync-period", "--metrics-timeout", "--api-timeout", "--cpu-initialization-period",
                     "--initial-readiness-delay", "--downscale-stabilization", "--flap-window", "--lead", "--history",
                     "--refresh", "--held-out", "--timeout", "--leader-elect-lease-duration",
                     "--leader-elect-renew-deadline", "--leader-elect-retry-period"), "SECONDS"),
}


def tidy(param: Any) -> None:
    """Give ``param`` a conventional metavar and plain display (in place)."""
    if isinstance(param, TyperOption):
        named = next((FLAG_METAVARS[o] for o in param.opts if o in FLAG_METAVARS), None)
        if param.is_flag or param.count:
            param.metavar = ""
        elif named is not None and not param.type_descriptor.is_choice:
            param.metavar = named
        elif param.metavar is None:
            param.metavar = metavar_for(param)
    elif isinstance(param, TyperArgument):
        if param.metavar is None:
            param.metavar = (param.name or "ARG").upper()
        label = param.metavar + ("..." if param.nargs != 1 else "")
        usage = label if param.required else f"[{param.metavar}]" + ("..." if param.nargs != 1 else "")
        param.display_type_rich = lambda ctx=None: None  # no "<list[Path]>" next to the name
        param._rich_display_name = lambda: label
        param._usage_display_name = lambda: usage


def first_sentence(text: str | None) -> str | None:
    """The first sentence of a docstring's first paragraph, on one line."""
    if not text:
        return None
    para = " ".join(inspect.cleandoc(text).split("\n\n")[0].split())
    head, dot, _ = para.partition(". ")
    return head + "." if dot else para


def examples(*lines: str) -> str:
    """A command's ``epilog``: "Examples:" and the command lines, each kept on its own line in ``--help``."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


class OneLineUsageError(UsageError):
    """A click usage error shown as one line: ``error: FLAG: problem (see pyhpa CMD -h)``, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        typer.echo(f"error: {self.message}", err=file is None, file=file)


def one_line(err: Any) -> OneLineUsageError:
    """``err`` as one line naming the flag or argument, and where the help is."""
    if isinstance(err, OneLineUsageError):
        return err
    ctx = err.ctx
    if isinstance(err, _exceptions.NoSuchOption):
        close = sorted(err.possibilities or ())
        text = f"{err.option_name}: no such option" + (f" (did you mean {' or '.join(close)}?)" if close else "")
    elif isinstance(err, _exceptions.MissingParameter) and err.param is not None:
        what = "argument" if err.param.param_type_name == "argument" else "option"
        text = f"{_hint(err.param)}: missing {what}"
    elif isinstance(err, _exceptions.BadParameter) and err.param is not None:
        message = err.message.removeprefix("Value error, ")
        text = f"{_hint(err.param)}: {message}"
    elif isinstance(err, _exceptions.BadOptionUsage):
        text = f"{err.option_name}: " + err.message.replace(f"Option {err.option_name!r} ", "")
    else:
        m = re.fullmatch(r"No such command '(.*)'\.?", err.message)
        text = f"{m.group(1)}: no such command" if m else err.message
    text = text.rstrip(".")
    if ctx is not None:
        text += f" (see {ctx.command_path} -h)"
    return OneLineUsageError(" ".join(text.split()), ctx)


def _shows_help(err: Any) -> bool:
    """Whether ``err`` is click's "no arguments: show the help" (``no_args_is_help``), which stays as it is."""
    return type(err).__name__ == "NoArgsIsHelpError"


def _hint(param: Any) -> str:
    """An argument's metavar, or an option's longest flag."""
    if param.param_type_name == "argument":
        text = (param.metavar or param.name or "ARG").rstrip(".")
        # an optional argument's usage form, [NAME], without its brackets; a metavar that holds some (FLEET.yaml
        # [B.yaml]) as it is
        return text[1:-1] if text.startswith("[") and text.endswith("]") else text
    return max(param.opts, key=len)


@contextmanager
def _usage_in_one_line() -> Iterator[None]:
    """A click usage error raised inside, as one line (help requests pass through as they are)."""
    try:
        yield
    except UsageError as err:
        if _shows_help(err):
            raise
        raise one_line(err) from None


class _PlainUsage:
    """Plain help option and one-line usage errors, for a command and for the group (mixed in first)."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            tidy(option)
        return option

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _usage_in_one_line():
            return super().make_context(*args, **kwargs)


class Command(_PlainUsage, TyperCommand):
    """A ``pyhpa`` subcommand with plain, uncut help and one-line usage errors (see module doc); a ``NUMBER``
    flag must be a finite number (``inf``, ``nan``, ``1e999`` are one line)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            tidy(p)
        if not self.short_help:
            self.short_help = first_sentence(self.help)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        ctx = super().make_context(*args, **kwargs)
        for p in self.params:
            value = ctx.params.get(p.name)
            values = value if isinstance(value, (list, tuple)) else [value]
            bad = [v for v in values if isinstance(v, float) and not math.isfinite(v)]
            if bad and not ctx.resilient_parsing:
                raise one_line(_exceptions.BadParameter(f"must be a finite number, got {bad[0]!r}", ctx, p))
        return ctx


def typer_app(**kwargs: Any) -> typer.Typer:
    """A typer app that follows pyhpa's conventions (docs/cli.md): ``Group`` (plain help; no arguments: its
    commands, exit 0; click's errors one line, exit 2), ``-h`` and 120 columns (``CONTEXT_SETTINGS``), no rich
    markup, no locals in a traceback, no completion. ``kwargs`` are ``typer.Typer``'s and win (``help``, ``epilog``
    from ``examples``, ``add_completion``). Its commands are added with ``cls=Command`` and an ``epilog``: ``pyhpa``,
    ``kubectl pyhpa`` and ``python -m controlplane`` are built so."""
    return typer.Typer(**{"cls": Group, "add_completion": False, "rich_markup_mode": None,
                          "pretty_exceptions_show_locals": False, "context_settings": CONTEXT_SETTINGS,
                          "no_args_is_help": True, **kwargs})


class Group(_PlainUsage, TyperGroup):
    """The ``pyhpa`` group, with the same plain help and one-line usage errors; without arguments it prints its help
    (the commands) and exits 0: nothing was asked, nothing is wrong (click would exit 2)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        with _usage_in_one_line():
            return super().resolve_command(ctx, args)
