"""`cockpit compare STUDY OTHER`: two studies side by side (cockpit.forecast.compare), read as `cockpit report`
reads them (a study file or a store, never written), printed as cockpit.report.comparison words them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.commands._args import STUDY, STUDY_OR_STORE_HELP, error

if TYPE_CHECKING:
    from cockpit.forecast.prediction import Links


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study_a", type=Path, metavar=STUDY, help=STUDY_OR_STORE_HELP)
    parser.add_argument("study_b", type=Path, metavar="OTHER", help="the study compared against it: " + STUDY_OR_STORE_HELP)


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
        return error(str(exc))
    for item in renderables(comparison):
        if isinstance(item, str):
            console.print(item, markup=False, highlight=False, soft_wrap=True)
        else:
            console.print(item)
    return 0
