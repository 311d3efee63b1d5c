"""The TUI's module boundaries: views and screens get snapshots through one typed channel
(cockpit.tui.channel), ask for the run's files with messages (cockpit.tui.files), and never reach into the
app: no TUI module imports cockpit.tui.app (checked on the source, TYPE_CHECKING and function-level
imports included) or probes the app or the screen with getattr."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cockpit.tui.channel import SnapshotView
from tests.tui.conftest import SMALL

TUI = Path(__file__).resolve().parents[2] / "cockpit" / "tui"
MODULES = sorted(TUI.glob("*.py"))
APP = "cockpit.tui.app"


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names (a relative one resolved against cockpit.tui)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = "cockpit.tui".split(".")[: 2 - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def test_the_boundary_checks_see_the_modules():
    assert {"app.py", "detail.py", "compare.py", "channel.py", "files.py", "filter.py", "columns.py"} <= {
        p.name for p in MODULES}


@pytest.mark.parametrize("path", [p for p in MODULES if p.name != "app.py"], ids=lambda p: p.name)
def test_no_tui_module_imports_the_app(path):
    tree = ast.parse(path.read_text(), str(path))
    found = [f"line {node.lineno}: {name}" for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
             for name in _imported(node) if name == APP or name.startswith(APP + ".")]
    found += [f"line {node.lineno}: {node.value!r}" for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and node.value in (APP, "CockpitApp")]  # import_module, cast("…")
    assert not found, f"{path.name} reaches cockpit.tui.app: {found}"


def _is_app_or_screen(node: ast.expr) -> bool:
    """`self.app`, `self.screen`, or anything reached from them (`self.app.screen`)."""
    while isinstance(node, ast.Attribute):
        if node.attr in ("app", "screen") and isinstance(node.value, ast.Name) and node.value.id == "self":
            return True
        node = node.value
    return False


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_tui_module_probes_the_app_or_the_screen(path):
    tree = ast.parse(path.read_text(), str(path))
    found = [f"line {node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id in ("getattr", "hasattr", "cast") and any(_is_app_or_screen(a) for a in node.args)]
    assert not found, f"{path.name}: {found}"


def test_every_view_and_following_screen_is_on_the_channel():
    from cockpit.tui.compare import CompareScreen
    from cockpit.tui.detail import RunDetailScreen
    from cockpit.tui.gpus import GpuView
    from cockpit.tui.plots import PlotsView
    from cockpit.tui.queue import QueueView
    from cockpit.tui.scaling import ScalingView

    for cls in (ScalingView, QueueView, GpuView, PlotsView, RunDetailScreen, CompareScreen):
        assert issubclass(cls, SnapshotView), cls.__name__
        assert cls.apply is not SnapshotView.apply, cls.__name__


async def test_a_snapshot_reaches_the_active_view_and_the_screen_on_top(recorded, monkeypatch):
    from cockpit.tui.detail import RunDetailScreen
    from cockpit.tui.queue import QueueView
    from cockpit.tui.scaling import ScalingView

    app = recorded.app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        first = app.snapshot.configs[0].config_id
        app.open_detail(first)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunDetailScreen) and screen._snapshot is app.snapshot  # given when opened
        seen: list[str] = []
        for name, target in (("scaling", app.query_one(ScalingView)), ("queue", app.query_one(QueueView)),
                             ("detail", screen)):
            monkeypatch.setattr(target, "apply", lambda snap, name=name: seen.append(name))
        app._apply(recorded.snapshot())
        assert seen == ["scaling", "detail"]  # the visible tab and the screen shown; the queue catches up later
