"""Tables of plain cells, printed as rich's ``Table`` prints them, byte for byte, at a fraction of its cost.

rich lays out every cell of a ``Table`` through its general machinery (measure, wrap, pad, justify, crop), about
0.2 ms a cell: ``pyhpa thresholds`` of an HPA with 1,000 metrics (1,000 tables, 55,000 cells) spent 9 of its 10
seconds there. Most tables pyhpa prints are a title, a header and rows of short plain cells (numbers, quantities)
that fit the console: for those, rich renders the title, the borders and the header (once per set of column
widths) and ``PlainTables`` writes the rows, whose text rich would lay out as ``│ <cell right-justified> │``
without a style. Anything else (a table wider than the console, which rich shrinks and wraps; a cell with
markup, an emoji code, a space or a character that is not printable ASCII) is printed by rich's ``Table``
itself. ``tests/test_thresholds_output.py`` compares both, byte for byte, on terminals and pipes of many
widths, with and without colour and box characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table


def _plain(cell: str) -> bool:
    """Whether rich renders ``cell`` as its own characters, one column each, and never splits it: printable
    ASCII without spaces, markup (``[``) or emoji codes (``:``)."""
    return cell.isascii() and (cell.isprintable() or not cell) and not any(c in cell for c in " []:\\")


class PlainTables:
    """Makes the tables of one command: ``table(title, rows)`` is a renderable printed exactly as
    ``rich.table.Table(*headers, title=title, title_justify="left")`` with every column right-justified and
    ``rows`` added, faster (see the module doc). The borders and header are rendered once per set of column
    widths and console settings, and reused by every table of this object."""

    def __init__(self, headers: Sequence[str]):
        self.headers = tuple(headers)
        self._frames: dict[tuple, tuple[list[list[Segment]], list[Segment], tuple[str, ...]]] = {}

    def table(self, title: str, rows: Iterable[Sequence[str]]) -> _PlainTable:
        return _PlainTable(self, title, [tuple(r) for r in rows])

    def rich_table(self, title: str, rows: Sequence[Sequence[str]]) -> Table:
        """The same table as rich's own ``Table``."""
        table = Table(title=title, title_justify="left")
        for header in self.headers:
            table.add_column(header, justify="right")
        for row in rows:
            table.add_row(*row)
        return table

    def _frame(self, console: Console, options: ConsoleOptions, widths: tuple[int, ...]):
        """(the lines above the rows: top border, header, header rule; the bottom border; the body's border
        characters: mid left, mid divider, mid right, foot left, foot divider, foot right), as rich renders them
        for columns of ``widths`` (padding included)."""
        key = (widths, options.max_width, options.ascii_only, options.legacy_windows, console.safe_box)
        frame = self._frames.get(key)
        if frame is None:
            table = Table()
            for header, width in zip(self.headers, widths):
                table.add_column(header, justify="right", width=width - 2)
            lines = list(Segment.split_lines(console.render(table, options)))
            box = table.box.substitute(options, safe=console.safe_box if table.safe_box is None else table.safe_box)
            chars = (box.mid_left, box.mid_vertical, box.mid_right, box.foot_left, box.foot_vertical, box.foot_right)
            frame = self._frames[key] = (lines[:-1], lines[-1], chars)
        return frame


class _PlainTable:
    def __init__(self, maker: PlainTables, title: str, rows: list[tuple[str, ...]]):
        self.maker, self.title, self.rows = maker, title, rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        headers = self.maker.headers
        if not (all(_plain(h.replace(" ", "x")) for h in headers)
                and all(len(r) == len(headers) and all(_plain(c) for c in r) for r in self.rows)):
            yield self.maker.rich_table(self.title, self.rows)
            return
        # each column as wide as its widest cell and one space either side, as rich measures it
        widths = tuple(max([len(h), *(len(r[i]) for r in self.rows)]) + 2 for i, h in enumerate(headers))
        table_width = sum(widths) + len(widths) + 1  # and the borders
        if table_width > options.max_width:  # rich shrinks the columns and wraps cells
            yield self.maker.rich_table(self.title, self.rows)
            return
        # the title as rich's Table renders it (render_annotation), over the table's width
        if self.title:
            render_options = options.update(width=table_width, highlight=False, height=None)
            title = console.render_str(self.title, style=Style.pick_first(None, "table.title"), highlight=False)
            yield from console.render(title, options=render_options.update(justify="left"))
        head, bottom, (left, divider, right, foot_left, foot_divider, foot_right) = self.maker._frame(
            console, options, widths)
        new_line = Segment.line()
        for line in head:
            yield from line
            yield new_line
        last = len(self.rows) - 1
        for n, row in enumerate(self.rows):
            a, d, b = (foot_left, foot_divider, foot_right) if n == last else (left, divider, right)
            cells = d.join(f" {c.rjust(w - 2)} " for c, w in zip(row, widths))
            yield Segment(f"{a}{cells}{b}")
            yield new_line
        yield from bottom
        yield new_line
