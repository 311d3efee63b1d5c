"""What Slurm's commands print, read defensively: squeue, sacct, scontrol, sbatch, sacctmgr and reservations
parsed into job states, limits and refusals, anything unexpected a ParseProblem, never an exception; and the
errors the Slurm backend raises, in Slurm's own words. The client (client.py) runs the commands with the
formats these parsers read."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from cockpit.launch import backend
from cockpit.launch.backend import BackendError, JobInfo, JobState, ParseProblem
from cockpit.launch.maintenance import Reservation
from cockpit.launch.ssh import CommandResult

# squeue: free-text fields (name, comment) go last so a stray separator in them cannot shift the others.
SEP = "|"
SQUEUE_FIELDS = ("job_id", "state", "elapsed", "time_limit", "nodes", "nodelist", "user", "reason", "name", "comment")
SQUEUE_FORMAT = SEP.join(("%i", "%T", "%M", "%l", "%D", "%N", "%u", "%r", "%j", "%k"))
SACCT_FIELDS = ("JobID", "State", "ExitCode", "Elapsed", "Timelimit", "NNodes", "NodeList", "Reason", "JobName")

_STATE_MAP: dict[str, JobState] = {
    "PENDING": JobState.PENDING,
    "PD": JobState.PENDING,
    "CONFIGURING": JobState.PENDING,
    "CF": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "R": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "COMPLETING": JobState.COMPLETING,
    "CG": JobState.COMPLETING,
    "STAGE_OUT": JobState.COMPLETING,
    "SUSPENDED": JobState.SUSPENDED,
    "S": JobState.SUSPENDED,
    "STOPPED": JobState.SUSPENDED,
    "ST": JobState.SUSPENDED,
    "REQUEUED": JobState.REQUEUED,
    "RQ": JobState.REQUEUED,
    "COMPLETED": JobState.COMPLETED,
    "CD": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "F": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "BF": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "SE": JobState.FAILED,
    "REVOKED": JobState.FAILED,
    "CANCELLED": JobState.CANCELLED,
    "CA": JobState.CANCELLED,
    "TIMEOUT": JobState.TIMEOUT,
    "TO": JobState.TIMEOUT,
    "DEADLINE": JobState.TIMEOUT,
    "DL": JobState.TIMEOUT,
    "PREEMPTED": JobState.PREEMPTED,
    "PR": JobState.PREEMPTED,
    "OUT_OF_MEMORY": JobState.OUT_OF_MEMORY,
    "OOM": JobState.OUT_OF_MEMORY,
    "NODE_FAIL": JobState.NODE_FAIL,
    "NF": JobState.NODE_FAIL,
}
_JOB_ID = re.compile(r"^\d+(?:_\d+|_\[[^\]]*\])?(?:\+\d+)?$")




class SlurmError(BackendError):
    """A Slurm command failed; the message carries Slurm's own words."""


class SubmitRefused(SlurmError, backend.SubmitRefused):
    """``sbatch`` refused the job (bad QOS/account/partition, limits, resources beyond the node)."""


class SubmitLater(SubmitRefused, backend.SubmitLater):
    """``sbatch`` refused the job for now (a per-user or association limit is full, the controller is busy)."""


