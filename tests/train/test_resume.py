"""Checkpoint on SIGTERM and resume: the resumed run ends in exactly the state of an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

import torch

from runcontract.contract import EXIT_CHECKPOINTED, EXIT_OK, EXIT_USAGE
from runcontract.records import read_exit, read_result
from tests.train.test_ddp import weights
from tests.train.tiny import spawn_world, tiny_data, tiny_settings
from trainer import rundir
from trainer.run.train import run

# 24 windows / batch 4 = 6 steps per epoch: 10 steps cross an epoch boundary; dropout exercises the RNG state.
OPTS = {"steps": 10, "dropout": 0.1}


def test_sigterm_checkpoints_and_resume_matches_uninterrupted_run(tmp_path: Path) -> None:
    straight, broken = tmp_path / "straight", tmp_path / "broken"
    s = tiny_settings(straight, **OPTS)
    assert run(s, tiny_data(s, n=24)) == EXIT_OK

    s = tiny_settings(broken, **OPTS)
    assert run(s, tiny_data(s, n=24, signal_at=4 * 3 + 2)) == EXIT_CHECKPOINTED  # during step 4
    info = read_exit(broken)
    assert info["code"] == 75 and info["step"] == 4 and info["signal"] == "SIGTERM"
    assert "resume" in info["message"]
    assert (broken / rundir.CHECKPOINT_FILE).exists() and read_result(broken) is None

    s = tiny_settings(broken, **OPTS)
    assert run(s, tiny_data(s, n=24)) == EXIT_OK
    a, b = weights(straight), weights(broken)
    for key in a:
        assert torch.equal(a[key], b[key]), f"parameter {key} differs after resume"
    ra, rb = read_result(straight), read_result(broken)
    assert rb["timing"]["resumes"] == 1 and ra["timing"]["resumes"] == 0
    assert rb["timing"]["steps"] == ra["timing"]["steps"] == 10
    assert rb["timing"]["samples"] == ra["timing"]["samples"] == 40
    assert rb["timing"]["checkpoint_s"] > 0 and rb["timing"]["train_time_s"] > 0
    assert rb["eval"]["masked_loss"] == ra["eval"]["masked_loss"]
    assert not (broken / rundir.CHECKPOINT_FILE).exists()
    assert read_exit(broken)["code"] == 0


def test_signal_on_one_rank_stops_both_at_the_same_step_and_resumes(tmp_path: Path) -> None:
    """Rank 1 alone gets SIGTERM; the ranks agree, checkpoint once, and the resumed pair matches 1 process.

    The pair accumulates 2 micro-batches of 2 (the first under DDP's no_sync), so its global batch is the
    single process's 8 windows.
    """
    pair, single = tmp_path / "pair", tmp_path / "single"
    opts = {"batch_size": 2, "grad_accum": 2, "steps": 6}
    spawn_world(2, pair, opts, {1: 4 * 2 + 1}, EXIT_CHECKPOINTED)
    info = read_exit(pair)
    assert info["code"] == 75 and 3 <= info["step"] < 6 and info["world_size"] == 2
    spawn_world(2, pair, opts)

    s = tiny_settings(single, batch_size=8, steps=6)
    assert run(s, tiny_data(s)) == EXIT_OK
    a, b = weights(single), weights(pair)
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6, msg=f"parameter {key} differs")
    assert read_result(pair)["timing"]["resumes"] == 1


def test_resume_refuses_a_changed_config_or_a_damaged_checkpoint(tmp_path: Path) -> None:
    s = tiny_settings(tmp_path, **OPTS)
    assert run(s, tiny_data(s, n=24, signal_at=6)) == EXIT_CHECKPOINTED
    s = tiny_settings(tmp_path, **{**OPTS, "batch_size": 8})
    assert run(s, tiny_data(s, n=24)) == EXIT_USAGE
    message = read_exit(tmp_path)["message"]
    assert "checkpoint.pt was written with batch_size = 4, config.json now says 8" in message

    (tmp_path / rundir.CHECKPOINT_FILE).write_bytes(b"not a checkpoint")
    s = tiny_settings(tmp_path, **OPTS)
    assert run(s, tiny_data(s, n=24)) == EXIT_USAGE
    message = read_exit(tmp_path)["message"]
    assert "checkpoint.pt: cannot be read as a checkpoint" in message and "delete it" in message
