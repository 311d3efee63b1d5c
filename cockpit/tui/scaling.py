"""The home view: one row per configuration with its scaling numbers, sortable, filterable, groupable.

Axes with one value in the whole study are folded into the subtitle, the remaining ones are frozen on the
left, and the selected row's whole explanation sits in a status line under the table, so the view reads at
80x24 and uses whatever width there is.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from cockpit.store.snapshot import ConfigRow, StudySnapshot
from cockpit.tui import model
from cockpit.tui.bindings import SCALING_BINDINGS
from cockpit.tui.channel import SnapshotView
from cockpit.tui.columns import SCALING_COLUMN, SCALING_COLUMNS, SORTABLE
from cockpit.tui.files import CopyRunDir, ExportCsv, OpenPager
from cockpit.tui.filter import Filter, parse_filter
from cockpit.tui.table import RowTable


class ScalingView(Vertical, SnapshotView):
    """Subtitle + table + status line + caption + a filter input that appears on `/`."""

    BINDINGS = [*SCALING_BINDINGS]  # a copy, typed as the list of BindingType textual declares

    class OpenDetail(Message):
        def __init__(self, config_id: str) -> None:
            super().__init__()
            self.config_id = config_id

    class Compare(Message):
        """Open two runs side by side."""

        def __init__(self, left: str, right: str) -> None:
            super().__init__()
            self.left = left
            self.right = right

    def __init__(self, *, live: bool = True, device_hint: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.live = live
        self.device_hint = device_hint
        self.sort_key: str | None = None
        self.reverse = False
        self.query_text = ""
        self.filter_spec = Filter()
        self.group_by: str | None = None
        self.marked: str | None = None  # the run `c` compares the selected one with
        self.table_layout = model.FULL_LAYOUT
        self._snapshot: StudySnapshot | None = None
        self._caption_text: Text | None = None
        self._status_text: Text | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="scaling-subtitle", classes="caption")
        yield RowTable(SCALING_COLUMNS, id="scaling-table")
        yield Static(id="scaling-status")
        yield Static(id="scaling-caption", classes="caption")
        yield Input(placeholder="filter: eff<0.6 verdict~comm state=done (Enter; Esc clears)",
                    id="filter")

    def on_mount(self) -> None:
        self.query_one("#filter", Input).cursor_blink = False
        self._caption()

    @property
    def table(self) -> RowTable:
        return self.query_one("#scaling-table", RowTable)

    def apply(self, snapshot: StudySnapshot) -> None:
        self._snapshot = snapshot
        layout = model.scaling_layout(snapshot, self.device_hint)
        if layout != self.table_layout:
            self.table_layout = layout
            selected = self.table.selected_key()
            self.table.set_columns(layout.columns, layout.fixed)
            self.query_one("#scaling-subtitle", Static).update(layout.subtitle())
            self.query_one("#scaling-subtitle", Static).display = bool(layout.subtitle())
            self._redraw()
            if selected:
                self.table.select_key(selected)
            return
        self._redraw()

    def _redraw(self) -> None:
        if self._snapshot is None:
            return
        rows = model.scaling_rows(self._snapshot, self.sort_key, self.reverse, self.filter_spec, self.group_by,
                                  self.table_layout, self.live)
        self.table.apply(rows)
        self._caption()
        self._status()

    def selected_row(self) -> ConfigRow | None:
        key = self.table.selected_key()
        if self._snapshot is None or not key or key.startswith("group:"):
            return None
        return self._snapshot.config(key)

    def shown_rows(self) -> list[ConfigRow]:
        """The configurations the table shows now (filtered, in its order)."""
        if self._snapshot is None:
            return []
        rows = (self._snapshot.config(r.key) for r in self.table.shown if not r.header)
        return [r for r in rows if r is not None]

    def _status(self) -> None:
        if self._snapshot is None:
            return
        shown = sum(1 for r in self.table.shown if not r.header)
        if not shown and self._snapshot.configs:
            text = Text.assemble(
                (f"no configuration matches {self.query_text!r}", "bold yellow"),
                f" ({len(self._snapshot.configs)} in the study)" if self.filter_spec.terms else "",
                "; escape clears the filter, ? lists the fields",
            )
        elif not self._snapshot.configs:
            text = Text("this study has no configurations", style="dim")
        else:
            row = self.selected_row()
            jobs = self._snapshot.jobs_of(row.config_id) if row else []
            text = model.status_line(row, self.live, jobs[-1] if jobs else None)
        if text != self._status_text:
            self._status_text = text
            self.query_one("#scaling-status", Static).update(text)

    def _caption(self) -> None:
        parts: list[Text | str] = []
        if self.filter_spec.errors:
            parts.append(Text(" · ".join(self.filter_spec.errors), style="bold red"))
        if self._snapshot is not None:
            shown = sum(1 for r in self.table.shown if not r.header)
            parts.append(f"{shown}/{len(self._snapshot.configs)} configurations")
        if self.sort_key:
            label = SCALING_COLUMN[self.sort_key].label
            parts.append(f"sorted by {label} {'↓' if self.reverse else '↑'}")
        if self.group_by:
            parts.append(f"grouped by {self.group_by}")
        if self.query_text:
            parts.append(f"filter: {self.query_text}")
        if self.marked and self._snapshot is not None and (row := self._snapshot.config(self.marked)):
            parts.append(Text(f"◆ {model.config_label(row.values)} marked: c compares", style="magenta"))
        parts.append(f"★ baseline (1 node × 1 {self.table_layout.worker_word.rstrip('s')})")
        text = Text("  ·  ").join(Text(p) if isinstance(p, str) else p for p in parts)
        if text != self._caption_text:  # an update lays the screen out again, so only when it changed
            self._caption_text = text
            self.query_one("#scaling-caption", Static).update(text)

    # -- actions ---------------------------------------------------------------------------------

    def sort_by(self, key: str, reverse: bool | None = None) -> None:
        if key not in SORTABLE:
            raise ValueError(f"cannot sort by {key!r}; expected one of {', '.join(SORTABLE)}")
        if reverse is None:
            reverse = not self.reverse if key == self.sort_key else False
        self.sort_key, self.reverse = key, reverse
        self._redraw()

    def _sortable(self) -> tuple[str, ...]:
        """The columns on screen, in screen order (s cycles through what the user sees)."""
        return tuple(k for k in self.table_layout.keys if k in SORTABLE)

    def action_sort(self) -> None:
        keys = self._sortable()
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

    def group_cycle(self) -> tuple[str | None, ...]:
        """Ungrouped, then every axis with more than one value (grouping by a folded axis shows nothing)."""
        folded = {a for a, _ in self.table_layout.constant}
        return (None, *(a for a in model.GROUP_AXES if a not in folded))

    def action_group(self) -> None:
        cycle = self.group_cycle()
        index = cycle.index(self.group_by) if self.group_by in cycle else 0
        self.group(cycle[(index + 1) % len(cycle)])

    def set_filter(self, text: str) -> None:
        self.query_text = text.strip()
        self.filter_spec = parse_filter(self.query_text)
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
        row = self.selected_row()
        if row is not None:
            self.post_message(self.OpenDetail(row.config_id))

    def action_mark(self) -> None:
        row = self.selected_row()
        if row is None:
            return
        self.marked = None if self.marked == row.config_id else row.config_id
        self._caption()

    def action_compare(self) -> None:
        """The marked run (m) against the selected one; without a mark, the group's baseline against it."""
        row = self.selected_row()
        if row is None or self._snapshot is None:
            self.notify("select a configuration to compare", severity="warning")
            return
        left = self.marked
        if left is None or left == row.config_id:
            base = next((c for c in self._snapshot.configs if c.group_id == row.group_id and c.is_baseline), None)
            if base is None or base.config_id == row.config_id:
                self.notify("this is its group's baseline: mark another run with m, then press c on this one",
                            severity="warning")
                return
            left = base.config_id
        self.post_message(self.Compare(left, row.config_id))

    def action_row(self, action: str) -> None:
        """A key that acts on the selected run (pager, copy path) or on the rows shown (export): a message
        the app hands to cockpit.tui.files."""
        if action == "export":
            self.post_message(ExportCsv(self.shown_rows()))
            return
        row = self.selected_row()
        if row is None:
            self.notify("select a configuration first", severity="warning")
        elif action == "pager":
            self.post_message(OpenPager(row.config_id))
        elif action == "copy":
            self.post_message(CopyRunDir(row.config_id))

    # -- events ----------------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value.strip():
                event.input.remove_class("shown")
            self.table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._status()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key and not key.startswith("group:"):
            self.post_message(self.OpenDetail(key))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = event.column_key.value
        if key in SORTABLE:
            self.sort_by(key)
