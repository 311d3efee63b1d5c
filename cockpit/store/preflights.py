"""Preflights kept in the study's store (table `preflights`, store schema 2), keyed by the study file's
digest: `cockpit open` and `cockpit run` submit only once the current file's preflight has passed."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING

from cockpit.preflight.checks import PreflightReport

if TYPE_CHECKING:
    from cockpit.store import StudyStore


def save(store: StudyStore, study_key: int, report: PreflightReport) -> None:
    with store.tx() as db:
        db.execute("INSERT INTO preflights (study, digest, passed, created_at, report_json) VALUES (?, ?, ?, ?, ?)",
                   (study_key, report.digest, int(report.passed), report.created_at or time.time(),
                    json.dumps(report.to_json())))


def latest(store: StudyStore, study_name: str, digest: str | None = None) -> PreflightReport | None:
    """The newest preflight of the study (of this digest when given); None when there is none, also in a
    store older than the table (read-only browsing of an old recording)."""
    if study_name not in store.study_names():
        return None
    sql = "SELECT report_json FROM preflights WHERE study = ?" + (" AND digest = ?" if digest else "")
    args: tuple = (store.study_key(study_name), digest) if digest else (store.study_key(study_name),)
    try:
        row = store.db.execute(sql + " ORDER BY id DESC LIMIT 1", args).fetchone()
    except sqlite3.OperationalError:  # no such table: a store written before preflights existed
        return None
    return PreflightReport.from_json(json.loads(row[0])) if row else None


def passed(store: StudyStore, study_name: str, digest: str) -> bool:
    report = latest(store, study_name, digest)
    return report is not None and report.passed
