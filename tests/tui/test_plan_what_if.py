"""The plan dialog's what-if (`w`, KEY=VALUE ...) on the store the real `cockpit demo` recorded
(tests/fixtures/demo-store): the same figures as `cockpit plan --what-if` prints for the same store, a
specific error for a bad argument, and one prediction at a time however fast lines are entered."""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.forecast.whatif import split_arguments
from cockpit.run.session import node_cores
from cockpit.store import StudyStore
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from cockpit.tui.app import CockpitApp
from cockpit.tui.controller import store_controller
from cockpit.tui.plan import WHAT_IF_EXAMPLE, WHAT_IF_PLACEHOLDER, PlanScreen

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "demo-store"
STORE = Path("local-demo") / "cockpit.sqlite"
SIZE = (200, 50)


@pytest.fixture
def demo(tmp_path: Path):
    """A copy of the demo's study file and store; yields (study file, store opened read-only)."""
    (tmp_path / "local-demo").mkdir()
    shutil.copyfile(FIXTURE / "study.toml", tmp_path / "study.toml")
    shutil.copyfile(FIXTURE / STORE, tmp_path / STORE)
    store = StudyStore(tmp_path / STORE, read_only=True)
    yield tmp_path / "study.toml", store
    store.close()


def app_on(demo, controller_hook=None) -> CockpitApp:
    path, store = demo
    study = load_study(path)
    controller = store_controller(store, study.name, plan=study_plan(study, store, cluster="local"), study=study)
    if controller_hook is not None:
        controller_hook(controller)
    return CockpitApp(controller, poll_interval=None, offer_plan=False)


async def ask(pilot, text: str, *, type_it: bool = True, key: str = "w") -> PlanScreen:
    """Open the plan dialog, press `key` (w: what-if; f: full run), enter `text` on its line and wait for the
    answer."""
    app = pilot.app
    if not isinstance(app.screen, PlanScreen):
        app.action_plan()
        await pilot.pause()
    screen = app.screen
    assert isinstance(screen, PlanScreen)
    await pilot.press(key)
    line = screen.query_one("#whatif-input")
    assert app.focused is line
    if type_it:
        line.value = ""
        await pilot.press(*text)  # every character typed, `n` and `y` among them, lands on the line
        assert line.value == text
    else:
        line.value = text
    screen.outcome, screen.error = None, ""
    await pilot.press("enter")
    for _ in range(300):
        if screen.outcome is not None or screen.error:
            break
        await pilot.pause(0.05)
    assert isinstance(app.screen, PlanScreen)
    return screen


def cells(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_dialogs_what_if_shows_what_cockpit_plan_what_if_prints(demo, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    path, _ = demo
    assert WHAT_IF_EXAMPLE in WHAT_IF_PLACEHOLDER  # the example the dialog and docs/tui.md give is run here
    assert f"`{WHAT_IF_EXAMPLE}`" in " ".join((ROOT / "docs" / "tui.md").read_text(encoding="utf-8").split())
    assert cli(["plan", str(path), "--what-if", *split_arguments(WHAT_IF_EXAMPLE)]) == 0
    printed = capsys.readouterr().out
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, WHAT_IF_EXAMPLE)
        assert not screen.error and screen.outcome is not None
        rows = cells(screen.query_one("#whatif-table"))
        assert len(rows) == 4 and all(row[1] != "-" for row in rows)  # all four predicted, with their work
        for row in rows:  # the CLI's row for the configuration, cell for cell
            assert re.search(r"\s+".join(re.escape(c) for c in row), printed), row
        summary = str(screen.query_one("#whatif-summary").render())
        lines = [line for line in summary.splitlines() if line]
        assert lines[0] == "what-if: [train] bucket_cap_mb unset -> 0.5"
        assert any(line.startswith("link figures: intra_node ") and "measured by 2 run(s) of this study" in line
                   for line in lines)
        for line in lines[:4]:  # changes, how many predicted, node-hours, the link figures used
            assert line in printed, line


async def test_an_axis_value_never_run_is_marked_extrapolated_in_the_dialog(demo, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    text = "sweep.gpus_per_node=[1, 2, 4] cluster.gpus_per_node=4"
    path, _ = demo
    assert cli(["plan", str(path), "--what-if", *split_arguments(text)]) == 0
    printed = capsys.readouterr().out
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, text, type_it=False)
        rows = cells(screen.query_one("#whatif-table"))
        four = [row for row in rows if "1x4" in row[0]]
        summary = str(screen.query_one("#whatif-summary").render())
        if node_cores(load_study(path)) >= 4:  # 4 workers of 1 core fit this machine: predicted by the model alone
            assert len(four) == 2 and all(row[0].endswith(" x") and row[-3:] == ["-", "-", "-"] for row in four)
            assert "extrapolated (2): gpus_per_node = 4 never ran" in summary
        else:  # too big for this machine, as `cockpit plan` marks them: never predicted
            assert len(four) == 2 and all(row[0].endswith(" too big") and set(row[1:]) == {"-"} for row in four)
            assert "too big (2): more cores than a node's" in summary
        for row in rows:
            assert re.search(r"\s+".join(re.escape(c) for c in row), printed), row


@pytest.mark.parametrize(("text", "says"), [
    ("train.bucket_cap_mbb=1", "[train].bucket_cap_mbb is not a known key (did you mean 'bucket_cap_mb'?); expected one of"),
    ("gpus_per_node=8", "gpus_per_node is a [sweep] axis, a list: sweep.gpus_per_node=[8]"),
    ("train.lr=1e-", "'1e-' is not a TOML value (a list needs brackets"),
    ("sweep.gpus_per_node=[1, 4]", "[sweep].gpus_per_node contains 4 but [cluster].gpus_per_node is 2"),
    ("train.steps", "train.steps: expected KEY=VALUE"),
])
async def test_a_bad_argument_is_one_line_in_the_dialog_naming_it(demo, text, says):
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, text, type_it=False)
        assert screen.outcome is None and says in screen.error
        line = screen.query_one("#whatif-error")
        assert line.display and says in str(line.render())
        assert screen.query_one("#plan-views").current == "plan-view"  # the plan stays, nothing was predicted
        await pilot.press("escape")  # leaves the line, not the dialog
        assert isinstance(app.screen, PlanScreen) and app.focused is screen.query_one("#no")


