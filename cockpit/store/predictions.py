"""Each configuration's prediction as first made (table `first_predictions`, store schema 3): kept once, when the
plan first predicts the configuration, and never updated, so that once it has run the plan and the report set its
measurement beside both the first prediction and the refit one (docs/prediction.md, "A prediction that learns")."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING

from cockpit.forecast.prediction import Prediction

if TYPE_CHECKING:
    from cockpit.store import StudyStore


def keep_first(store: StudyStore, study_key: int, predicted: Mapping[str, Prediction]) -> None:
    """Keep the predictions of configurations that have none kept yet (the first stays)."""
    if not predicted:
        return
    with store.tx() as db:
        db.executemany("INSERT OR IGNORE INTO first_predictions (study, config_id, made_at, prediction_json) "
                       "VALUES (?, ?, ?, ?)",
                       [(study_key, cid, time.time(), json.dumps(asdict(p))) for cid, p in predicted.items()])


def first(store: StudyStore, study_key: int) -> dict[str, Prediction]:
    """The kept first predictions by config id (none in a store older than the table, browsed read-only)."""
    try:
        rows = store.db.execute("SELECT config_id, prediction_json FROM first_predictions WHERE study = ?",
                                (study_key,)).fetchall()
    except sqlite3.OperationalError:  # no such table: a store written before it existed
        return {}
    return {cid: Prediction(**json.loads(text)) for cid, text in rows}
