"""`cockpit run [--headless] STUDY`: submit a study and follow it to the end, then write its report.

Headless, progress goes to stdout as plain lines (a rich progress bar on a terminal); the exit status is
non-zero when any configuration failed, so a batch pipeline can tell.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cockpit.commands._args import STUDY, STUDY_FILE_HELP, error
from cockpit.commands._study import add_submit_flags, open_study
from cockpit.commands.progress import PlainProgress, RichProgress

if TYPE_CHECKING:
    from cockpit.run.session import StudySession

EXIT_FAILED = 1
EXIT_REFUSED = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", metavar=STUDY, help=STUDY_FILE_HELP)
    parser.add_argument("--headless", action="store_true", help="no screen: progress lines, then the report")
    parser.add_argument("--out", metavar="DIR", help="report directory (default: <study dir>/report or ./<study>-report)")
    add_submit_flags(parser)
    parser.add_argument("--timeout", type=float, metavar="S", help="give up (exit 1) after S seconds")
    parser.add_argument("--json", action="store_true",
                        help="with --headless: one JSON object per event on stdout (docs/json-events.md)")


def main(args: argparse.Namespace) -> int:
    if args.json and not args.headless:
        return error("--json needs --headless (the screen has no JSON form)")
    session = open_study(args.study, args, positive={"--timeout": args.timeout})
    if session is None:
        return EXIT_REFUSED
    if not args.headless:
        from cockpit.tui.app import CockpitApp
        from cockpit.tui.live import LiveController

        CockpitApp(LiveController(session), auto_submit=True, offer_plan=False).run()
        failed = session.has_failures()
        session.store.close()
        return EXIT_FAILED if failed else 0
    out = Path(args.out) if args.out else default_report_dir(session)
    return asyncio.run(run_headless(session, out, timeout_s=args.timeout, as_json=args.json))


def default_report_dir(session: StudySession) -> Path:
    study = session.study
    if session.backend.on_this_machine:
        return Path(study.study_dir()) / "report"
    return Path.cwd() / f"{study.name}-report"


async def run_headless(session: StudySession, out: Path, *, timeout_s: float | None = None,
                       stream: TextIO | None = None, as_json: bool = False, preflight_fix: str | None = None) -> int:
    """Run the study to the end with progress lines (JSON lines with ``as_json``), write the report;
    0 ok, 1 failures, 2 refused. ``preflight_fix``: what a failed preflight's line says to change, in the words
    of a command that made the study from its flags (the demo), instead of the check's study keys."""
    from cockpit.launch.backend import BackendError
    from cockpit.preflight.table import failure_summary
    from cockpit.run.runner import BudgetExceeded, PreflightFailed
    from cockpit.store import StoreFull

    stream = stream or sys.stdout
    progress = make_progress(session, stream, as_json=as_json)
    session.runner.preflight_listeners.append(progress.say)
    session.runner.preflight_report_listeners.append(progress.preflight)
    def failed_preflight(exc: PreflightFailed) -> int:
        progress.close()
        if preflight_fix:
            return error(failure_summary(exc.report, preflight_fix))
        return error(f"{exc} (fix the study file and run again, or --skip-preflight)")

    try:
        try:
            await session.runner.start()
        except PreflightFailed as exc:
            return failed_preflight(exc)
        except BudgetExceeded as exc:
            return error(f"{exc} (use --force to start anyway)")
        except BackendError as exc:
            return error(f"cannot start {session.study.name}: {exc}")
        except StoreFull as exc:  # the laptop's disk: one line, nothing written before is lost
            return error(str(exc))
        progress.changed(session.runner.plan())
        progress.tick(None)
        try:
            await session.runner.run(timeout_s=timeout_s, on_tick=progress.tick)
        except PreflightFailed as exc:  # something to submit that start() did not see, and its preflight failed
            return failed_preflight(exc)
        except (TimeoutError, BackendError) as exc:
            progress.close()
            error(f"{exc} (the store keeps everything so far; run again to resume)")
            return EXIT_FAILED
        except StoreFull as exc:
            progress.close()
            error(str(exc))
            return EXIT_FAILED
        progress.close()
    finally:
        await session.runner.close()
    return finish(session, out, progress)


def finish(session: StudySession, out: Path, progress: PlainProgress) -> int:
    """Write the report and say how the study ended."""
    from cockpit.report.source import from_store
    from cockpit.report.write import write_report
    from cockpit.store.snapshot import ACTIVE_STATES

    snap = session.store.snapshot(session.study.name)
    files = write_report(from_store(session.store.path, session.study.name), out)
    failed = [c for c in snap.configs if c.state not in ("completed", "not_submitted", *ACTIVE_STATES)]
    progress.ending(snap, files, failed)
    return EXIT_FAILED if failed else 0


def make_progress(session: StudySession, stream: TextIO, *, as_json: bool = False) -> PlainProgress:
    if as_json:
        from cockpit.commands.json_events import JsonProgress

        return JsonProgress(session, stream)
    return RichProgress(session, stream) if stream.isatty() else PlainProgress(session, stream)
