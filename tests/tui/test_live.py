"""The TUI driving a real study: plan -> confirm -> the runner starts real trainer jobs with the local
executor; a pending job is cancelled from the queue view (with confirmation) and the scaling view shows the
finished run's numbers as they arrive."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from cockpit.launch.local import machine_cores
from cockpit.run.session import open_session
from cockpit.study.spec import load_study
from cockpit.tui.app import CockpitApp
from cockpit.tui.confirm import ConfirmScreen
from cockpit.tui.live import LiveController
from cockpit.tui.plan import PlanScreen
from cockpit.tui.queue import QueueView
from cockpit.tui.scaling import ScalingView
from tests.studies import write_study


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 120.0,
                   shown: Callable[[], str] | None = None) -> None:
    """Pause the app until `condition()`; on the timeout, the failure says what `shown()` (the screen's text) had."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "the live study did not get there in time" + (
            f"; the screen said: {shown()[-2000:]}" if shown is not None else "")
        await pilot.pause(0.2)


async def test_plan_submit_cancel_and_follow_a_real_local_study(tmp_path: Path):
    # two 1-worker configurations, each asking every core this process may use: both are submitted, and the
    # local executor starts one and keeps the other pending until cores free (whatever this machine's size)
    spec = write_study(tmp_path / "study.toml", "live-tui", tmp_path / "work",
                       cluster={"max_concurrent_jobs": 2},
                       data={"datasets": {"synthetic": {"synthetic": True, "records": 4, "seconds": 60}}},
                       train={"steps": 20, "cpus_per_task": machine_cores()}, sweep={"window": [32, 40]})
    study = load_study(spec)
    session = open_session(study)
    controller = LiveController(session)
    app = CockpitApp(controller, poll_interval=0.3, offer_plan=True)
    baseline, pair = (c.config_id for c in study.runnable())
    async with app.run_test(size=(150, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
        assert [line.status for line in app.screen.plan.lines] == ["submit", "submit"]
        await pilot.press("y")

        def states() -> dict[str, str]:
            snap = app.snapshot
            return {c.config_id: c.state for c in snap.configs} if snap else {}

        # one runs, the other waits for its cores; cancel the waiting one from the queue
        await wait_for(pilot, lambda: states().get(pair) == "pending" and len(app.snapshot.jobs) == 2)
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one(QueueView).table
        index = next(i for i, r in enumerate(table.shown) if app.snapshot.config(pair).job_id == r.key)
        table.move_cursor(row=index)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: states().get(pair) == "cancelled")

        await wait_for(pilot, lambda: states().get(baseline) == "completed", timeout=180)
        await pilot.press("1")
        await pilot.pause()
        row = app.snapshot.config(baseline)
        assert row.train_time_s and row.train_time_s > 0 and row.speedup == 1.0
        view = app.query_one(ScalingView)
        shown = {r.key: r.cells for r in view.table.shown}
        keys = view.table_layout.keys
        assert shown[baseline][keys.index("time")].plain == f"{row.train_time_s:.1f}"
        assert str(shown[pair][keys.index("state")]) == "cancelled"
        await app.workers.wait_for_complete()
    await controller.close()
    assert session.store.path.exists()
