"""ctrl+c quits from every screen (as in htop or k9s), and the help screen lists it."""

from __future__ import annotations

from cockpit.tui.bindings import APP_BINDINGS, HELP_SECTIONS
from tests.tui.conftest import SIZE


async def test_ctrl_c_quits_from_the_scaling_view_and_from_a_run_detail(recorded):
    for keys in ([], ["enter"]):
        app = recorded.app()
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*keys, "ctrl+c")
            await pilot.pause()
            assert app._exit, f"ctrl+c after {keys} did not quit"


def test_help_lists_ctrl_c():
    everywhere = dict(HELP_SECTIONS)["Everywhere"]
    assert any(b.key == "ctrl+c" and b.action == "quit" for b in everywhere)
    assert any(b.key == "ctrl+c" for b in APP_BINDINGS)


async def test_a_poll_that_ends_while_the_app_closes_is_dropped(recorded):
    """A poll's snapshot comes in from its thread; when it lands while the app prunes its screens (child first),
    the scaling view could still be mounted with its table gone, and applying it raised NoMatches."""
    app = recorded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        snap, polls = app.snapshot, app.polls
    assert not app.query("#scaling-table")  # pruned: what a late poll would have met
    app._apply(snap)
    assert app.polls == polls
