"""Running scripts the way a launcher does: in their run directory's environment, output captured into the run
directory's stdout.log / stderr.log as the local executor captures it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runcontract.contract import LOCAL_STDERR_FILE, LOCAL_STDOUT_FILE, RUN_DIR_ENV

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
THIRD_PARTY = REPO / "tests" / "fixtures" / "third_party" / "mars_pytorch_sample"


def script_env(run_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[RUN_DIR_ENV] = str(run_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def launch(run_dir: Path, argv: list[str], cwd: Path | None = None, timeout: float = 120) -> int:
    """Run `argv` for `run_dir` to its end; returns the exit status."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / LOCAL_STDOUT_FILE).open("w") as out, (run_dir / LOCAL_STDERR_FILE).open("w") as err:
        return subprocess.run(argv, cwd=cwd or run_dir, env=script_env(run_dir), stdout=out, stderr=err,
                              timeout=timeout).returncode


def start(run_dir: Path, argv: list[str], cwd: Path | None = None) -> subprocess.Popen[bytes]:
    run_dir.mkdir(parents=True, exist_ok=True)
    out = (run_dir / LOCAL_STDOUT_FILE).open("w")
    err = (run_dir / LOCAL_STDERR_FILE).open("w")
    return subprocess.Popen(argv, cwd=cwd or run_dir, env=script_env(run_dir), stdout=out, stderr=err)


def torchrun(workers: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={workers}"]
