"""The queue view and the header say what the site says: the Slurm controller away (the states below are as
last seen) and a maintenance reservation the time limit crosses, from the live status the runner keeps
(cockpit/run/outage.py, cockpit/run/reservations.py; the real outage and reservation run in
tests/control/test_controller_away.py and test_maintenance.py)."""

from __future__ import annotations

from textual.widgets import Static

from cockpit.store import LiveStatus
from cockpit.tui.app import CockpitApp
from cockpit.tui.queue import QueueView
from tests.tui.conftest import SIZE

AWAY = "Slurm not answering since 14:05"
MAINT = ("time limit 00:10:00 crosses maintenance reservation maint_nov from 14:23 to 14:43 (nodes vm): jobs wait "
         "until 14:43, or start now with a time limit of at most 00:04:00 ([cluster].time_limit)")


async def test_the_queue_view_says_the_controller_is_away_and_names_the_maintenance(recorded):
    recorded.store.live["recorded"] = LiveStatus(scheduler=AWAY, maintenance=MAINT)
    app = CockpitApp(recorded.controller(), clock=lambda: recorded.now, poll_interval=None, offer_plan=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        site = app.query_one(QueueView).query_one("#queue-site", Static)
        text = str(site.render())
        assert site.display and f"{AWAY}: the states below are as last seen" in text and "maint_nov" in text
        assert AWAY in app.snapshot.connection_detail


async def test_without_news_from_the_site_the_queue_view_has_no_site_line(recorded):
    app = CockpitApp(recorded.controller(), clock=lambda: recorded.now, poll_interval=None, offer_plan=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        assert not app.query_one(QueueView).query_one("#queue-site", Static).display