# Slurm's words for a refusal that only means "not now" (the reason codes sbatch prints for a full per-user
# or per-association limit, and a controller that did not answer in time) -> the limit in people's words.
# Every other refusal (unknown account, QOS or partition, a time over the QOS's MaxWall, resources no node
# has) stays final. So do the resource limits (GrpTRES such as gres/gpu, MaxTRESPerUser, nodes per user): at
# submit Slurm refuses only a job that alone asks more than the limit (QOSGrpGRES, AssocGrpNodeLimit,
# QOSMaxGRESPerUser, ...), which no wait changes; a job within them that finds them full is queued, pending
# with that reason, and starts when they free. The *PerAccount names are those of Slurm releases newer than
# the test cluster's 22.05.
TRANSIENT_REFUSALS: tuple[tuple[str, str], ...] = (
    ("QOSMaxSubmitJobPerUserLimit", "QOS submit limit"),
    ("QOSMaxSubmitJobPerAccountLimit", "QOS submit limit of the account"),
    ("AssocMaxSubmitJobLimit", "association submit limit"),
    ("AssocGrpSubmitJobsLimit", "association group submit limit"),
    ("QOSGrpSubmitJobsLimit", "QOS group submit limit"),
    ("QOSMaxJobsPerUserLimit", "QOS job limit"),
    ("QOSMaxJobsPerAccountLimit", "QOS job limit of the account"),
    ("AssocMaxJobsLimit", "association job limit"),
    ("AssocGrpJobsLimit", "association group job limit"),
    ("QOSGrpJobsLimit", "QOS group job limit"),
    ("Slurm temporarily unable to accept job", "the controller is busy"),
    ("Unable to contact slurm controller", "the Slurm controller is not answering"),
)

# Slurm's words when its controller cannot be reached: stopped or restarting ("Unable to contact slurm
# controller (connect failure)"), stopped or overloaded mid-request ("Socket timed out on send/recv
# operation"), a failover under way. The queries then know nothing of the jobs: SchedulerUnreachable, never
# "the job left the queue". An sbatch that timed out may have reached the controller: its outcome is unknown.
CONTROLLER_UNREACHABLE = (
    "Unable to contact slurm controller",
    "Socket timed out on send/recv operation",
    "Slurm backup controller in standby mode",
    "Zero Bytes were transmitted or received",
    "Communication connection failure",
)
SBATCH_OUTCOME_UNKNOWN = ("Socket timed out on send/recv operation", "Zero Bytes were transmitted or received")
QUERY_TIMEOUT_S = 60.0  # a squeue, sacct or scontrol that takes longer: the controller is not answering


@dataclass
class Parsed:
    jobs: list[JobInfo] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)


def parse_state(text: str) -> JobState | None:
    """Map a Slurm state ('RUNNING', 'CANCELLED by 1001', 'R', 'COMPLETED+') onto JobState; None if unknown."""
    word = text.strip().split(" ", 1)[0].rstrip("+*").upper()
    return _STATE_MAP.get(word)


def parse_duration(text: str) -> float | None:
    """Slurm durations '[D-]HH:MM:SS', 'MM:SS', 'MM', with optional fraction; None for UNLIMITED/INVALID/N/A."""
    text = text.strip()
    if not text or not (text[0].isdigit()):
        return None
    days = 0
    if "-" in text:
        d, _, text = text.partition("-")
        if not d.isdigit():
            return None
        days = int(d)
    parts = text.split(":")
    if len(parts) > 3 or not all(re.fullmatch(r"\d+(?:\.\d+)?", p) for p in parts):
        return None
    nums = [float(p) for p in parts]
    if days and len(nums) < 3:
        nums = nums + [0.0] * (3 - len(nums))  # "D-HH" and "D-HH:MM"
        secs = nums[0] * 3600 + nums[1] * 60 + nums[2]
    elif len(nums) == 3:
        secs = nums[0] * 3600 + nums[1] * 60 + nums[2]
    elif len(nums) == 2:
        secs = nums[0] * 60 + nums[1]
    else:
        secs = nums[0] * 60
    return days * 86400 + secs


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _exit_code(text: str) -> int | None:
    """'0:0' -> 0, '1:0' -> 1, '0:9' (killed by signal 9) -> 128 + 9."""
    code, _, sig = text.strip().partition(":")
    if not code.isdigit():
        return None
    if int(code) == 0 and sig.isdigit() and int(sig):
        return 128 + int(sig)
    return int(code)


def _ours(name: str, job_comment: str, name_prefix: str, comment: str) -> bool:
    """The comment decides when the job has one; the name prefix only where the site drops comments
    (so study "a" never claims the jobs of study "a-b")."""
    if comment and job_comment not in ("", "(null)"):
        return job_comment == comment
    return bool(name_prefix) and name.startswith(name_prefix)


