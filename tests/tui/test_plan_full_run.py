"""The plan dialog's full run (`f`, `full-run UNIT=AMOUNT ...`) on the store the real `cockpit demo` recorded: the
same rows and lines as `cockpit plan --full-run` prints for the same study (one computation, one set of words),
and a wrong word refused in the dialog in one line, the dialog left up."""

from __future__ import annotations

from pathlib import Path

from cockpit.forecast import full_run_words
from cockpit.run.full_run import WORDS_EXAMPLE, full_run_of, parse_words
from cockpit.study.spec import load_study
from cockpit.tui.plan import PlanScreen
from tests.tui.test_plan_what_if import SIZE, app_on, ask, cells, demo  # noqa: F401 - demo is a fixture


async def test_f_starts_the_line_with_full_run(demo) -> None:  # noqa: F811
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        app.action_plan()
        await pilot.pause()
        await pilot.press("f")
        line = app.screen.query_one("#whatif-input")
        assert app.focused is line and line.value == "full-run "


async def test_the_dialog_times_the_full_run_as_the_plan_command_does(demo) -> None:  # noqa: F811
    path, _ = demo
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, WORDS_EXAMPLE, key="f")
        assert screen.error == "", screen.error
        shown = cells(screen.query_one("#whatif-table"))
        summary = str(screen.query_one("#whatif-summary").render())
    expected = full_run_of(load_study(path), WORDS_EXAMPLE)
    assert [row[0] for row in shown] == [row[0] for row in full_run_words.table_rows(expected)]
    assert [row[2:5] for row in shown] == [list(row[2:5]) for row in full_run_words.table_rows(expected)]
    assert "cost = 1.2 per node-hour" in summary and "first to finish: " in summary


async def test_a_wrong_word_is_one_line_in_the_dialog(demo) -> None:  # noqa: F811
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, "full-run epochs=3 price=2", key="f")
        assert isinstance(app.screen, PlanScreen)
        assert screen.error.startswith("full-run: 'price=2' is not one of deadline=WHEN")


def test_the_words_are_the_flags() -> None:
    run, deadline, prices, queue = parse_words("full-run steps=200 deadline=2026-12-24T18:00+01:00 price-kwh=0.25 "
                                               "no-queue")
    assert (run.unit, run.amount, deadline, prices.kwh, prices.node_hour, queue) == \
        ("steps", 200.0, 1798131600.0, 0.25, None, False)


def test_the_example_names_the_file_that_runs_it() -> None:
    assert Path(__file__).name in Path(full_run_of.__code__.co_filename).read_text()
