"""A report table as HTML a person reads on any screen, from a 390 px phone to a wide one: numbers first.

Each column gets a role from its header and its cells, so a table keeps this layout whatever columns it gains:
identity (what a row is about: the configuration's axes, N, a rank, its host, the inputs of a fit), number
(every cell a number as tables.cell writes it: right-aligned, never wrapped), prose (a cell longer than
LONG_TEXT) or words.

- A column of identity, words or prose that is the same on every row is said once above the table ("Every
  row: dataset synthetic · mode foundation · notes MFU: no GPU (cpu run)") and left out of the grid and from
  under the rows, which then show what differs between rows.
- Prose is set under its row, across the whole table, a long text folded after its first sentence (<details>),
  so a row is as tall as its numbers.
- Where the page is narrower than the grid needs (`grid_width`, from the cells' characters), each row becomes
  a card: its identity on top, then its other cells in as many columns as fit, each header above its value.
  This is CSS alone (`card_css`, a media query per width): the report holds no script.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

from cockpit.report.tables import LONG_TEXT, ident_headers

# a cell that is one number as tables.cell writes it (`1.25`, `+0.3`, `-12.5%`, `3e-05`, `2`): right-aligned
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?%?")
FOLD_TEXT = 400  # characters: prose longer than this shows its first sentence, the rest folded (a paragraph)
IDENT_HEADERS = frozenset({*ident_headers("gpu"), *ident_headers("cpu"), "N", "rank", "host", "vocab", "classes"})
# the grid's width in CSS pixels, estimated from characters at the table's 13 px font (DejaVu Sans, the widest
# of the usual sans faces): a cell's padding and border, a character of a cell, of a (bold) header
CELL_PX, CHAR_PX, HEAD_CHAR_PX = 14, 8.0, 8.2
PAGE_PX = 40  # the body's padding on both sides and the box's margin: the viewport a grid needs is wider
CARD_STEP = 40  # card widths are rounded up to this many pixels (one media query per distinct width)


@dataclass(frozen=True)
class Column:
    header: str
    role: str  # "ident", "num", "prose" or "words"
    same: str | None  # the one value of a column that is the same on every row (said above the table)


def roles(headers: list[str], body: list[list[str]]) -> list[Column]:
    """Each column's role, and its value where it is the same on every row (of two or more)."""
    out: list[Column] = []
    for i, header in enumerate(headers):
        cells = [row[i] for row in body if i < len(row)]
        shown = [c for c in cells if c != "-"]
        if header in IDENT_HEADERS:
            role = "ident"
        elif shown and all(NUMBER.fullmatch(c) for c in shown):
            role = "num"
        elif any(len(c) > LONG_TEXT for c in cells):
            role = "prose"
        else:
            role = "words"
        same = cells[0] if role != "num" and len(body) > 1 and len(set(cells)) == 1 else None
        out.append(Column(header, role, same))
    return out


def grid_width(columns: list[Column], body: list[list[str]]) -> int:
    """The narrowest the grid lays out without a cell overflowing (CSS pixels): per column its longest header
    word or cell word (a number never wraps)."""
    total = 0.0
    for i, col in enumerate(columns):
        if col.same is not None or col.role == "prose":
            continue
        words = [len(w) for w in col.header.split()] or [0]
        width = max(words) * HEAD_CHAR_PX
        for row in body:
            text = row[i] if i < len(row) else ""
            longest = len(text) if col.role == "num" else max((len(w) for w in text.split()), default=0)
            width = max(width, longest * CHAR_PX)
        total += width + CELL_PX
    return math.ceil(total)


def cards_below(columns: list[Column], body: list[list[str]]) -> int:
    """The page width under which the table is shown as cards (a multiple of CARD_STEP)."""
    return math.ceil((grid_width(columns, body) + PAGE_PX) / CARD_STEP) * CARD_STEP