async def test_what_ifs_never_overlap_and_the_latest_line_wins(demo):
    seen = {"now": 0, "most": 0, "asked": []}
    lock = threading.Lock()

    def hook(controller) -> None:
        real = controller.what_if

        def counted(text: str):
            with lock:
                seen["now"] += 1
                seen["most"] = max(seen["most"], seen["now"])
                seen["asked"].append(text)
            try:
                return real(text)
            finally:
                with lock:
                    seen["now"] -= 1

        controller.what_if = counted

    app = app_on(demo, hook)
    async with app.run_test(size=SIZE) as pilot:
        app.action_plan()
        await pilot.pause()
        screen = app.screen
        for text in ("train.bucket_cap_mb=1", "train.bucket_cap_mb=0.25", "train.bucket_cap_mb=0.1"):
            screen.ask(text)
        for _ in range(400):
            if screen.outcome is not None and not screen.requests.running:
                break
            await asyncio.sleep(0.05)
        assert seen["most"] == 1
        assert seen["asked"][0] == "train.bucket_cap_mb=1" and seen["asked"][-1] == "train.bucket_cap_mb=0.1"
        assert "train.bucket_cap_mb=0.25" not in seen["asked"]  # superseded before its turn came
        assert screen.outcome is not None and screen.outcome.what_if.assignments == [("train.bucket_cap_mb", 0.1)]
        screen.ask("")  # an empty line: the plan again
        await pilot.pause()
        assert screen.query_one("#plan-views").current == "plan-view"


async def test_the_plan_dialog_shows_what_done_runs_measured(demo):
    """A done configuration's row carries its run's T and S as the report gives them (cockpit.forecast.analysis),
    as `cockpit plan` prints them, never the model's prediction for it."""
    from cockpit.forecast.analysis import analyse
    from cockpit.report.source import from_store

    path, store = demo
    measured = {r["config_id"]: r for r in analyse(from_store(path.parent / STORE, "local-demo").results)}
    app = app_on(demo)
    async with app.run_test(size=SIZE) as pilot:
        app.action_plan()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PlanScreen)
        table = screen.query_one("#plan-table")
        ids = [line.config_id for line in screen.plan.lines]
        rows = dict(zip(ids, cells(table), strict=True))
        summary = str(screen.query_one("#plan-summary").render())
    assert set(rows) == set(measured) and len(rows) == 4
    for config_id, row in rows.items():
        assert row[1] == "done"
        assert row[3] == f"{measured[config_id]['train_time_s']:.1f}"
        assert row[4] == f"{measured[config_id]['speedup']:.2f}x"
    assert "T s, S, node-hours: measured where done (the report's figures)" in summary