def parse_squeue(output: str, *, name_prefix: str = "", comment: str = "") -> Parsed:
    """Parse ``squeue -h -o SQUEUE_FORMAT`` output, keeping the study's jobs: comment equal to ``comment``,
    or (for jobs without a comment) name starting with ``name_prefix``. Both empty: keep all."""
    out = Parsed()
    n = len(SQUEUE_FIELDS)
    for raw in output.splitlines():
        line = raw.strip("\r\n")
        if not line.strip():
            continue
        parts = line.split(SEP)
        if len(parts) < n:
            out.problems.append(ParseProblem("squeue", line, f"expected {n} fields, found {len(parts)}"))
            continue
        parts = parts[: n - 1] + [SEP.join(parts[n - 1 :])]
        rec = dict(zip(SQUEUE_FIELDS, (p.strip() for p in parts), strict=True))
        if not _JOB_ID.match(rec["job_id"]):
            out.problems.append(ParseProblem("squeue", line, f"job id {rec['job_id']!r} is not a Slurm job id"))
            continue
        if (name_prefix or comment) and not _ours(rec["name"], rec["comment"], name_prefix, comment):
            continue
        state = parse_state(rec["state"])
        if state is None:
            out.problems.append(ParseProblem("squeue", line, f"unknown job state {rec['state']!r}"))
            state = JobState.UNKNOWN
        reason = rec["reason"] if rec["reason"] not in ("None", "(null)") else ""
        out.jobs.append(
            JobInfo(
                job_id=rec["job_id"],
                name=rec["name"],
                state=state,
                reason=reason,
                elapsed_s=parse_duration(rec["elapsed"]),
                time_limit_s=parse_duration(rec["time_limit"]),
                nodes=_int_or_none(rec["nodes"]),
                nodelist=rec["nodelist"],
                comment=rec["comment"] if rec["comment"] != "(null)" else "",
                extra={"slurm_state": rec["state"], "user": rec["user"], "held": str(reason.startswith("JobHeld"))},
            )
        )
    return out


def parse_sacct(output: str) -> Parsed:
    """Parse ``sacct -X -n -P --format=SACCT_FIELDS`` output (one allocation line per job)."""
    out = Parsed()
    n = len(SACCT_FIELDS)
    for raw in output.splitlines():
        line = raw.strip("\r\n")
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < n:
            out.problems.append(ParseProblem("sacct", line, f"expected {n} fields, found {len(parts)}"))
            continue
        parts = parts[: n - 1] + ["|".join(parts[n - 1 :])]
        rec = dict(zip(SACCT_FIELDS, (p.strip() for p in parts), strict=True))
        if "." in rec["JobID"]:
            continue  # a step line slipped through without -X
        if not _JOB_ID.match(rec["JobID"]):
            out.problems.append(ParseProblem("sacct", line, f"job id {rec['JobID']!r} is not a Slurm job id"))
            continue
        state = parse_state(rec["State"])
        if state is None:
            out.problems.append(ParseProblem("sacct", line, f"unknown job state {rec['State']!r}"))
            state = JobState.UNKNOWN
        out.jobs.append(
            JobInfo(
                job_id=rec["JobID"],
                name=rec["JobName"],
                state=state,
                reason=rec["Reason"] if rec["Reason"] not in ("None", "") else "",
                elapsed_s=parse_duration(rec["Elapsed"]),
                time_limit_s=parse_duration(rec["Timelimit"]),
                nodes=_int_or_none(rec["NNodes"]),
                nodelist=rec["NodeList"],
                exit_code=_exit_code(rec["ExitCode"]),
                extra={"slurm_state": rec["State"], "source": "sacct"},
            )
        )
    return out


_KV = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


def parse_scontrol_line(line: str) -> dict[str, str]:
    """Split one ``scontrol -o show job`` line into its Key=Value pairs (values may contain spaces)."""
    marks = list(_KV.finditer(line))
    rec: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        rec[m.group(1)] = line[m.end() : end].strip()
    return rec