def html_table(headers: list[str], body: list[list[str]]) -> str:
    """The table as described above, inside a box of its own that scrolls sideways should it ever be wider
    than the page (the page never does); each header aligned as its column's cells (numbers right)."""
    columns = roles(headers, body)
    same = [c for c in columns if c.same is not None]
    grid = [i for i, c in enumerate(columns) if c.same is None and c.role != "prose"]
    prose = [i for i, c in enumerate(columns) if c.role == "prose" and c.same is None]
    classes = {"num": "num", "ident": "id"}
    head = "".join(f"<th{_cls(classes.get(columns[i].role, ''))}>{html.escape(columns[i].header)}</th>" for i in grid)
    trs = []
    for row in body:
        cells = "".join(
            f'<td{_cls(classes.get(columns[i].role, ""))} data-h="{html.escape(columns[i].header)}">'
            f"{html.escape(row[i] if i < len(row) else '')}</td>" for i in grid)
        trs.append(f"<tr>{cells}</tr>")
        texts = [(columns[i].header, row[i]) for i in prose if i < len(row) and row[i] not in ("", "-")]
        if texts:
            trs.append(f'<tr class="more"><td colspan="{len(grid)}">{"".join(_prose(h, t) for h, t in texts)}</td></tr>')
    caption = ""
    if any(c.same not in (None, "") for c in same):
        said = [f'<span data-h="{html.escape(c.header)}">{html.escape(c.header)} <b>{html.escape(c.same or "")}</b>'
                "</span>" for c in same if c.same not in ("-", "")]  # a column empty on every row says nothing
        none = [html.escape(c.header) for c in same if c.same == "-"]
        caption = ('<p class="same">Every row: ' + " · ".join(said)
                   + (("; " if said else "") + "no value in any row: " + ", ".join(none) if none else "") + "</p>")
    cards = cards_below(columns, body)
    return (f'{caption}<div class="scroll"><table class="cards-{cards}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(trs)}</tbody></table></div>")


def _cls(name: str) -> str:
    return f' class="{name}"' if name else ""


def _prose(header: str, text: str) -> str:
    """One prose cell under its row: its header, then the text; a long one folded after its first sentence."""
    label = f'<span class="h">{html.escape(header)}</span> ' if header else ""
    if len(text) <= FOLD_TEXT:
        return f"<div>{label}{html.escape(text)}</div>"
    first, rest = first_sentence(text)
    return (f"<details><summary>{label}{html.escape(first)}</summary>{html.escape(rest)}</details>")


def first_sentence(text: str, most: int = 300) -> tuple[str, str]:
    """(the text up to its first full stop followed by a space, the rest); a text without one within `most`
    characters is cut at the last space before `most`."""
    found = re.search(r"\.\s", text[:most])
    if found:
        return text[:found.start() + 1], text[found.end():]
    cut = text.rfind(" ", 0, most)
    cut = cut if cut > 0 else most
    return text[:cut] + " …", text[cut:].lstrip()


# a card: its identity cells on the first line (header, then the value in bold), then the other cells in as
# many columns as fit (header above value), then its prose
CARD_RULES = (
    "{t} thead{{display:none}}"
    "{t},{t} tbody,{t} tr.more,{t} tr.more td{{display:block}}"
    "{t} tr{{display:grid;grid-template-columns:repeat(auto-fill,minmax(9em,1fr));gap:0.2em 0.6em;"
    "border-top:1px solid #99a;padding:0.4em 0}}"
    "{t} tr.more{{border-top:0;padding-top:0}}"
    "{t} td,{t} tr:has(+tr.more) td{{border:0;padding:0 2px;text-align:left;background:none}}"
    "{t} td::before{{content:attr(data-h);display:block;color:#555;font-size:11px;white-space:normal;"
    "overflow-wrap:anywhere}}"
    "{t} td.id{{font-weight:600}}"
    "{t} tr.more td::before{{content:none}}"
)


def card_css(page: str) -> str:
    """The media queries that lay out as cards each table of `page` (an HTML body) narrower than it needs."""
    widths = sorted({int(w) for w in re.findall(r'<table class="cards-(\d+)"', page)})
    return "".join(f"@media (max-width:{w - 1}px){{{CARD_RULES.format(t=f'table.cards-{w}')}}}" for w in widths)

