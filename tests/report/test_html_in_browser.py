"""The HTML report as a reader opens it, in a real browser: Debian's chromium, headless, at a 390 px phone's
width and at 1280 px. The page never scrolls sideways (a wide table scrolls in its own box), a prose column
keeps a readable width, every header sits over its cells as they are aligned, the headline and the figures
come before the tables, the figures are sharp, and the page says how a phone should lay it out.

A headless chromium window is never narrower than 500 px, so the report is laid out in an iframe of the
width asked for (its own viewport, as a phone's screen is) and measured by a script in the page around it;
the report itself holds no script."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.report.comparison import compare_paths
from cockpit.report.source import load_input
from cockpit.report.tables import ADVICE_LOSSES
from cockpit.report.write import write_report
from tests.report.test_report import markdown_rows

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (tests/infra/install.sh installs "
                                                          "Debian's: apt-get install chromium)")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEMO = FIXTURES / "demo-store" / "study.toml"
RECORDED = FIXTURES / "recorded-store" / "store.sqlite"
DPI = 150  # the least a figure is drawn at

# what the browser laid out, written into the page around the report as JSON
MEASURE = """
const frame = document.getElementById('report');
frame.addEventListener('load', () => {
  const w = frame.contentWindow, doc = w.document, root = doc.documentElement;
  const align = el => w.getComputedStyle(el).textAlign;
  const misaligned = [];
  doc.querySelectorAll('table').forEach((table, t) => {
    const heads = [...table.querySelectorAll('thead th')];
    const first = table.querySelector('tbody tr');
    if (!first) return;
    [...first.children].forEach((td, i) => {
      if (heads[i] && align(heads[i]) !== align(td)) misaligned.push([t, heads[i].textContent, align(heads[i]), align(td)]);
    });
  });
  const top = el => Math.round(el.getBoundingClientRect().top);
  document.getElementById('measure').textContent = JSON.stringify({
    viewport: w.innerWidth, pageWidth: root.scrollWidth,
    boxes: [...doc.querySelectorAll('.scroll')].map(b => [b.scrollWidth, b.clientWidth]),
    tablesOutsideBoxes: [...doc.querySelectorAll('table')].filter(t => !t.parentElement.classList.contains('scroll')).length,
    proseWidths: [...doc.querySelectorAll('td.text')].map(c => c.getBoundingClientRect().width),
    misaligned,
    sections: [...doc.querySelectorAll('h2')].map(h => [h.textContent, top(h)]),
    images: [...doc.querySelectorAll('img')].map(i => [i.naturalWidth, i.clientWidth]),
    fontPx: parseFloat(w.getComputedStyle(doc.querySelector('p')).fontSize),
  });
});
"""
PAGE = ('<!DOCTYPE html><html><body style="margin:0"><iframe id="report" src="{src}" '
        'style="width:{width}px;height:900px;border:0"></iframe><pre id="measure"></pre><script>{script}</script>'
        "</body></html>")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The demo study's report with a comparison against the recorded study: every section and figure kind."""
    out = tmp_path_factory.mktemp("report")
    return write_report(load_input(DEMO), out, comparison=compare_paths(DEMO, RECORDED)).html


def laid_out(report: Path, width: int) -> dict:
    page = report.parent / f"measure-{width}.html"
    page.write_text(PAGE.format(src=report.name, width=width, script=MEASURE), encoding="utf-8")
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
         "--run-all-compositor-stages-before-draw", "--virtual-time-budget=10000",
         f"--window-size={max(width, 500) + 40},1000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="measure">(.+?)</pre>', done.stdout, re.S)
    assert found, f"chromium measured nothing (exit {done.returncode}): {done.stderr[-1500:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_reads_at_a_phones_width_and_a_screens(report: Path, width: int):
    m = laid_out(report, width)
    assert m["viewport"] == width
    assert m["pageWidth"] <= width, "the page scrolls sideways"
    assert m["tablesOutsideBoxes"] == 0 and len(m["boxes"]) >= 8
    assert all(client <= width for _, client in m["boxes"])
    assert any(scroll > client for scroll, client in m["boxes"]), "no table wider than the page: nothing tested"
    assert min(m["proseWidths"]) >= 200, "an explanation column squeezed to a word's width"
    assert m["misaligned"] == []
    titles = [title for title, _ in sorted(m["sections"], key=lambda s: s[1])]
    assert titles[:3] == ["Headline", "Figures", "Scaling per configuration"]
    assert all(natural >= shown for natural, shown in m["images"]), m["images"]  # never drawn smaller than shown
    assert m["fontPx"] >= 16


def test_the_page_says_how_a_phone_lays_it_out_and_holds_everything(report: Path):
    text = report.read_text(encoding="utf-8")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert "<script" not in text and "http://" not in text and "https://" not in text  # self-contained, offline


def test_figures_are_drawn_at_150_dpi_or_more(report: Path):
    from PIL import Image

    for png in report.parent.glob("fig_*.png"):
        with Image.open(png) as image:
            dpi = image.info.get("dpi", (0, 0))
        assert min(dpi) >= DPI - 0.5, (png.name, dpi)


def test_one_advice_row_per_change_and_one_keys_paragraph_per_comparison(report: Path):
    markdown = report.with_name("report.md").read_text(encoding="utf-8")
    section = markdown.split("## Advice", 1)[1].split("\n## ", 1)[0]
    header = next(line for line in section.splitlines() if line.startswith("| "))
    columns = [c.strip() for c in header.split("|")[1:-1]]
    rows = markdown_rows(markdown, "Advice")
    assert rows and ADVICE_LOSSES in columns
    losses = [r[columns.index(ADVICE_LOSSES)] for r in rows]
    assert "or" not in losses and all(losses)
    change = columns.index("change → predicted T and E")
    runs = [tuple(r[:columns.index("N")]) for r in rows]
    assert len({(run, r[change]) for run, r in zip(runs, rows, strict=True)}) == len(rows)
    assert "a gain is seconds of T (T - T'), counted once per change" in markdown
    section = markdown.split("## Compared with", 1)[1]
    assert section.count("Keys that differ") == 1
    assert html.unescape(report.read_text(encoding="utf-8").split("Compared with", 1)[1]).count("Keys that differ") == 1
