"""`cockpit serve` in Debian's Chromium when a tab's cockpit cannot go on, and on a study with runs left.

- The store removed after the server started: the tab shows the words `cockpit open` prints in a terminal
  ("no such file") with a button that opens it again, the server prints one line and no traceback; with the
  store back, the button opens the cockpit.
- A study file with runs left: the tab shows the plan dialog, which names the preflight, and nothing is
  submitted (no job in the store, no preflight directory) while it is up.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.chromium import browser, needs_chromium  # noqa: F401 - browser is a fixture
from tests.control.test_open_asks_first import PREFLIGHT_WORDS, demo_copy, recorded
from tests.web.test_serve_in_browser import FIXTURE, KEEP_TERMINAL, wait_for_screen

pytestmark = needs_chromium


@contextmanager
def serving(target: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`cockpit serve TARGET --port 0`: (the URL it printed, the process); stopped with SIGTERM after."""
    process = subprocess.Popen([sys.executable, "-m", "cockpit", "serve", str(target), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said, url = process.stdout.readline(), process.stdout.readline().strip()  # type: ignore[union-attr]
        assert said.startswith("Serving ") and url.startswith("http://127.0.0.1:"), (said, url)
        yield url, process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def test_a_tab_whose_cockpit_cannot_start_says_why_and_opens_again(tmp_path: Path, browser) -> None:  # noqa: ANN001, F811
    shutil.copytree(FIXTURE / "local-demo", tmp_path / "local-demo")
    store = tmp_path / "local-demo" / "cockpit.sqlite"
    with serving(store) as (url, process):
        store.rename(tmp_path / "aside.sqlite")  # gone after the server checked it
        page = browser.new_page(viewport={"width": 1400, "height": 800})
        page.add_init_script(KEEP_TERMINAL)
        try:
            page.goto(url)
            page.wait_for_selector("#failure-text", state="visible", timeout=60_000)
            said = page.inner_text("#failure-text")
            assert said == f"cockpit: {store}: no such file (expected a study file (.toml) or a cockpit store (.sqlite))"
            assert page.is_visible("text=The cockpit could not go on:") and not page.is_visible(".ended")
            assert page.evaluate("document.activeElement.id") == "reopen"  # enter opens it again

            (tmp_path / "aside.sqlite").rename(store)
            page.keyboard.press("Enter")
            page.wait_for_selector("#failure-text", state="hidden", timeout=30_000)
            wait_for_screen(page, lambda ls: any("configurations" in line for line in ls), "its scaling table")
        finally:
            page.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        errors = process.stderr.read()  # type: ignore[union-attr]
    assert errors == f"cockpit: a tab's cockpit ended (exit code 2): {said}\n", errors  # one line, no traceback


def test_a_served_study_with_runs_left_asks_before_anything_is_submitted(tmp_path: Path, browser) -> None:  # noqa: ANN001, F811
    text = (FIXTURE / "study.toml").read_text(encoding="utf-8").replace("window = [128, 256]", "window = [128, 256, 512]")
    study = demo_copy(tmp_path, text)
    before = recorded(tmp_path)
    with serving(study) as (url, _):
        page = browser.new_page(viewport={"width": 1600, "height": 900})
        page.add_init_script(KEEP_TERMINAL)
        try:
            page.goto(url)
            lines = wait_for_screen(page, lambda ls: any("Submit 2 jobs (y)" in line for line in ls), "the plan dialog")
            shown = re.sub(r"[\s│┃▎▊]+", " ", " ".join(lines))
            assert PREFLIGHT_WORDS in shown, shown
            page.wait_for_timeout(3000)  # polls go on under the dialog; nothing is submitted
            assert recorded(tmp_path) == before
        finally:
            page.close()
    assert recorded(tmp_path) == before
    assert not (tmp_path / "local-demo" / "preflight").exists()
