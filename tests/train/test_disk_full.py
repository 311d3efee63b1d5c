"""A full work directory (a real tmpfs of a few hundred KiB, tests/infra/small_fs.sh): the trainer exits with
its own code 5, names the path and the bytes it needed in exit.json and on stderr, leaves no half-written
file, keeps the last good checkpoint, and resumes from it once space is freed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runcontract import disk_space
from runcontract.contract import EXIT_CHECKPOINTED, EXIT_DISK_FULL, EXIT_OK, EXIT_REASONS, METRICS_FILE
from runcontract.files import append_jsonl, read_jsonl
from runcontract.modes import make_dirs
from runcontract.records import read_exit, read_result, write_exit
from tests.train.tiny import tiny_data, tiny_settings
from trainer import rundir
from trainer.run import checkpoint
from trainer.run.train import run

OPTS = {"steps": 10, "dropout": 0.1}


def _leftovers(run_dir: Path) -> list[str]:
    """Temporary files a write left behind (atomic writes remove theirs)."""
    return sorted(p.name for p in run_dir.iterdir() if p.name.endswith(".tmp") or ".part" in p.name)


def test_a_full_disk_exits_5_keeps_the_checkpoint_and_the_run_resumes_once_freed(small_fs, capfd) -> None:
    fs = small_fs("1m")
    run_dir = fs.path / "run"
    s = tiny_settings(run_dir, **OPTS)
    assert run(s, tiny_data(s, n=24, signal_at=4 * 3 + 2)) == EXIT_CHECKPOINTED
    good = (run_dir / rundir.CHECKPOINT_FILE).read_bytes()
    model_bytes = checkpoint.tensor_bytes(checkpoint.load(run_dir / rundir.CHECKPOINT_FILE)["model"])

    # room for exit.json's reserve and a few metrics lines, not for model.pt
    fs.fill(leave=disk_space.ROOM_BYTES + 8192)
    s = tiny_settings(run_dir, **OPTS)
    assert run(s, tiny_data(s, n=24)) == EXIT_DISK_FULL
    info = read_exit(run_dir)
    assert info["code"] == 5 and info["reason"] == EXIT_REASONS[5]
    assert info["path"] == str(run_dir / rundir.MODEL_FILE) and info["needed_bytes"] >= model_bytes
    assert isinstance(info["free_bytes"], int) and info["free_bytes"] < info["needed_bytes"]
    assert f"work directory full: {run_dir / rundir.MODEL_FILE} needed {info['needed_bytes']} bytes" in info["message"]
    assert f"hlm-train: {info['message']}" in capfd.readouterr().err
    # nothing half-written: the old checkpoint as it was, no model.pt, no result, whole metrics lines
    assert (run_dir / rundir.CHECKPOINT_FILE).read_bytes() == good
    checkpoint.load(run_dir / rundir.CHECKPOINT_FILE)
    assert not (run_dir / rundir.MODEL_FILE).exists() and read_result(run_dir) is None
    assert _leftovers(run_dir) == [] and not (run_dir / disk_space.ROOM_FILE).exists()
    assert read_jsonl(run_dir / METRICS_FILE, final=True).bad_lines == 0

    fs.free()
    s = tiny_settings(run_dir, **OPTS)
    assert run(s, tiny_data(s, n=24)) == EXIT_OK
    result = read_result(run_dir)
    assert result["status"] == "completed" and result["timing"]["steps"] == 10 and result["timing"]["resumes"] == 1
    checkpoint.load(run_dir / rundir.MODEL_FILE)
    assert _leftovers(run_dir) == [] and read_exit(run_dir)["code"] == 0


def test_a_metrics_line_cut_by_a_full_disk_is_removed_whole(small_fs) -> None:
    fs = small_fs("64k")
    path = fs.path / METRICS_FILE
    append_jsonl(path, {"v": 1, "step": 0})
    fs.fill(leave=0)
    size = path.stat().st_size
    with pytest.raises(disk_space.DiskFull) as caught:
        for step in range(1, 10_000):  # the page the file has fills first
            append_jsonl(path, {"v": 1, "step": step, "pad": "x" * 200})
    assert caught.value.path == str(path) and caught.value.needed_bytes > 200
    assert path.stat().st_size >= size
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])


def test_exit_json_is_written_from_the_room_kept_for_it(small_fs) -> None:
    fs = small_fs("256k")
    run_dir = fs.path / "run"
    make_dirs(run_dir)
    disk_space.keep_room(run_dir)
    fs.fill(leave=0)
    write_exit(run_dir, EXIT_DISK_FULL, "work directory full", path="x", needed_bytes=1)
    assert read_exit(run_dir)["code"] == 5 and not (run_dir / disk_space.ROOM_FILE).exists()
