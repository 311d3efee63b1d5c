"""`cockpit plan STUDY --full-run steps=20000 [--deadline WHEN] [--price-node-hour X] [--price-kwh X]`: the
production run on every configuration (cockpit.run.full_run.time_to_result): its T, the time limit's jobs,
the queue's start, the finish, node-hours, kWh and cost, the first to finish, the cheapest that meets the
deadline and the Pareto set (docs/full-run.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cockpit.commands._args import error
from cockpit.commands._text_table import Column, Row, TextTable

if TYPE_CHECKING:
    from rich.console import Console

    from cockpit.forecast.full_run import FullRunPlan
    from cockpit.forecast.plan import Plan
    from cockpit.study.spec import Study


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full-run", dest="full_run", metavar="UNIT=AMOUNT",
                        help="the production run to time on every configuration: steps=20000 (each configuration's "
                             "own steps), epochs=3, tokens=2e9 or samples=1e6; prints when each finishes, its "
                             "node-hours, kWh and cost, with the queue's start estimate")
    parser.add_argument("--deadline", metavar="WHEN",
                        help="with --full-run: name the cheapest configuration finishing by WHEN (2026-12-24T18:00)")
    parser.add_argument("--price-node-hour", dest="price_node_hour", type=float, metavar="X",
                        help="with --full-run: what one node-hour costs")
    parser.add_argument("--price-kwh", dest="price_kwh", type=float, metavar="X",
                        help="with --full-run: what one kWh costs")
    parser.add_argument("--no-queue", dest="no_queue", action="store_true",
                        help="with --full-run: do not ask the scheduler for start estimates (every job starts now)")


def refused(args: argparse.Namespace) -> str | None:
    """Why the full-run flags cannot be taken as given (None: they can)."""
    given = [flag for flag, value in (("--deadline", args.deadline), ("--price-node-hour", args.price_node_hour),
                                      ("--price-kwh", args.price_kwh), ("--no-queue", args.no_queue)) if value]
    if args.full_run is None and given:
        return f"{given[0]} goes with --full-run UNIT=AMOUNT (the production run it prices)"
    if args.full_run is not None and getattr(args, "what_if", None):
        return "--full-run times the study as it stands: give it without --what-if"
    from cockpit.forecast.full_run import Prices

    return Prices(args.price_node_hour, args.price_kwh).problem()


def main(study: Study, args: argparse.Namespace, console: Console, plan: Plan, baselines: list[dict]) -> int:
    """Print the full run's table and lines under the plan (already printed); `baselines`: --baselines' results."""
    from cockpit.forecast.full_run_words import summary_lines
    from cockpit.run.session import node_cores, store_path_for
    from cockpit.store.recorded import recorded_inputs

    results = recorded_inputs(study, store_path_for(study), baselines, node_cores(study)).results
    outcome, problem = outcome_of(study, args, plan=plan, results=results)
    if outcome is None:
        return error(problem)
    table = full_run_table(study, outcome)
    console.print(table if table.width <= console.width else table.rich_table())  # rich wraps a wide one
    console.print("\n".join(summary_lines(outcome)), highlight=False)
    return 0


def for_report(args: argparse.Namespace) -> tuple[FullRunPlan | None, str]:
    """`cockpit report --full-run`: the time to result of the study file `args.source` names, or why not (the
    flags refused, a store given where the study file's [cluster] time limit is needed, the cluster away)."""
    from pathlib import Path

    from cockpit.report.source import study_or_store
    from cockpit.study.spec import SpecError, load_study

    problem = refused(args)
    if problem:
        return None, problem
    if study_or_store(Path(args.source)) != "study":
        return None, (f"--full-run: {args.source} is a store; give the study file, whose [cluster] time limit "
                      "and place to run the full run's jobs are timed")
    try:
        study = load_study(args.source)
    except SpecError as exc:
        return None, str(exc)
    return outcome_of(study, args)


def outcome_of(study: Study, args: argparse.Namespace, *, plan: Plan | None = None,
               results: list[dict] | None = None) -> tuple[FullRunPlan | None, str]:
    """The time to result the flags ask for (cockpit.run.full_run.time_to_result), or why not in one line: a
    flag that does not parse, or the scheduler that cannot be asked for its start estimates."""
    from cockpit.forecast.full_run import Prices, parse_deadline, parse_production
    from cockpit.launch.backend import BackendError
    from cockpit.run.full_run import time_to_result

    try:
        run = parse_production(args.full_run)
        deadline = parse_deadline(args.deadline) if args.deadline else None
    except ValueError as exc:
        return None, str(exc)
    try:
        return time_to_result(study, run, plan=plan, results=results, deadline=deadline,
                              prices=Prices(args.price_node_hour, args.price_kwh), queue=not args.no_queue), ""
    except BackendError as exc:
        return None, f"--full-run: the start estimates could not be asked: {exc} (--no-queue plans without them)"


def full_run_table(study: Study, outcome: FullRunPlan) -> TextTable:
    from cockpit.forecast.full_run_words import CAPTION, shown_table

    headers, cells = shown_table(outcome)  # the configuration's two naming columns first, always shown
    rows = [Row(tuple(row)) for row in cells]
    columns = [Column(h, justify="left" if i < 2 else "right", overflow="fold") for i, h in enumerate(headers)]
    return TextTable(f"{study.name}: full run of {outcome.run.words()}", CAPTION, columns, rows)
