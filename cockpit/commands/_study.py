"""The CLI's way to a study: the file read, the flags checked, its session opened, and the flags that shape
what a submit does. `open`, `run` and `preflight` share them so each says its refusals the same way."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cockpit.commands._args import error, not_positive

if TYPE_CHECKING:
    from cockpit.run.session import StudySession
    from cockpit.study.spec import Study


def load(path: str) -> Study | None:
    """The study, or None after printing the spec error (the message names file and key)."""
    from cockpit.study.spec import SpecError, load_study

    try:
        return load_study(path)
    except SpecError as exc:
        error(str(exc))
        return None


def add_submit_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of every command that submits a study (`open`, `run`)."""
    parser.add_argument("--force", action="store_true", help="submit even if the estimate exceeds the budget")
    parser.add_argument("--resubmit-failed", action="store_true", help="submit failed configurations again")
    parser.add_argument("--rerun-changed", action="store_true",
                        help="run again the configurations whose settings changed since they ran (the earlier run "
                             "is kept: its directory under history/, its result in the store's history)")
    parser.add_argument("--skip-preflight", action="store_true",
                        help="submit without a passed preflight of this study file (see `cockpit preflight`)")
    parser.add_argument("--baseline-first", action="store_true",
                        help="submit each group's 1x1 run first, the rest once its result predicts their cost")


def open_study(path: str, args: argparse.Namespace | None = None,
               positive: dict[str, float | None] | None = None) -> StudySession | None:
    """The study file's session, or None after printing why not: the spec error, or a flag of `positive`
    ({"--timeout": value}) at or below zero. With `args`, its submit flags (add_submit_flags) shape the runner."""
    from cockpit.run.session import open_session
    from cockpit.store import StoreError

    study = load(path)
    if study is None:
        return None
    for flag, value in (positive or {}).items():
        problem = not_positive(flag, value)
        if problem:
            error(problem)
            return None
    try:  # a store this cockpit cannot write (newer, foreign, unreadable) is its one line
        if args is None:
            return open_session(study)
        return open_session(study, force=args.force, resubmit_failed=args.resubmit_failed,
                            rerun_changed=args.rerun_changed, baseline_first=args.baseline_first, preflight=not args.skip_preflight)
    except StoreError as exc:
        error(str(exc))
        return None
