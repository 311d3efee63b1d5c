"""The run-directory contract: atomic writes, tolerant readers, version checks."""

from __future__ import annotations

import json

import pytest

from trainer import rundir


def test_result_round_trip_keeps_unknown_fields(tmp_path):
    rundir.write_result(tmp_path, {"status": "completed", "config_id": "abc", "timing": {"train_time_s": 1.5},
                                   "future_field": {"x": 1}})
    data = rundir.read_result(tmp_path)
    assert data["schema_version"] == rundir.SCHEMA_VERSION and data["kind"] == "hlm-run-result"
    assert data["future_field"] == {"x": 1} and data["timing"]["train_time_s"] == 1.5
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left behind"


def test_result_validation_names_the_problem(tmp_path):
    with pytest.raises(rundir.RunDirError, match="lacks required keys: timing"):
        rundir.write_result(tmp_path, {"status": "completed", "config_id": "a"})
    with pytest.raises(rundir.RunDirError, match="status 'done' is not one of"):
        rundir.write_result(tmp_path, {"status": "done", "config_id": "a", "timing": {}})
    (tmp_path / "result.json").write_text('{"schema_version": 1, "timing": {}}')
    with pytest.raises(rundir.RunDirError, match=r"result.json: timing.train_time_s missing"):
        rundir.read_result(tmp_path)
    (tmp_path / "result.json").write_text('{"schema_version": 99, "timing": {"train_time_s": 1}}')
    with pytest.raises(rundir.RunDirError, match="schema_version 99 is newer than this reader"):
        rundir.read_result(tmp_path)
    (tmp_path / "result.json").write_text('{"schema_version": 1, "timing"')
    with pytest.raises(rundir.RunDirError, match="result.json: not valid JSON"):
        rundir.read_result(tmp_path)


def test_missing_files(tmp_path):
    assert rundir.read_result(tmp_path) is None
    assert rundir.read_exit(tmp_path) is None
    with pytest.raises(rundir.RunDirError, match="config.json: missing"):
        rundir.read_config(tmp_path)


def test_jsonl_tolerates_truncated_last_line_and_garbage(tmp_path):
    path = tmp_path / rundir.METRICS_FILE
    for step in range(3):
        rundir.append_jsonl(path, {"v": 1, "step": step})
    with open(path, "ab") as handle:
        handle.write(b"not json\n[1,2]\n" + b'{"v": 1, "st')
    chunk = rundir.read_jsonl(path)
    assert [r["step"] for r in chunk.records] == [0, 1, 2]
    assert chunk.bad_lines == 2
    # The unterminated line is left for the next read...
    with open(path, "ab") as handle:
        handle.write(b'ep": 3}\n')
    more = rundir.read_jsonl(path, chunk.next_offset)
    assert [r["step"] for r in more.records] == [3] and more.bad_lines == 0
    assert more.next_offset == path.stat().st_size
    # ...unless the writer is known to be gone, then it counts as bad.
    with open(path, "ab") as handle:
        handle.write(b'{"v": 1')
    final = rundir.read_jsonl(path, more.next_offset, final=True)
    assert final.records == [] and final.bad_lines == 1 and final.next_offset == path.stat().st_size


def test_exit_and_config(tmp_path):
    rundir.write_config(tmp_path, {"config_id": "c1", "window": 128})
    assert rundir.read_config(tmp_path)["window"] == 128
    rundir.write_exit(tmp_path, rundir.EXIT_CHECKPOINTED, "SIGTERM")
    data = json.loads((tmp_path / "exit.json").read_text())
    assert data["code"] == 75 and data["reason"].startswith("checkpointed") and data["message"] == "SIGTERM"
