"""Browsing a store without ever writing it: how each look reads the file as it is now.

SQLite's plain ``mode=ro`` is not enough for a WAL store (it creates -wal and -shm, and fails where it cannot),
so `FollowedFile` picks at each look between ``immutable=1`` (nobody has the file open), a fresh ``mode=ro``
reader on a live writer's own side files, and a private copy (side files left by a killed cockpit).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cockpit.store.rows import Rows, StoreError

SIDE_FILES = ("-wal", "-shm", "-journal")  # what SQLite keeps beside a store while it is open (or after a crash)


def _side(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _signature(path: Path) -> tuple:
    """Changes whenever the store or one of its side files is written, created or removed."""
    out: list[tuple[int, int, int] | None] = []
    for p in (path, *(_side(path, s) for s in SIDE_FILES)):
        try:
            st = p.stat()
        except FileNotFoundError:
            out.append(None)
        else:
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def _locked_inodes() -> set[tuple[int, int, int]] | None:
    """(major, minor, inode) of every file some process holds a lock on (Linux /proc/locks), or None where
    the system does not say. Reading it takes no lock and opens nothing beside the store: opening and
    closing the -shm file ourselves would drop the locks this very process's SQLite holds on it."""
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return None
    out = set()
    for line in text.splitlines():
        fields = line.replace("->", " ").split()
        if len(fields) < 6:
            continue
        parts = fields[5].split(":")
        if len(parts) == 3:
            try:
                out.add((int(parts[0], 16), int(parts[1], 16), int(parts[2])))
            except ValueError:
                continue
    return out


def writer_live(path: Path) -> bool:
    """Whether a cockpit (any SQLite connection) has this WAL store open now: its -wal and -shm exist and,
    where the system lists file locks (Linux), some process holds a lock on the store or its -shm (every
    WAL connection keeps a shared lock on both while it is open). Elsewhere the two files alone say so.
    A -wal left by a killed cockpit is therefore not live: it is read through a private copy instead."""
    wal, shm = _side(path, "-wal"), _side(path, "-shm")
    if not (wal.exists() and shm.exists()):
        return False
    locked = _locked_inodes()
    if locked is None:
        return True
    for p in (path, shm):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in locked:
            return True
    return False


class FollowedFile:
    """A store read without ever writing it or leaving a file beside it, followed as it changes.

    At each look (a snapshot, one query outside a snapshot) it picks how to read the file as it is now:
    - no side file beside it (a store no cockpit has open, e.g. a copied recording): SQLite's
      ``immutable=1``, which creates no -wal/-shm and takes no lock, so it works in a read-only directory;
      kept open while the file does not change;
    - a live cockpit writing it (``writer_live``): a fresh ``mode=ro`` WAL reader on the writer's own -wal
      and -shm, closed again after the look, so it sees every commit and never keeps the writer from
      removing its side files when it exits;
    - side files without a live writer (a killed cockpit), or a reader SQLite refuses: a private copy of
      the store and its -wal/-journal in a temporary directory, recovered there and loaded into memory
      through the backup API; copied again only when the files change.
    """

    def __init__(self, path: Path, lock: threading.RLock) -> None:
        self.path, self._lock = path, lock
        self._conn: sqlite3.Connection | None = None
        self._kind = ""  # "immutable", "live" or "copy"
        self._signature: tuple | None = None
        self._depth = 0
        self.generation = 0  # bumped whenever what is read may have changed

    @contextmanager
    def look(self) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._follow()
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0
                if self._kind == "live" and self._conn is not None:
                    self._conn.close()
                    self._conn = None

    def _follow(self) -> None:
        signature = _signature(self.path)
        if signature[0] is None:
            raise StoreError(f"{self.path}: no such store (it was removed while browsing)")
        live = writer_live(self.path)
        if self._conn is not None and not live and self._kind != "live" and signature == self._signature:
            return  # the same file as last time
        if signature != self._signature:
            self.generation += 1
        self._signature = signature
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        side = any(s is not None for s in signature[1:])
        if live:
            try:
                conn = self._connect("mode=ro")
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError:
                pass  # e.g. a -shm this user may not read: fall back to a copy
            else:
                self._conn, self._kind = conn, "live"
                return
        elif not side:
            self._conn, self._kind = self._connect("immutable=1"), "immutable"
            return
        self._conn, self._kind = self._copy(), "copy"

    def _connect(self, query: str) -> sqlite3.Connection:
        uri = f"file:{quote(str(self.path.resolve()))}?{query}"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30)

    def _copy(self) -> sqlite3.Connection:
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory(prefix="cockpit-browse-") as tmp:
            target = Path(tmp) / self.path.name
            shutil.copyfile(self.path, target)
            for suffix in ("-wal", "-journal"):  # the -shm is rebuilt from the -wal
                side = _side(self.path, suffix)
                try:
                    shutil.copyfile(side, _side(target, suffix))
                except FileNotFoundError:
                    pass
            src = sqlite3.connect(target)
            try:
                memory = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
                src.backup(memory)
            finally:
                src.close()
        return memory

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        with self.look():
            assert self._conn is not None
            cur = self._conn.execute(sql, args)
            rows = Rows(cur.fetchall())
            rows.lastrowid = cur.lastrowid
            return rows

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise StoreError(f"{self.path}: opened read-only (browsing never writes a store)")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
