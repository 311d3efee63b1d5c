"""`cockpit plan STUDY --what-if KEY=VALUE [...]`: the changed study predicted from the recorded one
(cockpit.forecast.whatif, as the TUI's plan dialog shows it), per configuration beside the study as recorded, with the
link figures it used."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cockpit.commands._args import error

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from cockpit.forecast.whatif import Outcome
    from cockpit.study.spec import Study


def main(study: Study, args: argparse.Namespace, console: Console,
         baselines: Callable[[], list[dict[str, Any]]]) -> int:
    """`baselines`: the results of `--baselines DIR` (cockpit.commands.plan.baseline_results)."""
    from cockpit.forecast.whatif import WhatIfError, predict, split_arguments
    from cockpit.forecast.whatif_table import summary_lines
    from cockpit.run.session import node_cores, store_path_for
    from cockpit.store import StoreError
    from cockpit.store.recorded import recorded_inputs

    if args.render:
        return error("--render writes the study's own scripts: give it without --what-if (a what-if is not run)")
    # the arguments joined and split again as the plan dialog splits a line: `sweep.gpus_per_node=[1, 2]`
    # typed without quotes reaches here as two arguments and is one again
    arguments = split_arguments(" ".join(args.what_if))
    try:
        inputs = recorded_inputs(study, store_path_for(study), baselines(), cores=node_cores(study))
        outcome = predict(study, arguments, inputs)
    except (WhatIfError, StoreError, ValueError) as exc:  # ValueError: an unusable --baselines
        return error(str(exc))
    console.print(what_if_table(outcome))
    console.print("\n".join(summary_lines(outcome)), markup=False, highlight=False, soft_wrap=True)
    for problem in outcome.inputs.problems:
        error(problem)
    return 2 if outcome.inputs.problems else 0


def what_if_table(outcome: Outcome) -> Table:
    """cockpit.forecast.whatif's rows as a rich table, its caption under it."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from cockpit.forecast.whatif_table import CAPTION, COLUMNS, table_rows, title

    table = Table(title=escape(title(outcome)), caption=CAPTION, box=box.SIMPLE_HEAD, pad_edge=False,
                  caption_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column == "config" else "right", no_wrap=column != "config",
                         overflow="fold")
    for row in table_rows(outcome):
        table.add_row(*(escape(cell) for cell in row))
    return table
