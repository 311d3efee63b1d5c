"""When Slurm would start a job submitted now: `sbatch --test-only`, its backfill scheduler's own estimate.

The batch script goes to sbatch on its standard input, so nothing is written on the cluster and nothing is
queued. SLURM_TIME_FORMAT=%s makes sbatch print the start in epoch seconds, so the cluster's time zone does not
matter: `sbatch: Job 3 to start at 1795943026 using 4 processors on nodes mel[2001-2002] in partition gpu`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from cockpit.launch.backend import StartEstimate
from cockpit.launch.slurm.parse import SlurmError, SubmitRefused

if TYPE_CHECKING:
    from cockpit.launch.slurm.client import CommandRunner

TEST_ONLY = re.compile(r"Job \d+ to start at (?P<start>\S+) using \d+ processors on nodes (?P<nodes>\S+)"
                       r"(?: in partition (?P<partition>\S+))?")
COMMAND = "SLURM_TIME_FORMAT=%s sbatch --test-only 2>&1"
# the #SBATCH options that name or place a job's files, not what it asks of the scheduler
NOT_A_REQUEST = ("--job-name", "--comment", "--output", "--error", "--open-mode", "--signal", "--chdir")


def parse_test_only(text: str, exit_status: int = 0) -> StartEstimate:
    """The start `sbatch --test-only` printed (epoch seconds, SLURM_TIME_FORMAT=%s); SubmitRefused with sbatch's
    words where it refused the job, SlurmError where it printed no start."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if (found := TEST_ONLY.search(line)) is not None:
            start = found["start"]
            if not start.isdigit():
                raise SlurmError(f"sbatch --test-only: a start that is not in epoch seconds: {line[:200]!r}")
            return StartEstimate(float(start), found["nodes"], found["partition"] or "")
    errors = [line for line in lines if "error" in line.lower()]
    if exit_status != 0 or errors:
        raise SubmitRefused(f"sbatch --test-only refused the job: {' / '.join(errors or lines[-3:])}")
    raise SlurmError(f"sbatch --test-only printed no start: {' / '.join(lines)[:200]!r}")


def request_of(script: str) -> tuple[str, ...]:
    """What a batch script asks of the scheduler (its #SBATCH lines but those naming the job and its files): two
    configurations asking the same start at the same time, so one `sbatch --test-only` answers both."""
    return tuple(line.strip() for line in script.splitlines()
                 if line.startswith("#SBATCH ") and line.split()[1].split("=")[0] not in NOT_A_REQUEST)


async def test_only(runner: CommandRunner, script: str, env_prefix: str = "") -> StartEstimate:
    """Slurm's start estimate of the batch script, were it submitted now (one round trip; nothing queued)."""
    command = f"{env_prefix} {COMMAND}".strip()
    result = await runner.run(command, input=script)
    return parse_test_only(result.stdout + result.stderr, result.exit_status)
