"""The cockpit's crash-safe memory: one sqlite3 file (WAL) per study, and `StudyStore`, the one object
callers use. Each part has one job and keeps its own transactions:

- database.py   the file: schema and migrations, the connection, `tx()`, read-only opening
- browse.py     reading a store without ever writing it (immutable, a live writer's WAL, a private copy)
- ledger.py     studies, configurations, jobs and their state history, node-hours, problems
- telemetry.py  metrics, GPU samples, log lines and follow offsets (`ingest`), downsampled curves
- results.py    collected result.json files; a run's `breakdown_by_rank` from the metrics each rank wrote
                where its result.json lacks ranks (telemetry.followed_ranks)
The snapshot the screens draw is built by store/snapshot_build.py; the analysis over the results is cached
by cockpit.forecast.analysis.AnalysisCache: nothing derived is stored.
"""

from __future__ import annotations

import os
from typing import Any

from cockpit.store.browse import SIDE_FILES, writer_live
from cockpit.store.database import (
    MIGRATIONS,
    READABLE_SCHEMA,
    SCHEMA_VERSION,
    STORE_FILE,
    StoreError,
    StoreFull,
    default_store_path,
    xdg_data_dir,
)
from cockpit.store.ledger import JobRecord, LiveStatus
from cockpit.store.results import Results
from cockpit.store.snapshot import StudySnapshot
from cockpit.store.snapshot_build import SnapshotBuilder
from cockpit.store.telemetry import LOG_LINES_KEPT, Telemetry, finite, followed_ranks, step_spread

__all__ = [
    "LOG_LINES_KEPT", "MIGRATIONS", "READABLE_SCHEMA", "SCHEMA_VERSION", "SIDE_FILES", "STORE_FILE", "JobRecord",
    "LiveStatus", "StoreError", "StoreFull", "StudyStore", "default_store_path", "writer_live", "xdg_data_dir",
]


class StudyStore(Results, Telemetry):
    """All persistent state of the studies driven from this file. Safe to share between threads.

    Mixins, not composition: the ledger, results and telemetry are views of one database file that must
    share one connection, one lock and one transaction depth (a runner tick joins hundreds of job updates
    in one `tx()`; `ingest` commits a chunk's records with its offset), and callers use one flat API
    (`store.jobs(...)`, `store.ingest(...)`) that composition would have to forward method by method. Each
    part is a subclass of `Database` with only its own tables' methods and caches.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        """`read_only` browses a store without ever writing it (SQLite `mode=ro`): a recording, a copy, a
        store in a read-only directory. It must already be a cockpit store of this schema."""
        self.live: dict[str, LiveStatus] = {}
        self._snapshots: SnapshotBuilder | None = None
        super().__init__(path, read_only=read_only)

    def _as_read(self, study: int, config_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """result.json with `breakdown_by_rank` from the metrics each rank wrote where it holds fewer ranks than
        the run had (telemetry.followed_ranks), so the TUI, the report and the CSV read the same ranks; and the
        per-step spread an earlier release did not record, from rank 0's metrics (step_spread)."""
        result = self._with_step_spread(study, config_id, result)
        world = result.get("world_size")
        own = result.get("breakdown_by_rank")
        if not isinstance(world, int) or world < 2 or (isinstance(own, list) and len(own) >= world):
            return result
        ranks = followed_ranks(result, self.rank_sums(study, config_id, finite(result.get("started_at"))))
        return result if ranks is None else {**result, "breakdown_by_rank": ranks}

    def _with_step_spread(self, study: int, config_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """`timing.step_time_sd_s` where result.json lacks it (a run of a release before it, a script's run):
        the spread rank 0's metrics intervals give (telemetry.step_spread), marked `step_time_sd_from =
        "metrics"` so the prediction's words say where it came from."""
        timing = result.get("timing")
        if not isinstance(timing, dict) or timing.get("step_time_sd_s") is not None:
            return result
        spread = step_spread(self.rank_steps(study, config_id, finite(result.get("started_at"))),
                             finite(timing.get("first_step_s")))
        if spread is None:
            return result
        return {**result, "timing": {**timing, "step_time_sd_s": spread[0], "step_time_sd_from": "metrics",
                                     "step_time_sd_intervals": spread[1]}}

    def snapshot(self, study_name: str, *, metrics_points: int = 200, gpu_window_s: float = 300.0,
                 now: float | None = None) -> StudySnapshot:
        """Everything the screens draw, as plain dataclasses (cockpit.store.snapshot, built by store.snapshot_build)."""
        if self._snapshots is None:
            self._snapshots = SnapshotBuilder()
        return self._snapshots.build(self, study_name, metrics_points=metrics_points,
                                     gpu_window_s=gpu_window_s, now=now)
