"""The plan dialog on the recorded demo store after `[model] layers` changed: the configurations read "changed"
with their keys, nothing is offered as a plain submit, and `r` (the dialog's "Run 4 changed again") is the one way
to run them again: it tells the controller so before the submit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cockpit.store import StudyStore
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from cockpit.tui.app import CockpitApp
from cockpit.tui.controller import store_controller
from cockpit.tui.plan import PlanScreen

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "demo-store"
STORE = Path("local-demo") / "cockpit.sqlite"


@pytest.fixture
def changed(tmp_path: Path):
    (tmp_path / "local-demo").mkdir()
    text = (FIXTURE / "study.toml").read_text().replace("layers = 2", "layers = 3")
    (tmp_path / "study.toml").write_text(text)
    shutil.copyfile(FIXTURE / STORE, tmp_path / STORE)
    store = StudyStore(tmp_path / STORE, read_only=True)
    study = load_study(tmp_path / "study.toml")
    yield study, store
    store.close()


@pytest.mark.parametrize("how", ["key", "button"])
async def test_the_changed_runs_run_again_only_when_asked(changed, how: str):
    study, store = changed
    plan = study_plan(study, store, cluster="local")
    assert plan.count("changed") == 4 and not plan.to_submit
    controller = store_controller(store, study.name, plan=plan, study=study)
    asked: list[str] = []
    controller.rerun_changed = lambda: asked.append("rerun")  # type: ignore[method-assign]
    app = CockpitApp(controller, poll_interval=None, offer_plan=True)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlanScreen)  # offered: there is something to decide
        summary = str(screen.query_one("#plan-summary").render())
        assert "4 configurations (" in summary and "changed since they ran: model.layers 2 -> 3" in summary
        table = screen.query_one("#plan-table")
        assert {str(table.get_row_at(i)[1]) for i in range(table.row_count)} == {"changed"}
        assert screen.query_one("#yes").disabled
        await pilot.press("y")  # a plain submit submits nothing
        await pilot.pause()
        assert asked == [] and controller.submitted == 0
        if not isinstance(app.screen, PlanScreen):
            app.action_plan()
            await pilot.pause()
        if how == "key":
            await pilot.press("r")
        else:
            await pilot.click("#rerun")
        for _ in range(50):
            if controller.submitted:
                break
            await pilot.pause(0.05)
        assert asked == ["rerun"] and controller.submitted == 1
