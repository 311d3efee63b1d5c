"""Argument checks several commands share, so each rule and its words are written once.

Plain functions, not argparse types: a command answers a bad value with its own `cockpit <command>:` line
and return code 2 (what scripts and tests read), where an argparse type would exit with argparse's words.
"""

from __future__ import annotations


def not_positive(flag: str, value: float | None) -> str | None:
    """`<flag> must be positive, got <value>` when the flag was given a value at or below zero, else None."""
    if value is not None and value <= 0:
        return f"{flag} must be positive, got {value}"
    return None
