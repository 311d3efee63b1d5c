"""Writing and reading the run directory's JSON files, standard library only.

Files are private (0600) unless the run directory is a shared one (the launcher made it setgid for a project's
Unix group, docs/run-directory.md): then 0640, so the group reads what the launcher meant it to.
A JSON file is replaced atomically (a reader sees the old file or the new one, never half of one); a JSON-lines
record is one write() of one line.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from runcontract.contract import SCHEMA_VERSION


class ContractError(ValueError):
    """A run-directory file or a request cannot be used; the message is one line naming the file and the problem."""


def file_mode(directory: str | os.PathLike[str]) -> int:
    """0640 in a setgid (group-shared) directory, else 0600."""
    try:
        shared = bool(os.stat(directory).st_mode & stat.S_ISGID)
    except OSError:
        shared = False
    return 0o640 if shared else 0o600


def write_json(path: str | os.PathLike[str], data: dict[str, Any]) -> Path:
    """Write a JSON object atomically: a temporary file beside `path`, fsync, rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode(path.parent))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one record as one line with one write(), so concurrent writers never interleave within a line."""
    path = Path(path)
    line = (json.dumps(record, sort_keys=True, allow_nan=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, file_mode(path.parent))
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A JSON object; None when the file does not exist; ContractError when it is not a JSON object."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContractError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise ContractError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def check_version(path: str | os.PathLike[str], data: dict[str, Any], key: str = "schema_version") -> None:
    """Refuse a file of a newer schema than this library reads (one line: file, found, expected)."""
    found = data.get(key, SCHEMA_VERSION)
    if not isinstance(found, int) or isinstance(found, bool):
        raise ContractError(f"{path}: {key} must be an integer, found {found!r}")
    if found > SCHEMA_VERSION:
        raise ContractError(f"{path}: {key} {found} is newer than this library reads ({SCHEMA_VERSION}); "
                            "upgrade runcontract (pip install -U hlm-cockpit)")
