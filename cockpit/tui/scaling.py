"""The home view: one row per configuration with its scaling numbers, sortable, filterable, groupable."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from cockpit.snapshot import StudySnapshot
from cockpit.tui import model
from cockpit.tui.bindings import SCALING_BINDINGS
from cockpit.tui.table import RowTable

GROUP_CYCLE: tuple[str | None, ...] = (None, *model.GROUP_AXES)


class ScalingView(Vertical):
    """Table + caption + a filter input that appears on `/`."""

    BINDINGS = SCALING_BINDINGS

    class OpenDetail(Message):
        def __init__(self, config_id: str) -> None:
            super().__init__()
            self.config_id = config_id

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sort_key: str | None = None
        self.reverse = False
        self.query_text = ""
        self.group_by: str | None = None
        self._snapshot: StudySnapshot | None = None
        self._caption_text: str | None = None

    def compose(self) -> ComposeResult:
        yield RowTable(model.SCALING_COLUMNS, id="scaling-table")
        yield Static(id="scaling-caption", classes="caption")
        yield Input(placeholder="filter: words or axis=value (e.g. window=256 state=running)", id="filter")

    def on_mount(self) -> None:
        self.query_one("#filter", Input).cursor_blink = False
        self._caption()

    @property
    def table(self) -> RowTable:
        return self.query_one("#scaling-table", RowTable)

    def apply(self, snapshot: StudySnapshot) -> None:
        self._snapshot = snapshot
        self._redraw()

    def _redraw(self) -> None:
        if self._snapshot is None:
            return
        rows = model.scaling_rows(self._snapshot, self.sort_key, self.reverse, self.query_text, self.group_by)
        self.table.apply(rows)
        self._caption()

    def _caption(self) -> None:
        parts = []
        if self._snapshot is not None:
            shown = sum(1 for r in self.table.shown if not r.header)
            parts.append(f"{shown}/{len(self._snapshot.configs)} configurations")
        if self.sort_key:
            label = next(c.label for c in model.SCALING_COLUMNS if c.key == self.sort_key)
            parts.append(f"sorted by {label} {'↓' if self.reverse else '↑'}")
        if self.group_by:
            parts.append(f"grouped by {self.group_by}")
        if self.query_text:
            parts.append(f"filter: {self.query_text}")
        parts.append("★ baseline (1 node × 1 GPU) of its group")
        text = "  ·  ".join(parts)
        if text != self._caption_text:  # an update lays the screen out again, so only when it changed
            self._caption_text = text
            self.query_one("#scaling-caption", Static).update(text)

    # -- actions ---------------------------------------------------------------------------------

    def sort_by(self, key: str, reverse: bool | None = None) -> None:
        if key not in model.SORTABLE:
            raise ValueError(f"cannot sort by {key!r}; expected one of {', '.join(model.SORTABLE)}")
        if reverse is None:
            reverse = not self.reverse if key == self.sort_key else False
        self.sort_key, self.reverse = key, reverse
        self._redraw()

    def action_sort(self) -> None:
        keys = model.SORTABLE
        nxt = keys[0] if self.sort_key not in keys else keys[(keys.index(self.sort_key) + 1) % len(keys)]
        self.sort_by(nxt, reverse=False)

    def action_sort_reverse(self) -> None:
        if self.sort_key:
            self.sort_by(self.sort_key, reverse=not self.reverse)

    def group(self, axis: str | None) -> None:
        if axis is not None and axis not in model.GROUP_AXES:
            raise ValueError(f"cannot group by {axis!r}; expected one of {', '.join(model.GROUP_AXES)}")
        self.group_by = axis
        self._redraw()

    def action_group(self) -> None:
        index = GROUP_CYCLE.index(self.group_by)
        self.group(GROUP_CYCLE[(index + 1) % len(GROUP_CYCLE)])

    def set_filter(self, text: str) -> None:
        self.query_text = text.strip()
        self._redraw()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.set_filter("")
        self.table.focus()

    def action_open_detail(self) -> None:
        key = self.table.selected_key()
        if key and not key.startswith("group:"):
            self.post_message(self.OpenDetail(key))

    # -- events ----------------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value.strip():
                event.input.remove_class("shown")
            self.table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key and not key.startswith("group:"):
            self.post_message(self.OpenDetail(key))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = event.column_key.value
        if key in model.SORTABLE:
            self.sort_by(key)
