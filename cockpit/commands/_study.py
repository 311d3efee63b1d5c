"""The CLI's way to read a study file: the Study, or None after printing the spec error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.commands._args import error

if TYPE_CHECKING:
    from cockpit.spec import Study


def load(path: str) -> Study | None:
    """The study, or None after printing the spec error (the message names file and key)."""
    from cockpit.spec import SpecError, load_study

    try:
        return load_study(path)
    except SpecError as exc:
        error(str(exc))
        return None
