"""The plan dialog of a large plan shows at once: its table adds the rows a page at a time as the cursor or
the view nears the last one added, its column widths every row's from the start."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from cockpit.tui.paged_table import PAGE, PagedTable
from cockpit.tui.plan import PlanScreen

MELUXINA = Path(__file__).resolve().parents[2] / "examples" / "meluxina.toml"


async def test_a_large_plans_rows_come_a_page_at_a_time():
    plan = study_plan(load_study(MELUXINA))
    assert len(plan.lines) > PAGE
    app: App = App()
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(PlanScreen(plan, None))
        await pilot.pause()
        table = app.screen.query_one("#plan-table", PagedTable)
        assert table.row_count == PAGE and table.pending == len(plan.lines) - PAGE
        widths = [column.get_render_width(table) for column in table.ordered_columns]
        table.focus()
        await pilot.press("pagedown", "pagedown", "pagedown", "pagedown", "pagedown")
        assert table.row_count == min(2 * PAGE, len(plan.lines))  # the cursor neared the end: one more page
        await pilot.press("ctrl+end")  # the last row: every row added
        await pilot.pause()
        assert table.pending == 0 and table.cursor_row == len(plan.lines) - 1
        assert [column.get_render_width(table) for column in table.ordered_columns] == widths
        last = table.get_row_at(table.cursor_row)
        assert str(last[1]) == plan.lines[-1].status


async def test_scrolling_to_the_end_of_the_rows_added_adds_the_next_page():
    plan = study_plan(load_study(MELUXINA))
    app: App = App()
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(PlanScreen(plan, None))
        await pilot.pause()
        table = app.screen.query_one("#plan-table", PagedTable)
        table.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert table.row_count > PAGE
