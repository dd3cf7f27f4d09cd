"""``--help`` as command-line users read it: click's plain layout, conventional metavars, nothing cut.

Typer's defaults show Python types as metavars (``<bool>``, ``<list[Path]>``, ``<str>``), draw tables that
cut long flag names with "…" on narrower terminals, and shorten command summaries. ``Command`` and
``Group`` (the ``cls`` of every ``pyhpa`` command) use click's plain help instead, with metavars in the
usual style: ``INTEGER``, ``NUMBER``, ``TEXT``, ``FILE``, ``DIR``, ``[text|json]``, nothing for flags;
arguments show their metavar and no type; command summaries are the docstring's first sentence, whole.
"""

from __future__ import annotations

import inspect
import typing
from enum import Enum
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

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


def tidy(param: Any) -> None:
    """Give ``param`` a conventional metavar and plain display (in place)."""
    if isinstance(param, TyperOption):
        if param.is_flag or param.count:
            param.metavar = ""
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


class Command(TyperCommand):
    """A ``pyhpa`` subcommand with plain, uncut help (see module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            tidy(p)
        if not self.short_help:
            self.short_help = first_sentence(self.help)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            tidy(option)
        return option


class Group(TyperGroup):
    """The ``pyhpa`` group, with the same plain help."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            tidy(option)
        return option
