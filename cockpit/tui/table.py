"""A DataTable that applies a new list of rows with the least work.

Same keys in the same order -> only changed cells are updated; otherwise the rows are rebuilt. This is
what keeps a 1000-configuration refresh within a frame.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from cockpit.tui.model import Column, Row


def same(a: object, b: object) -> bool:
    """Cell equality that sees style changes (rich's Text equality ignores the base style)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.spans == b.spans
    return type(a) is type(b) and a == b


class RowTable(DataTable):
    """DataTable keyed by Row.key, remembering what it shows."""

    def __init__(self, columns: tuple[Column, ...], **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._columns = columns
        self._shown: list[Row] = []

    def on_mount(self) -> None:
        for col in self._columns:
            self.add_column(col.label, key=col.key, width=col.width)

    @property
    def shown(self) -> list[Row]:
        return self._shown

    def apply(self, rows: list[Row]) -> None:
        old = self._shown
        old_keys = [r.key for r in old]
        new_keys = [r.key for r in rows]
        if old_keys == new_keys:
            self._update_cells(old, rows)
        elif len(old_keys) == len(new_keys) and set(old_keys) == set(new_keys) and self._reorder(new_keys):
            selected = self.selected_key()
            by_key = {r.key: r for r in old}
            self._update_cells([by_key[k] for k in new_keys], rows)
            self._shown = rows
            if selected is not None:
                self.select_key(selected)
        else:
            selected = self.selected_key()
            self.clear()
            self.add_rows_keyed(rows)
            self._shown = rows
            if selected is not None:
                self.select_key(selected)
        self._shown = rows

    def _update_cells(self, old: list[Row], rows: list[Row]) -> None:
        for before, after in zip(old, rows, strict=True):
            if before.cells is after.cells:
                continue
            for col, a, b in zip(self._columns, before.cells, after.cells, strict=True):
                if not same(a, b):
                    # fixed-width columns need no re-measuring, which is most of an update's cost
                    self.update_cell(after.key, col.key, b, update_width=col.width is None)

    def _reorder(self, keys: list[str]) -> bool:
        """Put the existing rows in a new order without re-adding them (re-adding re-measures every
        cell, which dominates a sort of 1000 rows). Falls back to a rebuild if DataTable's internals moved."""
        try:
            from textual._two_way_dict import TwoWayDict
            from textual.widgets.data_table import RowKey

            locations = TwoWayDict({RowKey(k): i for i, k in enumerate(keys)})
            if set(locations) != set(self._row_locations):
                return False
            self._row_locations = locations
        except (ImportError, AttributeError, TypeError):
            return False
        self._update_count += 1
        self.refresh()
        return True

    def add_rows_keyed(self, rows: list[Row]) -> None:
        for row in rows:
            self.add_row(*row.cells, key=row.key)

    def selected_key(self) -> str | None:
        if not self._shown or self.cursor_row < 0 or self.cursor_row >= len(self._shown):
            return None
        return self._shown[self.cursor_row].key

    def select_key(self, key: str) -> None:
        for index, row in enumerate(self._shown if self._shown else []):
            if row.key == key:
                self.move_cursor(row=index)
                return
