"""The sqlite store: migrations, intent before job id, state history, crash-consistent ingest, snapshot."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.launch.backend import ConnectionState
from cockpit.store import SCHEMA_VERSION, StoreError, StudyStore, default_store_path
from cockpit.store.snapshot import StudySnapshot
from runcontract.files import parse_jsonl_bytes


def _configs(n: int = 3) -> list[dict]:
    return [
        {"config_id": f"c{i}", "group_id": "g", "is_baseline": i == 0, "workers": i + 1, "nodes": 1,
         "values": {"gpus_per_node": i + 1, "nodes": 1, "window": 32}, "run_dir": f"/w/s/runs/c{i}",
         "total_steps": 100}
        for i in range(n)
    ]


@pytest.fixture
def store(tmp_path: Path) -> StudyStore:
    s = StudyStore(tmp_path / "cockpit.sqlite")
    yield s
    s.close()


def test_wal_and_schema_version(store: StudyStore):
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version() == SCHEMA_VERSION


def test_newer_schema_is_refused(tmp_path: Path):
    path = tmp_path / "x.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this cockpit"):
        StudyStore(path)


def test_not_a_database_is_reported(tmp_path: Path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="junk.sqlite"):
        StudyStore(path)


def test_store_location(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path("s") == tmp_path / "xdg" / "hlm-cockpit" / "s.sqlite"
    assert default_store_path("s", str(tmp_path / "study")) == tmp_path / "study" / "cockpit.sqlite"


def test_intent_then_job_id_and_history(store: StudyStore):
    key = store.ensure_study("s", "abcd", cluster="test")
    store.upsert_configs(key, _configs())
    row = store.record_intent(key, "c0")
    assert [j.state for j in store.active_jobs(key)] == ["submitting"]
    store.record_submitted(row, "42")
    assert store.set_job_state(row, "running", elapsed_s=3.0, nodes=1, nodelist="n1")
    assert not store.set_job_state(row, "running", elapsed_s=4.0)  # no change, no history entry
    store.set_job_state(row, "completed", elapsed_s=3600.0, ended=True)
    history = store.db.execute("SELECT state FROM job_states WHERE job=? ORDER BY rowid", (row,))
    assert [s for (s,) in history] == ["submitting", "pending", "running", "completed"]
    assert store.node_hours_used(key) == pytest.approx(1.0)
    second = store.record_intent(key, "c0")
    assert store.jobs(key)[-1].attempt == 2 and second != row


def test_unknown_study_names_the_known_ones(store: StudyStore):
    store.ensure_study("alpha", "1")
    with pytest.raises(StoreError, match="no study named 'beta' .known: alpha"):
        store.snapshot("beta")


def test_ingest_is_atomic_with_its_offset(store: StudyStore):
    key = store.ensure_study("s", "abcd")
    data = b'{"t": 1.0, "step": 1, "rank": 0, "loss": 2.5}\nnot json\n{"t": 2.0, "step": 2, "rank": 0}\n'
    chunk = parse_jsonl_bytes(data)
    store.ingest(key, "c0", "metrics.jsonl", chunk.records, chunk.next_offset, chunk.bad_lines)
    assert store.get_offset(key, "c0", "metrics.jsonl") == (len(data), 1)
    assert store.metric_count(key, "c0") == 2
    # a failure inside the transaction leaves neither rows nor offset behind
    with pytest.raises(sqlite3.Error):
        with store.tx() as db:
            db.execute("INSERT INTO metrics (study, config_id, t, rank, step) VALUES (?, 'c0', 3, 0, 3)", (key,))
            db.execute("INSERT INTO no_such_table VALUES (1)")
    assert store.metric_count(key, "c0") == 2


def test_committed_data_survives_a_killed_process(tmp_path: Path):
    path = tmp_path / "crash.sqlite"
    code = (
        f"import os, sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from cockpit.store import StudyStore\n"
        f"s = StudyStore({str(path)!r}); k = s.ensure_study('s', 'x'); r = s.record_intent(k, 'c0')\n"
        "s.db.execute('BEGIN'); s.db.execute(\"UPDATE jobs SET job_id='99'\")\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == -9
    store = StudyStore(path)
    jobs = store.jobs(store.study_key("s"))
    assert [(j.state, j.job_id) for j in jobs] == [("submitting", None)]  # intent kept, uncommitted id gone
    store.close()


def test_snapshot_for_rendering(store: StudyStore):
    key = store.ensure_study("s", "abcd", cluster="meluxina (u@login.lxp.lu:8822)", node_hour_budget=10)
    store.upsert_configs(key, _configs())
    r0 = store.record_intent(key, "c0")
    store.record_submitted(r0, "1")
    store.set_job_state(r0, "completed", elapsed_s=60, nodes=1, ended=True)
    axes = {"dataset": "synthetic", "mode": "foundation", "window": 32, "precision": "fp32", "batch_size": 4,
            "cpus_per_task": 1, "gpus_per_node": 1, "nodes": 1}
    store.put_result(key, "c0", {"status": "completed", "config_id": "c0", "config": axes,
                                 "timing": {"train_time_s": 100.0}, "throughput": {"tokens_per_s": 5.0},
                                 "breakdown_s": {"compute": 90.0, "optimizer": 10.0}})
    r1 = store.record_intent(key, "c1")
    store.record_submitted(r1, "2")
    store.set_job_state(r1, "running", elapsed_s=30, nodes=1, nodelist="n1")
    store.add_metrics(key, "c1", [{"t": 10.0 + i, "step": 10 * (i + 1), "rank": 0, "loss": 3.0 - i * 0.1,
                                   "train_time_s": 1.0 * (i + 1), "interval_s": 1.0, "steps_in_interval": 10}
                                  for i in range(5)])
    store.add_gpu_samples(key, "c1", [{"t": 1e12, "host": "n1", "gpu": g, "util_pct": 90.0} for g in range(2)]
                          + [{"t": 1e12, "host": "n1", "nvml": "unavailable"}])
    store.add_log_lines(key, "c1", [f"line {i}" for i in range(5)])
    store.add_problem(key, "squeue", "unknown job state 'X'")
    snap = store.snapshot("s", now=1e12 + 1)
    assert isinstance(snap, StudySnapshot)
    assert snap.cluster == "meluxina (u@login.lxp.lu:8822)" and snap.connection is ConnectionState.DISCONNECTED
    rows = {c.config_id: c for c in snap.configs}
    assert rows["c0"].state == "completed" and rows["c0"].train_time_s == 100.0 and rows["c0"].speedup == 1.0
    assert rows["c0"].verdict == "baseline: T1 = 100.00 s"  # computed from the result, never stored
    assert rows["c1"].state == "running" and rows["c1"].last_step == 50 and rows["c1"].progress == 0.5
    assert rows["c1"].eta_s == pytest.approx(50 * 5.0 / 50)
    assert rows["c2"].state == "not_submitted"
    assert (snap.counts.running, snap.counts.done, snap.counts.not_submitted) == (1, 1, 1)
    assert [p.step for p in snap.metrics["c1"]] == [10, 20, 30, 40, 50]
    assert snap.metrics["c1"][0].step_time_s == pytest.approx(0.1)
    assert [(g.host, g.gpu, g.latest.util_pct) for g in snap.gpus] == [("n1", 0, 90.0), ("n1", 1, 90.0)]
    assert snap.log_tail("c1", 2) == ["line 3", "line 4"]
    assert snap.problems == ["squeue: unknown job state 'X'"]
    assert snap.node_hours_budget == 10 and snap.node_hours_used == pytest.approx(90 / 3600)
    assert json.loads(json.dumps(rows["c0"].result))["timing"]["train_time_s"] == 100.0


def test_log_lines_are_bounded(store: StudyStore, monkeypatch):
    import cockpit.store.telemetry as mod

    monkeypatch.setattr(mod, "LOG_LINES_KEPT", 10)
    key = store.ensure_study("s", "x")
    for batch in range(5):
        store.add_log_lines(key, "c", [f"{batch}-{i}" for i in range(7)])
    tail = store.log_tail(key, "c", 100)
    assert len(tail) == 10 and tail[-1] == "4-6" and tail[0] == "3-4"


def test_metrics_are_downsampled_over_the_whole_run(store: StudyStore):
    key = store.ensure_study("s", "x")
    store.add_metrics(key, "c", [{"t": float(i), "step": i, "rank": r} for i in range(1000) for r in (0, 1)])
    curve = store.metrics(key, "c", limit=100)
    steps = [p.step for p in curve]
    assert steps[0] == 0 and steps[-1] == 999 and 95 <= len(steps) <= 101
    assert steps == sorted(steps) and {p.rank for p in curve} == {0}
    assert {b - a for a, b in zip(steps[:-2], steps[1:-1], strict=True)} == {10}  # evenly spread
    assert len(store.metrics(key, "c", rank=None, limit=5000)) == 2000


def test_snapshots_from_another_thread_while_ingesting(store: StudyStore):
    import threading

    key = store.ensure_study("s", "x")
    store.upsert_configs(key, _configs(1))
    row = store.record_intent(key, "c0")
    store.record_submitted(row, "1")
    store.set_job_state(row, "running")
    errors: list[BaseException] = []
    seen: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                points = store.snapshot("s").metrics.get("c0", [])
                if points:
                    seen.append(points[-1].step)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    for batch in range(50):
        records = [{"t": batch * 10.0 + i, "step": batch * 10 + i, "rank": 0} for i in range(10)]
        store.ingest(key, "c0", "metrics.jsonl", records, (batch + 1) * 100, 0)
    stop.set()
    thread.join()
    assert errors == [] and seen and seen == sorted(seen)  # never backwards
    assert all(step % 10 == 9 for step in seen)  # never half a batch
    assert store.metric_count(key, "c0") == 500 and store.get_offset(key, "c0", "metrics.jsonl") == (5000, 0)


def test_an_older_store_is_migrated_in_place(tmp_path: Path, monkeypatch):
    import cockpit.store.database as mod

    path = tmp_path / "old.sqlite"
    old = StudyStore(path)
    key = old.ensure_study("s", "x")
    old.record_intent(key, "c0")
    old.close()
    monkeypatch.setattr(mod, "MIGRATIONS", [*mod.MIGRATIONS, "ALTER TABLE jobs ADD COLUMN note TEXT DEFAULT ''"])
    monkeypatch.setattr(mod, "SCHEMA_VERSION", len(mod.MIGRATIONS))
    new = StudyStore(path)
    assert new.schema_version() == SCHEMA_VERSION + 1
    assert [j.config_id for j in new.jobs(new.study_key("s"))] == ["c0"]  # data kept
    assert new.db.execute("SELECT note FROM jobs").fetchone() == ("",)
    new.close()
