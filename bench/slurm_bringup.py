"""How fast the test Slurm comes up and turns jobs around (run as root: `python bench/slurm_bringup.py`).

Starts a second, private test cluster (own state directory and ports, so a running one is not disturbed),
then prints: cold bring-up, idempotent `up`, submit-to-start and submit-to-end of a trivial job, and `down`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SLURM_SH = REPO / "tests" / "infra" / "slurm.sh"


def main() -> int:
    if os.geteuid() != 0 or not shutil.which("slurmctld"):
        print("needs root and the Debian Slurm packages (slurmctld slurmd slurm-client munge)", file=sys.stderr)
        return 2
    state = Path(tempfile.mkdtemp(prefix="hlm-slurm-bench-"))
    env = {**os.environ, "HLM_SLURM_DIR": str(state), "HLM_SLURM_CTLD_PORT": "6917", "HLM_SLURM_D_PORT": "6918"}
    conf = state / "etc" / "slurm.conf"
    try:
        t0 = time.perf_counter()
        subprocess.run(["bash", str(SLURM_SH), "up"], env=env, check=True, capture_output=True)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run(["bash", str(SLURM_SH), "up"], env=env, check=True, capture_output=True)
        again = time.perf_counter() - t0
        user = _env_value(env, "HLM_TEST_USER")
        job_env = {**env, "SLURM_CONF": str(conf)}
        starts, ends = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            out = subprocess.run(
                ["runuser", "-u", user, "--", "sbatch", "--parsable", f"--output={state}/job-%j.out", "--wrap=true"],
                env=job_env, check=True, capture_output=True, text=True,
            )
            job = out.stdout.strip()
            started = None
            while True:
                st = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=job_env, capture_output=True, text=True).stdout.strip()
                if started is None and st in ("RUNNING", "COMPLETING", ""):
                    started = time.perf_counter() - t0
                if not st:
                    break
                time.sleep(0.02)
            starts.append(started)
            ends.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(["bash", str(SLURM_SH), "down"], env=env, check=True, capture_output=True)
        down = time.perf_counter() - t0
    finally:
        subprocess.run(["bash", str(SLURM_SH), "down"], env=env, capture_output=True)
        shutil.rmtree(state, ignore_errors=True)
    print(f"cold bring-up (munged + slurmctld + {_env_value(env, 'HLM_SLURM_NODES')} slurmd, nodes idle): {cold:.2f} s")
    print(f"`up` when already up (no-op):                        {again:.2f} s")
    print(f"trivial job, sbatch -> running (median of 5):        {sorted(starts)[2]:.2f} s")
    print(f"trivial job, sbatch -> left the queue (median of 5): {sorted(ends)[2]:.2f} s")
    print(f"down (daemons stopped by pid file):                  {down:.2f} s")
    return 0


def _env_value(env: dict[str, str], key: str) -> str:
    out = subprocess.run(["bash", str(SLURM_SH), "env"], env=env, capture_output=True, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)[key]


if __name__ == "__main__":
    sys.exit(main())
