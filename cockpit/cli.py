"""`cockpit` command line: a thin dispatcher that imports a subcommand's module only when it runs.

Keeping imports lazy is what makes `cockpit --help` and the TUI start instantly.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from runcontract.commands import CommandParser, VersionAction

COMMANDS = {
    "plan": "print a study's configuration matrix, job count and node-hour estimate",
    "preflight": "check a study's environment, GPUs, links, data and storage with one short job per node count",
    "open": "open a study in the terminal cockpit (plan, submit, follow)",
    "run": "run a study to the end (use --headless for plain progress lines)",
    "report": "write Markdown, CSV, HTML and PNG reports of a study",
    "compare": "compare two studies configuration by configuration, with B as predicted from A",
    "export": "export a study to TensorBoard and/or Weights & Biases (one run per configuration)",
    "scores": "print what a run or an ensemble learned (confusion matrix, per-class Se/+P/F1)",
    "trace": "summarise a profiled run's torch.profiler traces per rank (top operations, all-reduce spans)",
    "demo": "run a small real study on this machine and show it live",
    "serve": "serve the cockpit of a study or a store to a browser (behind a secret token in the URL)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="cockpit", description="HLM scaling cockpit")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        module = _module(name)
        if module is None:
            continue
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    module = _module(args.command)
    assert module is not None
    return int(module.main(args) or 0)


def _module(name: str):
    """The subcommand's module, or None while it is not part of this installation."""
    try:
        return importlib.import_module(f"cockpit.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"cockpit.commands.{name}":
            return None
        raise


if __name__ == "__main__":
    sys.exit(main())
