"""Browsing a store never writes it: opened read-only, it stays byte-identical and gains no side files."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.report.source import load_input
from cockpit.report.write import write_report
from cockpit.store import StoreError, StudyStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded-store" / "store.sqlite"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_browsing_and_reporting_leave_the_store_byte_identical(tmp_path: Path):
    folder = tmp_path / "copy"
    folder.mkdir()
    store_path = folder / "store.sqlite"
    shutil.copy(FIXTURE, store_path)
    before = digest(store_path)
    store = StudyStore(store_path, read_only=True)
    snap = store.snapshot("recorded")
    assert len(snap.configs) == 8 and any(c.analysis for c in snap.configs)
    store.close()
    write_report(load_input(store_path), tmp_path / "report")
    assert digest(store_path) == before
    assert sorted(p.name for p in folder.iterdir()) == ["store.sqlite"]  # no -wal, -shm or journal


def test_an_empty_or_foreign_file_is_refused_and_left_alone(tmp_path: Path, capsys):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match="empty file, not a cockpit store"):
        StudyStore(empty, read_only=True)
    assert cli(["open", str(empty)]) == 2
    assert "empty file, not a cockpit store" in capsys.readouterr().err
    assert empty.stat().st_size == 0
    other = tmp_path / "other.sqlite"
    import sqlite3

    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    before = digest(other)
    with pytest.raises(StoreError, match="not a cockpit store"):
        StudyStore(other, read_only=True)
    assert digest(other) == before