def parse_scontrol(output: str) -> Parsed:
    """Parse ``scontrol -o show job ID`` output for several jobs (one line each)."""
    out = Parsed()
    for raw in output.splitlines():
        line = raw.strip()
        if not line:
            continue
        if "Invalid job id" in line or line.startswith("slurm_load_jobs error"):
            continue  # the controller forgot the job: the caller falls back to the run directory
        rec = parse_scontrol_line(line)
        job_id = rec.get("JobId", "")
        if not _JOB_ID.match(job_id):
            out.problems.append(ParseProblem("scontrol", line, "no JobId=<number> in the line"))
            continue
        state = parse_state(rec.get("JobState", ""))
        if state is None:
            out.problems.append(ParseProblem("scontrol", line, f"unknown job state {rec.get('JobState')!r}"))
            state = JobState.UNKNOWN
        reason = rec.get("Reason", "")
        out.jobs.append(
            JobInfo(
                job_id=job_id,
                name=rec.get("JobName", ""),
                state=state,
                reason="" if reason == "None" else reason,
                elapsed_s=parse_duration(rec.get("RunTime", "")),
                time_limit_s=parse_duration(rec.get("TimeLimit", "")),
                nodes=_int_or_none(rec.get("NumNodes", "").split("-")[0]),
                nodelist=rec.get("NodeList", "") if rec.get("NodeList") != "(null)" else "",
                comment=rec.get("Comment", "") if rec.get("Comment") != "(null)" else "",
                exit_code=_exit_code(rec.get("ExitCode", "")),
                extra={"slurm_state": rec.get("JobState", ""), "source": "scontrol"},
            )
        )
    return out


def controller_unreachable(text: str) -> bool:
    """Whether a Slurm command's output says the controller did not answer (CONTROLLER_UNREACHABLE)."""
    low = text.lower()
    return any(words.lower() in low for words in CONTROLLER_UNREACHABLE)


class SubmitUnknown(SlurmError, backend.OutcomeUnknown):
    """``sbatch`` timed out talking to the controller: the job may have been queued; the runner keeps the
    intent and settles it by the job's name and comment once the controller answers."""


def parse_reservations(output: str) -> list[Reservation]:
    """Parse ``scontrol -o show reservation`` printed with SLURM_TIME_FORMAT=%s (times as epoch seconds);
    "No reservations in the system" and lines without a name or readable times are left out."""
    out = []
    for raw in output.splitlines():
        rec = parse_scontrol_line(raw.strip())
        start, end = rec.get("StartTime", ""), rec.get("EndTime", "")
        if not rec.get("ReservationName") or not start.isdigit() or not end.isdigit():
            continue
        partition = rec.get("PartitionName", "")
        out.append(Reservation(
            name=rec["ReservationName"], start=float(start), end=float(end),
            nodes="" if rec.get("Nodes") in (None, "(null)") else rec["Nodes"],
            partition="" if partition == "(null)" else partition,
            flags=tuple(f.strip().upper() for f in rec.get("Flags", "").split(",") if f.strip()),
        ))
    return out


def parse_sbatch(result: CommandResult) -> str:
    """The job id from ``sbatch --parsable`` ('123' or '123;cluster'); SubmitRefused with Slurm's message."""
    if result.exit_status != 0:
        text = result.stderr or result.stdout
        msg = _slurm_message(text) or f"exit status {result.exit_status}, no message"
        if any(words.lower() in text.lower() for words in SBATCH_OUTCOME_UNKNOWN):
            raise SubmitUnknown(f"sbatch: the Slurm controller did not answer in time, the job may be queued: {msg}")
        limit = transient_limit(text)
        if limit is not None:
            raise SubmitLater(f"sbatch: not now: {msg}", limit)
        raise SubmitRefused(f"sbatch refused the job: {msg}")
    for line in reversed(result.stdout.strip().splitlines()):
        job_id = line.strip().split(";", 1)[0]
        if job_id.isdigit():
            return job_id
    raise SlurmError(f"sbatch succeeded but printed no job id: {result.stdout.strip()[:200]!r}")


