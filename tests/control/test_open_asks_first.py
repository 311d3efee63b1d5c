"""`cockpit open STUDY.toml` never submits before its user says so: on the study `cockpit demo` finished
(tests/fixtures/demo-store) it starts nothing, no preflight and no job; on the same study with a new window
to run it shows the plan dialog, which names the preflight a submit runs first and what it may cost, and
nothing is submitted while it is up or after "not now". The app is the one `cockpit open` runs
(cockpit.commands.open.study_app) over the real store and the local backend."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from cockpit.cli import build_parser
from cockpit.commands._study import open_study
from cockpit.commands.open import study_app
from cockpit.tui.plan import PlanScreen
from cockpit.tui.preflight import PreflightScreen
from tests.control.test_browse_demo_store import wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "demo-store"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "tui.md"
PREFLIGHT_WORDS = "first a preflight: 1 job (1 node x 2), each at most 5 min, at most 0.08 node-hours"  # docs/tui.md


def demo_copy(folder: Path, study_text: str | None = None) -> Path:
    """The demo's study file (or `study_text`) and its store, copied to `folder`; returns the study file."""
    (folder / "local-demo").mkdir(parents=True)
    shutil.copyfile(FIXTURE / "local-demo" / "cockpit.sqlite", folder / "local-demo" / "cockpit.sqlite")
    study = folder / "study.toml"
    study.write_text(study_text or (FIXTURE / "study.toml").read_text(encoding="utf-8"), encoding="utf-8")
    return study


def recorded(folder: Path) -> tuple[list[tuple], int]:
    """The store's jobs (id, configuration, state) and how many preflights it keeps."""
    con = sqlite3.connect(folder / "local-demo" / "cockpit.sqlite")
    try:
        jobs = con.execute("SELECT job_id, config_id, state FROM jobs ORDER BY rowid").fetchall()
        return jobs, con.execute("SELECT count(*) FROM preflights").fetchone()[0]
    finally:
        con.close()


def opened(study: Path):  # noqa: ANN201 - (CockpitApp, StudySession)
    """What `cockpit open STUDY` opens: its arguments parsed as the command line gives them."""
    args = build_parser().parse_args(["open", str(study), "--poll", "0.2"])
    session = open_study(str(study), args)
    assert session is not None
    return study_app(session, poll=args.poll, compare_with=args.compare), session


async def test_a_finished_study_opens_without_a_preflight_or_a_submit(tmp_path: Path) -> None:
    study = demo_copy(tmp_path)
    before = recorded(tmp_path)
    assert len(before[0]) == 4 and all(state == "completed" for _, _, state in before[0])
    app, session = opened(study)
    try:
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_for(pilot, lambda: app.polls >= 5)
            assert len(app.screen_stack) == 1, app.screen_stack  # no plan dialog, no preflight screen
            assert [c.state for c in app.snapshot.configs] == ["completed"] * 4
            await app.workers.wait_for_complete()
    finally:
        session.store.close()
    assert recorded(tmp_path) == before  # no job, no preflight
    assert sorted(p.name for p in (tmp_path / "local-demo").iterdir() if p.is_dir()) == []  # no preflight/, no runs/


async def test_a_study_with_runs_left_asks_first_and_names_the_preflight(tmp_path: Path) -> None:
    text = (FIXTURE / "study.toml").read_text(encoding="utf-8").replace("window = [128, 256]", "window = [128, 256, 512]")
    study = demo_copy(tmp_path, text)
    before = recorded(tmp_path)
    app, session = opened(study)
    try:
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
            dialog = app.screen
            await wait_for(pilot, lambda: bool(dialog.query("#plan-table")))  # composed and mounted
            assert len(dialog.plan.to_submit) == 2  # the two runs of window 512
            summary = str(dialog.query_one("#plan-summary").render())
            assert PREFLIGHT_WORDS in summary and f"`{PREFLIGHT_WORDS}`" in DOCS.read_text(encoding="utf-8")
            await wait_for(pilot, lambda: app.polls >= 5)
            assert recorded(tmp_path) == before  # nothing while it asks
            await pilot.press("n")
            await wait_for(pilot, lambda: len(app.screen_stack) == 1)
            polls = app.polls
            await wait_for(pilot, lambda: app.polls >= polls + 5)
            assert not any(isinstance(s, PreflightScreen) for s in app.screen_stack)
            await app.workers.wait_for_complete()
    finally:
        session.store.close()
    assert recorded(tmp_path) == before
    assert not (tmp_path / "local-demo" / "preflight").exists()
