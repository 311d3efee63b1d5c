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
