"""Each rank of a finished multi-worker run, the same in the report, scaling.csv and the TUI's run detail: from
result.json's breakdown_by_rank, or where an earlier trainer wrote none, from the metrics each rank wrote,
summed by the store as it reads the result."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from cockpit.figures import explain
from cockpit.forecast.analysis import analyse
from cockpit.report.source import load_input
from cockpit.report.write import write_report
from cockpit.store import StudyStore
from cockpit.store.telemetry import followed_ranks
from cockpit.tui.explain_panel import ranks_table
from tests.report.test_report import markdown_rows

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded-store"
TWO_WORKER = {"8f8fd09106", "3b7253b290", "5c69b2f40b"}  # the recorded study's finished 1×2 runs


@pytest.fixture
def store_copy(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE / "store.sqlite", tmp_path / "store.sqlite")
    return tmp_path / "store.sqlite"


def _results(path: Path) -> dict[str, dict]:
    store = StudyStore(path, read_only=True)
    try:
        return store.results(store.study_key("recorded"))
    finally:
        store.close()


def test_the_recorded_result_json_hold_no_ranks_and_the_store_adds_them(store_copy: Path):
    """The recorded store's result.json were written by a trainer without breakdown_by_rank; read from the
    store, every 2-worker run has both ranks, on the run's one host, rank 0's parts its breakdown_s."""
    import json
    import sqlite3

    db = sqlite3.connect(f"file:{store_copy}?mode=ro", uri=True)
    raw = {cid: json.loads(text) for cid, text in db.execute("SELECT config_id, result_json FROM results")}
    db.close()
    assert not any("breakdown_by_rank" in r for r in raw.values())
    read = _results(store_copy)
    assert {cid for cid, r in read.items() if r.get("breakdown_by_rank")} == TWO_WORKER
    for cid in TWO_WORKER:
        ranks = read[cid]["breakdown_by_rank"]
        assert [(r["rank"], r["host"]) for r in ranks] == [(0, "vm"), (1, "vm")]
        for part, seconds in raw[cid]["breakdown_s"].items():
            assert ranks[0][part] == pytest.approx(seconds, abs=1e-9), (cid, part)
        for r in ranks:  # each rank's parts add up to its own T
            assert sum(r[p] for p in explain.PARTS) == pytest.approx(r["train_time_s"], abs=1e-9)
        assert ranks[1]["comm"] != ranks[0]["comm"]  # rank 1's own figures, not a copy of rank 0's


def test_report_csv_and_tui_show_every_rank(store_copy: Path, tmp_path: Path):
    files = write_report(load_input(store_copy), tmp_path / "r")
    md = files.markdown.read_text()
    ranks = markdown_rows(md, "Per rank")
    assert [(r[3], r[7], r[8]) for r in ranks] == [("1×2", "0", "vm"), ("1×2", "1", "vm")] * 3
    breakdown = {tuple(r[:7]): r[8:13] for r in markdown_rows(md, "Time breakdown and fixed costs")}
    for row in ranks:
        if row[7] == "0":  # rank 0's parts as the time breakdown prints them
            assert row[9:14] == breakdown[tuple(row[:7])], row
    assert sum(1 for r in ranks if r[-1].startswith("straggler: the others waited")) == 3

    rows = {r["config_id"]: r for r in analyse(_results(store_copy).values())}
    with files.csv.open(newline="", encoding="utf-8") as f:
        csv_rows = {r["config_id"]: r for r in csv.DictReader(f)}
    for cid in TWO_WORKER:
        a = rows[cid]
        assert csv_rows[cid]["straggler_rank"] == str(a["straggler_rank"]) and a["straggler_rank"] in (0, 1)
        assert csv_rows[cid]["straggler_host"] == "vm"
        assert float(csv_rows[cid]["straggler_excess_s"]) == pytest.approx(a["straggler_excess_s"])
        lines = ranks_table(a).plain.splitlines()  # the TUI's run detail
        assert [line.split()[:2] for line in lines[1:]] == [["0", "vm"], ["1", "vm"]]
        assert sum("← straggler" in line for line in lines) == 1


def _result(world: int = 2, **extra: object) -> dict:
    return {"world_size": world, "hostnames": ["a", "b"],
            "breakdown_s": {"data_wait": 1.0, "compute": 2.0, "comm": 0.5, "optimizer": 0.25, "other": 0.25},
            **extra}


def _sums(comm0: float = 0.5) -> dict[int, dict[str, float]]:
    return {0: {"data_wait": 1.0, "compute": 2.0, "comm": comm0, "optimizer": 0.25, "train_time_s": 4.0},
            1: {"data_wait": 1.5, "compute": 2.0, "comm": 0.1, "optimizer": 0.25, "train_time_s": 4.0}}


def test_followed_ranks_only_where_rank_0_is_the_result():
    ranks = followed_ranks(_result(), _sums())
    assert ranks is not None and [(r["rank"], r["host"]) for r in ranks] == [(0, ""), (1, "")]  # two hosts: not known
    assert [r["other"] for r in ranks] == pytest.approx([0.25, 0.15])  # what is left of each rank's T
    # rank 0's sums are not its breakdown (an earlier attempt's records, a lost chunk): no ranks
    assert followed_ranks(_result(), _sums(comm0=0.9)) is None
    # a rank that wrote nothing, a one-worker run, a result.json that holds every rank already
    assert followed_ranks(_result(), {0: _sums()[0]}) is None
    assert followed_ranks(_result(world=1), {0: _sums()[0]}) is None
    assert followed_ranks(_result(breakdown_by_rank=[{"rank": 0}, {"rank": 1}]), _sums()) is None
    # a rank's own host where result.json names it, else the run's one host
    one_host = followed_ranks(_result(hostnames=["vm"], breakdown_by_rank=[{"rank": 0, "host": "n0"}]), _sums())
    assert one_host is not None and [r["host"] for r in one_host] == ["n0", "vm"]
