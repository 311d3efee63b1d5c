"""The pace a site allows, without a cluster: sbatch's refusals sorted into "not now" and final, the user's
limits read from sacctmgr's and squeue's own output, the jobs at once they leave, and how long a study
takes at that pace."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.commands.plan import plan_summary
from cockpit.launch.backend import UserLimits
from cockpit.launch.slurm.parse import SubmitLater, SubmitRefused, parse_limits, parse_sbatch
from cockpit.launch.ssh import CommandResult
from cockpit.run.submission import pace
from cockpit.store.recorded import study_plan
from cockpit.study.spec import load_study

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "meluxina.toml"


def _refusal(stderr: str) -> CommandResult:
    return CommandResult(command="sbatch", exit_status=1, stdout="", stderr=stderr)


@pytest.mark.parametrize(("stderr", "limit"), [
    ("sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: Job violates "
     "accounting/QOS policy (job submit limit, user's size and/or time limits)", "QOS submit limit"),
    ("sbatch: error: AssocMaxSubmitJobLimit\nsbatch: error: Batch job submission failed: Job violates "
     "accounting/QOS policy (job submit limit, user's size and/or time limits)", "association submit limit"),
    ("sbatch: error: Batch job submission failed: Slurm temporarily unable to accept job, sleeping and retrying",
     "the controller is busy"),
    ("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
     "the Slurm controller is not answering"),
])
def test_a_full_limit_or_a_busy_controller_means_not_now(stderr: str, limit: str) -> None:
    with pytest.raises(SubmitLater) as caught:
        parse_sbatch(_refusal(stderr))
    assert caught.value.limit == limit


@pytest.mark.parametrize("stderr", [
    "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
    "sbatch: error: Batch job submission failed: Invalid qos specification",
    "sbatch: error: QOSMaxWallDurationPerJobLimit\nsbatch: error: Batch job submission failed: Job violates "
    "accounting/QOS policy (job submit limit, user's size and/or time limits)",
    "sbatch: error: Batch job submission failed: Requested node configuration is not available",
    # a job that alone asks more GPUs or nodes than a group or per-user resource limit allows
    "sbatch: error: QOSGrpGRES\nsbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
    "(job submit limit, user's size and/or time limits)",
    "sbatch: error: AssocGrpNodeLimit\nsbatch: error: Batch job submission failed: Job violates accounting/QOS "
    "policy (job submit limit, user's size and/or time limits)",
    "sbatch: error: QOSMaxGRESPerUser\nsbatch: error: Batch job submission failed: Job violates accounting/QOS "
    "policy (job submit limit, user's size and/or time limits)",
])
def test_what_no_wait_changes_stays_refused_in_slurms_words(stderr: str) -> None:
    with pytest.raises(SubmitRefused) as caught:
        parse_sbatch(_refusal(stderr))
    assert not isinstance(caught.value, SubmitLater)
    assert str(caught.value).startswith("sbatch refused the job: sbatch: error:")


def test_the_tightest_of_association_and_qos_against_the_users_jobs() -> None:
    assoc = "hlm|capped,normal|10||\np200000|normal|||\n"  # Account|QOS|MaxJobs|MaxSubmitJobs
    qos = "normal||\ncapped|2|3\n"  # Name|MaxJobsPerUser|MaxSubmitJobsPerUser
    limits = parse_limits(assoc, qos, "R|capped|hlm\nPD|capped|hlm\nCG|capped|hlm\n", "hlm", "capped")
    assert (limits.max_submit, limits.max_running, limits.queued, limits.running) == (3, 2, 3, 2)
    assert limits.words("QOS submit limit") == "QOS submit limit (3 of 3 in use)"
    # jobs in another QOS do not count against the QOS's limit, but do against the association's
    others = "R|normal|hlm\nR|normal|hlm\nPD|normal|p200000\nR|capped|hlm\n"
    limits = parse_limits(assoc, qos, others, "hlm", "capped")
    assert (limits.max_submit, limits.queued) == (3, 1)
    assert (limits.max_running, limits.running) == (2, 1)
    crowded = "R|normal|hlm\n" * 9 + "PD|capped|hlm\n"  # the association's MaxJobs 10: 9 running, room 1
    assert (parse_limits(assoc, qos, crowded, "hlm", "capped").max_running,
            parse_limits(assoc, qos, crowded, "hlm", "capped").running) == (10, 9)
    # no QOS named: the loosest QOS the association allows (normal: none), then the association's own
    assert parse_limits(assoc, qos, "", "hlm", None).max_running == 10
    assert parse_limits(assoc, qos, "", "hlm", None).max_submit is None


def test_the_pace_is_the_studys_else_what_the_submit_limit_leaves() -> None:
    limits = UserLimits(max_submit=10, max_running=4, queued=7)
    assert pace(6, limits, 2) == 6  # the study says
    assert pace(None, limits, 2) == 10 - (7 - 2)  # the user's other 5 jobs count against the limit
    assert pace(None, UserLimits(max_running=4), 0) == 4
    assert pace(None, None, 0) == 4


def test_the_plan_says_how_long_the_study_takes_at_a_pace() -> None:
    plan = study_plan(load_study(EXAMPLE))  # 288 runs of 30 min expected
    assert len(plan.to_submit) == 288
    assert plan.duration_hours(8) == 288 / 8 * 0.5
    assert plan.duration_hours(3) == 96 * 0.5
    assert plan.duration_hours(1000) == 0.5
    assert "about 18.0 h of runs at 8 job(s) at once (the study's max_concurrent_jobs;" in plan_summary(
        load_study(EXAMPLE), plan)  # what `cockpit plan` prints
