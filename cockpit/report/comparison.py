"""Two studies compared (cockpit.forecast.compare) as every output shows them: read from their study files or stores
as `cockpit report` reads them (never written), printed by `cockpit compare`, shown by the TUI's two-studies
screen (the same rich tables) and written as the report's "Compared with" section (the same rows)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.forecast import prediction
from cockpit.forecast.compare import Comparison, compare
from cockpit.forecast.compare_table import (
    differs_words,
    figure_rows,
    headline,
    label,
    matched_without,
    prediction_line,
    unmatched_lines,
)
from cockpit.report import html_tables, tables

if TYPE_CHECKING:
    from rich.table import Table

HEADERS = ["figure", "A", "B", "B - A"]
INTRO = ("Configurations matched by their axes. Per match: the keys that differ (from the runs' config.json), "
         "T and the work it covers (samples / the baseline's), T/work, the group baseline's T1 and N, then "
         "S = T1/(T/work), E = S/N, O = T/work - T1/N and each term of O, for A and for B with the change; and B "
         "as predicted from A's runs (docs/prediction.md) against B as measured. What only one study has is "
         "listed below.")


@dataclass(frozen=True)
class Loaded:
    """A study as a comparison reads it."""

    name: str
    results: list[dict[str, Any]]
    links: prediction.Links  # the site profile's link figures (a study file), else none


def load(path: str | Path, study: str | None = None) -> Loaded:
    """A study's name, results and its site profile's link figures, from a study file or a store
    (cockpit.report.source: never written). Raises ReportError naming the file."""
    from cockpit.report.source import load_input

    inp = load_input(path, study)
    return Loaded(inp.study, inp.results, site_links_of(path))


def site_links_of(path: str | Path) -> prediction.Links:
    """The link figures of a study file's site profile (none for a store: it records no site)."""
    from cockpit.report.source import ReportError

    if Path(path).suffix != ".toml":
        return prediction.Links()
    from cockpit.forecast.plan import study_site_links
    from cockpit.study.spec import SpecError, load_study

    try:
        return study_site_links(load_study(Path(path)))
    except SpecError as exc:
        raise ReportError(str(exc)) from exc


def compare_loaded(a: Loaded, b: Loaded) -> Comparison:
    """B matched against A, and predicted from A's runs with A's link figures."""
    return compare(a.name, a.results, b.name, b.results, a.links)


def compare_paths(a: str | Path, b: str | Path, a_study: str | None = None) -> Comparison:
    """`cockpit compare A B`: both read, B compared against A (ReportError names a file that cannot be)."""
    return compare_loaded(load(a, a_study), load(b))


def renderables(c: Comparison) -> list[str | Table]:
    """The comparison as `cockpit compare` prints it and the TUI shows it: lines and one rich table per
    matched configuration (figure, A, B, B - A; the keys that differ as its caption), each followed by B as
    predicted from A."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    out: list[str | Table] = [headline(c)]
    if c.changed_axes:
        out.append(matched_without(c))
    for pair in c.pairs:
        table = Table(title=escape(f"{label(pair.a)}  vs  {label(pair.b)}"),
                      caption=escape("keys that differ: " + differs_words(pair.differs)), box=box.SIMPLE_HEAD,
                      pad_edge=False, caption_justify="left")
        table.add_column("figure")
        for name in HEADERS[1:]:
            table.add_column(name, justify="right", no_wrap=True)
        for row in figure_rows(pair):
            table.add_row(*(escape(cell) for cell in row))
        out.append(table)
        out.append(prediction_line(pair))
    out.extend(unmatched_lines(c))
    return out


def section_title(c: Comparison) -> str:
    return f"Compared with {c.b_name}"


def keys_that_differ(c: Comparison) -> tuple[str | None, list[str]]:
    """The report's "Keys that differ" sentence: once for the section when every match differs in the same
    keys (the usual case: one change, studied at every scale), else one per match (the first item None)."""
    words = [f"Keys that differ: {differs_words(pair.differs)}." for pair in c.pairs]
    if len(set(words)) == 1 and len(words) > 1:
        return words[0].replace("Keys that differ:", "Keys that differ, in every match:", 1), ["" for _ in words]
    return None, words


def markdown_section(c: Comparison) -> list[str]:
    """The report's "Compared with B" section, as Markdown lines."""
    lines = [f"## {section_title(c)}", "", INTRO, "", headline(c) + "."]
    if c.changed_axes:
        lines += ["", matched_without(c) + "."]
    shared, each = keys_that_differ(c)
    if shared:
        lines += ["", shared]
    for pair, differs in zip(c.pairs, each, strict=True):
        lines += ["", f"### {label(pair.a)} vs {label(pair.b)}", "", *([differs, ""] if differs else []),
                  tables.markdown_table(HEADERS, [list(r) for r in figure_rows(pair)]), "", prediction_line(pair) + "."]
    unmatched = unmatched_lines(c)
    if unmatched:
        lines += ["", *(f"- {line}" for line in unmatched)]
    return lines


def html_section(c: Comparison) -> str:
    """The same section as HTML."""
    esc = html.escape
    parts = [f"<h2>{esc(section_title(c))}</h2><p>{esc(INTRO)}</p><p>{esc(headline(c))}.</p>"]
    if c.changed_axes:
        parts.append(f"<p>{esc(matched_without(c))}.</p>")
    shared, each = keys_that_differ(c)
    if shared:
        parts.append(f"<p>{esc(shared)}</p>")
    for pair, differs in zip(c.pairs, each, strict=True):
        parts.append(f'<section class="pair"><h3>{esc(label(pair.a))} vs {esc(label(pair.b))}</h3>'
                     + (f"<p>{esc(differs)}</p>" if differs else "")
                     + html_tables.html_table(HEADERS, [list(r) for r in figure_rows(pair)])
                     + f"<p>{esc(prediction_line(pair))}.</p></section>")
    unmatched = unmatched_lines(c)
    if unmatched:
        parts.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in unmatched) + "</ul>")
    return "".join(parts)
