"""`cockpit open study.toml|store.sqlite`: the terminal cockpit on a study (plan, submit, follow)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="a study file (.toml) or a cockpit store (.sqlite) to browse")
    parser.add_argument("--study", help="which study of a store holding several")
    parser.add_argument("--force", action="store_true", help="submit even if the estimate exceeds the budget")
    parser.add_argument("--resubmit-failed", action="store_true", help="submit failed configurations again")
    parser.add_argument("--skip-preflight", action="store_true",
                        help="submit without a passed preflight of this study file (see `cockpit preflight`)")
    parser.add_argument("--baseline-first", action="store_true",
                        help="submit each group's 1x1 run first, the rest once its result predicts their cost")
    parser.add_argument("--compare", type=Path, metavar="OTHER",
                        help="open on the two-studies screen: this study against OTHER (a study file or a store), "
                             "as `cockpit compare` prints it")
    parser.add_argument("--poll", type=float, default=2.0, metavar="S", help="screen refresh interval (default 2 s)")


def main(args: argparse.Namespace) -> int:
    from cockpit.commands._args import not_positive

    target = Path(args.target)
    if not target.exists():
        print(f"cockpit open: {target}: no such file (expected a study .toml or a store .sqlite)", file=sys.stderr)
        return 2
    problem = not_positive("--poll", args.poll)
    if problem:
        print(f"cockpit open: {problem}", file=sys.stderr)
        return 2
    if target.suffix == ".toml":
        return _open_study(target, args)
    return _open_store(target, args)


def _open_study(path: Path, args: argparse.Namespace) -> int:
    from cockpit.commands._study import load
    from cockpit.session import open_session

    study = load(str(path))
    if study is None:
        return 2
    session = open_session(study, force=args.force, resubmit_failed=args.resubmit_failed,
                           baseline_first=args.baseline_first, preflight=not args.skip_preflight)
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.live import LiveController

    resuming = session.has_jobs()
    app = CockpitApp(LiveController(session), poll_interval=args.poll, auto_submit=resuming,
                     offer_plan=not resuming and args.compare is None, compare_with=args.compare)
    try:
        app.run()
    finally:
        session.store.close()
    return _exit_code(app)


def _open_store(path: Path, args: argparse.Namespace) -> int:
    from cockpit.store import StoreError

    try:
        app, store = browse(path, args.study, poll=args.poll, compare_with=args.compare)
    except StoreError as exc:
        print(f"cockpit open: {exc}", file=sys.stderr)
        return 2
    try:
        app.run()
    finally:
        store.close()
    return _exit_code(app)


def browse(path: Path, study: str | None = None, *, poll: float | None = 2.0, **app_options):  # noqa: ANN201
    """(CockpitApp, StudyStore) browsing a store: read-only, so the file is never written and nothing is left
    beside it, even in a read-only directory; a store a live cockpit is writing is re-read at every poll.
    Raises StoreError naming the file. The caller runs the app and closes the store."""
    from cockpit.store import StoreError, StudyStore

    store = StudyStore(path, read_only=True)
    try:
        names = store.study_names()
        name = study or (names[0] if len(names) == 1 else None)
        if name not in names:
            raise StoreError(f"{path}: name one study with --study (it holds {', '.join(names) or 'none'})")
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
        print(f"cockpit open: the cockpit stopped on an error (exit code {code}); see the traceback above",
              file=sys.stderr)
    return code
