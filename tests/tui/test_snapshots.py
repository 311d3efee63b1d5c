"""SVG snapshots of every view at 80x24 (the smallest terminal it is laid out for) and 200x50, rendered from
the recorded store with a fixed clock.

Update after an intended change with `pytest tests/tui --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

import pytest

from cockpit.tui.app import CockpitApp
from tests.tui.conftest import LARGE, SMALL

SIZES = pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])


@SIZES
def test_scaling_view(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size)


@SIZES
def test_scaling_view_grouped_and_sorted(snap_compare, recorded, size):
    async def arrange(pilot):
        pilot.app.action_group_by("cpus_per_task")
        pilot.app.action_sort_by("time")
        await pilot.pause()

    assert snap_compare(recorded.app(), terminal_size=size, run_before=arrange)


@SIZES
def test_scaling_view_filtered(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["slash", *"eff<0.9 verdict~all-reduce"])


@SIZES
def test_scaling_view_unknown_filter_field_and_empty_state(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["slash", *"foo=bar eff<0.1", "enter"])


@SIZES
def test_queue_view(snap_compare, recorded, size):
    assert snap_compare(recorded.app(initial_tab="queue"), terminal_size=size)


@SIZES
def test_gpu_view(snap_compare, recorded, size):
    assert snap_compare(recorded.app(initial_tab="gpus"), terminal_size=size)


@SIZES
def test_plots_view(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["4"])


@SIZES
def test_run_detail(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["down", "down", "enter"])


@SIZES
def test_run_detail_explains_a_two_worker_run(snap_compare, recorded, size):
    """The explain panel: T1/N, each term in seconds, T/work, the advice, and each rank's breakdown."""
    assert snap_compare(recorded.app(), terminal_size=size, press=["down", "enter"])


@SIZES
def test_run_detail_of_running_job(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["down"] * 6 + ["enter"])


@SIZES
def test_run_detail_of_pending_job_says_no_metrics_yet(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["down"] * 7 + ["enter"])


@SIZES
def test_run_detail_log_search(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["enter", "slash", *"tokenizer", "enter"])


@SIZES
def test_compare_baseline_and_two_workers(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["down", "c"])


@SIZES
def test_plan_dialog(snap_compare, recorded, size):
    assert snap_compare(recorded.app(with_plan=True), terminal_size=size)


@SIZES
def test_cancel_confirmation_on_a_live_study(snap_compare, recorded, size):
    controller = recorded.controller()
    controller.live = True  # as a live study: a recording offers no job actions
    app = CockpitApp(controller, clock=lambda: recorded.now, poll_interval=None, offer_plan=False)
    assert snap_compare(app, terminal_size=size, press=["2"] + ["down"] * 6 + ["c"])


@SIZES
def test_help_screen(snap_compare, recorded, size):
    assert snap_compare(recorded.app(), terminal_size=size, press=["question_mark"])
