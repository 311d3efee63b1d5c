"""What running jobs send: metrics, GPU samples and log lines, with the followed files' offsets.

`ingest` stores a followed chunk's records and the file's new offset in one transaction, so after a crash
the offset never points past data that was not stored, nor before data that was (no loss, no duplicates).
Metrics are stored in full; `curve` gives a run's downsampled curve, cached until new rows arrive.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

from cockpit.forecast import straggler
from cockpit.store.database import Database
from cockpit.store.snapshot import GpuSample, GpuSeries, MetricPoint
from runcontract.contract import GPU_FILE

LOG_LINES_KEPT = 2000  # per configuration


def finite(value: Any) -> float | None:
    """A finite float or None (JSON may carry strings, NaN, null)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _num(value: Any) -> float | None:
    """finite() with a fast path for the common case of a finite float."""
    if type(value) is float and value - value == 0.0:
        return value
    return finite(value)


class Telemetry(Database):
    """Tables `metrics`, `gpu_samples`, `log_lines` and `follow_offsets`."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self._versions: dict[tuple[int, str], int] = {}  # bumped when metrics rows arrive
        self._curves: dict[tuple[int, str, int], tuple[tuple[int, int], list[MetricPoint]]] = {}
        super().__init__(path, read_only=read_only)

    # -- ingest ---------------------------------------------------------------------------------------
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

    def add_metrics(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        """Insert metrics.jsonl records in one transaction (executemany); returns how many were kept.
        Only the tests call it (kept: they store records without a followed file; the runner uses ingest)."""
        with self.tx():
            return self._metric_rows(study, config_id, records)

    def add_gpu_samples(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        """Insert gpu.jsonl samples (the {"nvml": "unavailable"} line is skipped); returns how many.
        Only the tests call it (kept for the same reason as add_metrics)."""
        with self.tx():
            return self._gpu_rows(study, config_id, records)

    def _metric_rows(self, study: int, config_id: str, records: Iterable[dict[str, Any]]) -> int:
        """Rows for ``metrics`` (the hot path of ingest: plain floats pass through, anything else is checked)."""
        rows: list[tuple[Any, ...]] = []
        append = rows.append
        total = None
        for r in records:
            step, t, rank = r.get("step"), r.get("t"), r.get("rank", 0)
            if type(step) is not int or (type(t) is not float and finite(t) is None):
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
            t, gpu = finite(r.get("t")), r.get("gpu")
            if t is None or not isinstance(gpu, int):
                continue
            rows.append((
                study, config_id, t, str(r.get("host", "")), gpu, finite(r.get("util_pct")),
                finite(r.get("mem_used_bytes")), finite(r.get("mem_total_bytes")), finite(r.get("power_w")),
                finite(r.get("temp_c")),
            ))
        self.db.executemany("INSERT INTO gpu_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    # -- follow offsets -------------------------------------------------------------------------------
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

    # -- logs -----------------------------------------------------------------------------------------
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

    # -- reading --------------------------------------------------------------------------------------
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

    def curve(self, study: int, config_id: str, limit: int) -> list[MetricPoint]:
        """metrics() of rank 0, cached until new rows arrive for that configuration (finished runs cost
        nothing) or a browsed file changes."""
        version = (self._versions.get((study, config_id), 0), self.generation)
        cached = self._curves.get((study, config_id, limit))
        if cached is not None and cached[0] == version:
            return cached[1]
        points = self.metrics(study, config_id, limit=limit)
        self._curves[(study, config_id, limit)] = (version, points)
        return points

    def rank_sums(self, study: int, config_id: str, since: float | None = None) -> dict[int, dict[str, float]]:
        """Each rank's parts of T summed over the metrics records it wrote since `since` (the run's start), with
        its last train_time_s as `train_time_s`: the trainer's intervals add up to its breakdown."""
        rows = self.db.execute(
            "SELECT rank, SUM(data_wait_s), SUM(compute_s), SUM(comm_s), SUM(optimizer_s), MAX(train_time_s) "
            "FROM metrics WHERE study=? AND config_id=? AND t >= ? GROUP BY rank ORDER BY rank",
            (study, config_id, -math.inf if since is None else since)).fetchall()
        return {rank: {"data_wait": d or 0.0, "compute": c or 0.0, "comm": m or 0.0, "optimizer": o or 0.0,
                       "train_time_s": t} for rank, d, c, m, o, t in rows if t is not None}

    def rank_steps(self, study: int, config_id: str, since: float | None = None) -> list[dict[str, Any]]:
        """Rank 0's metrics records since `since` (the run's start) as the per-step spread reads them: the step
        each interval ends at, its mean step seconds and its comm seconds."""
        rows = self.db.execute(
            "SELECT step, step_time_s, comm_s FROM metrics WHERE study=? AND config_id=? AND rank=0 AND t >= ? "
            "ORDER BY step", (study, config_id, -math.inf if since is None else since)).fetchall()
        return [{"step": s, "step_time_s": m, "comm_s": c} for s, m, c in rows]

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


SUMMED_PARTS = ("data_wait", "compute", "comm", "optimizer")


SPREAD_INTERVALS = 3  # the fewest metrics intervals a per-step spread is worked out from (2 give it 1 degree of freedom)


def step_spread(records: list[dict[str, Any]], first_step_s: float | None) -> tuple[float, int] | None:
    """(per-step standard deviation, intervals it rests on) from one rank's metrics records
    (cockpit.forecast.straggler.interval_sd over metrics_intervals); None with fewer than SPREAD_INTERVALS."""
    intervals = straggler.metrics_intervals(records, first_step_s)
    sd = straggler.interval_sd(intervals) if len(intervals) >= SPREAD_INTERVALS else None
    return None if sd is None else (sd, len(intervals))


def followed_ranks(result: dict[str, Any], sums: dict[int, dict[str, float]]) -> list[dict[str, Any]] | None:
    """`breakdown_by_rank` of a result.json that holds fewer ranks than its run had (an earlier trainer wrote
    none, a script's ranks may not all report in time), from each rank's metrics records summed (`sums`,
    Telemetry.rank_sums): `other` is what is left of the rank's train_time_s. Only where every rank wrote
    records and rank 0's sums are its result.json breakdown (to the microsecond), else None: records of an
    earlier attempt or a lost chunk would give other figures. The host is the rank's own where result.json
    names it, the run's one host where it ran on one, else empty (not known)."""
    world = result.get("world_size")
    own = result.get("breakdown_by_rank")
    own = own if isinstance(own, list) else []
    breakdown = result.get("breakdown_s")
    if (not isinstance(world, int) or world < 2 or len(own) >= world or sorted(sums) != list(range(world))
            or not isinstance(breakdown, dict)):
        return None
    ranks = []
    for rank, s in sorted(sums.items()):
        parts: dict[str, float] = {p: s[p] for p in SUMMED_PARTS}
        parts["other"] = max(0.0, s["train_time_s"] - sum(parts.values()))
        ranks.append({"rank": rank, **parts, "train_time_s": s["train_time_s"]})
    for part, value in ranks[0].items():
        if part in (*SUMMED_PARTS, "other"):
            recorded = finite(breakdown.get(part))
            if recorded is None or abs(recorded - value) > 1e-6:
                return None
    hosts = {r.get("rank"): r.get("host") for r in own if isinstance(r, dict)}
    names = result.get("hostnames")
    single = names[0] if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str) else ""
    return [{**r, "host": hosts.get(r["rank"]) or single} for r in ranks]
