"""What a daily user of the cockpit relies on: the filter's grammar with the screen's names, log search
highlighting, comparing two runs, GPU history of ended jobs, pager/copy/export keys, recordings shown as
recordings, a status bar that fits 80 columns, the plan on this machine, and `cockpit open` after a crash."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from cockpit.store.snapshot import GpuSample, GpuSeries
from cockpit.tui import model
from cockpit.tui.app import CockpitApp
from cockpit.tui.compare import CompareScreen, figure_rows
from cockpit.tui.detail import RunDetailScreen
from cockpit.tui.filter import parse_filter
from cockpit.tui.gpus import GpuView
from cockpit.tui.header import status_text
from cockpit.tui.queue import QueueView
from cockpit.tui.scaling import ScalingView
from tests.tui.conftest import FIXTURE, SMALL

ROOT = Path(__file__).resolve().parents[2]


def shown(app) -> list:
    return [app.snapshot.config(r.key) for r in app.query_one(ScalingView).table.shown if not r.header]


def plain(widget) -> str:
    """The text a Static shows (as a user would read it)."""
    return " ".join(" ".join(strip.text for strip in widget.render_lines(widget.region.reset_offset)).split())


# --- the filter ---------------------------------------------------------------------------------------------

def test_filter_grammar_uses_the_screens_names():
    f = parse_filter('eff<0.6 verdict~comm state=done cpus=2 prec=fp32 T/work>=2 verdict~"all-reduce" fast')
    assert not f.errors
    assert [(t.field, t.op, t.value) for t in f.terms] == [
        ("efficiency", "<", 0.6), ("verdict", "~", "comm"), ("state", "=", "done"), ("cpus_per_task", "=", 2.0),
        ("precision", "=", "fp32"), ("t_same_work", ">=", 2.0), ("verdict", "~", "all-reduce"), (None, "~", ""),
    ]
    assert parse_filter("eff<60%").terms[0].value == pytest.approx(0.6)
    assert parse_filter("tokens>50k").terms[0].value == 50_000 and parse_filter("T<10s").terms[0].value == 10
    bad = parse_filter("foo=bar eff<abc window=256")
    assert [t.text for t in bad.terms] == ["window=256"]
    assert bad.errors[0].startswith("unknown field 'foo'") and "cpus" in bad.errors[0] and "? lists" in bad.errors[0]
    assert "'abc' is not a number" in bad.errors[1]


async def test_filter_comparisons_text_match_and_states(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        view = app.query_one(ScalingView)
        for text, expected in [
            ("eff<0.6", lambda c: c.efficiency is not None and c.efficiency < 0.6),
            ("speedup>1.5 eff>=85%", lambda c: c.speedup is not None and c.speedup > 1.5 and c.efficiency >= 0.85),
            ("verdict~all-reduce", lambda c: "all-reduce" in c.verdict),
            ("state=done", lambda c: c.state == "completed"),
            ("state=running", lambda c: c.state == "running"),
            ("cpus=2 window=256", lambda c: c.values["cpus_per_task"] == 2 and c.values["window"] == 256),
            ("state!=done verdict!~lost", lambda c: c.state != "completed" and "lost" not in c.verdict),
        ]:
            view.set_filter(text)
            await pilot.pause()
            want = [c.config_id for c in app.snapshot.configs if expected(c)]
            assert [c.config_id for c in shown(app)] == want and want, text
        assert len([c for c in app.snapshot.configs if c.state == "completed"]) == 6


async def test_unknown_field_is_reported_and_an_empty_result_explained(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("slash", *"foo=bar", "enter")
        await pilot.pause()
        view = app.query_one(ScalingView)
        assert len(shown(app)) == 8  # the unknown term is left out, not turned into "nothing matches"
        assert "unknown field 'foo'" in plain(view.query_one("#scaling-caption"))
        view.set_filter("eff<0.1")
        await pilot.pause()
        assert shown(app) == []
        status = plain(view.query_one("#scaling-status"))
        assert "no configuration matches 'eff<0.1'" in status and "escape clears" in status


# --- layout -------------------------------------------------------------------------------------------------

async def test_constant_axes_fold_into_the_subtitle_and_identity_columns_are_frozen(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        view = app.query_one(ScalingView)
        assert view.table_layout.keys[:4] == ("mark", "window", "scale", "cpus_per_task")
        assert view.table.fixed_columns == 4
        assert "synthetic · foundation · fp32 · batch 8" in plain(view.query_one("#scaling-subtitle"))
        labels = [c.label for c in view.table_layout.columns]
        assert "nodes×workers" in labels  # a CPU study
        first = app.snapshot.configs[1]
        await pilot.press("down")
        assert first.explanation and first.explanation in plain(view.query_one("#scaling-status"))  # all of it


def test_status_bar_fits_80_columns_and_says_how_old_a_recording_is(recorded):
    snap = recorded.snapshot()
    later = snap.last_poll_at + 14 * 3600 + 60
    text = status_text(replace(snap, connection_detail="browsing store.sqlite, nothing is sent"), later,
                       live=False, width=80)
    assert len(text.plain) <= 80
    assert "recorded 14h01m ago" in text.plain and "recorded" in text.plain and "6 done" in text.plain
    live = status_text(snap, snap.last_poll_at + 3, live=True, width=80).plain
    assert "poll 3s ago" in live and "disconnected" in live


async def test_a_recording_shows_no_progress_and_offers_no_job_actions(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        running = next(c for c in app.snapshot.configs if c.state == "running")
        cells = model.scaling_cells(running, app.query_one(ScalingView).table_layout, live=False)
        assert "eta" not in str(cells) and "running" in [str(c) for c in cells]
        await pilot.press("p", "p", "p")  # nothing to plan in a recording: the key is not offered
        await pilot.pause()
        assert not app._notifications and type(app.screen).__name__ != "PlanScreen"
        await pilot.press("2")
        await pilot.pause()
        footer_keys = {b.binding.key for b in app.screen.active_bindings.values()}
        assert "c" not in footer_keys and "r" not in footer_keys
        app.query_one(QueueView).action_job("cancel")
        await pilot.pause()
        assert app.controller.actions == []
        assert any("a recording" in n.message for n in app._notifications)


async def test_the_same_notice_is_not_stacked(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        for _ in range(3):
            app.notify("nothing to plan")
        await pilot.pause()
        assert len(app._notifications) == 1


# --- run detail ---------------------------------------------------------------------------------------------

async def test_log_search_highlights_every_match(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunDetailScreen)
        await pilot.press("slash", *"tokenizer", "enter")
        await pilot.pause()
        assert screen._matches
        log = screen.query_one("#log")
        line = screen._matches[0]
        strip = log.render_line(line - log.scroll_offset.y)
        marked = [seg.text for seg in strip if seg.style and seg.style.bgcolor and seg.style.bgcolor.name == "yellow"]
        assert [m.lower() for m in marked] == ["tokenizer"]
        assert "match 1/" in plain(screen.query_one("#log-caption"))


async def test_pending_run_says_no_metrics_yet(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        pending = next(c for c in app.snapshot.configs if c.state == "pending")
        app.open_detail(pending.config_id)
        await pilot.pause()
        notice = app.screen.query_one("#no-metrics")
        assert notice.display and "no metrics yet" in plain(notice)
        assert not app.screen.query_one("#detail-plots").display


# --- compare ------------------------------------------------------------------------------------------------

async def test_compare_the_baseline_and_a_two_worker_run(recorded):
    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("down", "c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        two = app.snapshot.config(screen.right)
        base = app.snapshot.config(screen.left)
        assert base.is_baseline and base.group_id == two.group_id and two.workers == 2
        text = plain(screen.query_one("#compare-figures"))
        assert f"{two.speedup:.2f}" in text and f"{two.analysis['t_same_work_s']:.2f}" in text
        rows = dict(figure_rows(two.analysis))
        assert rows["speedup ×"] == f"{two.speedup:.2f}" and rows["Δ exposed all-reduce s"].startswith("+")
        assert "straggler" in rows or two.analysis.get("straggler_rank") is None
        await pilot.press("x")
        assert screen.left == two.config_id
        await pilot.press("escape")
        # m marks a run; c on another compares the two
        await pilot.press("down", "down", "m", "down", "c")
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
        keys = [r.key for r in app.query_one(ScalingView).table.shown]
        assert (app.screen.left, app.screen.right) == (keys[3], keys[4])


# --- GPUs ---------------------------------------------------------------------------------------------------

def _gpu(config_id: str, gpu: int, utils: list[float]) -> GpuSeries:
    return GpuSeries(config_id, "n1", gpu, tuple(
        GpuSample(t=float(i), host="n1", gpu=gpu, util_pct=u, mem_used_bytes=(1 + i) * 2**30,
                  mem_total_bytes=40 * 2**30, power_w=200.0, temp_c=60.0) for i, u in enumerate(utils)))


async def test_gpu_history_of_an_ended_job_is_loaded_and_flagged(recorded):
    controller = recorded.controller()
    asked = []

    def history(config_id):
        asked.append(config_id)
        return [_gpu(config_id, 0, [90] * 10), _gpu(config_id, 1, [90, 1, 1, 1, 1, 1, 90, 90])]

    controller.history = history
    app = CockpitApp(controller, clock=lambda: recorded.now, poll_interval=None, offer_plan=False, initial_tab="gpus")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.query_one(GpuView)
        first = app.snapshot.configs[0].config_id
        assert asked == [first]
        flags = [str(r.cells[-1]) for r in view.query_one("#gpu-table").shown]
        assert flags == ["never idle", "idle ×1"]
        assert "over its whole run" in plain(view.query_one("#gpu-title"))
        assert "node-hours spent 0.03 of a 1.00 budget" in plain(view.query_one("#gpu-budget"))
        job_row = view.jobs.shown[0].cells
        assert job_row[3].startswith("20s /") and job_row[5] == "4.5"  # allocated beside T


# --- keys that leave the cockpit ----------------------------------------------------------------------------

async def test_export_copy_and_pager_fallback(recorded, tmp_path):
    app = recorded.app(export_dir=tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("slash", *"state=done", "enter", "e")
        await app.workers.wait_for_complete()
        await pilot.pause()
        with app.exports[0].open() as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 6
        done = {c.config_id: c for c in app.snapshot.configs if c.state == "completed"}
        assert {r["config_id"]: float(r["speedup"]) for r in rows} == {k: c.speedup for k, c in done.items()}
        await pilot.press("y")
        selected = app.query_one(ScalingView).selected_row()
        stored = recorded.store.configs(recorded.store.study_key("recorded"))[0]["run_dir"]  # "runs/<id>"
        assert app.clipboard == str(recorded.store.path.resolve().parent / stored)  # absolute: usable anywhere
        assert os.path.isabs(app.clipboard)
        path = app.log_path(selected.config_id)  # the recording's run dir is not here: its followed log
        assert path.read_text().splitlines() == app.snapshot.log_tail(selected.config_id, 100_000)
        os.unlink(path)


# --- the plan on this machine -------------------------------------------------------------------------------

def test_plan_dialog_marks_configurations_this_machine_cannot_run_too_big():
    from cockpit.launch.local import LocalExecutor
    from cockpit.study.spec import load_study
    from cockpit.tui.live import LiveController

    study = load_study(FIXTURE / "study.toml")  # cores_per_node = 4
    backend = LocalExecutor(study, max_cores=2)
    session = SimpleNamespace(study=study, backend=backend, store=None,
                              runner=SimpleNamespace(resubmit_failed=False, rerun_changed=False))
    plan = LiveController(session).plan()
    cores = {cfg.config_id: cfg.gpus_per_node * cfg.cpus_per_task for cfg in study.matrix()}
    for line in plan.lines:
        assert (line.status == "too big") == (cores[line.config_id] > 2), line.label
    assert any(line.status == "too big" for line in plan.lines)


# --- cockpit open after a crash -----------------------------------------------------------------------------

def test_cockpit_open_exits_non_zero_after_a_crash_without_local_variables(tmp_path):
    code = (
        "import sys\n"
        "from cockpit.tui import app\n"
        "run = app.CockpitApp.run\n"
        "app.CockpitApp.run = lambda self, **kw: run(self, headless=True, **kw)\n"
        "def boom(self, snap):\n"
        "    secret_local = 'do-not-print-me'\n"
        "    raise RuntimeError('boom in the app')\n"
        "app.CockpitApp._apply = boom\n"
        "from cockpit.cli import main\n"
        f"sys.exit(main(['open', {str(FIXTURE / 'store.sqlite')!r}, '--poll', '0.05']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COLUMNS": "120"})
    assert out.returncode != 0, out.stderr
    assert "RuntimeError" in out.stderr and "boom in the app" in out.stderr
    assert "do-not-print-me" not in out.stderr and "locals" not in out.stderr
    assert "cockpit: the cockpit stopped on an error" in out.stderr


# --- keys and words a daily user relies on ------------------------------------------------------------------

async def test_four_shows_the_plots_from_every_view(recorded):
    """`4` from the GPUs view used to show the GPUs again: focus left in the hidden tab pulled it back."""
    from textual.widgets import TabbedContent

    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        for start in ("1", "2", "3", "4"):
            await pilot.press(start)
            await pilot.pause()
            await pilot.press("4")
            await pilot.pause()
            await pilot.pause()
            assert app.query_one(TabbedContent).active == "plots", f"{start} then 4"
        for key, tab in (("3", "gpus"), ("1", "scaling"), ("2", "queue")):  # and back out of the plots
            await pilot.press(key)
            await pilot.pause()
            assert app.query_one(TabbedContent).active == tab


def _help_keys(app) -> set[str]:
    from cockpit.tui.help import HelpScreen

    assert isinstance(app.screen, HelpScreen)
    return {b.description for _, keys in app.screen.sections for b in keys}


async def test_help_lists_only_the_keys_that_work_here(recorded):
    app = recorded.app()  # a recording without a plan: `p` has nothing behind it
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        keys = _help_keys(app)
        assert {"Filter", "Sort", "Export table to CSV", "Help", "Quit"} <= keys
        assert "Plan/submit" not in keys and "Cancel job" not in keys and "Auto-scroll" not in keys
        await pilot.press("escape", "2", "question_mark")
        await pilot.pause()
        keys = _help_keys(app)
        assert "Cancel job" not in keys and "Requeue" not in keys and "Filter" not in keys  # a recording's queue
        await pilot.press("escape", "1", "enter")
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        keys = _help_keys(app)  # the run detail: its own keys, not the tabs' (they act under it)
        assert {"Auto-scroll", "Search log", "Back", "Help"} <= keys and "Sort" not in keys and "Plots" not in keys
    live = recorded.controller(with_plan=True)
    live.live = True
    app = CockpitApp(live, clock=lambda: recorded.now, poll_interval=None, offer_plan=False)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("2", "question_mark")
        await pilot.pause()
        assert {"Cancel job", "Requeue", "Hold", "Release", "Plan/submit"} <= _help_keys(app)


def test_a_finished_study_says_finished_not_stale(recorded):
    snap = recorded.snapshot()
    counts = snap.counts
    later = snap.last_poll_at + 69
    running = status_text(snap, later, live=True, width=120).plain
    assert "poll 1m09s ago (stale)" in running  # jobs still running and no poll for a minute: stale
    ended = replace(snap, counts=replace(counts, running=0, pending=0, done=counts.done + 2))
    text = status_text(ended, later, live=True, width=80).plain
    assert "finished" in text and "stale" not in text and "poll" not in text
    waiting = replace(ended, counts=replace(ended.counts, not_submitted=2))  # nothing running, some not sent
    assert "stale" not in status_text(waiting, later, live=True, width=120).plain


async def test_export_is_the_reports_scaling_csv(recorded, tmp_path):
    from cockpit.report.source import load_input
    from cockpit.report.write import write_report

    app = recorded.app(export_dir=tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("e")
        await app.workers.wait_for_complete()
        await pilot.pause()
    exported = app.exports[0].read_text().splitlines()
    report = write_report(load_input(recorded.store.path), tmp_path / "report").csv.read_text().splitlines()
    assert exported[0] == report[0]  # the same columns, Karp-Flatt and every overhead term among them
    assert {"karp_flatt", "loss_comm_s", "loss_compute_s", "loss_unaccounted_s"} <= set(exported[0].split(","))
    assert sorted(exported[1:]) == sorted(report[1:]) and len(exported) == 7  # the 6 results, cell for cell


def test_one_word_for_workers_in_the_tui_and_the_report(recorded):
    from cockpit.figures import labels
    from cockpit.report import tables

    snap = recorded.snapshot()
    rows, _ = model.analysis_rows(snap)
    layout = model.scaling_layout(snap)
    scale = next(c.label for c in layout.columns if c.key == "scale")
    assert scale == tables.scaling_body(rows)[0][3] == labels.scale_label("cpu") == "nodes×workers"
    assert layout.worker_word == "workers" and tables.headline_body(rows)[0][0] == "N (workers)"
    gpu = [dict(r, device="cuda") for r in rows]
    assert tables.scaling_body(gpu)[0][3] == "nodes×GPUs" == labels.scale_label(labels.device_of_rows(gpu))


def _plot_rows(widget) -> list[str]:
    """The data rows of a plotext figure as rendered: the text between `┤` and the right frame."""
    lines = [strip.text for strip in widget.render_lines(widget.region.reset_offset)]
    return [line.split("┤", 1)[1].rstrip().rstrip("│") for line in lines if "┤" in line]


async def test_plots_at_80x24_keep_measured_and_ideal_apart_and_give_the_numbers(recorded):
    from textual_plotext import PlotextPlot

    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await pilot.pause()
        for fig, values in (("fig-efficiency", "measured 100%, 86%"), ("fig-overhead", "overhead 0.00, 0.38 s")):
            rows = _plot_rows(app.query_one(f"#{fig}", PlotextPlot))
            assert 2 <= len(rows) <= 6  # a quarter of 80x24
            # at 2 workers (the right edge) the measured line and the ideal are on two different rows
            drawn = [i for i, row in enumerate(rows) if row and "\u2800" < row[-1] <= "\u28ff"]
            assert len(drawn) == 2, (fig, rows)
            assert values in plain(app.query_one(f"#{fig}-legend"))
