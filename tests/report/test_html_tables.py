"""cockpit.report.html_tables on the demo store's tables: each column's role comes from its header and cells, so
a column added later (any number) takes its place in the grid; what every row shares is said above the table,
prose goes under its row, a long text folds after its first sentence, and the card width follows the grid's."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from cockpit.report import html_tables, tables
from cockpit.report.source import load_input

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo-store" / "study.toml"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return tables.scaling(load_input(DEMO).results)


def test_roles_come_from_headers_and_cells(rows: list[dict]):
    headers, body = tables.attribution_body(rows)
    columns = {c.header: c for c in html_tables.roles(headers, body)}
    assert columns["window"].role == "ident" and columns["window"].same is None  # 128 and 256
    assert columns["dataset"].role == "ident" and columns["dataset"].same == "synthetic"
    assert columns["O (s)"].role == "num" and columns["O (s)"].same is None
    assert columns["optimizer (s)"].role == "num" and columns["optimizer (s)"].same is None  # numbers stay in the grid
    assert columns["explanation"].role == "prose"
    # a column added later, numbers on every row, is a number column whatever its name
    added = html_tables.roles([*headers, "MFU"], [[*row, "0.41"] for row in body])
    assert added[-1].role == "num" and added[-1].same is None


def test_shared_values_above_prose_under_numbers_in_the_grid(rows: list[dict]):
    headers, body = tables.attribution_body(rows)
    page = html.unescape(html_tables.html_table(headers, body))
    shared, grid = page.split('<div class="scroll">', 1)
    assert shared.startswith('<p class="same">Every row: ') and "dataset <b>synthetic</b>" in shared
    head = grid.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert ">window<" in head and ">dataset<" not in head and ">explanation<" not in head
    more = grid.split('<tr class="more">')[1:]
    assert len(more) == len(body)
    assert all(f'colspan="{head.count("<th")}"' in m for m in more)
    assert all("<details><summary>" in m for m in more)  # each explanation is a paragraph: folded


def test_a_long_text_folds_after_its_first_sentence():
    text = "lost 53% (0.89 s over T1/N = 0.80 s): +0.65 s compute. Largest: compute, 1.92x the baseline's."
    assert html_tables.first_sentence(text) == (
        "lost 53% (0.89 s over T1/N = 0.80 s): +0.65 s compute.", "Largest: compute, 1.92x the baseline's.")
    first, rest = html_tables.first_sentence("word " * 100)
    assert first.endswith(" …") and len(first) <= 302 and (first[:-2] + " " + rest).split() == ["word"] * 100


def test_cards_where_the_page_is_narrower_than_the_grid(rows: list[dict]):
    headers, body = tables.scaling_body(rows)
    columns = html_tables.roles(headers, body)
    width = html_tables.cards_below(columns, body)
    assert width % html_tables.CARD_STEP == 0 and 390 < width <= 1280
    page = html_tables.html_table(headers, body)
    assert f'<table class="cards-{width}">' in page
    css = html_tables.card_css(page)
    assert css.startswith(f"@media (max-width:{width - 1}px){{table.cards-{width} thead{{display:none}}")
    # more columns need a wider page before they are a grid
    wider = html_tables.cards_below(html_tables.roles([*headers, "MFU"], [[*r, "0.41"] for r in body]),
                                    [[*r, "0.41"] for r in body])
    assert wider >= width
