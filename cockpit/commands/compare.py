"""`cockpit compare STUDY_A STUDY_B`: two studies side by side (cockpit.compare), read as `cockpit report`
reads them (a study file or a store, never written)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cockpit import prediction
from cockpit.compare import Comparison, compare, differs_words, figure_rows, label, prediction_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study_a", type=Path, help="the first study: its study file (.toml) or a store (.sqlite)")
    parser.add_argument("study_b", type=Path, help="the second study, compared against the first")


def comparison_text(c: Comparison) -> list[str | Any]:
    """The printed comparison: rich tables and lines."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    out: list[str | Any] = [f"A = {c.a_name}, B = {c.b_name}: {len(c.pairs)} matched configurations, "
                            f"{len(c.only_a)} only in A, {len(c.only_b)} only in B"]
    if c.changed_axes:
        out.append("matched without " + ", ".join(f"{ax} ({va} in A, {vb} in B)" for ax, (va, vb) in c.changed_axes.items()))
    for pair in c.pairs:
        title = escape(f"{label(pair.a)}  vs  {label(pair.b)}")
        caption = "keys that differ: " + differs_words(pair.differs)
        table = Table(title=title, caption=escape(caption), box=box.SIMPLE_HEAD, pad_edge=False, caption_justify="left")
        table.add_column("figure")
        for name in ("A", "B", "B - A"):
            table.add_column(name, justify="right", no_wrap=True)
        for row in figure_rows(pair):
            table.add_row(*row)
        out.append(table)
        out.append(prediction_line(pair))
    for name, rows in (("only in A", c.only_a), ("only in B", c.only_b)):
        for r in rows:
            t = r.get("train_time_s")
            out.append(f"{name}: {label(r)} ({r.get('status')}" + (f", T {t:.2f} s" if isinstance(t, float) and t == t
                                                                     else "") + ")")
    return out


def load(path: Path) -> tuple[str, list[dict[str, Any]], prediction.Links]:
    """A study's name, results and the site profile's link figures (a study file) from a study file or a
    store (cockpit.report.source, as `cockpit report` reads them: never written)."""
    from cockpit.report.source import load_input

    inp = load_input(path)
    links = prediction.Links()
    if path.suffix == ".toml":
        from cockpit.plan import _site
        from cockpit.spec import load_study

        links = prediction.site_links(_site(load_study(path)))
    return inp.study, inp.results, links


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from cockpit.report.source import ReportError

    console = Console()
    try:
        a_name, a_results, links = load(args.study_a)
        b_name, b_results, _ = load(args.study_b)
    except ReportError as exc:
        Console(stderr=True).print(f"error: {exc}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return 2
    for item in comparison_text(compare(a_name, a_results, b_name, b_results, links)):
        if isinstance(item, str):
            console.print(item, markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(item)
    return 0
