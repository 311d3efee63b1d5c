"""The cockpit's crash-safe memory: one sqlite3 file (WAL) per study.

What it guarantees: the *intent* to submit a configuration is committed before ``sbatch`` runs and the job
id right after, so a cockpit killed at any moment can reconcile with the cluster on restart and never submit
a configuration twice; results, downsampled metrics and GPU samples are kept for the screens and reports.
The schema is versioned (``PRAGMA user_version``) and upgraded by the ordered MIGRATIONS below.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cockpit.snapshot import (
    ACTIVE_STATES,
    ConfigRow,
    ConnectionState,
    GpuSample,
    GpuSeries,
    JobRow,
    MetricPoint,
    StudySnapshot,
    count_states,
)
from trainer.rundir import GPU_FILE, RESULT_FILE

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
    # 2: preflights (cockpit/preflight/record.py): one row per preflight, keyed by the study file's digest
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
]
SCHEMA_VERSION = len(MIGRATIONS)
# The oldest schema a browsing (read-only) cockpit reads as it is, without migrating it: every migration since
# only added tables that their readers tolerate missing (cockpit/preflight/record.py). Raise it when a
# migration changes what the snapshot or the report read.
READABLE_SCHEMA = 1
LOG_LINES_KEPT = 2000  # per configuration


class StoreError(Exception):
    """The store file cannot be used (newer schema, corrupt, unknown study)."""


def xdg_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hlm-cockpit"


def default_store_path(study_name: str, local_study_dir: str | None = None) -> Path:
    """In the study's directory when it is on this machine (local executor), else the XDG data dir."""
    if local_study_dir:
        return Path(local_study_dir) / STORE_FILE
    return xdg_data_dir() / f"{study_name}.sqlite"


@dataclass
class JobRecord:
    """One row of ``jobs`` as the runner uses it."""

    id: int
    config_id: str
    attempt: int
    job_id: str | None
    state: str
    reason: str
    intent_at: float
    submitted_at: float | None
    ended_at: float | None
    elapsed_s: float | None
    nodes: int | None
    started_at: float | None = None
    time_limit_s: float | None = None
    nodelist: str = ""
    exit_code: int | None = None
    held: bool = False


@dataclass
class LiveStatus:
    """In-memory facts the snapshot shows but that need not survive a restart."""

    connection: ConnectionState = ConnectionState.DISCONNECTED
    detail: str = ""
    cluster: str = ""


def _f(value: Any) -> float | None:
    """A finite float or None (JSON may carry strings, NaN, null)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


class _Rows(list):
    """A fully fetched result (so no cursor outlives the lock), with the cursor's lastrowid."""

    lastrowid: int | None = None

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return list(self)


class _LockedConnection:
    """The sqlite3 connection behind one re-entrant lock: the TUI reads snapshots from a worker thread
    while the runner writes from the event loop, and a transaction holds the lock from BEGIN to COMMIT."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn, self._lock = conn, lock

    def execute(self, sql: str, args: Sequence[Any] = ()) -> _Rows:
        with self._lock:
            cur = self._conn.execute(sql, args)
            rows = _Rows(cur.fetchall())
            rows.lastrowid = cur.lastrowid
            return rows

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._lock:
            self._conn.executemany(sql, rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def look(self) -> Iterator[None]:
        """A writer's connection always sees the file as it is (see _FollowedFile.look)."""
        yield


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


class _FollowedFile:
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

    def execute(self, sql: str, args: Sequence[Any] = ()) -> _Rows:
        with self.look():
            assert self._conn is not None
            cur = self._conn.execute(sql, args)
            rows = _Rows(cur.fetchall())
            rows.lastrowid = cur.lastrowid
            return rows

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise StoreError(f"{self.path}: opened read-only (browsing never writes a store)")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _num(value: Any) -> float | None:
    """_f with a fast path for the common case of a finite float."""
    if type(value) is float and value - value == 0.0:
        return value
    return _f(value)


