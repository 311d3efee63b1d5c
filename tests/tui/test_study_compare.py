"""The two-studies screen: what `cockpit compare A B` prints, shown over the cockpit. A is the demo's real
store (tests/fixtures/demo-store: batch 16, 1 core per worker), B the recorded store
(tests/fixtures/recorded-store: batch 8, 1 and 2 cores per worker): matched across the batch size, the keys
that differ, every figure of both, and B's 2-core configurations listed as only in B."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.commands.open import browse
from cockpit.forecast.compare_table import figure_rows, headline, label, prediction_line, unmatched_lines
from cockpit.tui.commands import palette_commands
from cockpit.tui.study_compare import StudyCompareScreen

ROOT = Path(__file__).resolve().parents[2]
SIZE = (200, 50)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "demo.sqlite", tmp_path / "recorded.sqlite"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "demo-store" / "local-demo" / "cockpit.sqlite", a)
    shutil.copyfile(ROOT / "tests" / "fixtures" / "recorded-store" / "store.sqlite", b)
    return a, b


async def shown(pilot) -> StudyCompareScreen:
    for _ in range(40):  # `--compare` pushes the screen once the cockpit has painted
        if isinstance(pilot.app.screen, StudyCompareScreen):
            break
        await pilot.pause(0.05)
    screen = pilot.app.screen
    assert isinstance(screen, StudyCompareScreen)
    for _ in range(300):
        if (screen.comparison is not None or screen.error) and not screen.requests.running:
            break
        await pilot.pause(0.05)
    return screen


def printed_by_cli(a: Path, b: Path, capsys) -> str:
    assert cli(["compare", str(a), str(b)]) == 0
    return capsys.readouterr().out


async def test_open_with_compare_shows_what_cockpit_compare_prints(stores, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    a, b = stores
    printed = printed_by_cli(a, b, capsys)
    app, store = browse(a, poll=None, compare_with=b)  # `cockpit open demo.sqlite --compare recorded.sqlite`
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await shown(pilot)
            c = screen.comparison
            assert c is not None and not screen.error
            assert headline(c) == "A = local-demo, B = recorded: 4 matched configurations, 0 only in A, 2 only in B"
            assert c.changed_axes == {"batch_size": (16, 8)}
            texts = [item for item in screen.items if isinstance(item, str)]
            tables = [item for item in screen.items if not isinstance(item, str)]
            assert len(tables) == len(c.pairs) == 4
            for line in texts:  # every line the screen shows, word for word as printed
                assert line in printed, line
            assert unmatched_lines(c) == [line for line in texts if line.startswith("only in ")]
            assert all("c2" in line for line in unmatched_lines(c))  # B's 2-core runs: listed, not dropped
            for pair, table in zip(c.pairs, tables, strict=True):
                assert prediction_line(pair) in texts
                rows = figure_rows(pair)
                assert [cell for cell in table.columns[1]._cells] == [r[1] for r in rows]
                for row in rows:  # the CLI printed the same row: figure, A, B and the change
                    assert re.search(r"\s+".join(re.escape(cell) for cell in row if cell), printed), row
                assert "batch_size 16 -> 8" in str(table.caption)
            body = screen.query(".study-compare-item")
            assert len(body) == len(screen.items)
            await pilot.press("x")  # swap: B against A
            screen = await shown(pilot)
            assert screen.comparison.a_name == "recorded" and screen.comparison.b_name == "local-demo"
            assert [label(r) for r in screen.comparison.only_a] == [label(r) for r in c.only_b]
            await pilot.press("escape")
            assert not isinstance(app.screen, StudyCompareScreen)
    finally:
        store.close()


def doc_example(command: str) -> list[str]:
    """The arguments of docs/tui.md's `cockpit COMMAND tests/fixtures/... --compare ...` example."""
    text = " ".join((ROOT / "docs" / "tui.md").read_text(encoding="utf-8").split())
    (example,) = [m for m in re.findall(r"`(cockpit [^`]+)`", text)
                  if m.startswith(f"cockpit {command} tests/fixtures/") and " --compare " in m]
    return example.split()[1:]


async def test_the_documented_open_compare_example(monkeypatch):
    from cockpit.cli import build_parser

    monkeypatch.chdir(ROOT)  # the example names the fixtures from the repository's root; browsing never writes
    args = build_parser().parse_args(doc_example("open"))
    app, store = browse(Path(args.target), args.study, poll=None, compare_with=args.compare)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await shown(pilot)
            assert not screen.error and screen.comparison is not None
            assert (screen.comparison.a_name, screen.comparison.b_name) == ("local-demo", "recorded")
            assert len(screen.comparison.pairs) == 4 and len(screen.comparison.only_b) == 2
    finally:
        store.close()


async def test_the_palette_entry_asks_for_the_other_study_and_names_a_bad_one(stores):
    a, b = stores
    app, store = browse(a, poll=None)
    try:
        async with app.run_test(size=SIZE) as pilot:
            entry = next(cb for name, cb, _ in palette_commands(app) if name == "Compare with another study")
            entry()
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, StudyCompareScreen) and app.focused is screen.query_one("#other-study")
            screen.query_one("#other-study").value = str(b.parent / "missing.sqlite")
            await pilot.press("enter")
            screen = await shown(pilot)
            assert "missing.sqlite: no such file" in screen.error and screen.comparison is None
            assert screen.query_one("#study-compare-error").display
            await pilot.press("o")
            screen.query_one("#other-study").value = str(b)
            await pilot.press("enter")
            screen = await shown(pilot)
            assert screen.comparison is not None and screen.comparison.b_name == "recorded"
            assert not screen.query_one("#study-compare-error").display
    finally:
        store.close()

