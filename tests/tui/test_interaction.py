"""Pilot-driven interaction on the recorded store: sort, filter, group, detail, cancel, auto-scroll, palette."""

from __future__ import annotations

import threading

import pytest

from cockpit.tui.confirm import ConfirmScreen
from cockpit.tui.controller import RecordedController
from cockpit.tui.detail import RunDetailScreen
from cockpit.tui.queue import QueueView
from cockpit.tui.scaling import ScalingView
from tests.tui.conftest import SIZE


def efficiencies(app) -> list[float | None]:
    snap = app.snapshot
    return [snap.config(r.key).efficiency for r in app.query_one(ScalingView).table.shown]


async def test_sort_by_key_cycles_columns_and_reverses(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(ScalingView)
        await pilot.press(*["s"] * (view._sortable().index("efficiency") + 1))
        assert view.sort_key == "efficiency" and not view.reverse
        values = efficiencies(app)
        known = [v for v in values if v is not None]
        assert known == sorted(known) and len(known) == 6
        assert values[len(known):] == [None, None]  # missing numbers last
        await pilot.press("S")
        known = [v for v in efficiencies(app) if v is not None]
        assert known == sorted(known, reverse=True)


async def test_sort_from_command_palette(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"Sort by T s")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        view = app.query_one(ScalingView)
        assert view.sort_key == "time"
        times = [app.snapshot.config(r.key).train_time_s for r in view.table.shown]
        known = [t for t in times if t is not None]
        assert known == sorted(known)


async def test_filter_by_axis_value(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"window=256 cpus_per_task=2", "enter")
        view = app.query_one(ScalingView)
        shown = [app.snapshot.config(r.key) for r in view.table.shown]
        assert len(shown) == 2
        assert all(c.values["window"] == 256 and c.values["cpus_per_task"] == 2 for c in shown)
        await pilot.press("escape")
        assert len(view.table.shown) == len(app.snapshot.configs)


async def test_filter_by_word(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"running", "enter")
        keys = [r.key for r in app.query_one(ScalingView).table.shown]
        assert [app.snapshot.config(k).state for k in keys] == ["running"]


async def test_group_by_adds_one_header_per_value(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")  # None -> window (dataset, mode, precision, batch: one value each, folded)
        view = app.query_one(ScalingView)
        assert view.group_by == "window"
        headers = [r.key for r in view.table.shown if r.header]
        assert headers == ["group:window:128", "group:window:256"]
        assert sum(1 for r in view.table.shown if not r.header) == 8


async def test_enter_opens_detail_of_selected_row(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        expected = app.query_one(ScalingView).table.shown[2].key
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, RunDetailScreen)
        assert app.screen.config_id == expected
        log = app.screen.query_one("#log")
        assert log.line_count == len(app.snapshot.log_tail(expected, 500)) > 0
        await pilot.press("escape")
        assert not isinstance(app.screen, RunDetailScreen)


async def test_detail_auto_scroll_toggle_and_search(recorded):
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert screen.auto_scroll and screen.query_one("#log").auto_scroll
        await pilot.press("a")
        assert not screen.auto_scroll and not screen.query_one("#log").auto_scroll
        assert "auto-scroll off" in str(screen.query_one("#log-caption").render())
        await pilot.press("a")
        assert screen.auto_scroll
        tail = app.snapshot.log_tail(screen.config_id, 500)
        expected = sum("tokenizer" in line.lower() for line in tail)
        assert expected >= 1
        await pilot.press("slash", *"Tokenizer", "enter")
        await pilot.pause()
        assert len(screen._matches) == expected
        assert not screen.auto_scroll  # a search stops following so the match stays in view


async def test_cancel_asks_first_and_only_yes_acts(recorded):
    controller = recorded.controller()
    controller.live = True  # as a live study (a recording offers no job actions)
    from cockpit.tui.app import CockpitApp

    app = CockpitApp(controller, clock=lambda: recorded.now, poll_interval=None, offer_plan=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        table = app.query_one(QueueView).table
        job_id = next(j.job_id for j in app.snapshot.jobs if j.state == "running")
        running = next(i for i, r in enumerate(table.shown) if r.key == job_id)
        await pilot.press(*["down"] * running)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert controller.actions == []
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await app.workers.wait_for_complete()
        assert controller.actions == [("cancel", job_id)]


async def test_cancel_refused_for_finished_job(recorded):
    controller = recorded.controller()
    controller.live = True
    from cockpit.tui.app import CockpitApp

    app = CockpitApp(controller, clock=lambda: recorded.now, poll_interval=None, offer_plan=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "c")  # first row: a completed job
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert controller.actions == []


async def test_plan_confirm_submits_once(recorded):
    app = recorded.app(with_plan=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert type(app.screen).__name__ == "PlanScreen"
        await pilot.press("y")
        await app.workers.wait_for_complete()
        assert app.controller.submitted == 1


async def test_polls_never_overlap(recorded):
    """A slow snapshot provider: refreshes asked for while one poll runs are dropped, not stacked."""
    release = threading.Event()
    calls = []
    in_flight = []

    def slow_snapshot():
        in_flight.append(1)
        calls.append(len(in_flight))
        release.wait(5)
        in_flight.pop()
        return recorded.snapshot()

    from cockpit.tui.app import CockpitApp

    app = CockpitApp(RecordedController(slow_snapshot), clock=lambda: recorded.now, poll_interval=3600,
                     offer_plan=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        for _ in range(5):
            app.action_refresh()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert calls == [1]  # one poll ran, alone; the five extra requests came while it was busy
        assert app.polls == 1
        app.action_refresh()
        await app.workers.wait_for_complete()
        assert calls == [1, 1] and app.polls == 2


def test_tui_and_report_show_the_same_numbers_on_a_store_with_stale_analysis(recorded, tmp_path):
    """The recorded store was written by a version that kept its own analysis table (speedup 0.86x for
    the 1x2 w128 run); the table, the plots tab and the report all recompute from the result files."""
    from cockpit.figures import series
    from cockpit.forecast.analysis import analyse
    from cockpit.report.source import load_input
    from cockpit.report.write import write_report
    from cockpit.tui import model

    stale = dict(recorded.store.db.execute("SELECT config_id, speedup FROM analysis").fetchall())
    snap = recorded.snapshot()
    truth = {r["config_id"]: r for r in analyse(recorded.store.results(recorded.store.study_key("recorded")).values())}
    assert any(abs(stale[c] - truth[c]["speedup"]) > 0.5 for c in stale)  # the stored numbers are really stale
    shown = 0
    for row in model.scaling_rows(snap):
        a = truth.get(row.key)
        if a is None:
            continue
        shown += 1
        assert row.cells[8].plain == f"{a['train_time_s']:.1f}"
        assert row.cells[9] == f"{a['work_ratio']:.2f}x" and row.cells[10] == f"{a['t_same_work_s']:.1f}"
        assert row.cells[11] == f"{a['speedup']:.2f}x" and row.cells[12].plain == f"{a['efficiency'] * 100:.0f}%"
        assert row.cells[13] == f"{a['overhead_s']:.1f}" and row.cells[15] == a["verdict"]
    assert shown == 6
    report = write_report(load_input(recorded.store.path), tmp_path / "report").markdown.read_text()
    for a in truth.values():
        assert f"| {a['speedup']:.3f} | {a['efficiency'] * 100:.0f}% | {a['overhead_s']:.2f} |" in report
    tui_bars = series.time_bars(*model.analysis_rows(snap))
    assert tui_bars.speedup[1] == pytest.approx(1.712, abs=1e-3)  # the report's PNG labels the same value