class StudyStore:
    """All persistent state of the studies driven from this file. Safe to share between threads."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        """`read_only` browses a store without ever writing it (SQLite `mode=ro`): a recording, a copy, a
        store in a read-only directory. It must already be a cockpit store of this schema."""
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self.db: _LockedConnection | _FollowedFile  # a followed file when read-only (a browsed recording)
        if read_only:
            self._open_read_only()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
                self.db = _LockedConnection(conn, self._lock)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.execute("PRAGMA foreign_keys=ON")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: not a usable cockpit store ({exc})") from exc
        self._depth = 0
        self.live: dict[str, LiveStatus] = {}
        self._versions: dict[tuple[int, str], int] = {}  # bumped when metrics rows arrive
        self._curves: dict[tuple[int, str, int], tuple[tuple[int, int], list[MetricPoint]]] = {}
        self._analysis: dict[int, tuple[tuple, dict[str, dict[str, Any]]]] = {}
        self._results: dict[int, tuple[tuple, dict[str, dict[str, Any]]]] = {}
        self._bad_results: dict[int, dict[str, str]] = {}  # config id -> why its result row does not parse
        self._migrate()

    # -- plumbing -------------------------------------------------------------------------------------
    def _open_read_only(self) -> None:
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no such store")
        if self.path.stat().st_size == 0:
            raise StoreError(f"{self.path}: empty file, not a cockpit store")
        self.db = _FollowedFile(self.path, self._lock)
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

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One look at the file: a read-only store re-reads it as it is now (a live cockpit may be writing
        it) and every query inside sees the same state; for a writer this is a no-op."""
        with self._lock, self.db.look():
            yield

    def _generation(self) -> int:
        return self.db.generation if isinstance(self.db, _FollowedFile) else 0

    def _migrate(self) -> None:
        if self.read_only:
            return
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
    def tx(self) -> Iterator[_LockedConnection]:
        """One transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on error. Nested calls join the
        outer transaction, so a runner tick can update 1000 jobs with one commit."""
        if self.read_only or not isinstance(self.db, _LockedConnection):
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
                self.db.execute("ROLLBACK")
                raise
            self._depth = 0
            self.db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    # -- studies and configurations -------------------------------------------------------------------
    def ensure_study(self, name: str, study_id: str, *, spec_path: str = "", cluster: str = "",
                     node_hour_budget: float | None = None) -> int:
        with self.tx() as db:
            row = db.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
            if row:
                db.execute(
                    "UPDATE studies SET study_id=?, spec_path=?, cluster=?, node_hour_budget=? WHERE id=?",
                    (study_id, spec_path, cluster, node_hour_budget, row[0]),
                )
                return int(row[0])
            cur = db.execute(
                "INSERT INTO studies (name, study_id, spec_path, cluster, node_hour_budget, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, study_id, spec_path, cluster, node_hour_budget, time.time()),
            )
            return int(cur.lastrowid or 0)

    def study_key(self, name: str) -> int:
        row = self.db.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        if not row:
            known = [r[0] for r in self.db.execute("SELECT name FROM studies")]
            raise StoreError(f"{self.path}: no study named {name!r} (known: {', '.join(known) or 'none'})")
        return int(row[0])

    def study_names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM studies ORDER BY id")]

    def upsert_configs(self, study: int, rows: Iterable[dict[str, Any]]) -> None:
        """rows: config_id, group_id, is_baseline, workers, nodes, values (dict), run_dir, total_steps."""
        with self.tx() as db:
            db.executemany(
                "INSERT INTO configs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study, config_id) DO UPDATE "
                "SET run_dir=excluded.run_dir, total_steps=COALESCE(excluded.total_steps, configs.total_steps), "
                "values_json=excluded.values_json",
                [
                    (study, r["config_id"], r["group_id"], int(bool(r["is_baseline"])), int(r["workers"]),
                     int(r["nodes"]), json.dumps(r["values"], sort_keys=True), r["run_dir"], r.get("total_steps"))
                    for r in rows
                ],
            )

    def configs(self, study: int) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT config_id, group_id, is_baseline, workers, nodes, values_json, run_dir, total_steps "
            "FROM configs WHERE study = ? ORDER BY rowid", (study,)
        )
        return [
            {"config_id": c, "group_id": g, "is_baseline": bool(b), "workers": w, "nodes": n,
             "values": json.loads(v), "run_dir": d, "total_steps": s}
            for c, g, b, w, n, v, d, s in cur
        ]

    # -- jobs -----------------------------------------------------------------------------------------
    def record_intent(self, study: int, config_id: str) -> int:
        """Committed before sbatch runs: a crash after this line leaves a 'submitting' row to reconcile."""
        with self.tx() as db:
            attempt = db.execute(
                "SELECT COALESCE(MAX(attempt), 0) + 1 FROM jobs WHERE study=? AND config_id=?", (study, config_id)
            ).fetchone()[0]
            now = time.time()
            cur = db.execute(
                "INSERT INTO jobs (study, config_id, attempt, state, intent_at) VALUES (?, ?, ?, 'submitting', ?)",
                (study, config_id, attempt, now),
            )
            db.execute("INSERT INTO job_states VALUES (?, ?, 'submitting', '')", (cur.lastrowid, now))
            return int(cur.lastrowid or 0)

    def record_submitted(self, job_row: int, job_id: str) -> None:
        with self.tx() as db:
            now = time.time()
            db.execute(
                "UPDATE jobs SET job_id=?, state='pending', submitted_at=? WHERE id=?", (job_id, now, job_row)
            )
            db.execute("INSERT INTO job_states VALUES (?, ?, 'pending', '')", (job_row, now))

    def record_submit_failed(self, job_row: int, message: str) -> None:
        self.set_job_state(job_row, "failed", reason=message, ended=True)

    def adopt(self, job_row: int, job_id: str, state: str, reason: str = "adopted on restart") -> None:
        """A 'submitting' row whose sbatch did go through (found on the cluster by name/comment)."""
        with self.tx() as db:
            now = time.time()
            db.execute(
                "UPDATE jobs SET job_id=?, state=?, submitted_at=COALESCE(submitted_at, ?) WHERE id=?",
                (job_id, state, now, job_row),
            )
            db.execute("INSERT INTO job_states VALUES (?, ?, ?, ?)", (job_row, now, state, reason))

    def add_adopted_job(self, study: int, config_id: str, job_id: str, state: str) -> int:
        """A job found on the cluster that the store never heard of (e.g. the store file was lost)."""
        row = self.record_intent(study, config_id)
        self.adopt(row, job_id, state, "found on the cluster")
        return row

    def set_job_state(self, job_row: int, state: str, *, reason: str = "", elapsed_s: float | None = None,
                      time_limit_s: float | None = None, nodes: int | None = None, nodelist: str = "",
                      exit_code: int | None = None, held: bool = False, ended: bool = False) -> bool:
        """Update a job; a state change is appended to its history. Returns whether the state changed."""
        with self.tx() as db:
            old = db.execute("SELECT state, reason, started_at FROM jobs WHERE id=?", (job_row,)).fetchone()
            if old is None:
                raise StoreError(f"{self.path}: no job row {job_row}")
            now = time.time()
            started = old[2] or (now - (elapsed_s or 0.0) if state == "running" else None)
            db.execute(
                "UPDATE jobs SET state=?, reason=?, elapsed_s=COALESCE(?, elapsed_s), "
                "time_limit_s=COALESCE(?, time_limit_s), nodes=COALESCE(?, nodes), "
                "nodelist=CASE WHEN ?='' THEN nodelist ELSE ? END, exit_code=COALESCE(?, exit_code), held=?, "
                "started_at=COALESCE(started_at, ?), ended_at=CASE WHEN ? THEN COALESCE(ended_at, ?) ELSE NULL END "
                "WHERE id=?",
                (state, reason, elapsed_s, time_limit_s, nodes, nodelist, nodelist, exit_code, int(held),
                 started, int(ended), now, job_row),
            )
            changed = (old[0], old[1]) != (state, reason)
            if changed:
                db.execute("INSERT INTO job_states VALUES (?, ?, ?, ?)", (job_row, now, state, reason))
            return changed

    def jobs(self, study: int, *, where: str = "", args: Sequence[Any] = ()) -> list[JobRecord]:
        sql = (
            "SELECT id, config_id, attempt, job_id, state, reason, intent_at, submitted_at, ended_at, elapsed_s, "
            "nodes, started_at, time_limit_s, nodelist, exit_code, held "
            f"FROM jobs WHERE study = ? {('AND ' + where) if where else ''} ORDER BY id"
        )
        return [JobRecord(*r) for r in self.db.execute(sql, (study, *args))]

    def active_jobs(self, study: int) -> list[JobRecord]:
        marks = ",".join("?" * len(ACTIVE_STATES))
        return self.jobs(study, where=f"state IN ({marks})", args=sorted(ACTIVE_STATES))

    def latest_jobs(self, study: int) -> dict[str, JobRecord]:
        latest: dict[str, JobRecord] = {}
        for job in self.jobs(study):
            latest[job.config_id] = job
        return latest

    def state_history(self, job_row: int) -> list[tuple[float, str, str]]:
        return list(self.db.execute("SELECT t, state, reason FROM job_states WHERE job=? ORDER BY rowid", (job_row,)))

    def node_hours_used(self, study: int) -> float:
        row = self.db.execute(
            "SELECT COALESCE(SUM(COALESCE(elapsed_s, 0) * COALESCE(nodes, 1)), 0) FROM jobs WHERE study=?", (study,)
        ).fetchone()
        return float(row[0]) / 3600.0

    # -- results and analysis -------------------------------------------------------------------------
    def put_result(self, study: int, config_id: str, result: dict[str, Any], job_id: str | None = None) -> None:
        timing = result.get("timing") or {}
        throughput = result.get("throughput") or {}
        with self.tx() as db:
            db.execute(
                "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study, config_id) DO UPDATE SET "
                "job_id=excluded.job_id, status=excluded.status, train_time_s=excluded.train_time_s, "
                "tokens_per_s=excluded.tokens_per_s, result_json=excluded.result_json, "
                "collected_at=excluded.collected_at",
                (study, config_id, job_id, str(result.get("status", "completed")), _f(timing.get("train_time_s")),
                 _f(throughput.get("tokens_per_s")), json.dumps(result, sort_keys=True), time.time()),
            )

    def results(self, study: int) -> dict[str, dict[str, Any]]:
        """result.json per configuration id. Parsed once and kept until a result is added or replaced, so
        the TUI's refresh, the runner's plan and the analysis do not re-read every result each poll. Treat
        the dicts as read-only."""
        stamp = self._results_stamp(study)
        cached = self._results.get(study)
        if cached is None or cached[0] != stamp:
            parsed: dict[str, dict[str, Any]] = {}
            bad: dict[str, str] = {}
            for cid, text in self.db.execute("SELECT config_id, result_json FROM results WHERE study=?", (study,)):
                try:
                    value = json.loads(text)
                except (TypeError, ValueError) as exc:  # JSONDecodeError, or not text at all
                    bad[cid] = str(exc)
                    continue
                if isinstance(value, dict):
                    parsed[cid] = value
                else:
                    bad[cid] = f"expected a JSON object, found {type(value).__name__}"
            cached = self._results[study] = (stamp, parsed)
            self._bad_results[study] = bad
        return dict(cached[1])

    def unreadable_results(self, study: int) -> dict[str, str]:
        """Configuration id -> why its result row does not parse (left out of results())."""
        self.results(study)
        return dict(self._bad_results.get(study) or {})

    def result_problems(self, study: int) -> list[str]:
        """One line per result row that does not parse (a corrupt or hand-edited store): the run named by
        its label and id, and how to collect its result.json again. Those runs are left out of results()
        (and has_valid_result is False for them), so every other run is still shown."""
        bad = self.unreadable_results(study)
        if not bad:
            return []
        from cockpit.spec import config_label

        configs = {c["config_id"]: c for c in self._configs_safe(study)}
        row = self.db.execute("SELECT spec_path FROM studies WHERE id=?", (study,)).fetchone()
        spec = (row[0] if row else "") or "STUDY.toml"
        out = []
        for cid, error in sorted(bad.items()):
            c = configs.get(cid, {})
            label = config_label(c.get("values") or {}) if c else "unknown configuration"
            where = f"{c['run_dir']}/{RESULT_FILE}" if c.get("run_dir") else RESULT_FILE
            out.append(f"{label} ({cid}): result row is not valid JSON ({error}); re-collect it from {where} "
                       f"with `cockpit run {spec}` (runs whose result does not parse are collected again)")
        return out

    def _configs_safe(self, study: int) -> list[dict[str, Any]]:
        """configs() where a row whose values do not parse still names its run (with no values)."""
        try:
            return self.configs(study)
        except ValueError:
            rows = self.db.execute("SELECT config_id, run_dir FROM configs WHERE study=?", (study,))
            return [{"config_id": c, "values": {}, "run_dir": d} for c, d in rows]

    def _results_stamp(self, study: int) -> tuple:
        """Changes whenever a result is added or replaced (put_result sets collected_at)."""
        return tuple(self.db.execute(
            "SELECT COUNT(*), COALESCE(MAX(collected_at), 0) FROM results WHERE study=?", (study,)).fetchone())

    def has_valid_result(self, study: int, config_id: str) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM results WHERE study=? AND config_id=? AND status='completed' AND train_time_s IS NOT NULL",
            (study, config_id),
        ).fetchone()
        return row is not None and config_id in self.results(study)  # a row that does not parse is collected again

    def analysis(self, study: int) -> dict[str, dict[str, Any]]:
        """cockpit.analysis over the collected result.json files, per configuration id.

        Nothing derived is stored: a store written by an older version (which kept an `analysis` table)
        is recomputed from its results, so the TUI and the report always show the same numbers. The rows
        are cached until a result is added or replaced.
        """
        stamp = self._results_stamp(study)
        cached = self._analysis.get(study)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        from cockpit.analysis import analyse, by_config

        rows = by_config(analyse(self.results(study).values()))
        self._analysis[study] = (stamp, rows)
        return rows

    # -- live data ------------------------------------------------------------------------------------
    def add_metrics(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        """Insert metrics.jsonl records in one transaction (executemany); returns how many were kept."""
        with self.tx():
            return self._metric_rows(study, config_id, records)

    def add_gpu_samples(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        """Insert gpu.jsonl samples (the {"nvml": "unavailable"} line is skipped); returns how many."""
        with self.tx():
            return self._gpu_rows(study, config_id, records)

    def add_log_lines(self, study: int, config_id: str, lines: Sequence[str]) -> None:
        """Keep the last LOG_LINES_KEPT lines of a configuration's log (stdout/stderr/train.log)."""
        if not lines:
            return
        with self.tx() as db:
            start = db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM log_lines WHERE study=? AND config_id=?", (study, config_id)
            ).fetchone()[0]
            db.executemany(
                "INSERT INTO log_lines VALUES (?, ?, ?, ?)",
                [(study, config_id, start + i + 1, line) for i, line in enumerate(lines[-LOG_LINES_KEPT:])],
            )
            db.execute(
                "DELETE FROM log_lines WHERE study=? AND config_id=? AND seq <= ?",
                (study, config_id, start + len(lines) - LOG_LINES_KEPT),
            )

    def log_tail(self, study: int, config_id: str, max_lines: int = 200) -> list[str]:
        rows = self.db.execute(
            "SELECT line FROM log_lines WHERE study=? AND config_id=? ORDER BY seq DESC LIMIT ?",
            (study, config_id, max_lines),
        ).fetchall()
        return [r[0] for r in reversed(rows)]

    def get_offset(self, study: int, config_id: str, file: str) -> tuple[int, int]:
        row = self.db.execute(
            "SELECT offset, bad_lines FROM follow_offsets WHERE study=? AND config_id=? AND file=?",
            (study, config_id, file),
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def set_offset(self, study: int, config_id: str, file: str, offset: int, bad_lines: int) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO follow_offsets VALUES (?, ?, ?, ?, ?) ON CONFLICT (study, config_id, file) "
                "DO UPDATE SET offset=excluded.offset, bad_lines=excluded.bad_lines",
                (study, config_id, file, offset, bad_lines),
            )

    def ingest(self, study: int, config_id: str, file: str, records: list[dict[str, Any]], next_offset: int,
               bad_lines: int) -> None:
        """Records of one followed chunk and the new offset in ONE transaction: after a crash the offset
        never points past data that was not stored, nor before data that was (no loss, no duplicates)."""
        with self.tx() as db:
            if file == GPU_FILE:
                self._gpu_rows(study, config_id, records)
            else:
                self._metric_rows(study, config_id, records)
            prev_bad = self.get_offset(study, config_id, file)[1]
            db.execute(
                "INSERT INTO follow_offsets VALUES (?, ?, ?, ?, ?) ON CONFLICT (study, config_id, file) "
                "DO UPDATE SET offset=excluded.offset, bad_lines=excluded.bad_lines",
                (study, config_id, file, next_offset, prev_bad + bad_lines),
            )

    def _metric_rows(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        """Rows for ``metrics`` (the hot path of ingest: plain floats pass through, anything else is checked)."""
        rows: list[tuple[Any, ...]] = []
        append = rows.append
        total = None
        for r in records:
            step, t, rank = r.get("step"), r.get("t"), r.get("rank", 0)
            if type(step) is not int or (type(t) is not float and _f(t) is None):
                continue
            if type(r.get("total_steps")) is int and r["total_steps"] > 0:
                total = r["total_steps"]
            steps, interval = r.get("steps_in_interval"), r.get("interval_s")
            step_time = (interval / steps if type(steps) is int and steps > 0 and type(interval) is float
                         else None)
            append((
                study, config_id, t, rank if type(rank) is int else 0, step, _num(r.get("loss")),
                _num(r.get("tokens_per_s")), _num(r.get("samples_per_s")), step_time, _num(r.get("data_wait_s")),
                _num(r.get("compute_s")), _num(r.get("comm_s")), _num(r.get("optimizer_s")),
                _num(r.get("train_time_s")),
            ))
        self.db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        if total is not None:  # the trainer's own count (a study that sets epochs has no other): progress, eta
            self.db.execute("UPDATE configs SET total_steps=? WHERE study=? AND config_id=?", (total, study, config_id))
        if rows:
            self._versions[(study, config_id)] = self._versions.get((study, config_id), 0) + 1
        return len(rows)

    def _gpu_rows(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        rows = []
        for r in records:
            t, gpu = _f(r.get("t")), r.get("gpu")
            if t is None or not isinstance(gpu, int):
                continue
            rows.append((
                study, config_id, t, str(r.get("host", "")), gpu, _f(r.get("util_pct")),
                _f(r.get("mem_used_bytes")), _f(r.get("mem_total_bytes")), _f(r.get("power_w")), _f(r.get("temp_c")),
            ))
        self.db.executemany("INSERT INTO gpu_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def metrics(self, study: int, config_id: str, *, rank: int | None = 0, limit: int = 500) -> list[MetricPoint]:
        """The run's curve downsampled to about ``limit`` points spread evenly over the whole run (the
        first and the latest point always included), oldest first."""
        where = "study=? AND config_id=?" + (" AND rank=?" if rank is not None else "")
        args: tuple[Any, ...] = (study, config_id) + ((rank,) if rank is not None else ())
        cols = ("t, step, rank, loss, tokens_per_s, samples_per_s, step_time_s, data_wait_s, compute_s, comm_s, "
                "optimizer_s, train_time_s")
        sql = (
            f"SELECT {cols} FROM (SELECT {cols}, ROW_NUMBER() OVER (ORDER BY t) AS rn, COUNT(*) OVER () AS n "
            f"FROM metrics WHERE {where}) WHERE (rn - 1) % ((n + ? - 1) / ?) = 0 OR rn = n ORDER BY t"
        )
        return [MetricPoint(*r) for r in self.db.execute(sql, (*args, limit, limit))]

    def _curve(self, study: int, config_id: str, limit: int) -> list[MetricPoint]:
        """metrics() cached until new rows arrive for that configuration (finished runs cost nothing)."""
        version = (self._versions.get((study, config_id), 0), self._generation())  # a browsed file re-read
        cached = self._curves.get((study, config_id, limit))
        if cached is not None and cached[0] == version:
            return cached[1]
        points = self.metrics(study, config_id, limit=limit)
        self._curves[(study, config_id, limit)] = (version, points)
        return points

    def metric_count(self, study: int, config_id: str | None = None) -> int:
        if config_id is None:
            return int(self.db.execute("SELECT COUNT(*) FROM metrics WHERE study=?", (study,)).fetchone()[0])
        return int(self.db.execute(
            "SELECT COUNT(*) FROM metrics WHERE study=? AND config_id=?", (study, config_id)).fetchone()[0])

    def gpu_series(self, study: int, config_id: str, *, since: float) -> list[GpuSeries]:
        rows = self.db.execute(
            "SELECT t, host, gpu, util_pct, mem_used_bytes, mem_total_bytes, power_w, temp_c FROM gpu_samples "
            "WHERE study=? AND config_id=? AND t >= ? ORDER BY t", (study, config_id, since),
        ).fetchall()
        series: dict[tuple[str, int], list[GpuSample]] = {}
        for r in rows:
            series.setdefault((r[1], r[2]), []).append(GpuSample(*r))
        return [GpuSeries(config_id, h, g, tuple(s)) for (h, g), s in sorted(series.items())]

    def add_problem(self, study: int, source: str, message: str) -> None:
        with self.tx() as db:
            db.execute("INSERT INTO problems (study, t, source, message) VALUES (?, ?, ?, ?)",
                       (study, time.time(), source, message))

    def problems(self, study: int, limit: int = 50) -> list[str]:
        rows = self.db.execute(
            "SELECT source, message FROM problems WHERE study=? ORDER BY id DESC LIMIT ?", (study, limit)
        ).fetchall()
        return [f"{s}: {m}" for s, m in rows]

    def set_last_poll(self, study: int, t: float) -> None:
        with self.tx() as db:
            db.execute("UPDATE studies SET last_poll_at=? WHERE id=?", (t, study))

    # -- the view -------------------------------------------------------------------------------------
    def snapshot(self, study_name: str, *, metrics_points: int = 200, gpu_window_s: float = 300.0,
                 now: float | None = None) -> StudySnapshot:
        """Everything the screens draw, as plain dataclasses (see cockpit.snapshot)."""
        now = time.time() if now is None else now
        with self.reading():
            key = self.study_key(study_name)
            cluster, budget, last_poll = self.db.execute(
                "SELECT cluster, node_hour_budget, last_poll_at FROM studies WHERE id=?", (key,)
            ).fetchone()
            configs = self.configs(key)
            jobs = self.jobs(key)
            results = self.results(key)
            bad = self._bad_results.get(key) or {}
            analysis = self.analysis(key)
            latest = {j.config_id: j for j in jobs}
            job_rows = [self._job_row(j) for j in jobs]
            metrics: dict[str, list[MetricPoint]] = {}
            gpus: list[GpuSeries] = []
            rows: list[ConfigRow] = []
            for c in configs:
                cid = c["config_id"]
                job = latest.get(cid)
                res = results.get(cid)
                an = analysis.get(cid, {})
                points = self._curve(key, cid, metrics_points) if job is not None else []
                if points:
                    metrics[cid] = points
                if job is not None and job.state in ("running", "completing"):
                    gpus.extend(self.gpu_series(key, cid, since=now - gpu_window_s))
                row = self._config_row(c, job, res, an, points)
                if cid in bad:
                    row = replace(row, verdict="result row is not valid JSON; see the problems line to re-collect it")
                rows.append(row)
            problems = self.result_problems(key) + self.problems(key)
            used = self.node_hours_used(key)
        live = self.live.get(study_name, LiveStatus())
        return StudySnapshot(
            study=study_name,
            cluster=live.cluster or cluster,
            connection=live.connection,
            connection_detail=live.detail,
            taken_at=now,
            last_poll_at=last_poll,
            configs=rows,
            jobs=job_rows,
            metrics=metrics,
            gpus=gpus,
            counts=count_states(rows),
            node_hours_used=used,
            node_hours_budget=budget,
            problems=problems,
            log_reader=lambda cid, n: self.log_tail(key, cid, n),
        )

    @staticmethod
    def _job_row(j: JobRecord) -> JobRow:
        return JobRow(
            config_id=j.config_id, job_id=j.job_id, state=j.state, submitted_at=j.submitted_at,
            started_at=j.started_at, ended_at=j.ended_at, elapsed_s=j.elapsed_s, time_limit_s=j.time_limit_s,
            nodes=j.nodes, node_list=j.nodelist, reason=j.reason, exit_code=j.exit_code, attempt=j.attempt,
            held=bool(j.held),
        )

    @staticmethod
    def _config_row(c: dict[str, Any], job: JobRecord | None, res: dict[str, Any] | None, an: dict[str, Any],
                    points: list[MetricPoint]) -> ConfigRow:
        completed = res is not None and res.get("status") == "completed"
        state = "completed" if completed else (job.state if job else "not_submitted")
        if res is not None and not completed and (job is None or job.state not in ACTIVE_STATES):
            state = "failed"
        timing = (res or {}).get("timing") or {}
        throughput = (res or {}).get("throughput") or {}
        last = points[-1] if points else None
        progress = eta = None
        total = c.get("total_steps")
        if last is not None and total and not completed:
            progress = min(1.0, last.step / total)
            if last.train_time_s and last.step > 0:
                eta = max(0.0, (total - last.step) * last.train_time_s / last.step)
        return ConfigRow(
            config_id=c["config_id"], group_id=c["group_id"], is_baseline=c["is_baseline"], values=c["values"],
            state=state, job_id=job.job_id if job else None, workers=c["workers"],
            train_time_s=_f(timing.get("train_time_s")), tokens_per_s=_f(throughput.get("tokens_per_s")),
            speedup=_f(an.get("speedup")), efficiency=_f(an.get("efficiency")), overhead_s=_f(an.get("overhead_s")),
            work_ratio=_f(an.get("work_ratio")), t_same_work_s=_f(an.get("t_same_work_s")),
            verdict=an.get("verdict") or an.get("note") or "", explanation=an.get("explanation") or "",
            quality_metric=an.get("quality_metric"), quality=_f(an.get("quality")),
            quality_change=_f(an.get("quality_change")),
            progress=1.0 if completed else progress, eta_s=eta,
            last_step=last.step if last else None, last_loss=last.loss if last else None, result=res,
            analysis=an or None,
        )