def wall_minutes(text: str) -> int:
    """A Slurm duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) in whole minutes, rounded up."""
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        hours, minutes, seconds = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    elif len(parts) == 2:
        hours, (minutes, seconds) = 0, parts
    else:
        hours, minutes, seconds = 0, parts[0], 0
    return (int(days or 0) * 24 + hours) * 60 + minutes + (1 if seconds else 0)


def transient_limit(text: str) -> str | None:
    """The limit a "not now" refusal names (TRANSIENT_REFUSALS), or None for a final one."""
    low = text.lower()
    return next((words for code, words in TRANSIENT_REFUSALS if code.lower() in low), None)


def parse_limits(assoc: str, qos: str, jobs: str, account: str | None, qos_name: str | None) -> backend.UserLimits:
    """The user's limits from ``sacctmgr -nP show assoc`` (Account|QOS|MaxJobs|MaxSubmitJobs) and ``show qos``
    (Name|MaxJobsPerUser|MaxSubmitJobsPerUser) and the user's jobs from ``squeue --me -o %t|%q|%a``. Each
    limit counts only its own jobs, as Slurm does: a QOS limit the user's jobs in that QOS, an association's
    the jobs charged to its account. The binding limit is the one with the least room left: of the study's
    association (its account, else every one of the user's) and its QOS (else each QOS the association
    allows, the loosest: the default one is one of them)."""
    def number(text: str) -> int | None:
        return int(text) if text.strip().isdigit() else None

    rows = [line.split("|") for line in assoc.splitlines() if line.count("|") >= 3]
    rows = [r for r in rows if account is None or r[0] == account] or rows
    qos_rows = {r[0]: r for r in (line.split("|") for line in qos.splitlines() if line.count("|") >= 2)}
    allowed = {q for r in rows for q in r[1].split(",") if q}
    names = [qos_name] if qos_name else sorted(allowed)
    listed = [(p + ["", ""])[:3] for p in (line.strip().split("|") for line in jobs.splitlines() if line.strip())]

    def loosest(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return None if len(known) < len(values) or not known else max(known)

    def qos_limit(column: int) -> int | None:
        values = [number(qos_rows[n][column]) if n in qos_rows else None for n in names]
        known = [v for v in values if v is not None]
        # with no QOS named, the job gets one of those allowed: the loosest of them is the most it can be held to
        return (min(known) if known else None) if qos_name else loosest(values)

    def binding(qos_cap: int | None, assoc_column: int, counted: Callable[[str], bool]) -> tuple[int | None, int]:
        """(limit, the user's jobs against it) of the limit with the least room; (None, all jobs) if none."""
        in_qos = [s for s, q, _ in listed if counted(s) and (qos_name is None or q == qos_name)]
        caps = [(qos_cap, len(in_qos))] if qos_cap is not None else []
        for r in rows:
            if (cap := number(r[assoc_column])) is not None:
                caps.append((cap, sum(1 for s, _, a in listed if counted(s) and a in (r[0], ""))))
        return min(caps, key=lambda c: c[0] - c[1]) if caps else (None, sum(1 for s, _, _ in listed if counted(s)))

    max_submit, queued = binding(qos_limit(2), 3, lambda s: True)
    max_running, running = binding(qos_limit(1), 2, lambda s: s in ("R", "CG"))
    return backend.UserLimits(max_submit=max_submit, max_running=max_running, queued=queued, running=running,
                              source="sacctmgr (association and QOS) and squeue")


def _slurm_message(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return " / ".join(errors or lines[-3:])


def _ids(job_ids: Iterable[str]) -> list[str]:
    ids = [str(j) for j in job_ids]
    bad = [j for j in ids if not _JOB_ID.match(j)]
    if bad:
        raise SlurmError(f"refusing to pass {bad[0]!r} to Slurm: not a job id")
    return ids


