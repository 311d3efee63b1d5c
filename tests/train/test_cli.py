"""`hlm-train train` end to end on real synthetic shards: result contract, signals, NaN stop, bad config."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

from runcontract.contract import (
    EXIT_BAD_INPUT,
    EXIT_CHECKPOINTED,
    EXIT_NONFINITE_LOSS,
    EXIT_USAGE,
    GPU_FILE,
    METRICS_FILE,
)
from runcontract.files import read_jsonl
from runcontract.records import read_config, read_exit, read_result
from tests.train.conftest import write_run_config
from tests.train.test_ddp import weights
from trainer import rundir
from trainer.commands.cli import main

REPO = Path(__file__).resolve().parents[2]


def launch(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def torchrun_train(run_dir: Path, procs: int) -> list[str]:
    """The launch a batch script runs: torchrun starting `procs` ranks of `hlm-train train`."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(procs),
            "-m", "trainer", "train", "--run-dir", str(run_dir)]


def wait_for_training(run_dir: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Block until the trainer logged its first step (so a signal lands mid-training)."""
    log = run_dir / rundir.LOG_FILE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and "first step" in log.read_text():
            return
        assert proc.poll() is None, f"trainer exited early ({proc.returncode}): {proc.stdout.read()}"
        time.sleep(0.05)
    raise AssertionError(f"no training step within {timeout} s")


def test_result_json_follows_the_contract(tmp_path: Path, token_cache: Path) -> None:
    run_dir = tmp_path / "run"
    write_run_config(run_dir, token_cache)
    assert main(["train", "--run-dir", str(run_dir)]) == 0
    r = read_result(run_dir)
    for key in ("status", "config_id", "group_id", "study", "config", "world_size", "nodes", "gpus_per_node",
                "hostnames", "device", "backend", "versions", "git_sha", "synthetic", "timing", "breakdown_s",
                "throughput", "peak_memory_bytes", "final_loss", "eval", "started_at", "finished_at"):
        assert key in r, f"result.json lacks {key}"
    assert r["status"] == "completed" and r["synthetic"] is True and r["config"]["window"] == 32
    assert set(r["versions"]) >= {"python", "torch", "cuda", "nccl", "hlm_cockpit"}
    t = r["timing"]
    for key in ("train_time_s", "startup_s", "prepare_s", "eval_s", "checkpoint_s", "wall_s"):
        assert t[key] >= 0, key
    assert t["steps"] == 40 and t["samples"] == 160 and t["tokens"] == 160 * 32
    assert set(r["breakdown_s"]) == {"data_wait", "compute", "comm", "optimizer", "other"}
    assert math.isclose(sum(r["breakdown_s"].values()), t["train_time_s"], rel_tol=1e-9), "T is not fully accounted"
    assert r["throughput"]["tokens_per_s"] == t["tokens"] / t["train_time_s"]
    assert r["peak_memory_bytes"] > 0 and math.isfinite(r["final_loss"])
    assert r["eval"]["masked_tokens"] > 0
    metrics = read_jsonl(run_dir / METRICS_FILE, final=True)
    assert metrics.bad_lines == 0 and metrics.records[-1]["final"] is True
    assert metrics.records[-1]["train_time_s"] == t["train_time_s"]
    gpu = read_jsonl(run_dir / GPU_FILE).records
    assert len(gpu) == 1 and gpu[0]["nvml"] == "unavailable" and gpu[0]["reason"]
    assert read_exit(run_dir)["code"] == 0


def test_sigterm_mid_epoch_then_resume_reaches_the_uninterrupted_state(tmp_path: Path, token_cache: Path) -> None:
    ref, run_dir = tmp_path / "ref", tmp_path / "run"
    for d in (ref, run_dir):
        write_run_config(d, token_cache, train={"steps": 300, "metrics_interval_s": 1.0})
    proc = launch([sys.executable, "-m", "trainer", "train", "--run-dir", str(run_dir)])
    wait_for_training(run_dir, proc)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_CHECKPOINTED, out
    first = read_exit(run_dir)
    assert first["code"] == 75 and 1 <= first["step"] < 300 and first["signal"] == "SIGTERM"

    proc = launch([sys.executable, "-m", "trainer", "train", "--run-dir", str(run_dir)])
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert main(["train", "--run-dir", str(ref)]) == 0
    a, b = weights(ref), weights(run_dir)
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed run ended in a different state"
    r = read_result(run_dir)
    assert r["timing"]["resumes"] == 1 and r["timing"]["steps"] == 300
    assert r["timing"]["train_time_s"] > first["train_time_s"]


def test_sigterm_to_the_launchers_process_group_with_loader_workers_checkpoints(tmp_path: Path,
                                                                              token_cache: Path) -> None:
    """torchrun (and Slurm) signal the rank's whole process group, DataLoader workers included: the workers stay
    up and the rank checkpoints (exit 75), instead of failing with "DataLoader worker ... killed by signal"."""
    run_dir = tmp_path / "run"
    write_run_config(run_dir, token_cache, cpus_per_task=2, train={"steps": 2000, "metrics_interval_s": 1.0})
    proc = launch(torchrun_train(run_dir, 1))
    wait_for_training(run_dir, proc)
    os.killpg(proc.pid, signal.SIGTERM)  # the launcher, its rank and the rank's loader worker, as Slurm does
    out, _ = proc.communicate(timeout=120)
    first = read_exit(run_dir)
    assert first is not None and first["code"] == EXIT_CHECKPOINTED, (first, out)
    assert (run_dir / rundir.CHECKPOINT_FILE).exists()
    assert read_config(run_dir)["cpus_per_task"] == 2 and "1 loader workers" in (run_dir / rundir.LOG_FILE).read_text()


def test_torchrun_two_ranks_sigterm_checkpoint_and_resume(tmp_path: Path, token_cache: Path) -> None:
    run_dir = tmp_path / "run"
    write_run_config(run_dir, token_cache, gpus_per_node=2, train={"steps": 400, "metrics_interval_s": 1.0})
    cmd = torchrun_train(run_dir, 2)
    proc = launch(cmd)
    wait_for_training(run_dir, proc)
    proc.send_signal(signal.SIGTERM)  # torchrun forwards it to both workers
    out, _ = proc.communicate(timeout=120)
    first = read_exit(run_dir)
    assert first is not None and first["code"] == 75 and first["world_size"] == 2, out
    assert (run_dir / rundir.CHECKPOINT_FILE).exists()
    log = (run_dir / rundir.LOG_FILE).read_text()
    assert f"checkpointed at step {first['step']}/400" in log and "[rank 1]" in log

    proc = launch(cmd)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    r = read_result(run_dir)
    assert r["world_size"] == 2 and r["backend"] == "gloo" and r["timing"]["resumes"] == 1
    assert r["timing"]["samples"] == 400 * 4 * 2 and r["breakdown_s"]["comm"] > 0
    ranks = {m["rank"] for m in read_jsonl(run_dir / METRICS_FILE).records if m.get("final")}
    assert ranks == {0, 1}


def test_non_finite_loss_stops_with_exit_4(tmp_path: Path, token_cache: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    write_run_config(run_dir, token_cache, train={"lr": 1e300})
    assert main(["train", "--run-dir", str(run_dir)]) == EXIT_NONFINITE_LOSS
    info = read_exit(run_dir)
    assert info["code"] == 4 and "non-finite loss" in info["message"] and "train.lr" in info["message"]
    assert "non-finite loss" in capsys.readouterr().err
    assert read_result(run_dir) is None and not (run_dir / rundir.CHECKPOINT_FILE).exists()


def test_bad_config_names_the_key_and_exits_2(tmp_path: Path, token_cache: Path, capsys) -> None:
    cases = {
        "heads": ({"model": {"layers": 1, "d_model": 16, "heads": 3}}, "model.d_model (16) must be divisible"),
        "precision": ({"precision": "fp8"}, "precision: expected one of fp32, bf16, fp16, got 'fp8'"),
        "lr": ({"train": {"lr": "fast"}}, "train.lr: expected a number > 0, got 'fast'"),
        "both": ({"train": {"epochs": 1}}, "give exactly one of steps or epochs"),
        "device": ({"train": {"device": "cuda"}} if not torch.cuda.is_available() else {"window": 0},
                   "CUDA" if not torch.cuda.is_available() else "window"),
    }
    for name, (overrides, expected) in cases.items():
        run_dir = tmp_path / name
        write_run_config(run_dir, token_cache, **overrides)
        assert main(["train", "--run-dir", str(run_dir)]) == EXIT_USAGE, name
        info = read_exit(run_dir)
        assert info["code"] == 2 and expected in info["message"], (name, info["message"])


def test_window_longer_than_every_record_is_bad_input(tmp_path: Path, token_cache: Path) -> None:
    run_dir = tmp_path / "run"
    write_run_config(run_dir, token_cache, window=10**6)
    assert main(["train", "--run-dir", str(run_dir)]) == EXIT_BAD_INPUT
    assert "longer than every record" in read_exit(run_dir)["message"]


def test_a_corrected_retry_leaves_config_json_saying_what_ran(tmp_path: Path, token_cache: Path) -> None:
    """A run that stopped on bad input, run again in the same directory with a flag that corrects it: config.json
    then holds the flag's value, as result.json does; a finished run's config.json stays as it ran."""
    run_dir = tmp_path / "run"
    write_run_config(run_dir, token_cache)
    assert main(["train", "--run-dir", str(run_dir), "--window", str(10**6)]) == EXIT_BAD_INPUT
    assert read_config(run_dir)["window"] == 10**6
    assert main(["train", "--run-dir", str(run_dir), "--window", "16"]) == 0
    assert read_config(run_dir)["window"] == 16 == read_result(run_dir)["config"]["window"]
    assert main(["train", "--run-dir", str(run_dir), "--window", "24"]) == 0  # finished: kept as it ran
    assert read_config(run_dir)["window"] == 16
