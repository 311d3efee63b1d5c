"""`cockpit report study.toml|store.sqlite --out DIR`: Markdown, CSV, HTML and PNG figures of a study."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a study file (.toml) or a cockpit store (.sqlite)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for report.md, report.html, ...")
    parser.add_argument("--study", help="which study of a store holding several")


def main(args: argparse.Namespace) -> int:
    from cockpit.report.source import ReportError, load_input
    from cockpit.report.write import write_report

    try:
        inp = load_input(args.source, args.study)
    except ReportError as exc:
        print(f"cockpit report: {exc}", file=sys.stderr)
        return 2
    files = write_report(inp, args.out)
    print(f"{inp.study}: {len(inp.results)} results, {files.configurations} configurations")
    for path in (files.markdown, files.html, files.csv, *(f.path for f in files.figures.values())):
        print(f"  {path}")
    return 0
