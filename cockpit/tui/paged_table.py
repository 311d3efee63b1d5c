"""A DataTable that adds its rows a page at a time: the plan dialog's table of up to 10,000 configurations."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

PAGE = 200  # rows added at a time


class PagedTable(DataTable):
    """A table that keeps its rows and adds them a page at a time, the next page as the cursor or the view
    nears the last row added: a DataTable measures every cell it is given, which took seconds for a plan
    of 10,000 configurations, while one page shows at once. The column widths are every row's from the
    start, so they stay put as pages are added."""

    _rows: Sequence[tuple[str | Text, ...]] = ()
    _adding = False  # adding a row moves the cursor, whose watcher would add a page within the page

    def show(self, columns: Sequence[str], rows: Sequence[tuple[str | Text, ...]]) -> None:
        self.clear(columns=True)
        self._rows = rows
        for label, *cells in zip(columns, *rows, strict=True):  # each column's label and its cells
            self.add_column(label, width=max(map(_width, (label, *cells))))
        self.add_page()

    @property
    def pending(self) -> int:
        """Rows not added yet."""
        return len(self._rows) - self.row_count

    def add_page(self, size: int = PAGE) -> None:
        if self._adding or self.pending <= 0:
            return
        self._adding = True
        try:
            self.add_rows(self._rows[self.row_count:self.row_count + size])
        finally:
            self._adding = False

    def action_scroll_bottom(self) -> None:
        """ctrl+end: the plan's last row, every row added first (what the whole plan costs, paid once)."""
        self.add_page(self.pending)
        super().action_scroll_bottom()

    def watch_cursor_coordinate(self, old: Coordinate, new: Coordinate) -> None:
        super().watch_cursor_coordinate(old, new)
        if new.row >= self.row_count - PAGE // 2:
            self.add_page()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new + self.size.height >= self.row_count - PAGE // 2:  # one line a row
            self.add_page()


def _width(cell: str | Text) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)
