"""The TUI runs the preflight before a study's first submit and shows its progress and tables; after a
failure the screen stays on the FAILED line and nothing is submitted."""

from __future__ import annotations

from pathlib import Path

from cockpit.run.session import open_session
from cockpit.study.spec import load_study
from cockpit.tui.app import CockpitApp
from cockpit.tui.live import LiveController
from cockpit.tui.preflight import PreflightScreen
from tests.studies import mitdb_data, write_study
from tests.tui.test_live import wait_for


async def test_a_failed_preflight_stays_on_screen_and_submits_nothing(tmp_path: Path):
    data = mitdb_data(tmp_path / "tokens")
    data["datasets"]["mitdb"]["path"] = str(tmp_path / "no-such-database")
    spec = write_study(tmp_path / "study.toml", "pf-tui", tmp_path / "work", cluster={"gpus_per_node": 2},
                       data=data, train={"steps": 2, "window": 32})
    session = open_session(load_study(spec), preflight=True)
    app = CockpitApp(LiveController(session), poll_interval=0.3, auto_submit=True, offer_plan=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PreflightScreen))
        screen = app.screen
        await wait_for(pilot, lambda: bool(screen.query("#preflight-log")))  # composed (pushed first, under load)

        def text() -> str:
            return " ".join(" ".join(strip.text for strip in screen.query_one("#preflight-log").lines).split())

        # each line reaches the screen as its own message: wait for the report's last (its verdict), then read
        await wait_for(pilot, lambda: "nothing of the study is submitted until it passes" in text(), timeout=120,
                       shown=text)
        assert "submitted job local-" in text() and "FAILED preflight 1 node x 2 data mitdb" in text()
        await pilot.pause(0.5)
        assert app.screen is screen  # it stays open on a failure
        assert session.store.jobs(session.runner.key) == []


async def test_lines_that_come_before_the_screen_is_mounted_are_shown(tmp_path: Path):
    """The runner's first line can reach the screen before it has composed (seen under load)."""
    spec = write_study(tmp_path / "study.toml", "pf-early", tmp_path / "work", cluster={"gpus_per_node": 2})
    app = CockpitApp(LiveController(open_session(load_study(spec))), poll_interval=0.3, offer_plan=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = PreflightScreen()
        screen.add_line("preflight 1 node x 2: submitted job local-1")  # not mounted yet
        await app.push_screen(screen)
        await wait_for(pilot, lambda: bool(screen.query("#preflight-log")))

        def log() -> str:
            return " ".join(strip.text for strip in screen.query_one("#preflight-log").lines)

        # the log renders its lines once it knows its size: wait for that, and fail if the line never shows
        await wait_for(pilot, lambda: "submitted job local-1" in log(), timeout=60, shown=log)
