"""`cockpit report STUDY --out DIR [--full-run UNIT=AMOUNT ...]`: Markdown, CSV, HTML and PNG figures of a study
(file or store), with the production run's time to result on every configuration where asked (docs/full-run.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cockpit.commands import _full_run
from cockpit.commands._args import STUDY, STUDY_OR_STORE_HELP, error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar=STUDY, help=STUDY_OR_STORE_HELP)
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for report.md, report.html, ...")
    parser.add_argument("--study", metavar="NAME", help="which study of a store holding several")
    parser.add_argument("--compare", metavar="OTHER",
                        help="add a section comparing the study with OTHER (a study file or a store), as `cockpit "
                             "compare STUDY OTHER` prints it")
    _full_run.add_arguments(parser)


def main(args: argparse.Namespace) -> int:
    from cockpit.report.source import ReportError, load_input
    from cockpit.report.write import write_report

    try:
        inp = load_input(args.source, args.study)
    except ReportError as exc:
        return error(str(exc))
    comparison = None
    if args.compare:
        from cockpit.report.comparison import Loaded, compare_loaded, load, site_links_of

        try:  # this study as read above, against OTHER read as `cockpit compare` reads it
            own = Loaded(inp.study, inp.results, site_links_of(args.source))
            comparison = compare_loaded(own, load(args.compare))
        except ReportError as exc:
            return error(f"--compare: {exc}")
    full_run = None
    if args.full_run is not None or _full_run.refused(args):
        full_run, problem = _full_run.for_report(args)
        if problem:
            return error(problem)
    try:
        files = write_report(inp, args.out, comparison=comparison, full_run=full_run)
    except OSError as exc:  # an unwritable, full or missing --out: one line naming it, no traceback
        return error(write_failure(args.out, exc))
    print(f"{inp.study}: {len(inp.results)} results, {files.configurations} configurations")
    for path in (files.markdown, files.html, files.csv, *([files.full_run_csv] if files.full_run_csv else []),
                 *(f.path for f in files.figures.values())):
        print(f"  {path}")
    for line in inp.changed:  # left out of the report: they ran other settings than the study asks
        print(f"  {line}")
    for line in inp.left_out:  # the report is whole; it goes on without what these lines name
        error(f"{inp.source}: {line}")
    for problem in inp.problems:  # the report was written without these runs
        error(f"{inp.source}: {problem}")
    return 2 if inp.problems else 0


def write_failure(out: str, exc: OSError) -> str:
    """`--out DIR: cannot write report.md there (Permission denied); choose a directory you can write`."""
    what = exc.strerror or str(exc)
    name = f" {Path(exc.filename).name}" if exc.filename and Path(exc.filename) != Path(out) else ""
    return f"--out {out}: cannot write{name} there ({what}); choose a directory you can write"
