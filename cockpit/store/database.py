"""The store's file: its schema and migrations, the connection (WAL), transactions, read-only opening.

What it guarantees: every write goes through `tx()` (BEGIN IMMEDIATE ... COMMIT, rolled back on error;
nested calls join the outer transaction), so the ledger's intent-before-job-id and telemetry's
records-with-their-offset each commit as one unit. The schema is versioned (``PRAGMA user_version``) and
upgraded by the ordered MIGRATIONS below; a store from a newer cockpit is refused. A read-only store is a
`cockpit.store.browse.FollowedFile`, which never writes the file nor leaves one beside it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.figures.sizes import size_words
from cockpit.store.rows import Rows, StoreError, StoreFull
from runcontract.modes import Sharing, make_dirs

if TYPE_CHECKING:
    from cockpit.store.browse import FollowedFile

STORE_FILE = "cockpit.sqlite"

MIGRATIONS: list[str] = [
    # 1: the initial schema
    """
    CREATE TABLE studies (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        study_id TEXT NOT NULL,
        spec_path TEXT,
        cluster TEXT NOT NULL DEFAULT '',
        node_hour_budget REAL,
        created_at REAL NOT NULL,
        last_poll_at REAL
    );
    CREATE TABLE configs (
        study INTEGER NOT NULL REFERENCES studies(id),
        config_id TEXT NOT NULL,
        group_id TEXT NOT NULL,
        is_baseline INTEGER NOT NULL,
        workers INTEGER NOT NULL,
        nodes INTEGER NOT NULL,
        values_json TEXT NOT NULL,
        run_dir TEXT NOT NULL,
        total_steps INTEGER,
        PRIMARY KEY (study, config_id)
    );
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        study INTEGER NOT NULL REFERENCES studies(id),
        config_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        job_id TEXT,
        state TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        intent_at REAL NOT NULL,
        submitted_at REAL,
        started_at REAL,
        ended_at REAL,
        elapsed_s REAL,
        time_limit_s REAL,
        nodes INTEGER,
        nodelist TEXT NOT NULL DEFAULT '',
        exit_code INTEGER,
        held INTEGER NOT NULL DEFAULT 0,
        UNIQUE (study, job_id)
    );
    CREATE INDEX jobs_by_config ON jobs (study, config_id);
    CREATE TABLE job_states (
        job INTEGER NOT NULL REFERENCES jobs(id),
        t REAL NOT NULL,
        state TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE results (
        study INTEGER NOT NULL REFERENCES studies(id),
        config_id TEXT NOT NULL,
        job_id TEXT,
        status TEXT NOT NULL,
        train_time_s REAL,
        tokens_per_s REAL,
        result_json TEXT NOT NULL,
        collected_at REAL NOT NULL,
        PRIMARY KEY (study, config_id)
    );
    CREATE TABLE metrics (
        study INTEGER NOT NULL, config_id TEXT NOT NULL, t REAL NOT NULL, rank INTEGER NOT NULL,
        step INTEGER NOT NULL, loss REAL, tokens_per_s REAL, samples_per_s REAL, step_time_s REAL,
        data_wait_s REAL, compute_s REAL, comm_s REAL, optimizer_s REAL, train_time_s REAL
    );
    CREATE INDEX metrics_by_config ON metrics (study, config_id, rank, t);
    CREATE TABLE gpu_samples (
        study INTEGER NOT NULL, config_id TEXT NOT NULL, t REAL NOT NULL, host TEXT NOT NULL,
        gpu INTEGER NOT NULL, util_pct REAL, mem_used_bytes REAL, mem_total_bytes REAL, power_w REAL,
        temp_c REAL
    );
    CREATE INDEX gpu_by_config ON gpu_samples (study, config_id, t);
    CREATE TABLE follow_offsets (
        study INTEGER NOT NULL, config_id TEXT NOT NULL, file TEXT NOT NULL,
        offset INTEGER NOT NULL, bad_lines INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (study, config_id, file)
    );
    CREATE TABLE log_lines (
        study INTEGER NOT NULL, config_id TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL
    );
    CREATE INDEX log_by_config ON log_lines (study, config_id, seq);
    CREATE TABLE problems (
        id INTEGER PRIMARY KEY, study INTEGER NOT NULL, t REAL NOT NULL, source TEXT NOT NULL,
        message TEXT NOT NULL
    );
    """,
    # 2: preflights (cockpit/store/preflights.py): one row per preflight, keyed by the study file's digest
    """
    CREATE TABLE preflights (
        id INTEGER PRIMARY KEY,
        study INTEGER NOT NULL REFERENCES studies(id),
        digest TEXT NOT NULL,
        passed INTEGER NOT NULL,
        created_at REAL NOT NULL,
        report_json TEXT NOT NULL
    );
    CREATE INDEX preflights_by_digest ON preflights (study, digest);
    """,
    # 3: each configuration's prediction as first made (cockpit/store/predictions.py): kept once, never updated,
    # so that a finished run's measurement is set beside what was predicted before it ran
    """
    CREATE TABLE first_predictions (
        study INTEGER NOT NULL REFERENCES studies(id),
        config_id TEXT NOT NULL,
        made_at REAL NOT NULL,
        prediction_json TEXT NOT NULL,
        PRIMARY KEY (study, config_id)
    );
    """,
    # 4: results a configuration no longer stands for (its settings changed and it ran again: `cockpit run
    # --rerun-changed`), kept as history with where their run directory was moved (cockpit/store/results.py)
    """
    CREATE TABLE result_history (
        study INTEGER NOT NULL REFERENCES studies(id),
        config_id TEXT NOT NULL,
        job_id TEXT,
        result_json TEXT NOT NULL,
        collected_at REAL NOT NULL,
        retired_at REAL NOT NULL,
        run_dir TEXT NOT NULL
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
# The oldest schema a browsing (read-only) cockpit reads as it is, without migrating it: every migration since
# only added tables that their readers tolerate missing (cockpit/store/preflights.py,
# cockpit/store/predictions.py). Raise it when a
# migration changes what the snapshot or the report read.
READABLE_SCHEMA = 1


def xdg_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hlm-cockpit"


def default_store_path(study_name: str, local_study_dir: str | None = None) -> Path:
    """In the study's directory when it is on this machine (local executor), else the XDG data dir."""
    if local_study_dir:
        return Path(local_study_dir) / STORE_FILE
    return xdg_data_dir() / f"{study_name}.sqlite"


class LockedConnection:
    """The sqlite3 connection behind one re-entrant lock: the TUI reads snapshots from a worker thread
    while the runner writes from the event loop, and a transaction holds the lock from BEGIN to COMMIT."""

    generation = 0  # what a writer reads changes only through its own writes (see FollowedFile.generation)

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock, path: Path) -> None:
        self._conn, self._lock, self._path = conn, lock, path

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        with self._lock, self._full_is_one_line():
            cur = self._conn.execute(sql, args)
            rows = Rows(cur.fetchall())
            rows.lastrowid = cur.lastrowid
            return rows

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._lock, self._full_is_one_line():
            self._conn.executemany(sql, rows)

    @contextmanager
    def _full_is_one_line(self) -> Iterator[None]:
        """SQLite's "database or disk is full" as StoreFull, naming the store and the space (store_full)."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            full = store_full(self._path, exc)
            if full is None:
                raise
            raise full from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def look(self) -> Iterator[None]:
        """A writer's connection always sees the file as it is (see FollowedFile.look)."""
        yield


class Database:
    """One store file, opened for writing (WAL, migrated to SCHEMA_VERSION) or read-only (browsed as it is).
    The base of every part of `cockpit.store.StudyStore`: they share its connection, lock and `tx()`."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        """`read_only` browses a store without ever writing it (SQLite `mode=ro`): a recording, a copy, a
        store in a read-only directory. It must already be a cockpit store of this schema."""
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._depth = 0
        self.db: LockedConnection | FollowedFile  # a followed file when read-only (a browsed recording)
        if read_only:
            self._open_read_only()
        else:
            _private(self.path)
            try:
                conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
                self.db = LockedConnection(conn, self._lock, self.path)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.execute("PRAGMA foreign_keys=ON")
            except sqlite3.DatabaseError as exc:
                raise store_full(self.path, exc) or StoreError(f"{self.path}: not a usable cockpit store ({exc})") from exc
            self._migrate()

    def _open_read_only(self) -> None:
        from cockpit.store.browse import FollowedFile  # browse builds on Rows and StoreError above

        if not self.path.is_file():
            raise StoreError(f"{self.path}: no such store")
        if self.path.stat().st_size == 0:
            raise StoreError(f"{self.path}: empty file, not a cockpit store")
        try:  # SQLite would only say "unable to open database file"
            self.path.open("rb").close()
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read the store ({exc.strerror or exc})") from exc
        self.db = FollowedFile(self.path, self._lock)
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except (sqlite3.DatabaseError, OSError) as exc:
            self.db.close()
            raise StoreError(f"{self.path}: not a usable cockpit store ({exc})") from exc
        if not READABLE_SCHEMA <= version <= SCHEMA_VERSION:
            self.db.close()
            what = ("not a cockpit store" if version == 0 else
                    f"store schema {version}, this cockpit reads {READABLE_SCHEMA} to {SCHEMA_VERSION}"
                    + ("; upgrade hlm-cockpit" if version > SCHEMA_VERSION else ""))
            raise StoreError(f"{self.path}: {what} (opened read-only, so it was not changed)")

    def _migrate(self) -> None:
        with self._lock:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: store schema {version} is newer than this cockpit ({SCHEMA_VERSION}); "
                    f"upgrade hlm-cockpit"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                with self.tx() as db:
                    for stmt in MIGRATIONS[target - 1].split(";"):
                        if stmt.strip():
                            db.execute(stmt)
                    db.execute(f"PRAGMA user_version = {target}")

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One look at the file: a read-only store re-reads it as it is now (a live cockpit may be writing
        it) and every query inside sees the same state; for a writer this is a no-op."""
        with self._lock, self.db.look():
            yield

    @property
    def generation(self) -> int:
        """Bumped whenever a browsed file may have changed under us (0 for a writer): part of cache keys."""
        return self.db.generation

    @contextmanager
    def tx(self) -> Iterator[LockedConnection]:
        """One transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on error. Nested calls join the
        outer transaction, so a runner tick can update 1000 jobs with one commit."""
        if self.read_only or not isinstance(self.db, LockedConnection):
            raise StoreError(f"{self.path}: opened read-only (browsing never writes a store)")
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.db
                finally:
                    self._depth -= 1
                return
            self.db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                self._depth = 0
                with contextlib.suppress(sqlite3.OperationalError, StoreError):  # SQLite may have rolled back itself
                    self.db.execute("ROLLBACK")
                raise
            self._depth = 0
            self.db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def schema_version(self) -> int:
        """PRAGMA user_version. Only the tests call it (kept: the migration tests' seam, one line)."""
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])


def store_full(path: Path, exc: sqlite3.Error) -> StoreFull | None:
    """The error as StoreFull when the store's disk is full: SQLITE_FULL, or an I/O error (SQLite's shared
    memory file cannot grow) where the directory has no space left."""
    code = getattr(exc, "sqlite_errorcode", None)
    free = shutil.disk_usage(path.parent).free
    io_error = code is not None and code & 0xFF == sqlite3.SQLITE_IOERR
    if code != sqlite3.SQLITE_FULL and "disk is full" not in str(exc) and not (io_error and free < MIN_FREE_BYTES):
        return None
    return StoreFull(f"{path}: the disk holding the store is full ({size_words(free)} free): the cockpit stops "
                     "writing; everything written before is kept (free space, then run again to resume)")


MIN_FREE_BYTES = 64 * 1024  # below this, SQLite's I/O errors on the store are its disk filling


def _private(path: Path) -> None:
    """The store is the owner's alone, whatever the umask: its directory made 0700 where we create it, the
    file 0600 (an older store too), and so its -wal and -shm, which SQLite creates with the database's mode."""
    make_dirs(path.parent, Sharing())
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.chmod(0o600)
