"""Where and with what a run ran: launch time, software versions, git revision."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import torch

from trainer import environment


def launch_time() -> tuple[float, str]:
    """Epoch seconds the run was launched and where that figure came from.

    HLM_LAUNCH_TIME (set by the batch script before `srun`/`torchrun`) covers scheduler-to-process start-up
    too; without it, the process's own start time from /proc (interpreter start and imports included).
    """
    launched = environment.launch_time()
    if launched is not None:
        return launched, environment.LAUNCH_TIME
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK"), "process start"
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time(), "trainer start (no /proc)"


def versions() -> dict[str, Any]:
    """python, torch, cuda, nccl, hlm_cockpit versions (None where absent)."""
    nccl = None
    if torch.cuda.is_available():
        try:
            v = torch.cuda.nccl.version()
            nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # NCCL not built in
            nccl = None
    try:
        from importlib.metadata import version

        own = version("hlm-cockpit")
    except Exception:  # not installed as a distribution (plain checkout)
        own = None
    return {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": nccl, "hlm_cockpit": own}


def git_sha() -> str | None:
    """HLM_GIT_SHA if set (containers have no .git), else `git rev-parse HEAD` of the source tree."""
    env = environment.git_sha()
    if env:
        return env
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
