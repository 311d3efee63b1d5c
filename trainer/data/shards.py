"""The on-disk token shards: directory naming, atomic array writes, the per-record sidecar and the lock.

Layout (docs/architecture.md, "Token shards"):
  <cache>/<dataset>-<tokenizer>-<param digest>/manifest.json          written last
  <cache>/<dataset>-<tokenizer>-<param digest>/records/<rec>.{tokens,beats,labels,rhythm}.npy
  <cache>/<dataset>-<tokenizer>-<param digest>/records/<rec>.json     the record's digest; written
                                                                       after its arrays
<rec> is the record's name plus the start of its input digest, so a record whose inputs changed is
written beside the old version. A file only ever appears under its final name complete (temp name +
rename), so an interrupted or failed prepare leaves the previous manifest and all its files valid.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from runcontract.files import write_json
from runcontract.modes import make_dirs, open_new, sharing
from trainer.data.errors import DataError

MANIFEST = "manifest.json"
RECORDS_DIR = "records"
LOCK = ".prepare.lock"
SHARD_SCHEMA = 1
ARRAYS = ("tokens", "beats", "labels", "rhythm")


def param_digest(payload: dict[str, Any]) -> str:
    """Short stable digest of the tokenizer parameters and the data source (names the shard folder)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=5).hexdigest()


def array_path(shard: Path, rec_file: str, kind: str) -> Path:
    return shard / RECORDS_DIR / f"{rec_file}.{kind}.npy"


def meta_path(shard: Path, rec_file: str) -> Path:
    return shard / RECORDS_DIR / f"{rec_file}.json"


def save_array(path: Path, array: np.ndarray) -> None:
    """np.save to a hidden temp name in the same folder, then rename: the final name is always whole."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open_new(tmp, "wb") as fh:  # private (or the study's group) from the first byte
            np.save(fh, array, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_meta(shard: Path, rec_file: str) -> dict[str, Any] | None:
    """The sidecar of a finished record, or None if absent/unreadable or its arrays are missing."""
    try:
        meta = json.loads(meta_path(shard, rec_file).read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not all(array_path(shard, rec_file, k).is_file() for k in ARRAYS):
        return None
    return meta if isinstance(meta, dict) else None


def write_meta(shard: Path, rec_file: str, meta: dict[str, Any]) -> None:
    write_json(meta_path(shard, rec_file), meta)


def remove_unlisted(shard: Path, files: list[str]) -> None:
    """Remove record files the new manifest does not list (old versions); called under the lock."""
    keep = {f"{f}.{kind}.npy" for f in files for kind in ARRAYS} | {f"{f}.json" for f in files}
    for path in (shard / RECORDS_DIR).iterdir():
        if path.name not in keep and not path.name.startswith("."):
            path.unlink(missing_ok=True)


def clean_temp_files(shard: Path) -> None:
    """Remove temp files a killed prepare left behind (called under the lock)."""
    for tmp in (shard / RECORDS_DIR).glob(".*.tmp*"):
        tmp.unlink(missing_ok=True)


@contextmanager
def prepare_lock(shard: Path) -> Iterator[None]:
    """Exclusive flock on the shard's lock file: a second prepare of the same shards waits, then skips.

    A prepare that fails before writing anything removes the folder it created (lock and empty
    `records/`), so a refusal leaves no empty shard folder in the cache; one that holds a record, or
    that this prepare did not create, stays.
    """
    created = not shard.exists()
    fd = _lock(shard)
    try:
        yield
    except BaseException:
        if created:
            _remove_if_empty(shard)
        raise
    finally:
        os.close(fd)  # closing releases the flock


def _lock(shard: Path) -> int:
    """The flocked descriptor of the shard's lock file. A lock file removed (by a failed prepare that
    created the folder) while this one waited is locked no more: the folder and its lock are made again."""
    while True:
        make_dirs(shard)
        try:
            fd = os.open(shard / LOCK, os.O_RDWR | os.O_CREAT, sharing().file_mode)
        except FileNotFoundError:
            continue  # the folder was removed between make_dirs and open
        except OSError as exc:
            raise DataError(f"{shard / LOCK}: cannot create the prepare lock ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another prepare of {shard} to finish", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            print(f"lock acquired after {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
        if _same_file(fd, shard / LOCK):
            return fd
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        held, named = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def _remove_if_empty(shard: Path) -> None:
    """Remove the shard folder when it holds only its lock and an empty `records/` (called under the lock:
    no other prepare writes there meanwhile; one waiting for the lock makes the folder again)."""
    records = shard / RECORDS_DIR
    try:
        if {p.name for p in shard.iterdir()} - {LOCK, RECORDS_DIR} or (records.is_dir() and any(records.iterdir())):
            return
        if records.is_dir():
            records.rmdir()
        (shard / LOCK).unlink(missing_ok=True)
        shard.rmdir()
    except OSError:
        return  # something appeared meanwhile (another prepare's lock file): it stays
