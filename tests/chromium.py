"""Debian's Chromium driven by Playwright, for the tests that read a page as a browser lays it out (the served
cockpit, the HTML report). No browser is downloaded: Playwright starts /usr/bin/chromium, which
tests/infra/install.sh installs, with the flags that keep it off the network."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = shutil.which("chromium")
OFFLINE_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (tests/infra/install.sh installs Debian's: apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """One headless Chromium for a module's tests (Playwright's sync API; each test opens its own page)."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    assert CHROMIUM is not None
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=OFFLINE_FLAGS)
        try:
            yield launched
        finally:
            launched.close()
