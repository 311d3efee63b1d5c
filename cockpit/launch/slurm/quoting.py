"""Turn study values into shell text that stays inert, or refuse them with the key that carried them.

Every value that reaches a batch script passes through here: a study file is data, and a stray `$(...)`,
backtick or quote in an account name or a path must never run as code on a login node.
"""

from __future__ import annotations

import re
import shlex

# What Slurm's own #SBATCH parser accepts without quoting (it does not run a shell over these lines).
_SBATCH_SAFE = re.compile(r"[A-Za-z0-9_.,:@%/+=-]+")
_VAR_PREFIX = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class UnsafeValueError(ValueError):
    """A value cannot be put into a batch script safely; the message names the key and the reason."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"{key}: {value!r} {reason}")


def check_text(key: str, value: object) -> str:
    """The value as text, refusing what no quoting can carry through a script line (newline, NUL)."""
    text = str(value)
    if "\x00" in text:
        raise UnsafeValueError(key, text, "contains a NUL byte, which cannot appear in a batch script")
    if "\n" in text or "\r" in text:
        raise UnsafeValueError(key, text, "contains a line break, which cannot appear in a batch script line")
    return text


def shell_quote(key: str, value: object) -> str:
    """One shell word whose value is exactly `value`: no expansion, no splitting, no globbing."""
    return shlex.quote(check_text(key, value))


def sbatch_value(key: str, value: object) -> str:
    """A value for an `#SBATCH --opt=VALUE` line; Slurm parses those lines itself, so only plain
    characters are allowed (letters, digits and `_.,:@%/+=-`)."""
    text = check_text(key, value)
    if not _SBATCH_SAFE.fullmatch(text):
        bad = next((ch for ch in text if not _SBATCH_SAFE.fullmatch(ch)), text)
        raise UnsafeValueError(
            key, text, f"contains {bad!r}; #SBATCH values may only use letters, digits and _ . , : @ % / + = -"
        )
    return text


def is_sbatch_safe(text: str) -> bool:
    """Whether an `#SBATCH` line can carry `text` as it is (see sbatch_value)."""
    return bool(_SBATCH_SAFE.fullmatch(text))


def path_expr(key: str, value: object) -> str:
    """A path as a shell word that expands a leading `~/`, `$VAR` or `${VAR}` (cluster paths such as
    `$SCRATCH/hlm` mean the variable on the cluster) and keeps everything else literal."""
    text = check_text(key, value)
    if text == "~" or text.startswith("~/"):
        rest = text[1:]
        return '"$HOME"' + (shlex.quote(rest) if rest else "")
    match = _VAR_PREFIX.match(text)
    if match:
        name = match.group(1) or match.group(2)
        rest = text[match.end() :]
        return f'"${{{name}}}"' + (shlex.quote(rest) if rest else "")
    if text.startswith("~"):
        raise UnsafeValueError(key, text, "uses ~user; write the absolute path or ~/ for the submitting user")
    return shlex.quote(text)


def is_literal_path(value: str) -> bool:
    """Whether a path means the same text on every machine (no `~` or `$VAR` to expand on the cluster)."""
    return not (value.startswith("~") or _VAR_PREFIX.match(value))


def env_name(key: str, name: str) -> str:
    """An environment variable name, refused unless it is a plain identifier."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UnsafeValueError(key, name, "is not a valid environment variable name")
    return name
