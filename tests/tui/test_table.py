"""RowTable's render caches: whatever happened to the table, what it paints from cache is exactly what it paints
from scratch (no stale cell, style, zebra stripe, cursor or hover after updates, reorders and focus changes)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static

from cockpit.tui.columns import Column
from cockpit.tui.model import Row
from cockpit.tui.table import RowTable, content_key

COLUMNS = (Column("mark", " ", 1), Column("name", "name"), Column("progress", "progress", 10), Column("eff", "eff", 4))


def rows(progress: dict[str, int] | None = None, order: list[int] | None = None, eff_style: str = "green") -> list[Row]:
    progress = progress or {}
    out = []
    for i in order if order is not None else range(12):
        key = f"c{i}"
        out.append(Row(key, (
            Text("★", style="bold yellow") if i % 4 == 0 else "",
            f"config {i}",
            Text(f"▶ {progress.get(key, 10)}%", style="cyan"),
            Text("90%", style=eff_style),
        )))
    return out


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield RowTable(COLUMNS, id="t")
        yield Static("below", id="other")


def painted(table: RowTable) -> list[list]:
    return [list(table.render_line(y)) for y in range(table.size.height)]


def from_scratch(table: RowTable) -> list[list]:
    table._clear_caches()
    for cache in (table._content_cache, table._line_in_row_cache, table._strip_cache):
        cache.clear()
    return painted(table)


def text_of(lines: list[list]) -> list[str]:
    return ["".join(segment.text for segment in line) for line in lines]


def test_content_key_sees_text_and_style():
    assert content_key("a") == content_key("a") != content_key("b")
    assert content_key(Text("a", style="red")) == content_key(Text("a", style="red"))
    assert content_key(Text("a", style="red")) != content_key(Text("a", style="green"))
    assert content_key(Text("a")) != content_key("a")
    assert content_key(3) is None  # no key: rendered by DataTable itself, uncached


async def test_cached_paint_equals_paint_from_scratch():
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(RowTable)
        table.apply(rows())
        await pilot.pause()
        first = painted(table)
        assert first == from_scratch(table)

        steps = [
            lambda: table.apply(rows({"c1": 55, "c3": 70})),  # one cell of some rows
            lambda: table.apply(rows({"c1": 55, "c3": 70}, eff_style="red")),  # same text, other style
            lambda: table.move_cursor(row=3),
            lambda: table.apply(rows({"c1": 60, "c3": 70}, eff_style="red")),  # under the cursor
            lambda: table.apply(rows({"c1": 60}, order=list(reversed(range(12))))),  # reorder
            lambda: app.query_one("#other").focus(),  # table loses focus: cursor drawn unfocused
            lambda: table.apply(rows({"c2": 61}, order=list(range(0, 12, 2)))),  # rebuilt
            lambda: setattr(app, "theme", "textual-light"),  # every colour changes
            lambda: table.focus(),
        ]
        for step in steps:
            step()
            await pilot.pause()
            cached = painted(table)
            assert cached == from_scratch(table)
            assert painted(table) == cached

        # and the screen did change along the way
        assert text_of(first) != text_of(cached)
        assert "▶ 61%" in "".join(text_of(cached))


async def test_progress_update_shows_the_new_value():
    app = TableApp()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(RowTable)
        table.apply(rows())
        await pilot.pause()
        painted(table)
        table.apply(rows({"c2": 99}))
        await pilot.pause()
        lines = text_of(painted(table))
        assert any("config 2" in line and "▶ 99%" in line for line in lines)
        assert not any("config 2" in line and "▶ 10%" in line for line in lines)
        assert [r.key for r in table.shown] == [f"c{i}" for i in range(12)]


async def test_cached_paint_with_frozen_columns_equals_paint_from_scratch():
    """The scaling view freezes its identity columns: cells that change there are drawn in both the frozen
    and the scrollable part, scrolled right or not."""
    app = TableApp()
    async with app.run_test(size=(30, 10)) as pilot:
        table = app.query_one(RowTable)
        table.set_columns(COLUMNS, fixed=2)
        table.apply(rows())
        await pilot.pause()
        assert painted(table) == from_scratch(table)
        steps = [
            lambda: table.apply([Row(r.key, (r.cells[0], f"cfg {r.key}", *r.cells[2:])) for r in rows({"c1": 70})]),
            lambda: table.move_cursor(row=2),
            lambda: table.scroll_to(x=20, animate=False),
            lambda: table.apply(rows({"c1": 80, "c2": 90}, eff_style="red")),
        ]
        for step in steps:
            step()
            await pilot.pause()
            cached = painted(table)
            assert cached == from_scratch(table)
        assert any(line.startswith(" ★  config 0") for line in text_of(cached))  # still there, scrolled right
