"""What several ``pyhpa`` commands share: the output format choices, the gap policy, output paths (docs/cli.md).

``-o/--output`` is always the format of stdout (``Output``); files have their own ``--output-dir DIR``,
``--output-file FILE`` or ``--plot-file FILE`` flags, checked here before any work starts; defaults that write
files write under ``OUT`` (``out/``, gitignored).
"""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from enum import Enum
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.rule import Rule
from rich.text import Text

from ..adapters.errors import InputError

#: The folder default outputs go to (gitignored), relative to the working directory.
OUT = Path("out")

#: Widest line a table may take when stdout is not a terminal (pipes and files keep whole lines).
PIPE_WIDTH = 400


class Output(str, Enum):
    """``-o/--output``: text for people, json for programs."""

    text = "text"
    json = "json"


class DocumentFormat(str, Enum):
    """``-o/--output`` of a command that prints documents (``pyhpa snapshot``'s snapshot, the objects ``pyhpa adopt``
    and ``release`` would create): yaml or json."""

    yaml = "yaml"
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


def console(stderr: bool = False, markup: bool = True) -> Console:
    """The console text output goes to: on a terminal its width; piped or redirected, lines are never wrapped
    (tables as wide as their content, up to ``PIPE_WIDTH`` columns). ``markup=False``: strings are printed as they
    are (what a user wrote, ``map[string]string{...}`` or ``hits[/]``, is never read as rich markup); styled text
    is given as ``rich.text.Text``."""
    c = Console(highlight=False, stderr=stderr, markup=markup)
    if not c.is_terminal:
        c = Console(highlight=False, stderr=stderr, width=PIPE_WIDTH, soft_wrap=True, markup=markup)
    return c


#: how wide a heading rule is drawn where stdout is not a terminal (a terminal: its width)
RULE_WIDTH = 80


def rule(c: Console, title: str | Text) -> None:
    """A heading rule with ``title`` (a string, read as markup where ``c`` reads markup, or rich ``Text``): across
    the terminal, or ``RULE_WIDTH`` columns when piped (``console()``'s piped width is the widest a table may be,
    not a rule's)."""
    if c.is_terminal:
        c.rule(title)
    else:
        c.print(Rule(title), width=RULE_WIDTH)


def progress_bar(off: bool, *columns) -> Progress | None:
    """A rich progress bar on stderr with ``columns`` (transient: gone when the work ends), or None when ``off``
    (``--no-progress``) or when stderr is not a terminal: a bar in a log or a pipe is noise, and rich ends one there
    with an empty line before whatever comes next (an error line)."""
    stderr = Console(stderr=True)
    if off or not stderr.is_terminal:
        return None
    return Progress(*columns, transient=True, console=stderr)


def output_file(path: Path, flag: str, formats: dict[str, str] | None = None, example: str = "out/file") -> Path:
    """Check a file the command is to write (``flag`` names it in errors) before any work: not an existing folder,
    not a path ending in a separator, and (``formats``: extension -> description, e.g. matplotlib's
    ``plot_formats``) an extension of those; its folder is created if missing, and the file must be writable
    there (``_probe``: a read-only folder, /proc, a name too long fail here, not after the work).
    InputError (exit 2) otherwise. Returns ``path``."""
    text = str(path)
    try:
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
    except OSError as err:  # the path itself cannot be looked at (a name too long)
        raise InputError(f"cannot write it: {err.strerror or err}", file=text, field=flag) from None
    created = _missing(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _remove(created)
        raise InputError(f"cannot create the folder {path.parent}: {err.strerror or err}", file=text,
                         field=flag) from None
    try:
        _probe(path, text, flag)
    except InputError:
        _remove(created)
        raise
    return path


def _missing(path: Path) -> list[Path]:
    """The folders of ``path`` that do not exist yet, innermost first (what creating it makes)."""
    out = []
    while not path.exists() and path.parent != path:
        out.append(path)
        path = path.parent
    return out


def _probe(path: Path, text: str, flag: str) -> None:
    """Whether the file ``path`` can be written, found out by doing it before any work: an existing file is opened
    for writing (not truncated: nothing the user has is lost), a new one is created and removed again. InputError
    (the system's reason: permission denied, read-only file system, file name too long, ...) otherwise."""
    try:
        if path.exists():
            os.close(os.open(path, os.O_WRONLY))
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(path)
    except OSError as err:
        raise InputError(f"cannot write it: {err.strerror or err}", file=text, field=flag) from None


@contextmanager
def output_dir(path: Path, flag: str = "--output-dir"):
    """Create the folder a command writes its files into (``flag``) before the work, and find out that files can be
    written in it (a file is created and removed), so a folder that cannot be made or written fails at once
    (InputError, exit 2) instead of after the run; folders it made are removed again when the run fails."""
    created: list[Path] = []
    made = False
    try:
        if path.exists() and not path.is_dir():
            raise InputError("exists and is not a directory", file=str(path), field=flag)
        created = _missing(path)
        path.mkdir(parents=True, exist_ok=True)
        made = True
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        _remove(created)
        what = "write into the directory" if made else "create the directory"
        raise InputError(f"cannot {what}: {err.strerror or err}", file=str(path), field=flag) from None
    try:
        yield
    except BaseException:
        _remove(created)
        raise


def _remove(created: list[Path]) -> None:
    """Remove the (empty) folders ``output_dir`` made, innermost first."""
    for d in created:
        try:
            d.rmdir()
        except OSError as err:
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST):  # something else wrote into it: keep it and its parents
                break
            # not made (creating an outer one failed first), or a name that could never be made
