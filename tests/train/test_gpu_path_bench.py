"""bench/gpu_path.py, the recorder of tests/fixtures/h200-runs, runs end to end on CPU: its launch, its
group-of-one entry (the strategies' wrappers under a process group of one rank) and its lines from the
runs' own files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_gpu_path_bench_runs_on_cpu_with_a_group_of_one(tmp_path: Path) -> None:
    cmd = [sys.executable, str(REPO / "bench" / "gpu_path.py"), "--device", "cpu", "--steps", "3", "--layers", "1",
           "--d-model", "16", "--heads", "2", "--batch-size", "4", "--cpus", "1", "--workdir", str(tmp_path),
           "--only", "bf16-w256-zero1-group1", "--no-preflight", "--tar", str(tmp_path / "runs.tgz")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert not any(line.startswith("preflight:") for line in lines), out.stdout
    group = next(line for line in lines if line.startswith("bf16-w256-zero1-group1: T "))
    assert "for 3 steps" in group and "nvml: 1 records, no GPU sample" in group
    assert "cpu/gloo, zero1" in group and '"broadcast"' in group and '"all_reduce"' in group
    assert lines[-1].startswith("1 of 1 runs completed") and (tmp_path / "runs.tgz").stat().st_size > 0
