"""What several commands share, so each rule and its words are written once: argument checks, the one
form of a refusal (`cockpit: <message>` on stderr) and the name of the positional arguments.

Plain functions, not argparse types: a command answers a bad value with its own `cockpit:` line and return
code 2 (what scripts and tests read), where an argparse type would exit with argparse's words.
"""

from __future__ import annotations

import sys

USAGE = 2  # the return code of every refusal of bad input (an argument, a study file, a store, a result)

# the positional arguments' names, the same in every command's usage line and help
STUDY = "STUDY"
STUDY_FILE_HELP = "the study file (.toml)"
STUDY_OR_STORE_HELP = "a study file (.toml) or a cockpit store (.sqlite)"
RUN = "RUN"


def error(message: str) -> int:
    """Print `cockpit: <message>` on stderr, one line; returns USAGE for the caller to return."""
    print(f"cockpit: {message}", file=sys.stderr)
    return USAGE


def not_positive(flag: str, value: float | None) -> str | None:
    """`<flag> must be positive, got <value>` when the flag was given a value at or below zero, else None."""
    if value is not None and value <= 0:
        return f"{flag} must be positive, got {value}"
    return None


def negative(flag: str, value: int | None) -> str | None:
    """`<flag> must be 0 or more, got <value>` for a count given below zero, else None."""
    if value is not None and value < 0:
        return f"{flag} must be 0 or more, got {value}"
    return None
