"""`cockpit preflight STUDY`: one short job per node count of the study, in its real environment,
before any of its configurations is submitted. Prints one table per job and one line per failure; the
result is kept in the study's store under the study file's digest (what `open` and `run` ask for)."""

from __future__ import annotations

import argparse
import asyncio

from cockpit.commands._args import STUDY, STUDY_FILE_HELP, error
from cockpit.commands._study import open_study

EXIT_FAILED = 1
EXIT_REFUSED = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", metavar=STUDY, help=STUDY_FILE_HELP)
    parser.add_argument("--timeout", type=float, metavar="S",
                        help="cancel the preflight's jobs if they have not ended after S seconds (default: wait)")


def main(args: argparse.Namespace) -> int:
    session = open_study(args.study, positive={"--timeout": args.timeout})
    if session is None:
        return EXIT_REFUSED
    try:
        return asyncio.run(_preflight(session, args.timeout))
    finally:
        session.store.close()


async def _preflight(session, timeout_s: float | None) -> int:  # noqa: ANN001 - a StudySession
    from cockpit.launch.backend import BackendError
    from cockpit.preflight.table import report_lines
    from cockpit.run.preflight import PreflightTimeout, run_preflight
    from cockpit.store import preflights

    study, store = session.study, session.store
    try:
        report = await run_preflight(study, session.backend, on_event=lambda line: print(line, flush=True),
                                     timeout_s=timeout_s)
    except (BackendError, PreflightTimeout) as exc:
        return error(str(exc))
    finally:
        await session.backend.close()
    key = store.ensure_study(study.name, study.study_id, spec_path=str(study.path), cluster=session.backend.label,
                             node_hour_budget=study.cluster.node_hour_budget)
    preflights.save(store, key, report)
    for line in report_lines(report):
        print(line)
    return 0 if report.passed else EXIT_FAILED
