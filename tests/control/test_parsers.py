"""Slurm output parsing: real formats, then hostile input that must become problems, never exceptions."""

from __future__ import annotations

import random

import pytest

from cockpit.launch.backend import AdaptiveInterval, JobState
from cockpit.launch.slurm.parse import (
    SQUEUE_FIELDS,
    SubmitRefused,
    parse_duration,
    parse_sacct,
    parse_sbatch,
    parse_scontrol,
    parse_squeue,
    parse_state,
)
from cockpit.launch.ssh import CommandResult

SQUEUE = (
    "101|RUNNING|1:02:03|2:00:00|2|mel[0001-0002]|u100|None|study-aaaa|hlm-study-1234\n"
    "102|PENDING|0:00|1-00:00:00|1||u100|JobHeldUser|study-bbbb|hlm-study-1234\n"
    "103|PENDING|0:00|UNLIMITED|1||u100|Priority|other-cccc|something else\n"
    "104_3|COMPLETING|10:00|30:00|1|mel0003|u100|None|study-dddd|hlm-study-1234\n"
)


def test_squeue_fields_and_filter():
    parsed = parse_squeue(SQUEUE, name_prefix="study-", comment="hlm-study-1234")
    assert [j.job_id for j in parsed.jobs] == ["101", "102", "104_3"]
    run, held, comp = parsed.jobs
    assert run.state is JobState.RUNNING and run.elapsed_s == 3723 and run.time_limit_s == 7200
    assert run.nodes == 2 and run.nodelist == "mel[0001-0002]" and run.reason == ""
    assert held.state is JobState.PENDING and held.reason == "JobHeldUser" and held.extra["held"] == "True"
    assert held.time_limit_s == 86400
    assert comp.state is JobState.COMPLETING
    assert parsed.problems == []


def test_comment_decides_over_the_name_prefix():
    out = (
        "1|RUNNING|0:01|5:00|1|n|u|None|a-c1|hlm-study-aaaa\n"
        "2|RUNNING|0:01|5:00|1|n|u|None|a-b-c2|hlm-study-bbbb\n"  # study "a-b": same prefix, other comment
        "3|RUNNING|0:01|5:00|1|n|u|None|a-c3|(null)\n"  # a site that drops comments: the name decides
    )
    parsed = parse_squeue(out, name_prefix="a-", comment="hlm-study-aaaa")
    assert [j.job_id for j in parsed.jobs] == ["1", "3"]


def test_comment_with_separator_stays_in_last_field():
    parsed = parse_squeue("7|RUNNING|0:01|5:00|1|n1|u|None|s-x|a|b|c\n")
    assert parsed.jobs[0].comment == "a|b|c" and parsed.jobs[0].name == "s-x"


@pytest.mark.parametrize(
    "text, state",
    [("RUNNING", JobState.RUNNING), ("CANCELLED by 1001", JobState.CANCELLED), ("OUT_OF_MEMORY", JobState.OUT_OF_MEMORY),
     ("NODE_FAIL", JobState.NODE_FAIL), ("TIMEOUT", JobState.TIMEOUT), ("PREEMPTED", JobState.PREEMPTED),
     ("COMPLETED+", JobState.COMPLETED), ("CD", JobState.COMPLETED), ("DEADLINE", JobState.TIMEOUT),
     ("BOOT_FAIL", JobState.FAILED), ("REQUEUED", JobState.REQUEUED), ("CONFIGURING", JobState.PENDING)],
)
def test_states(text, state):
    assert parse_state(text) is state


