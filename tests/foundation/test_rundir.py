"""The run-directory contract: atomic writes, tolerant readers, version checks."""

from __future__ import annotations

import json

import pytest

from runcontract.contract import EXIT_CHECKPOINTED, METRICS_FILE, SCHEMA_VERSION, ContractError
from runcontract.files import append_jsonl, read_jsonl
from runcontract.records import read_config, read_exit, read_result, write_config, write_exit, write_result


def test_result_round_trip_keeps_unknown_fields(tmp_path):
    write_result(tmp_path, {"status": "completed", "config_id": "abc", "timing": {"train_time_s": 1.5},
                                   "future_field": {"x": 1}})
    data = read_result(tmp_path)
    assert data["schema_version"] == SCHEMA_VERSION and data["kind"] == "hlm-run-result"
    assert data["future_field"] == {"x": 1} and data["timing"]["train_time_s"] == 1.5
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file left behind"


def test_result_validation_names_the_problem(tmp_path):
    with pytest.raises(ContractError, match="lacks required keys: timing"):
        write_result(tmp_path, {"status": "completed", "config_id": "a"})
    with pytest.raises(ContractError, match="status 'done' is not one of"):
        write_result(tmp_path, {"status": "done", "config_id": "a", "timing": {}})
    (tmp_path / "result.json").write_text('{"schema_version": 1, "timing": {}}')
    with pytest.raises(ContractError, match=r"result.json: timing.train_time_s missing"):
        read_result(tmp_path)
    (tmp_path / "result.json").write_text('{"schema_version": 99, "timing": {"train_time_s": 1}}')
    with pytest.raises(ContractError, match="schema_version 99 is newer than this reader"):
        read_result(tmp_path)
    (tmp_path / "result.json").write_text('{"schema_version": 1, "timing"')
    with pytest.raises(ContractError, match="result.json: not valid JSON"):
        read_result(tmp_path)


def test_missing_files(tmp_path):
    assert read_result(tmp_path) is None
    assert read_exit(tmp_path) is None
    with pytest.raises(ContractError, match="config.json: missing"):
        read_config(tmp_path)


def test_jsonl_tolerates_truncated_last_line_and_garbage(tmp_path):
    path = tmp_path / METRICS_FILE
    for step in range(3):
        append_jsonl(path, {"v": 1, "step": step})
    with open(path, "ab") as handle:
        handle.write(b"not json\n[1,2]\n" + b'{"v": 1, "st')
    chunk = read_jsonl(path)
    assert [r["step"] for r in chunk.records] == [0, 1, 2]
    assert chunk.bad_lines == 2
    # The unterminated line is left for the next read...
    with open(path, "ab") as handle:
        handle.write(b'ep": 3}\n')
    more = read_jsonl(path, chunk.next_offset)
    assert [r["step"] for r in more.records] == [3] and more.bad_lines == 0
    assert more.next_offset == path.stat().st_size
    # ...unless the writer is known to be gone, then it counts as bad.
    with open(path, "ab") as handle:
        handle.write(b'{"v": 1')
    final = read_jsonl(path, more.next_offset, final=True)
    assert final.records == [] and final.bad_lines == 1 and final.next_offset == path.stat().st_size


def test_exit_and_config(tmp_path):
    write_config(tmp_path, {"config_id": "c1", "window": 128})
    assert read_config(tmp_path)["window"] == 128
    write_exit(tmp_path, EXIT_CHECKPOINTED, "SIGTERM")
    data = json.loads((tmp_path / "exit.json").read_text())
    assert data["code"] == 75 and data["reason"].startswith("checkpointed") and data["message"] == "SIGTERM"
