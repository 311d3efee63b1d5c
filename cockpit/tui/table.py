"""A DataTable that applies a new list of rows with the least work.

Same keys in the same order -> only changed cells are updated; otherwise the rows are rebuilt. This is
what keeps a 1000-configuration refresh within a frame.

DataTable keys its render caches on a table-wide update counter, so one changed cell re-renders every
visible cell through Rich (~1.5 ms a row). RowTable keeps a second cell cache keyed on what a cell shows
(its text and styles, position, width and the styles it is drawn with), so a repaint after a refresh
renders only the cells whose content really changed; the rest of each line is reassembled from cache.
"""

from __future__ import annotations

from typing import cast

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from cockpit.tui.columns import Column
from cockpit.tui.model import Row


def same(a: object, b: object) -> bool:
    """Cell equality that sees style changes (rich's Text equality ignores the base style)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.spans == b.spans
    return type(a) is type(b) and a == b


def content_key(value: object) -> tuple | None:
    """A hashable key of everything that decides how a cell renders, or None when there is none."""
    if type(value) is str:
        return ("s", value)
    if isinstance(value, Text):
        try:
            key = ("T", value.plain, value.style, tuple(value.spans), value.justify, value.overflow,
                   value.no_wrap, value.end, value.tab_size)
            hash(key)
        except TypeError:
            return None
        return key
    return None


class RowTable(DataTable):
    """DataTable keyed by Row.key, remembering what it shows."""

    def __init__(self, columns: tuple[Column, ...], **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._columns = columns
        self._shown: list[Row] = []
        # rendered cells by content, surviving DataTable's update counter (see the module docstring)
        self._content_cache: LRUCache[tuple, list[list[Segment]]] = LRUCache(4096)
        self._line_in_row_cache: LRUCache[tuple, tuple] = LRUCache(1024)
        self._strip_cache: LRUCache[tuple, tuple] = LRUCache(1024)
        self._frame_style: Style | None = None  # the widget's rich style while a frame renders its lines
        self._component_styles_seen: tuple = ()

    def notify_style_update(self) -> None:
        self._clear_render_caches()
        super().notify_style_update()

    def _clear_render_caches(self) -> None:
        self._content_cache.clear()
        self._line_in_row_cache.clear()
        self._strip_cache.clear()

    def _row_content_key(self, row_key) -> tuple | None:
        """Content keys of every cell of a row (the header's labels for the header row)."""
        values: list[object]
        try:
            if row_key is self._header_row_key:
                values = [column.label for column in self.ordered_columns]
            else:
                data = self._data[row_key]
                values = [data.get(column.key) for column in self.ordered_columns]
        except (KeyError, AttributeError):
            return None
        keys = tuple(content_key(v) for v in values)
        return None if None in keys else keys

    def render_lines(self, crop):
        # component styles (cursor, header, stripes) can be re-resolved without a style update on the table
        # itself; cached lines drawn with the old ones must go
        seen = tuple(self._component_styles.values())
        if len(seen) != len(self._component_styles_seen) or any(
            a is not b for a, b in zip(seen, self._component_styles_seen, strict=True)
        ):
            self._clear_render_caches()
            self._component_styles_seen = seen
        # DataTable.render_line asks for the widget's rich style once per line; it is the same for the frame
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    def render_line(self, y: int):
        base_style = self._frame_style
        if base_style is None:
            return super().render_line(y)
        # as DataTable.render_line (which takes every fixed row to have a key), with the frame's style
        scroll_x, scroll_y = self.scroll_offset
        fixed_height = sum(self.get_row_height(cast(RowKey, self._row_locations.get_key(i)))
                           for i in range(self.fixed_rows))
        if self.show_header:
            fixed_height += self.get_row_height(self._header_row_key)
        if y >= fixed_height:
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + self.size.width, base_style)

    def _render_line(self, y: int, x1: int, x2: int, base_style):
        """A screen line; reused while the row line it is cut from is the same cached object."""
        try:
            row_key, line_no = self._get_offsets(y)
        except LookupError:
            return super()._render_line(y, x1, x2, base_style)
        pair = self._render_line_in_row(row_key, line_no, base_style, self.cursor_coordinate, self.hover_coordinate)
        key = (y, x1, x2, self.size.width, base_style)
        hit = self._strip_cache.get(key)
        if hit is not None and hit[0] is pair:
            return hit[1]
        strip = super()._render_line(y, x1, x2, base_style)
        self._strip_cache[key] = (pair, strip)
        return strip

    def _render_line_in_row(self, row_key, line_no: int, base_style, cursor_location, hover_location):
        """DataTable's row line, cached on what decides its look (position, cursor, hover, widths, focus) and
        the content of its cells rather than on the table-wide update counter. When only some cells of a
        row changed, only those are rendered again and spliced into the cached line."""
        content = self._row_content_key(row_key) if self.cursor_type == "row" \
            and not self._should_render_row_labels else None
        if content is None:
            return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)
        row_index = self._row_locations.get(row_key)
        if row_index is None:
            row_index = -1
        cursor, hover = cursor_location.row == row_index, hover_location.row == row_index
        widths = tuple(column.get_render_width(self) for column in self.ordered_columns)
        shape = (
            row_key, row_index, line_no, base_style, cursor, hover, self.show_cursor, self._show_hover_cursor,
            self._pseudo_class_state, self.zebra_stripes, self.fixed_rows, self.fixed_columns, self.size.width,
            widths,
        )
        cached = self._line_in_row_cache.get(shape)
        if cached is not None and cached[0] == content:
            return cached[1]
        fixed_count = len(cached[1][0]) if cached is not None else -1
        if cached is not None and len(cached[0]) == len(content) and fixed_count == min(self.fixed_columns,
                                                                                         len(content)):
            row_style = self._get_row_style(row_index, base_style)
            fixed, scrollable = list(cached[1][0]), list(cached[1][1])
            for column_index, (before, after) in enumerate(zip(cached[0], content, strict=True)):
                if before != after:
                    scrollable[column_index] = self._render_cell(
                        row_index, column_index, row_style, widths[column_index], cursor=cursor, hover=hover,
                    )[line_no]
                    if column_index < fixed_count:
                        fixed[column_index] = self._render_cell(
                            row_index, column_index, self._fixed_style(row_key), widths[column_index],
                            cursor=cursor, hover=hover,
                        )[line_no]
            pair = (fixed, scrollable)
        else:
            pair = super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)
        self._line_in_row_cache[shape] = (content, pair)
        return pair

    def _fixed_style(self, row_key):
        """The style DataTable draws frozen cells with (as in DataTable._render_line_in_row)."""
        if row_key is self._header_row_key:
            return self.get_component_styles("datatable--header").rich_style
        return self.get_component_styles("datatable--fixed").rich_style + Style.from_meta({"fixed": True})

    def _render_cell(self, row_index: int, column_index: int, base_style, width: int, cursor: bool = False,
                     hover: bool = False):
        if column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        try:
            column_key = self._column_locations.get_key(column_index)
            if column_key is None:
                raise LookupError
            if row_index == -1:
                value: object = self.columns[column_key].label
                height = self.header_height
            else:
                row_key = self._row_locations.get_key(row_index)
                if row_key is None:
                    raise LookupError
                row = self.rows[row_key]
                if row.auto_height:
                    raise LookupError
                value = self._data[row_key][column_key]
                height = row.height
        except (KeyError, LookupError, TypeError):
            value, height = None, 0
        key = content_key(value)
        if key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        is_fixed = row_index != -1 and (row_index < self.fixed_rows or column_index < self.fixed_columns)
        styles = self._get_styles_to_render_cell(
            row_index == -1, False, is_fixed, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css",
        )
        cache_key = (key, row_index, column_index, base_style, styles, width, height, self.cell_padding,
                     self._pseudo_class_state)
        lines = self._content_cache.get(cache_key)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            self._content_cache[cache_key] = lines
        return lines

    def on_mount(self) -> None:
        for col in self._columns:
            self.add_column(col.label, key=col.key, width=col.width)

    def set_columns(self, columns: tuple[Column, ...], fixed: int = 0) -> bool:
        """Show other columns (a study's layout, see model.Layout); the rows are added again by the next
        apply. Returns whether anything changed."""
        if columns == self._columns and fixed == self.fixed_columns:
            return False
        self._columns = columns
        self.fixed_columns = fixed
        if self.is_mounted:
            self.clear(columns=True)
            for col in columns:
                self.add_column(col.label, key=col.key, width=col.width)
        self._shown = []
        self._clear_render_caches()
        return True

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
        data = getattr(self, "_data", None)
        written = False
        for before, after in zip(old, rows, strict=True):
            if before.cells is after.cells:
                continue
            for col, a, b in zip(self._columns, before.cells, after.cells, strict=True):
                if same(a, b):
                    continue
                cells = data.get(after.key) if isinstance(data, dict) else None
                if col.width is not None and isinstance(cells, dict) and col.key in cells:
                    # a fixed-width column needs no re-measuring: write the cell and refresh once below
                    # (what update_cell does, less a refresh per cell)
                    cells[col.key] = b
                    written = True
                else:
                    self.update_cell(after.key, col.key, b, update_width=col.width is None)
        if written:
            self._update_count += 1
            self.refresh()

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
