"""The laptop's disk filling under the store (a real 256 KiB tmpfs, tests/infra/small_fs.sh): SQLite's
"database or disk is full" stops the cockpit from writing with one line naming the store, and everything
written before is still there, whole, once space is freed."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from cockpit.store import STORE_FILE, StoreFull, StudyStore
from cockpit.study.spec import load_study
from tests.studies import REPO, write_study


def _kept(path) -> list[str]:
    """The problems the store holds, read with plain SQLite after an integrity check."""
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return [m for (m,) in db.execute("SELECT message FROM problems ORDER BY id")]
    finally:
        db.close()


def test_a_full_disk_under_the_store_is_one_error_and_loses_nothing(small_fs) -> None:
    fs = small_fs("256k")
    path = fs.path / STORE_FILE
    store = StudyStore(path)
    key = store.ensure_study("full", "abc")
    for i in range(5):
        store.add_problem(key, "test", f"kept {i}")
    fs.fill(leave=0)
    with pytest.raises(StoreFull) as caught:
        for _ in range(1000):
            store.add_problem(key, "test", "x" * 2000)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: the disk holding the store is full (")
    assert "the cockpit stops writing; everything written before is kept" in message
    store.close()
    fs.free()
    kept = _kept(path)
    assert kept[:5] == [f"kept {i}" for i in range(5)]
    assert StudyStore(path).problems(key)  # opens and reads as before


def test_cockpit_run_on_a_full_store_disk_says_one_line_and_submits_nothing(small_fs, tmp_path) -> None:
    fs = small_fs("256k")
    study_path = write_study(tmp_path / "full.toml", "full", fs.path, sweep={"window": [32, 64]})
    study = load_study(study_path)
    store_path = fs.path / "full" / STORE_FILE
    store = StudyStore(store_path)
    key = store.ensure_study("full", study.study_id)
    store.add_problem(key, "test", "kept before the disk filled")
    store.close()
    fs.fill(leave=0)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", "--skip-preflight", "--timeout", "60",
                           str(study_path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cockpit: {store_path}: the disk holding the store is full ("), \
        done.stdout + done.stderr
    assert not (fs.path / "full" / "runs").exists() or not any((fs.path / "full" / "runs").iterdir())
    fs.free()
    assert "kept before the disk filled" in _kept(store_path)
