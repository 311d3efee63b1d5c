"""`cockpit compare STUDY_A STUDY_B`: two studies side by side (cockpit.compare), read as `cockpit report`
reads them (a study file or a store, never written), printed as cockpit.report.comparison words them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cockpit.prediction import Links


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study_a", type=Path, help="the first study: its study file (.toml) or a store (.sqlite)")
    parser.add_argument("study_b", type=Path, help="the second study, compared against the first")


def load(path: Path) -> tuple[str, list[dict[str, Any]], Links]:
    """A study's name, results and site link figures (cockpit.report.comparison.load) as a tuple."""
    from cockpit.report.comparison import load as load_study

    loaded = load_study(path)
    return loaded.name, loaded.results, loaded.links


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from cockpit.report.comparison import compare_paths, renderables
    from cockpit.report.source import ReportError

    console = Console()
    try:
        comparison = compare_paths(args.study_a, args.study_b)
    except ReportError as exc:
        Console(stderr=True).print(f"error: {exc}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return 2
    for item in renderables(comparison):
        if isinstance(item, str):
            console.print(item, markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(item)
    return 0
