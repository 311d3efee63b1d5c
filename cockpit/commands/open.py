"""`cockpit open STUDY`: the terminal cockpit on a study file (plan, submit, follow) or a store (browse)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit.commands._args import STUDY, STUDY_OR_STORE_HELP, USAGE, error, not_positive
from cockpit.commands._study import add_submit_flags, open_study

if TYPE_CHECKING:
    from cockpit.run.session import StudySession


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar=STUDY, help=STUDY_OR_STORE_HELP + " to browse")
    parser.add_argument("--study", metavar="NAME", help="which study of a store holding several")
    add_submit_flags(parser)
    parser.add_argument("--compare", type=Path, metavar="OTHER",
                        help="open on the two-studies screen: this study against OTHER (a study file or a store), "
                             "as `cockpit compare` prints it")
    parser.add_argument("--poll", type=float, default=2.0, metavar="S", help="screen refresh interval (default 2 s)")


def main(args: argparse.Namespace) -> int:
    from cockpit.report.source import ReportError, study_or_store

    target = Path(args.target)
    try:
        kind = study_or_store(target)
    except ReportError as exc:
        return error(str(exc))
    problem = not_positive("--poll", args.poll)
    if problem:
        return error(problem)
    if kind == "study":
        return _open_study(target, args)
    return _open_store(target, args)


def refusal(args: argparse.Namespace) -> str | None:
    """Why `cockpit open` would stop on these arguments before showing anything (in its words), else None;
    nothing is opened for writing. `cockpit serve` asks before it listens, so a browser never meets a
    cockpit that cannot start."""
    from cockpit.report.source import ReportError, pick_study, study_or_store
    from cockpit.store import StoreError, StudyStore
    from cockpit.study.spec import SpecError, load_study

    target = Path(args.target)
    try:
        kind = study_or_store(target)
        if args.compare is not None:
            study_or_store(args.compare)
        if kind == "study":
            load_study(target)
        else:
            store = StudyStore(target, read_only=True)
            try:
                pick_study(target, store.study_names(), args.study)
            finally:
                store.close()
    except (ReportError, SpecError, StoreError) as exc:
        return str(exc)
    return not_positive("--poll", args.poll)


def _open_study(path: Path, args: argparse.Namespace) -> int:
    session = open_study(str(path), args)
    if session is None:
        return USAGE
    app = study_app(session, poll=args.poll, compare_with=args.compare)
    try:
        app.run()
    finally:
        session.store.close()
    return _exit_code(app)


def study_app(session: StudySession, *, poll: float | None = 2.0, compare_with: Path | None = None):  # noqa: ANN201
    """The CockpitApp `cockpit open STUDY.toml` runs: it never submits before its user confirms the plan
    dialog, which names the preflight a submit runs first; a resumed study's jobs in flight are followed
    meanwhile, and a study with nothing left to submit opens as it is (nothing started, no preflight)."""
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.live import LiveController

    return CockpitApp(LiveController(session), poll_interval=poll, follow=True, offer_plan=compare_with is None,
                      compare_with=compare_with)


def _open_store(path: Path, args: argparse.Namespace) -> int:
    from cockpit.report.source import ReportError
    from cockpit.store import StoreError

    try:
        app, store = browse(path, args.study, poll=args.poll, compare_with=args.compare)
    except (StoreError, ReportError) as exc:
        return error(str(exc))
    try:
        app.run()
    finally:
        store.close()
    return _exit_code(app)


def browse(path: Path, study: str | None = None, *, poll: float | None = 2.0, **app_options):  # noqa: ANN201
    """(CockpitApp, StudyStore) browsing a store: read-only, so the file is never written and nothing is left
    beside it, even in a read-only directory; a store a live cockpit is writing is re-read at every poll.
    Raises StoreError naming the file, or ReportError for a study it does not hold (in the report's words).
    The caller runs the app and closes the store."""
    from cockpit.report.source import pick_study
    from cockpit.store import StudyStore

    store = StudyStore(path, read_only=True)
    try:
        name = pick_study(path, store.study_names(), study)
    except BaseException:
        store.close()
        raise
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.controller import store_controller

    controller = store_controller(store, name, detail=f"browsing {path.name}, nothing is sent")
    return CockpitApp(controller, poll_interval=poll, offer_plan=False, **app_options), store


def _exit_code(app) -> int:  # noqa: ANN001 - a CockpitApp, imported lazily
    """0 when the cockpit was quit; non-zero when it stopped on an error (the app printed the traceback,
    without local variables, just before)."""
    code = app.return_code or 0
    if code:
        error(f"the cockpit stopped on an error (exit code {code}); see the traceback above")
    return code
