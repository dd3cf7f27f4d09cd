"""What several ``pyhpa`` commands share: the output format choices, the gap policy, output paths (docs/cli.md).

``-o/--output`` is always the format of stdout (``Output``); files have their own ``--output-dir DIR``,
``--output-file FILE`` or ``--plot-file FILE`` flags, checked here before any work starts; defaults that write
files write under ``OUT`` (``out/``, gitignored).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from rich.console import Console

from ..adapters.errors import InputError

#: The folder default outputs go to (gitignored), relative to the working directory.
OUT = Path("out")

#: Widest line a table may take when stdout is not a terminal (pipes and files keep whole lines).
PIPE_WIDTH = 400


class Output(str, Enum):
    """``-o/--output``: text for people, json for programs."""

    text = "text"
    json = "json"


class GapPolicy(str, Enum):
    """``--gaps``: what goes into a gap of a trace (rows more than 1.5 steps apart); the same meaning in every
    command that reads a trace (docs/cli.md): refuse it, hold the last row, one zero row, interpolate, cut it out."""

    error = "error"
    hold = "hold"
    zero = "zero"
    interpolate = "interpolate"
    skip = "skip"


GAPS_HELP = ("Rows more than 1.5 steps apart: error (refuse the trace), hold (each row holds until the next), zero "
             "(a zero row at the gap's start), interpolate (rows every step, linear), skip (cut the gap out). "
             "Reported in the output.")


def console(stderr: bool = False) -> Console:
    """The console text output goes to: on a terminal its width; piped or redirected, lines are never wrapped
    (tables as wide as their content, up to ``PIPE_WIDTH`` columns)."""
    c = Console(highlight=False, stderr=stderr)
    if not c.is_terminal:
        c = Console(highlight=False, stderr=stderr, width=PIPE_WIDTH, soft_wrap=True)
    return c


def output_file(path: Path, flag: str, formats: dict[str, str] | None = None, example: str = "out/file") -> Path:
    """Check a file the command is to write (``flag`` names it in errors) before any work: not an existing folder,
    not a path ending in a separator, and (``formats``: extension -> description, e.g. matplotlib's
    ``plot_formats``) an extension of those; its folder is created if missing.
    InputError (exit 2) otherwise. Returns ``path``."""
    text = str(path)
    if path.is_dir() or text.endswith(("/", "\\")):
        name = Path(example).name
        raise InputError(f"is a folder; give a file name, e.g. {Path(text) / name}", file=text, field=flag)
    if formats is not None:
        suffix = path.suffix.lower().lstrip(".")
        if suffix not in formats:
            want = ", ".join(f".{k}" for k in sorted(formats))
            what = f"unknown file extension {path.suffix!r}" if suffix else "no file extension"
            raise InputError(f"{what} (want one of {want})", file=text, field=flag)
    if path.parent.exists() and not path.parent.is_dir():
        raise InputError(f"{path.parent} is not a folder", file=text, field=flag)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the folder {path.parent}: {err.strerror or err}", file=text,
                         field=flag) from None
    return path
