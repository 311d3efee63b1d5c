"""`cockpit plan STUDY --what-if KEY=VALUE [...]`: the changed study predicted from the recorded one
(cockpit.whatif, as the TUI's plan dialog shows it), per configuration beside the study as recorded, with the
link figures it used."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from cockpit.spec import Study
    from cockpit.whatif import Outcome


def main(study: Study, args: argparse.Namespace, console: Console, err: Console,
         baselines: Callable[[], list[dict[str, Any]]]) -> int:
    """`baselines`: the results of `--baselines DIR` (cockpit.commands.plan.baseline_results)."""
    from cockpit.session import store_path_for
    from cockpit.store import StoreError
    from cockpit.whatif import WhatIfError, predict, recorded_inputs, summary_lines

    def fail(message: str) -> int:
        err.print(f"error: {message}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return 2

    if args.render:
        return fail("--render writes the study's own scripts: give it without --what-if (a what-if is not run)")
    try:
        outcome = predict(study, args.what_if, recorded_inputs(study, store_path_for(study), baselines()))
    except (WhatIfError, StoreError, ValueError) as exc:  # ValueError: an unusable --baselines
        return fail(str(exc))
    console.print(what_if_table(outcome))
    console.print("\n".join(summary_lines(outcome)), markup=False, highlight=False, soft_wrap=True)
    for problem in outcome.inputs.problems:
        err.print(f"error: {problem}", style="bold red", markup=False, highlight=False, soft_wrap=True)
    return 2 if outcome.inputs.problems else 0


def what_if_table(outcome: Outcome) -> Table:
    """cockpit.whatif's rows as a rich table, its caption under it."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from cockpit.whatif import CAPTION, COLUMNS, table_rows, title

    table = Table(title=escape(title(outcome)), caption=CAPTION, box=box.SIMPLE_HEAD, pad_edge=False,
                  caption_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column == "config" else "right", no_wrap=column != "config",
                         overflow="fold")
    for row in table_rows(outcome):
        table.add_row(*(escape(cell) for cell in row))
    return table
