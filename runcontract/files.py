"""Writing and reading the run directory's JSON files, standard library only: the one reader and writer every
workload (the project's trainer, a script through runcontract) and the cockpit use.

A JSON file is replaced atomically (a reader sees the old file or the new one, never half of one); a JSON-lines
record is one write() of one line, and a reader tolerates a last line cut short. A full disk (ENOSPC, EDQUOT)
raises disk_space.DiskFull naming the path and the bytes needed. One version rule for every file:
`schema_version` an integer, no newer than this reader (a file without one is read as this version).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from runcontract.contract import SCHEMA_VERSION, ContractError
from runcontract.disk_space import DiskFull, as_disk_full
from runcontract.modes import apply_fd, file_mode_in, make_dirs


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", size_hint: int = 0) -> Iterator[IO[Any]]:
    """Yield a handle on a temporary file beside `path`; on success fsync it and rename it over `path`.

    A reader (or a resumed run) therefore sees the old file or the new one, never half of one. A full disk
    (ENOSPC, EDQUOT) raises DiskFull naming `path` and the bytes needed (`size_hint`, or what was written
    when it failed if more); the temporary file is removed and the old file stays.
    """
    path = Path(path)
    make_dirs(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        full = as_disk_full(exc, path, size_hint)
        if full is None:
            raise
        raise full from exc
    written = 0
    try:
        apply_fd(fd, file_mode_in(path.parent))
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            try:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                written = os.fstat(handle.fileno()).st_size
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        full = as_disk_full(exc, path, max(size_hint, written))
        if full is None or full is exc:
            raise
        raise full from exc


def write_json(path: str | os.PathLike[str], data: dict[str, Any]) -> Path:
    """Write JSON atomically so a reader never sees half a file."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=True) + "\n"
    with atomic_write(path, size_hint=len(text.encode("utf-8"))) as handle:
        handle.write(text)
    return Path(path)



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


def append_jsonl(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one record as a single write() so concurrent ranks never interleave inside a line. On a full
    disk, a part of the line already written is cut off again and DiskFull is raised: the file keeps whole
    lines only."""
    data = (json.dumps(record, separators=(",", ":"), allow_nan=True) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, file_mode_in(Path(path).parent))
    except OSError as exc:
        full = as_disk_full(exc, path, len(data))
        if full is None:
            raise
        raise full from exc
    try:
        before = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
        except OSError as exc:
            full = as_disk_full(exc, path, len(data))
            if full is None:
                raise
            os.ftruncate(fd, before)
            raise full from exc
        if written < len(data):
            os.ftruncate(fd, before)
            raise DiskFull(path, len(data))
    finally:
        os.close(fd)


@dataclass
class JsonlChunk:
    """What a tolerant read of a JSON-lines file produced."""

    records: list[dict[str, Any]]
    next_offset: int
    bad_lines: int


def parse_jsonl_bytes(data: bytes, final: bool = False) -> JsonlChunk:
    """Parse complete lines of a JSON-lines byte chunk.

    An unterminated last line is left for the next read (next_offset stops before it) unless `final`
    is set, in which case it is counted as bad: a writer killed mid-line leaves exactly that.
    """
    records: list[dict[str, Any]] = []
    bad = 0
    end = data.rfind(b"\n") + 1
    complete, rest = data[:end], data[end:]
    for raw in complete.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            bad += 1
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            bad += 1
    consumed = end
    if final and rest.strip():
        bad += 1
        consumed = len(data)
    return JsonlChunk(records, consumed, bad)


def read_jsonl(path: str | os.PathLike[str], offset: int = 0, final: bool = False) -> JsonlChunk:
    """Read records from byte `offset` on; a missing file reads as empty. See parse_jsonl_bytes."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return JsonlChunk([], offset, 0)
    chunk = parse_jsonl_bytes(data, final=final)
    chunk.next_offset += offset
    return chunk



def check_version(path: str | os.PathLike[str], data: dict[str, Any], key: str = "schema_version") -> None:
    """The one version rule: `key` an integer (a file without one is read as this version), no newer than this
    reader; else one line naming the file, what was found and what to do."""
    found = data.get(key, SCHEMA_VERSION)
    if not isinstance(found, int) or isinstance(found, bool):
        raise ContractError(f"{path}: {key} must be an integer, found {found!r}")
    if found > SCHEMA_VERSION:
        raise ContractError(f"{path}: {key} {found} is newer than this reader ({SCHEMA_VERSION}); upgrade "
                            "hlm-cockpit, which ships runcontract (pip install -U hlm-cockpit)")
