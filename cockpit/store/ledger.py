"""The job ledger: studies, their configurations, every submission with its state history, problems.

The crash-safety rule lives here: the *intent* to submit a configuration (`record_intent`) is committed
before ``sbatch`` runs and the job id (`record_submitted`) right after, so a cockpit killed at any moment
can reconcile with the cluster on restart and never submit a configuration twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cockpit.launch.backend import ConnectionState
from cockpit.launch.maintenance import Reservation
from cockpit.store.database import Database, StoreError
from cockpit.store.snapshot import ACTIVE_STATES


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


class Ledger(Database):
    """Tables `studies`, `configs`, `jobs`, `job_states` and `problems`."""

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

    def study_settings(self, study: int) -> tuple[str, float | None, float | None, str]:
        """(cluster, node_hour_budget, last_poll_at, spec_path) as last recorded."""
        cluster, budget, last_poll, spec = self.db.execute(
            "SELECT cluster, node_hour_budget, last_poll_at, spec_path FROM studies WHERE id=?", (study,)
        ).fetchone()
        return cluster, budget, last_poll, spec or ""

    def set_last_poll(self, study: int, t: float) -> None:
        with self.tx() as db:
            db.execute("UPDATE studies SET last_poll_at=? WHERE id=?", (t, study))

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

    def withdraw_intent(self, job_row: int) -> None:
        """A 'submitting' row whose sbatch answered "not now": nothing was queued, so no attempt is left
        behind (the configuration stays to submit)."""
        with self.tx() as db:
            db.execute("DELETE FROM job_states WHERE job=? AND state='submitting'", (job_row,))
            db.execute("DELETE FROM jobs WHERE id=? AND state='submitting'", (job_row,))

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

    def node_hours_used(self, study: int) -> float:
        row = self.db.execute(
            "SELECT COALESCE(SUM(COALESCE(elapsed_s, 0) * COALESCE(nodes, 1)), 0) FROM jobs WHERE study=?", (study,)
        ).fetchone()
        return float(row[0]) / 3600.0

    # -- problems -------------------------------------------------------------------------------------
    def add_problem(self, study: int, source: str, message: str) -> None:
        with self.tx() as db:
            db.execute("INSERT INTO problems (study, t, source, message) VALUES (?, ?, ?, ?)",
                       (study, time.time(), source, message))

    def problems(self, study: int, limit: int = 50) -> list[str]:
        rows = self.db.execute(
            "SELECT source, message FROM problems WHERE study=? ORDER BY id DESC LIMIT ?", (study, limit)
        ).fetchall()
        return [f"{s}: {m}" for s, m in rows]


@dataclass
class LiveStatus:
    """In-memory facts the snapshot shows but that need not survive a restart."""

    connection: ConnectionState = ConnectionState.DISCONNECTED
    detail: str = ""
    cluster: str = ""
    waiting: str = ""  # the site limit submissions wait for ("QOS submit limit (3 of 3 in use)"), if any
    scheduler: str = ""  # while the controller is away: "Slurm not answering since 14:05" (cockpit/run/outage.py)
    maintenance: str = ""  # a maintenance reservation the study's time limit crosses, with the limit that fits
    reservations: tuple[Reservation, ...] = ()  # the scheduler's reservations, as last read
