"""Collected results: each configuration's raw result.json, parsed once and kept until one changes.

Nothing derived is stored: speedup, efficiency, overhead and verdicts are `cockpit.forecast.analysis` over these
results, computed when read (`cockpit.forecast.analysis.AnalysisCache`; an older store's `analysis` table is ignored).
A row whose JSON does not parse is left out of `results()` and named by `result_problems()`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from typing import Any

from cockpit.store.ledger import Ledger
from cockpit.store.telemetry import finite
from runcontract.contract import RESULT_FILE


class Results(Ledger):
    """Table `results` (built on the ledger: a result belongs to a configuration, which names its run)."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self._results: dict[int, tuple[tuple, dict[str, dict[str, Any]]]] = {}
        self._bad_results: dict[int, dict[str, str]] = {}  # config id -> why its result row does not parse
        super().__init__(path, read_only=read_only)

    def put_result(self, study: int, config_id: str, result: dict[str, Any], job_id: str | None = None) -> None:
        timing = result.get("timing") or {}
        throughput = result.get("throughput") or {}
        with self.tx() as db:
            db.execute(
                "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study, config_id) DO UPDATE SET "
                "job_id=excluded.job_id, status=excluded.status, train_time_s=excluded.train_time_s, "
                "tokens_per_s=excluded.tokens_per_s, result_json=excluded.result_json, "
                "collected_at=excluded.collected_at",
                (study, config_id, job_id, str(result.get("status", "completed")), finite(timing.get("train_time_s")),
                 finite(throughput.get("tokens_per_s")), json.dumps(result, sort_keys=True), time.time()),
            )

    def retire_result(self, study: int, config_id: str, run_dir: str) -> None:
        """Move a configuration's result into result_history (its settings changed and it runs again), noting
        where its run directory now lies; the configuration then has no result until the new run's."""
        with self.tx() as db:
            db.execute("INSERT INTO result_history SELECT study, config_id, job_id, result_json, collected_at, ?, ? "
                       "FROM results WHERE study=? AND config_id=?", (time.time(), run_dir, study, config_id))
            db.execute("DELETE FROM results WHERE study=? AND config_id=?", (study, config_id))

    def result_history(self, study: int) -> list[dict[str, Any]]:
        """The results retired by a rerun, oldest first: config id, result, when and where its files went."""
        try:
            rows = self.db.execute("SELECT config_id, result_json, retired_at, run_dir FROM result_history "
                                   "WHERE study=? ORDER BY retired_at", (study,)).fetchall()
        except sqlite3.OperationalError:  # no such table: a browsed store of an earlier schema
            return []
        return [{"config_id": c, "result": json.loads(r), "retired_at": t, "run_dir": d} for c, r, t, d in rows]

    def results_stamp(self, study: int) -> tuple:
        """Changes whenever a result is added or replaced (put_result sets collected_at): the key of every
        cache over the results (here, and cockpit.forecast.analysis.AnalysisCache)."""
        return tuple(self.db.execute(
            "SELECT COUNT(*), COALESCE(MAX(collected_at), 0) FROM results WHERE study=?", (study,)).fetchone())

    def results(self, study: int) -> dict[str, dict[str, Any]]:
        """result.json per configuration id. Parsed once and kept until a result is added or replaced, so
        the TUI's refresh, the runner's plan and the analysis do not re-read every result each poll. Treat
        the dicts as read-only."""
        stamp = self.results_stamp(study)
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
                    parsed[cid] = self._as_read(study, cid, value)
                else:
                    bad[cid] = f"expected a JSON object, found {type(value).__name__}"
            cached = self._results[study] = (stamp, parsed)
            self._bad_results[study] = bad
        return dict(cached[1])

    def _as_read(self, study: int, config_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """A result as every view reads it: result.json itself here; StudyStore adds each rank's breakdown
        from the metrics table where result.json lacks ranks (cockpit.store.telemetry.followed_ranks)."""
        return result

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
        from cockpit.study.spec import config_label

        configs = {c["config_id"]: c for c in self._configs_safe(study)}
        spec = self.study_settings(study)[3] or "STUDY.toml"
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

    def has_valid_result(self, study: int, config_id: str) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM results WHERE study=? AND config_id=? AND status='completed' AND train_time_s IS NOT NULL",
            (study, config_id),
        ).fetchone()
        return row is not None and config_id in self.results(study)  # a row that does not parse is collected again
