"""`cockpit plan`'s table is printed line for line as rich prints the same table, without rich measuring
every cell (cockpit.commands._text_table); rich still wraps one too wide for the terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from cockpit.commands._text_table import Column, Row, TextTable
from cockpit.commands.plan import plan_table
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study
from tests.studies import REPO

MELUXINA = REPO / "examples" / "meluxina.toml"
SMALL = TextTable(
    "a title longer than the table it heads, so that rich wraps it",
    "a caption that goes on for long enough to be wrapped to the width of the table; fixed: x=1",
    [Column("name"), Column("n", justify="right"), Column("wörd"), Column("status", overflow="fold")],
    [Row(("b092e6c0b2", "128", "日本", "submit (baseline)")), Row(("", "4", "", "done"), end_section=True),
     Row(("x", "1024", "ü", "too big")), Row(("{0}", "}", "[bold]", "-"), end_section=True)],
)
ASCII = TextTable("plan", "", [Column("config"), Column("T s", justify="right"), Column("status")],
                  [Row(("{0}", "1.0", "done"), end_section=True), Row(("}{", "12.5", "[b]submit"))])


def printed(renderable: TextTable | Table, width: int, file: io.StringIO | None = None) -> str:
    out = Console(file=file or io.StringIO(), width=width)
    out.print(renderable)
    return out.file.getvalue()  # type: ignore[attr-defined]


class AsciiFile(io.StringIO):
    encoding = "ascii"  # rich draws ASCII boxes for a file it cannot write other characters to


@pytest.mark.parametrize("width", [SMALL.width, 80, 200])
@pytest.mark.parametrize("file", [io.StringIO, AsciiFile])
@pytest.mark.parametrize("table", [SMALL, ASCII], ids=["wide characters", "ascii"])
def test_the_text_table_is_rich_s_table(width: int, file: type[io.StringIO], table: TextTable):
    assert printed(table, width, file=file()) == printed(table.rich_table(), width, file=file())


def test_a_terminal_shows_the_header_bold():
    out = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="standard")
    out.print(SMALL)
    assert "\x1b[1m" in out.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_plan_prints_as_rich_printed_it(width: int):
    study = load_study(MELUXINA)
    console = Console(file=io.StringIO(), width=width)
    table = plan_table(study, 0, study_plan(study), console=console)
    assert isinstance(table, TextTable) and len(table.rows) == len(study.matrix())
    assert printed(table, width) == printed(table.rich_table(), width)


def test_a_terminal_too_narrow_for_every_layout_unwrapped_gets_rich_s_wrapping_table():
    study = load_study(MELUXINA)
    console = Console(file=io.StringIO(), width=50)
    table = plan_table(study, 0, study_plan(study), console=console)
    assert isinstance(table, Table)
    text = printed(table, 50)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 50
