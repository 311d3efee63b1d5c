"""SVG snapshots of every view, rendered from the recorded store with a fixed clock and terminal size.

Update after an intended change with `pytest tests/tui --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

from tests.tui.conftest import SIZE


def test_scaling_view(snap_compare, recorded):
    assert snap_compare(recorded.app(), terminal_size=SIZE)


def test_scaling_view_grouped_and_sorted(snap_compare, recorded):
    async def arrange(pilot):
        pilot.app.action_group_by("cpus_per_task")
        pilot.app.action_sort_by("time")
        await pilot.pause()

    assert snap_compare(recorded.app(), terminal_size=SIZE, run_before=arrange)


def test_scaling_view_filtered(snap_compare, recorded):
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=["slash", *"window=256"])


def test_queue_view(snap_compare, recorded):
    assert snap_compare(recorded.app(initial_tab="queue"), terminal_size=SIZE)


def test_gpu_view(snap_compare, recorded):
    assert snap_compare(recorded.app(initial_tab="gpus"), terminal_size=SIZE)


def test_plots_view(snap_compare, recorded):
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=["4"])


def test_run_detail(snap_compare, recorded):
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=["down", "down", "enter"])


def test_run_detail_explains_a_two_worker_run(snap_compare, recorded):
    """The explain panel: T1/N, each term in seconds, T/work, the advice, and each rank's breakdown."""
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=["down", "enter"])


def test_run_detail_of_running_job(snap_compare, recorded):
    press = ["down"] * 6 + ["enter"]
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=press)


def test_plan_dialog(snap_compare, recorded):
    assert snap_compare(recorded.app(with_plan=True), terminal_size=SIZE)


def test_cancel_confirmation(snap_compare, recorded):
    press = ["2"] + ["down"] * 6 + ["c"]
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=press)


def test_help_screen(snap_compare, recorded):
    assert snap_compare(recorded.app(), terminal_size=SIZE, press=["question_mark"])