@pytest.mark.parametrize(
    "text, seconds",
    [("0:00", 0), ("59", 3540), ("1:02", 62), ("1:02:03", 3723), ("2-03:00:00", 183600), ("2-03", 183600),
     ("UNLIMITED", None), ("INVALID", None), ("N/A", None), ("", None), ("1:2:3:4", None), ("x-1:00", None)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


HOSTILE = [
    "",
    "\n\n   \n",
    "garbage without separators",
    "101|RUNNING|1:00",  # truncated line
    "abc|RUNNING|0:01|5:00|1|n|u|None|study-x|c",  # not a job id
    "105|WEIRD_NEW_STATE|0:01|5:00|1|n|u|None|study-y|c",  # unknown state
    "106|RUNNING|nonsense|-5|many|n|u|None|study-z|c",  # bad numbers
    "   107 | RUNNING | 0:01 | 5:00 | 1 | n | u | None | study-w | c   ",  # extra spaces
    "\x00\x01\xff|||||||||",
    "1|" * 500,
]


def test_squeue_hostile_output_never_raises():
    parsed = parse_squeue("\n".join(HOSTILE) + "\n", name_prefix="study-")
    ids = {j.job_id: j for j in parsed.jobs}
    assert ids["105"].state is JobState.UNKNOWN
    assert ids["106"].elapsed_s is None and ids["106"].nodes is None
    assert ids["107"].state is JobState.RUNNING and ids["107"].name == "study-w"
    messages = " / ".join(str(p) for p in parsed.problems)
    assert "expected 10 fields, found 3" in messages
    assert "'abc' is not a Slurm job id" in messages
    assert "unknown job state 'WEIRD_NEW_STATE'" in messages


def test_squeue_random_bytes_fuzz():
    rng = random.Random(5)
    alphabet = "0123456789|:-_ABCDEFGHIJKLMNOPQRSTUVWXYZ \t()[]"
    for _ in range(300):
        text = "\n".join(
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(rng.randint(0, 6))
        )
        parsed = parse_squeue(text)
        for job in parsed.jobs:
            assert isinstance(job.state, JobState)
        assert len(parsed.jobs) + len(parsed.problems) <= text.count("\n") + 1
    assert len(SQUEUE_FIELDS) == 10


def test_sacct_real_and_hostile():
    out = (
        "201|COMPLETED|0:0|00:01:40|01:00:00|1|n1|None|s-a\n"
        "202|CANCELLED by 1001|0:15|00:00:05|01:00:00|1|n1|None|s-b\n"
        "203|OUT_OF_MEMORY|0:125|00:00:07|01:00:00|1|n1|None|s-c\n"
        "203.batch|OUT_OF_MEMORY|0:125|00:00:07||1|n1||batch\n"
        "204|NODE_FAIL|1:0|00:00:09|01:00:00|2|n[1-2]|None|s-d\n"
        "205|TIMEOUT|0:0|01:00:02|01:00:00|1|n1|TimeLimit|s-e\n"
        "206|PREEMPTED|0:0|00:10:00|01:00:00|1|n1|None|s-f\n"
        "207|FAILED|3:0|00:00:01|01:00:00|1|n1|NonZeroExitCode|s-g\n"
        "20x|FAILED|3:0|bad\n"
        "208|???|x:y|zz|zz|zz|||s-h\n"
    )
    parsed = parse_sacct(out)
    states = {j.job_id: (j.state, j.exit_code) for j in parsed.jobs}
    assert states["201"] == (JobState.COMPLETED, 0)
    assert states["202"] == (JobState.CANCELLED, 128 + 15)
    assert states["203"][0] is JobState.OUT_OF_MEMORY
    assert states["204"] == (JobState.NODE_FAIL, 1)
    assert states["205"][0] is JobState.TIMEOUT
    assert states["206"][0] is JobState.PREEMPTED
    assert states["207"] == (JobState.FAILED, 3)
    assert states["208"] == (JobState.UNKNOWN, None)
    assert "203.batch" not in states
    assert len(parsed.problems) == 2


SCONTROL = (
    "JobId=301 JobName=s-a UserId=hlmtest(1001) GroupId=hlmtest(1001) Priority=1 JobState=COMPLETED "
    "Reason=None Dependency=(null) ExitCode=0:0 RunTime=00:00:12 TimeLimit=00:10:00 NodeList=vm NumNodes=1 "
    "Comment=hlm-study-1234 Command=/tmp/a dir/job.sh WorkDir=/tmp/a dir\n"
    "slurm_load_jobs error: Invalid job id specified\n"
    "JobId=302 JobName=s-b JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:01 NumNodes=1-1\n"
    "JobName=no-id JobState=RUNNING\n"
    "JobId=303 JobState=SOMETHING_NEW\n"
)


def test_scontrol_lines():
    parsed = parse_scontrol(SCONTROL)
    jobs = {j.job_id: j for j in parsed.jobs}
    assert jobs["301"].state is JobState.COMPLETED and jobs["301"].elapsed_s == 12
    assert jobs["301"].comment == "hlm-study-1234" and jobs["301"].nodes == 1
    assert jobs["302"].state is JobState.FAILED and jobs["302"].exit_code == 3 and jobs["302"].nodes == 1
    assert jobs["303"].state is JobState.UNKNOWN
    assert len(parsed.problems) == 2


def test_sbatch_answers():
    assert parse_sbatch(CommandResult("sbatch", 0, "12345\n", "")) == "12345"
    assert parse_sbatch(CommandResult("sbatch", 0, "12346;meluxina\n", "sbatch: warning: x\n")) == "12346"
    with pytest.raises(SubmitRefused, match="Invalid qos specification"):
        parse_sbatch(CommandResult("sbatch", 1, "", "sbatch: error: Batch job submission failed: Invalid qos specification\n"))
    with pytest.raises(SubmitRefused, match="exit status 1"):
        parse_sbatch(CommandResult("sbatch", 1, "", ""))


def test_adaptive_interval():
    iv = AdaptiveInterval(fast_s=1, running_s=10, slow_s=60)
    from cockpit.launch.backend import JobInfo

    pending = [JobInfo("1", "a", JobState.PENDING)]
    running = [JobInfo("1", "a", JobState.RUNNING)]
    assert iv.next(pending, changed=True) == 1
    quiet = [iv.next(pending, changed=False) for _ in range(20)]
    assert quiet == sorted(quiet) and quiet[-1] == 60
    assert iv.next(running, changed=True) == 1
    assert max(iv.next(running, changed=False) for _ in range(20)) == 10
