"""The command-line conventions both of the project's commands (`cockpit`, `hlm-train`) share: `--version`
from the installed distribution, and argparse's own refusals in the form every refusal takes. Standard library
only."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

DISTRIBUTION = "hlm-cockpit"  # the one installed distribution both commands come from (pyproject.toml)


def installed_version() -> str:
    """The installed distribution's version, from its metadata: what `cockpit --version` and `hlm-train
    --version` print, so that a bug report names what was installed, not what a source file says."""
    from importlib import metadata  # asked for rarely; importing it costs every command line ~35 ms

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return f"unknown ({DISTRIBUTION} is not installed: pip install hlm-cockpit, or pip install -e . in a checkout)"


class VersionAction(argparse.Action):
    """`--version`: `<prog> <installed version>`, looked up only when asked (reading the metadata takes a
    tenth of a second that every other command line would pay)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the installed version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog} {installed_version()}")
        parser.exit()


class CommandParser(argparse.ArgumentParser):
    """argparse's own refusals (an unknown flag, a missing argument) in the form every refusal of both commands
    takes: the usage line, then `cockpit: plan: ...` / `hlm-train: train: ...`, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        command, _, sub = self.prog.partition(" ")
        self.exit(2, f"{command}: {sub + ': ' if sub else ''}{message}\n")
