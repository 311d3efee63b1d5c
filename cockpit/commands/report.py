"""`cockpit report study.toml|store.sqlite --out DIR`: Markdown, CSV, HTML and PNG figures of a study."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a study file (.toml) or a cockpit store (.sqlite)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for report.md, report.html, ...")
    parser.add_argument("--study", help="which study of a store holding several")
    parser.add_argument("--compare", metavar="OTHER",
                        help="add a section comparing the study with OTHER (a study file or a store), as `cockpit "
                             "compare STUDY OTHER` prints it")


def main(args: argparse.Namespace) -> int:
    from cockpit.report.source import ReportError, load_input
    from cockpit.report.write import write_report

    try:
        inp = load_input(args.source, args.study)
    except ReportError as exc:
        print(f"cockpit report: {exc}", file=sys.stderr)
        return 2
    comparison = None
    if args.compare:
        from cockpit.report.comparison import Loaded, compare_loaded, load, site_links_of

        try:  # this study as read above, against OTHER read as `cockpit compare` reads it
            own = Loaded(inp.study, inp.results, site_links_of(args.source))
            comparison = compare_loaded(own, load(args.compare))
        except ReportError as exc:
            print(f"cockpit report: --compare: {exc}", file=sys.stderr)
            return 2
    try:
        files = write_report(inp, args.out, comparison=comparison)
    except OSError as exc:  # an unwritable, full or missing --out: one line naming it, no traceback
        print(f"cockpit report: {write_failure(args.out, exc)}", file=sys.stderr)
        return 2
    print(f"{inp.study}: {len(inp.results)} results, {files.configurations} configurations")
    for path in (files.markdown, files.html, files.csv, *(f.path for f in files.figures.values())):
        print(f"  {path}")
    for problem in inp.problems:  # the report was written without these runs
        print(f"cockpit report: {inp.source}: {problem}", file=sys.stderr)
    return 2 if inp.problems else 0


def write_failure(out: str, exc: OSError) -> str:
    """`--out DIR: cannot write report.md there (Permission denied); choose a directory you can write`."""
    what = exc.strerror or str(exc)
    name = f" {Path(exc.filename).name}" if exc.filename and Path(exc.filename) != Path(out) else ""
    return f"--out {out}: cannot write{name} there ({what}); choose a directory you can write"
