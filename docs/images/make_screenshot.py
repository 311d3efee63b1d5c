"""Render the cockpit's main screen (the scaling view) over the recorded demo store to docs/images/cockpit.svg,
the picture at the top of the README: `python docs/images/make_screenshot.py`.

The store is the one `cockpit demo --headless` wrote (tests/fixtures/demo-store), opened read-only as
`cockpit open STORE` opens it, with the clock fixed just after its last poll so the picture is the same on
every run."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from cockpit.store import StudyStore  # noqa: E402 - after the repository is on the path
from cockpit.tui.app import CockpitApp  # noqa: E402
from cockpit.tui.controller import store_controller  # noqa: E402

STORE = REPO / "tests" / "fixtures" / "demo-store" / "local-demo" / "cockpit.sqlite"
OUT = Path(__file__).resolve().parent / "cockpit.svg"
SIZE = (150, 17)


async def render(out: Path = OUT, store_path: Path = STORE) -> Path:
    """Write the SVG of the scaling view and return its path."""
    store = StudyStore(store_path, read_only=True)
    try:
        last = store.db.execute("SELECT max(last_poll_at) FROM studies").fetchone()[0]
        now = float(last) + 3.0
        controller = store_controller(store, "local-demo", now=now, detail="the demo study, recorded")
        app = CockpitApp(controller, clock=lambda: now, poll_interval=None, offer_plan=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.save_screenshot(filename=out.name, path=str(out.parent))
    finally:
        store.close()
    return out


if __name__ == "__main__":
    print(asyncio.run(render()))
