"""A table printed as rich prints `Table(box=SIMPLE_HEAD, pad_edge=False, caption_justify="left")`, its column
widths taken in one pass over the cell texts: rich measures and renders every cell of every row (about 2 ms a
row, 20 s for a plan of 10,000 configurations). Cells are plain text (no markup); a table wider than the
terminal is handed to rich, which wraps its cells."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rich import box
from rich.cells import cell_len
from rich.segment import Segment

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.table import Table

BOX = box.SIMPLE_HEAD
PAD = 1  # spaces either side of a cell, none at the table's edges (pad_edge=False)


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"
    no_wrap: bool = False  # these two matter only where rich wraps the table
    overflow: Literal["fold", "ellipsis"] = "ellipsis"


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    end_section: bool = False  # a blank line after it (not after the last row)


class TextTable:
    def __init__(self, title: str, caption: str, columns: Sequence[Column], rows: Sequence[Row]) -> None:
        self.title, self.caption = title, caption
        self.columns, self.rows = list(columns), list(rows)
        last = len(self.columns) - 1
        self.pads = [(PAD if i > 0 else 0, PAD if i < last else 0) for i in range(len(self.columns))]
        self.texts = [[c.header for c in self.columns], *(row.cells for row in self.rows)]
        by_column = list(zip(*self.texts, strict=True))
        self.plain = all(_printable_ascii("".join(cells)) for cells in by_column)  # a cell's length is its width
        measure = len if self.plain else cell_len
        self.widths = [max(map(measure, cells)) + sum(pad) for cells, pad in zip(by_column, self.pads, strict=True)]

    @property
    def width(self) -> int:
        """Rich's maximum width of the table: every cell on one line."""
        return _outer(self.widths)

    def minimum_width(self) -> int:
        """Rich's minimum width: each column as wide as its longest word."""
        longest = [max(cell_len(word) for cell in cells for word in cell.split() or [""]) + sum(pad)
                   for cells, pad in zip(zip(*self.texts, strict=True), self.pads, strict=True)]
        return _outer(longest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.width > options.max_width:  # rich wraps the cells to fit
            yield self.rich_table()
            return
        frame = BOX.substitute(options, safe=console.safe_box)
        annotation = options.update(width=self.width, highlight=False, height=None)
        if self.title:
            title = console.render_str(self.title, style="table.title", highlight=False)
            yield from console.render(title, annotation.update(justify="center"))
        yield Segment(frame.get_top(self.widths) + "\n")
        header = console.get_style("table.header")
        cells = [Segment(text, header) for text in self._padded(c.header for c in self.columns)]
        yield from _joined(cells, frame.head_left, frame.head_vertical, frame.head_right)
        yield Segment(frame.get_row(self.widths, "head") + "\n")
        between = frame.get_row(self.widths, "row") + "\n"
        mid = self._row_format(frame.mid_left, frame.mid_vertical, frame.mid_right)
        for row in self.rows[:-1]:
            yield Segment(mid(row.cells))
            if row.end_section:
                yield Segment(between)
        if self.rows:  # the last row has the box's foot edges, and no line after it
            yield Segment(self._row_format(frame.foot_left, frame.foot_vertical, frame.foot_right)(self.rows[-1].cells))
        yield Segment(frame.get_bottom(self.widths) + "\n")
        if self.caption:
            caption = console.render_str(self.caption, style="table.caption", highlight=False)
            yield from console.render(caption, annotation.update(justify="left"))

    def _row_format(self, left: str, divider: str, right: str) -> Callable[[Sequence[str]], str]:
        """A row's line: one format call where every cell is printable ASCII, else each cell measured."""
        if not self.plain:
            return lambda cells: left + divider.join(self._padded(cells)) + right + "\n"
        fields = [" " * pad_left + "{:" + (">" if c.justify == "right" else "<") + f"{width - pad_left - pad_right}}}"
                  + " " * pad_right
                  for c, width, (pad_left, pad_right) in zip(self.columns, self.widths, self.pads, strict=True)]
        line = _braced(left) + _braced(divider).join(fields) + _braced(right) + "\n"
        return lambda cells: line.format(*cells)

    def _padded(self, cells: Iterable[str]) -> list[str]:
        """Each cell justified in its column, with its padding."""
        out = []
        for text, column, width, (left, right) in zip(cells, self.columns, self.widths, self.pads, strict=True):
            space = " " * (width - left - right - cell_len(text))
            body = space + text if column.justify == "right" else text + space
            out.append(" " * left + body + " " * right)
        return out

    def rich_table(self) -> Table:
        """The same table as rich's, which wraps cells where the terminal is narrower than the table."""
        from rich.table import Table
        from rich.text import Text

        table = Table(title=self.title, caption=self.caption, box=BOX, pad_edge=False, caption_justify="left")
        for column in self.columns:
            table.add_column(Text(column.header), justify=column.justify, no_wrap=column.no_wrap,
                             overflow=column.overflow)
        for row in self.rows:
            table.add_row(*map(Text, row.cells), end_section=row.end_section)
        return table


def _braced(text: str) -> str:
    """Text as itself in a format string."""
    return text.replace("{", "{{").replace("}", "}}")


def _printable_ascii(text: str) -> bool:
    return text.isascii() and text.isprintable()


def _outer(widths: list[int]) -> int:
    """The table's width from its columns': the two edges and a divider between columns."""
    return sum(widths) + 2 + len(widths) - 1


def _joined(cells: list[Segment], left: str, divider: str, right: str) -> RenderResult:
    yield Segment(left)
    for index, cell in enumerate(cells):
        yield cell
        if index < len(cells) - 1:
            yield Segment(divider)
    yield Segment(right + "\n")
