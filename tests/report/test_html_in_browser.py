"""The HTML report as a reader opens it, in a real browser (Debian's Chromium under Playwright, tests/chromium.py)
at a 390 px phone's width and at 1280 px, for a CPU study (the demo's store, compared with the recorded one:
every section and figure kind) and a GPU study (the runs recorded on an H200, tests/fixtures/h200-runs).

At both widths: the page never scrolls sideways and no table needs to, every number of every table lies within
the screen, prose sits under its row (a row of numbers stays a line or two tall), each header sits over its
cells as they are aligned, what every row shares is said once above the table, the headline and the figures
come before the tables, the figures are sharp, and every number written on a figure is the cell of the table
it names. A GPU-memory section is there for the GPU study and not for the CPU one."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from cockpit.report.comparison import compare_paths
from cockpit.report.html_tables import LONG_TEXT
from cockpit.report.source import from_run_dirs, load_input
from cockpit.report.tables import ADVICE_LOSSES
from cockpit.report.write import FULL_TEXT_PX, write_report
from tests.chromium import browser, needs_chromium  # noqa: F401  (browser: the module's Chromium)
from tests.report.test_report import markdown_rows

pytestmark = needs_chromium
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEMO = FIXTURES / "demo-store" / "study.toml"
RECORDED = FIXTURES / "recorded-store" / "store.sqlite"
H200 = FIXTURES / "h200-runs"
DPI = 150  # the least a figure is drawn at
ROW_PX = 64  # the tallest a row of numbers may be in a grid: three lines of 13 px text and its padding
WIDTHS = (390, 1280)
GPU_SECTION = "Largest model per GPU"

# what the browser laid out, per table: its section, its box, its cells' boxes, its rows, its cells by header
MEASURE = """() => {
  const view = window.innerWidth, align = el => getComputedStyle(el).textAlign;
  const section = el => { let e = el; while (e && e.tagName !== 'H2') e = e.previousElementSibling || e.parentElement;
                          return e ? e.textContent : ''; };
  const tables = [...document.querySelectorAll('table')].map(table => {
    const box = table.parentElement, heads = [...table.querySelectorAll('thead th')];
    const grid = getComputedStyle(table.querySelector('thead')).display !== 'none';
    const rows = [...table.querySelectorAll('tbody tr:not(.more)')];
    const same = box.previousElementSibling && box.previousElementSibling.classList.contains('same')
      ? Object.fromEntries([...box.previousElementSibling.querySelectorAll('span[data-h]')]
          .map(s => [s.dataset.h, s.querySelector('b').textContent])) : {};
    return {
      section: section(table), grid, inBox: box.classList.contains('scroll'),
      box: [box.scrollWidth, box.clientWidth],
      numbers: [...table.querySelectorAll('td')].map(td => { const r = td.getBoundingClientRect();
                                                         return [td.textContent, r.left, r.right]; }),
      rowHeights: rows.map(tr => tr.getBoundingClientRect().height),
      longCells: rows.flatMap(tr => [...tr.children].map(td => td.textContent)).filter(t => t.length > LONG),
      proseSpans: [...table.querySelectorAll('tr.more td')].map(td => td.colSpan === heads.length),
      misaligned: grid && rows[0] ? [...rows[0].children].map((td, i) => [heads[i].textContent, align(heads[i]), align(td)])
                                             .filter(([, h, d]) => h !== d) : [],
      cells: rows.map(tr => ({...same, ...Object.fromEntries([...tr.children].map(td => [td.dataset.h, td.textContent]))})),
    };
  });
  return {
    viewport: view, pageWidth: document.documentElement.scrollWidth, tables,
    sections: [...document.querySelectorAll('h2')].map(h => [h.textContent, h.getBoundingClientRect().top]),
    images: [...document.querySelectorAll('img')].map(i => [i.naturalWidth, i.clientWidth]),
    figures: [...document.querySelectorAll('figure[data-printed]')].map(f => [f.dataset.table, JSON.parse(f.dataset.printed),
                                                                            f.querySelector('img').alt]),
    fontPx: parseFloat(getComputedStyle(document.querySelector('p')).fontSize),
  };
}""".replace("LONG", str(LONG_TEXT))


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """The demo study's report compared with the recorded study (a CPU study), and the H200 runs' (a GPU study)."""
    out = tmp_path_factory.mktemp("reports")
    return {
        "cpu": write_report(load_input(DEMO), out / "cpu", comparison=compare_paths(DEMO, RECORDED)).html,
        "gpu": write_report(from_run_dirs(H200, "gpu-path", "local"), out / "gpu").html,
    }


def laid_out(browser, page_file: Path, width: int) -> dict[str, Any]:  # noqa: ANN001, F811
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(page_file.as_uri())
        return page.evaluate(MEASURE)
    finally:
        page.close()


@pytest.mark.parametrize("study", ["cpu", "gpu"])
@pytest.mark.parametrize("width", WIDTHS)
def test_every_number_reads_without_sideways_scrolling(browser, reports: dict[str, Path], study: str,  # noqa: F811
                                                       width: int):
    m = laid_out(browser, reports[study], width)
    assert m["viewport"] == width
    assert m["pageWidth"] <= width, "the page scrolls sideways"
    tables = m["tables"]
    assert tables and all(t["inBox"] for t in tables)
    for t in tables:
        assert t["box"][0] <= t["box"][1], f"{t['section']}: the table is wider than its box at {width} px"
        outside = [(text, left, right) for text, left, right in t["numbers"] if left < 0 or right > width]
        assert outside == [], f"{t['section']}: numbers outside the screen at {width} px"
        assert t["longCells"] == [], f"{t['section']}: prose in a row of numbers, not under it"
        assert all(t["proseSpans"]), f"{t['section']}: prose not across the whole table"
        assert t["misaligned"] == [], t["section"]
        if t["grid"]:
            assert max(t["rowHeights"], default=0) <= ROW_PX, f"{t['section']}: a row {max(t['rowHeights'])} px tall"
    assert any(t["numbers"] for t in tables)
    assert width < 1280 or any(t["grid"] for t in tables if t["section"] == "Scaling per configuration")
    titles = [title for title, _ in sorted(m["sections"], key=lambda s: s[1])]
    assert titles[:3] == ["Headline", "Figures", "Scaling per configuration"]
    assert (GPU_SECTION in titles) == (study == "gpu"), "a GPU-memory section for the GPU study only"
    assert all(natural >= shown for natural, shown in m["images"]), m["images"]  # never drawn smaller than shown
    assert m["fontPx"] >= 16


@pytest.mark.parametrize("study", ["cpu", "gpu"])
def test_every_number_on_a_figure_is_the_cell_of_its_table(browser, reports: dict[str, Path], study: str):  # noqa: F811
    m = laid_out(browser, reports[study], 1280)
    tables: dict[str, list[dict[str, str]]] = {}
    for t in m["tables"]:
        tables.setdefault(t["section"], []).extend(t["cells"])
    if study == "gpu":  # the H200 runs are one GPU each: the figures over the number of GPUs are left out
        assert m["figures"] == [] and reports[study].read_text(encoding="utf-8").count("not drawn, every") == 4
        return
    assert m["figures"], "no figure writes a number: nothing tested"
    markdown = reports[study].with_name("report.md").read_text(encoding="utf-8")
    for table, printed, alt in m["figures"]:
        assert printed and table in tables, table
        assert f"![{alt}](fig_" in markdown  # the Markdown's figures say the same numbers
        for values in printed:
            assert any(all(row.get(h) == v for h, v in values.items()) for row in tables[table]), (table, values)
            assert all(f"{h} {v}" in alt for h, v in values.items())
    kinds = {table for table, _, _ in m["figures"]}
    assert kinds == {"Headline", "Where the efficiency went"}


def test_what_every_row_shares_is_said_once_above_the_table(reports: dict[str, Path]):
    text = reports["cpu"].read_text(encoding="utf-8")
    scaling = text.split("<h2>Scaling per configuration</h2>", 1)[1].split("<h2>", 1)[0]
    shared = scaling.split('<p class="same">', 1)[1].split("</p>", 1)[0]
    assert "dataset <b>synthetic</b>" in html.unescape(shared) and "window" not in shared  # the windows differ
    grid = scaling.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert ">dataset<" not in grid and ">window<" in grid


def test_a_cpu_study_has_the_gpu_section_only_where_it_compares_strategies(reports: dict[str, Path], tmp_path: Path):
    """The demo (CPU workers, one strategy) has no GPU-memory section; a CPU study of strategies keeps it, saying
    first that it is what the strategies would fit were the study run on GPUs."""
    assert f"## {GPU_SECTION}" not in reports["cpu"].with_name("report.md").read_text(encoding="utf-8")
    inp = load_input(DEMO)
    inp.results = [{**r, "config": {**r["config"], "strategy": "zero1"}} if r["config_id"] == inp.results[-1]["config_id"]
                   else r for r in inp.results]
    text = write_report(inp, tmp_path).markdown.read_text(encoding="utf-8")
    section = text.split(f"## {GPU_SECTION}", 1)[1].split("\n## ", 1)[0]
    assert section.strip().startswith("This study ran on CPU workers: this is what its strategies would fit were "
                                      "it run on GPUs.")
    assert {row[0] for row in markdown_rows(text, GPU_SECTION)} == {"ddp", "zero1"}


def test_the_page_says_how_a_phone_lays_it_out_and_holds_everything(reports: dict[str, Path]):
    for report in reports.values():
        text = report.read_text(encoding="utf-8")
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
        assert "<script" not in text and "http://" not in text and "https://" not in text  # self-contained, offline


def test_figures_are_drawn_at_150_dpi_or_more(reports: dict[str, Path]):
    from PIL import Image

    for report in reports.values():
        for png in report.parent.glob("fig_*.png"):
            with Image.open(png) as image:
                dpi = image.info.get("dpi", (0, 0))
            assert min(dpi) >= DPI - 0.5, (png.name, dpi)


def test_one_advice_row_per_change_and_one_keys_paragraph_per_comparison(reports: dict[str, Path]):
    report = reports["cpu"]
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


def test_figure_data_is_json(reports: dict[str, Path]):
    text = reports["cpu"].read_text(encoding="utf-8")
    raw = text.split('data-printed="', 1)[1].split('"', 1)[0]
    assert isinstance(json.loads(html.unescape(raw)), list)


# per figure: its smallest text as shown (CSS px), whether it fills the screen, its close link's box
SHOWN = """(id) => {
  const fig = document.getElementById(id), img = fig.querySelector('img'), box = fig.getBoundingClientRect();
  const close = fig.querySelector('a.close').getBoundingClientRect();
  return {textPx: parseFloat(fig.dataset.textPx) * img.clientWidth / img.naturalWidth, hash: location.hash,
          covers: [box.left, box.top, box.width, box.height], close: [close.left, close.right, close.height],
          pageWidth: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("study", ["cpu"])  # the GPU study's figures are all left out: one GPU per run
def test_a_tap_shows_a_figure_full_size_with_text_of_10_px_on_a_phone(browser, reports: dict[str, Path],  # noqa: F811
                                                                      study: str):
    """At 390 px a figure in the page's grid shows its text a few pixels high; a tap shows it over the page at
    its own pixels, its smallest text FULL_TEXT_PX or more, with a link that closes it (the waterfalls too,
    once their fold is opened)."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(reports[study].as_uri())
        ids = page.eval_on_selector_all("figure", "fs => fs.map(f => f.id)")
        assert ids and len(set(ids)) == len(ids)
        small = [page.evaluate(SHOWN, i)["textPx"] for i in ids if not i.startswith("fig-waterfall_")]
        assert min(small) < FULL_TEXT_PX, "the figures read in the grid already: nothing to test"
        if page.locator("details.waterfalls").count():
            page.click("details.waterfalls > summary")
        for fig_id in ids:
            page.click(f"#{fig_id} a.open")
            shown = page.evaluate(SHOWN, fig_id)
            assert shown["hash"] == f"#{fig_id}"
            assert shown["textPx"] >= FULL_TEXT_PX, (fig_id, shown)
            assert shown["covers"] == [0, 0, 390, 844], (fig_id, shown)  # over the whole screen, nothing beside it
            left, right, height = shown["close"]
            assert 0 <= left and right <= 390 and height > 0, (fig_id, shown)
            assert shown["pageWidth"] <= 390, "the page scrolls sideways"
            page.click(f"#{fig_id} a.close")
            assert page.evaluate(SHOWN, fig_id)["covers"][2] < 390  # back in the page's grid
    finally:
        page.close()


def test_the_scaling_table_comes_before_the_long_figures(browser, reports: dict[str, Path]):  # noqa: F811
    """At 1280 px the study's figures sit two to a row and 'Scaling per configuration' starts within two
    screens; the waterfalls, a page wide each, are folded under the table they draw ('Where the efficiency
    went'), their summary naming them."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(reports["cpu"].as_uri())
        tops = dict(page.eval_on_selector_all("h2", "hs => hs.map(h => [h.textContent, h.getBoundingClientRect().top])"))
        assert tops["Scaling per configuration"] < 2 * 800, tops
        fold = page.evaluate("""() => { const d = document.querySelector('details.waterfalls');
          let h = d; while (h.tagName !== 'H2') h = h.previousElementSibling;
          return [h.textContent, d.open, d.querySelectorAll('figure').length, d.querySelector('summary').textContent,
                  [...document.querySelectorAll('figure')].filter(f => !d.contains(f))
                    .map(f => f.id).filter(i => i.startsWith('fig-waterfall_'))]; }""")
    finally:
        page.close()
    section, opened, count, summary, unfolded = fold
    assert section == "Where the efficiency went" and not opened and unfolded == []
    assert count == 2 and "where the time went, one per group (2" in summary


def test_a_figure_over_one_value_is_left_out_saying_so(reports: dict[str, Path]):
    """The demo's runs all have one CPU per task: 'T vs CPUs per task' would be lone dots, so it is not drawn,
    and the page and the Markdown say so in one line; the recorded study ran 1 and 2 CPUs per task and has it."""
    line = "Median T vs CPUs per task: not drawn, every finished run has CPUs per task 1."
    out = reports["cpu"].parent
    assert not (out / "fig_time_vs_cpus.png").exists() and (out / "fig_time_bars.png").exists()
    assert f'<p class="meta">{line}</p>' in reports["cpu"].read_text(encoding="utf-8")
    assert f"_{line}_" in (out / "report.md").read_text(encoding="utf-8")
    recorded = write_report(load_input(RECORDED), out.with_name("recorded"))
    assert "time_vs_cpus" in recorded.figures and "not drawn" not in recorded.markdown.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_note_every_row_shares_is_one_line_above_its_table(browser, reports: dict[str, Path], width: int):  # noqa: F811
    """The demo's runs are all on CPU without an energy record: 'GPU use and energy' says that note once, above
    the table, and none of its rows (grid or card) repeats it; the Markdown says it once too."""
    note = "MFU: no GPU (cpu run); energy: result.json has no energy record"
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(reports["cpu"].as_uri())
        above, rows = page.evaluate("""() => {
          const h = [...document.querySelectorAll('h2')].find(h => h.textContent === 'GPU use and energy');
          let e = h.nextElementSibling; while (!e.classList.contains('same')) e = e.nextElementSibling;
          const table = e.nextElementSibling.querySelector('table');
          return [e.innerText, [...table.querySelectorAll('tbody tr')].map(tr => tr.innerText)]; }""")
    finally:
        page.close()
    assert note in above and above.count(note) == 1
    assert len(rows) == 4 and not any(note in row for row in rows), rows
    markdown = reports["cpu"].with_name("report.md").read_text(encoding="utf-8")
    section = markdown.split("## GPU use and energy", 1)[1].split("\n## ", 1)[0]
    assert section.count(note) == 1 and f"Every row: notes: {note}" in section


def test_advice_a_prediction_does_not_back_reads_as_one_sentence(reports: dict[str, Path]):
    """A change the model predicts slower says so, with its T before and after; it is not "not predicted"."""
    markdown = reports["cpu"].with_name("report.md").read_text(encoding="utf-8")
    rows = markdown_rows(markdown, "Advice")
    assert ["try [train] bucket_cap_mb = 0.25: predicted slower, T 3.37 s → 3.38 s", "predicted, not advised"] \
        in [row[-3::2] for row in rows]
    assert "not predicted (predicted" not in markdown and "not predicted (the predicted gain" not in markdown
