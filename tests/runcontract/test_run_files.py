"""Run's files without torch: private modes (group-readable in a shared run directory), and a rank that never
reports named instead of waited for forever."""

from __future__ import annotations

import json
import os
import stat

import pytest

from runcontract import Run
from runcontract.files import append_jsonl, write_json


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_are_private_unless_the_run_directory_is_shared(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    write_json(private / "result.json", {"a": 1})
    append_jsonl(private / "metrics.jsonl", {"a": 1})
    assert mode(private / "result.json") == 0o600 and mode(private / "metrics.jsonl") == 0o600
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o2750)  # what the launcher makes for a study with [cluster].share_group
    write_json(shared / "result.json", {"a": 1})
    append_jsonl(shared / "metrics.jsonl", {"a": 1})
    assert mode(shared / "result.json") == 0o640 and mode(shared / "metrics.jsonl") == 0o640


def test_a_rank_that_never_reports_is_named_not_waited_for(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with Run(tmp_path, rank_wait_s=0.2, stop_signals=False) as run:
        with run.part("compute"):
            pass
        run.step(samples=4)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["world_size"] == 2 and [r["rank"] for r in result["breakdown_by_rank"]] == [0]
    assert result["attribution"]["not_separated"][-1] == "breakdown_by_rank: no parts from rank(s) 1 within 0.2 s"
    assert sum(result["breakdown_s"].values()) == pytest.approx(result["timing"]["train_time_s"], rel=1e-9)


def test_a_loop_that_ends_no_step_fails_in_one_line(tmp_path):
    with pytest.raises(SystemExit) as ended, Run(tmp_path, stop_signals=False):
        pass
    assert ended.value.code == 1
    record = json.loads((tmp_path / "exit.json").read_text())
    assert record["message"] == "no step ended: call run.step() at the end of each training step"
    assert not (tmp_path / "result.json").exists()
