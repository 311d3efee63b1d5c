"""What one preflight job found, turned into verdict rows against what the study expects.

Each row has the figure measured and what was expected; a failed row also says what to change in the
study file. A check that could not run says "not run" and why: nothing passes without having run.
docs/gpu.md lists every check.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from cockpit.figures.sizes import size_words

if TYPE_CHECKING:
    from cockpit.preflight.jobs import PreflightJob
    from cockpit.study.spec import Study

PASS, WARN, FAIL, NOT_RUN = "pass", "warn", "FAIL", "not run"
PYTHON_FIX = ("give the jobs a Python with torch and this project: [cluster].container, [cluster].python or "
              "[cluster].modules (README, quick start step 2)")
GIB = 2**30


@dataclass
class Check:
    """One line of a preflight table."""

    area: str
    verdict: str
    found: str
    expected: str = ""
    fix: str = ""


@dataclass
class JobFindings:
    """Everything known about one preflight job once it ended (or could not be submitted)."""

    job_id: str = ""
    state: str = ""
    directory: str = ""
    log_paths: list[str] = field(default_factory=list)
    submit_error: str = ""
    env: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None
    log_tail: str = ""
    qos_minutes: dict[str, int | None] = field(default_factory=dict)  # None: no MaxWall
    qos_source: str = ""


@dataclass
class JobOutcome:
    """One preflight job's table."""

    name: str
    nodes: int
    gpus_per_node: int
    job_id: str
    state: str
    log_paths: list[str]
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return not any(c.verdict == FAIL for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobOutcome:
        checks = [Check(**c) for c in data.get("checks", [])]
        return cls(data["name"], data["nodes"], data["gpus_per_node"], data.get("job_id", ""), data.get("state", ""),
                   list(data.get("log_paths", [])), checks)


def evaluate(study: Study, job: PreflightJob, found: JobFindings, *, expect_gpus: bool,
             laptop: dict[str, str], link_figures: dict[str, float], need: Need | None = None,
             place: str = "the cluster") -> list[Check]:
    """The rows of one job's table, in the order a reader fixes them: submit, environment, devices, NVML,
    communication, data, storage, scheduler. ``need``: the study's footprint, which the free space must hold;
    ``place``: where the jobs read their data, in the backend's words (Backend.place_words)."""
    checks = _time_limit(study, found)
    if found.submit_error:
        return [*checks, Check("submit", FAIL, found.submit_error, "sbatch accepts the job", _submit_fix(found.submit_error))]
    checks += _environment(found, laptop)
    facts = found.facts
    if facts is None:
        ended = f"job {found.job_id} ended {found.state or 'without a state'}"
        tail = f": {found.log_tail}" if found.log_tail else ""
        return [*checks, Check("preflight", FAIL, f"{ended} without writing preflight.json{tail}",
                               "hlm-train preflight writes preflight.json", PYTHON_FIX)]
    ranks = facts.get("ranks") or []
    checks += _devices(study, job, ranks, expect_gpus)
    checks.append(_nvml(job, facts.get("nvml") or [], expect_gpus))
    checks += _communication(job, facts, link_figures)
    checks += _data(facts.get("data") or {}, place) if study.workload.reads_study_data else [
        Check("data", NOT_RUN, f"a {study.workload.kind} workload brings its own data: the study's [data] is the HLM "
                               "trainer's and is not checked")]
    checks += _files(facts.get("files") or {}, place)
    checks += _storage(facts.get("storage") or {}, need or Need())
    checks.append(_queue(facts.get("scheduler") or {}))
    return checks


@dataclass(frozen=True)
class SiteLimits:
    """The site's limits as the preflight shows them (cockpit.launch.backend.UserLimits' figures)."""

    max_submit: int | None
    max_running: int | None
    queued: int


def pace_check(study: Study, limits: SiteLimits | None, pace: int, running: int, duration: str, runs: int) -> Check:
    """The site's limits on what one user may have at once (sacctmgr) against the study's pace: how many of
    its jobs go at once, how many of them run (the running limit queues the rest), and how long its runs take
    at that pace (``duration``: Plan.duration_words, `about 1.5 h` or `at most 4.0 h`). A max_concurrent_jobs above what the submit limit leaves is a warning: the runner then
    waits at the limit (never a failure)."""
    took = f"{runs} runs take {duration} at that pace (queue waits not included)"
    configured = study.cluster.max_concurrent_jobs
    if limits is None:
        return Check("site limits", NOT_RUN, f"no limits known (accounting not reachable): {pace} jobs at once "
                     f"([cluster].max_concurrent_jobs{'' if configured else ' unset: 4'}); {took}")
    caps = [f"submit limit {limits.max_submit}" if limits.max_submit is not None else "no submit limit",
            f"running limit {limits.max_running}" if limits.max_running is not None else "no running limit"]
    against = " against the submit limit" if limits.max_submit is not None else ""
    found = (f"{', '.join(caps)} (QOS {study.cluster.own.get('qos') or 'default'}); {limits.queued} job(s) of yours queued "
             f"or running{against} now; {pace} of the study's jobs at once, {running} running; {took}")
    room = None if limits.max_submit is None else limits.max_submit - limits.queued
    if configured is not None and room is not None and configured > room:
        return Check("site limits", WARN, found, f"max_concurrent_jobs <= {max(room, 0)}",
                     "unset [cluster].max_concurrent_jobs to go at the site's pace, or leave it: the runner "
                     "waits at the limit")
    return Check("site limits", PASS, found)


def _submit_fix(message: str) -> str:
    low = message.lower()
    if "account" in low:
        return "set [cluster].account to a project account you belong to (sacctmgr show assoc user=$USER)"
    if "qos" in low:
        return "set [cluster].qos to a QOS your account may use, and [cluster].time_limit within its MaxWall"
    if "partition" in low:
        return "set [cluster].partition to a partition of the cluster (sinfo -s)"
    if "permission denied" in low or "cannot create" in low or "read-only" in low:
        return "set [cluster].workdir to a directory you can write on the cluster"
    return "see the message; `cockpit plan --render DIR STUDY` writes the scripts to try by hand"


def _time_limit(study: Study, found: JobFindings) -> list[Check]:
    """The study's --time against the wall time its QOS allows (sacctmgr, else the site profile)."""
    c = study.cluster
    qos = c.own.get("qos")  # Slurm's own key (cockpit.launch.slurm.kind); other kinds have no QOS
    if not qos:
        return [Check("qos wall time", NOT_RUN, "the study sets no [cluster].qos")]
    caps = ", ".join(f"{q} {m} min" if m else f"{q} unlimited" for q, m in sorted(found.qos_minutes.items()))
    if qos not in found.qos_minutes:
        if found.qos_source == "sacctmgr":  # accounting knows every QOS: sbatch will refuse this one
            return [Check("qos wall time", FAIL, f"QOS {qos!r} does not exist (known: {caps or 'none'})",
                          "a QOS of the cluster", "set [cluster].qos to one of the known QOSs")]
        return [Check("qos wall time", NOT_RUN, f"no MaxWall known for QOS {qos!r} "
                      f"({caps or 'none known'}; {found.qos_source or 'no source'})")]
    cap = found.qos_minutes[qos]
    if cap is None:
        return [Check("qos wall time", PASS, f"QOS {qos} sets no MaxWall (from {found.qos_source})")]
    where = f"{c.time_limit_minutes} min for QOS {qos} (caps: {caps}; from {found.qos_source})"
    if c.time_limit_minutes > cap:
        return [Check("qos wall time", FAIL, where, f"<= {cap} min",
                      f"lower [cluster].time_limit to at most {cap} min or choose a QOS that allows it")]
    return [Check("qos wall time", PASS, where, f"<= {cap} min")]


def _environment(found: JobFindings, laptop: dict[str, str]) -> list[Check]:
    env = found.env
    if env is None:
        tail = f": {found.log_tail}" if found.log_tail else ""
        return [Check("python", FAIL, f"the job's python did not run{tail}", "[cluster].python runs", PYTHON_FIX)]
    modules = env.get("modules") or {}
    out = [Check("python", PASS, f"{env.get('python')} at {env.get('executable')}")]
    for name, need in (("torch", True), ("trainer", True), ("numpy", True), ("scipy", True), ("wfdb", True),
                       ("pynvml", False)):
        version = str(modules.get(name, "error: not checked"))
        if version.startswith("error"):
            out.append(Check(name, FAIL if need else WARN, version, "imports", PYTHON_FIX))
            continue
        want = laptop.get("project" if name == "trainer" else name)
        if want and _base(want) != _base(version):
            out.append(Check(name, WARN, f"{version} in the job", f"{want} on this machine",
                             "install the same version in the job's environment and here"))
        else:
            out.append(Check(name, PASS, version, want or ""))
    return out


def _base(version: str) -> str:
    return version.split("+", 1)[0]


def shared_host(ranks: list[dict[str, Any]]) -> str:
    """A host whose ranks reported several node names (a scheduler's nodes on one machine, as the test Slurm's
    are), else "": the prediction then prices those nodes' ranks as sharing its cores."""
    nodes: dict[str, set[str]] = {}
    for rank in ranks:
        if isinstance(rank, dict) and rank.get("host"):
            nodes.setdefault(str(rank["host"]), set()).add(str(rank.get("node") or rank["host"]))
    return next((host for host, names in sorted(nodes.items()) if len(names) > 1), "")


def _devices(study: Study, job: PreflightJob, ranks: list[dict[str, Any]], expect_gpus: bool) -> list[Check]:
    want = job.nodes * job.gpus_per_node
    nodes = sorted({str(r.get("node") or r.get("host")) for r in ranks})
    ok = len(ranks) == want and len(nodes) == job.nodes
    host = shared_host(ranks)
    workers = Check("workers", PASS if ok else FAIL,
                    f"{len(ranks)} ranks on {len(nodes)} node(s) ({', '.join(nodes)})"
                    + (f", all on one host ({host}): their ranks share its cores" if host else ""),
                    f"{want} on {job.nodes}", "" if ok else "check [cluster].gpus_per_node and the launcher's log")
    if not expect_gpus:
        need = job.cfg.node_cores
        cores = min((int(r.get("cores") or 0) for r in ranks), default=0)
        return [workers,
                Check("cores", PASS if cores >= need else WARN, f"{cores} usable per node",
                      f"{job.gpus_per_node} workers x {job.cfg.cpus_per_task} = {need}",
                      "" if cores >= need else "workers will share cores: lower [sweep].cpus_per_task"),
                Check("gpus", NOT_RUN, "CPU workers: [train].device is cpu or the partition has no GPUs")]
    out = [workers]
    bad = [r for r in ranks if int(r.get("cuda_device_count") or 0) != job.gpus_per_node]
    seen = ranks[0] if ranks else {}
    names = "; ".join(f"{d.get('name')} {int(d.get('memory_bytes') or 0) / GIB:.0f} GiB" for d in seen.get("devices") or [])
    found = (f"torch sees {seen.get('cuda_device_count', 0)} per node, CUDA_VISIBLE_DEVICES="
             f"{seen.get('cuda_visible_devices')}" + (f": {names}" if names else ""))
    out.append(Check("gpus", FAIL if bad or not ranks else PASS, found, f"{job.gpus_per_node} per node",
                     "the container needs --nv and the job a GPU request ([cluster].gres_style)" if bad else ""))
    if "bf16" in study.sweep.get("precision", []):
        unsupported = [r for r in ranks if r.get("bf16_supported") is False]
        out.append(Check("bf16", FAIL if unsupported else PASS,
                         "unsupported on " + ", ".join(str(r.get("host")) for r in unsupported) if unsupported
                         else "supported on every GPU", "supported",
                         "drop bf16 from [sweep].precision on these GPUs" if unsupported else ""))
    return out


def _nvml(job: PreflightJob, readings: list[dict[str, Any]], expect_gpus: bool) -> Check:
    if not expect_gpus:
        why = "; ".join(sorted({str(r.get("reason")) for r in readings if r.get("reason")}))
        return Check("nvml", NOT_RUN, "CPU workers: no GPU to read" + (f" ({why})" if why else ""))
    bad = [r for r in readings if not r.get("available") or len(r.get("gpus") or []) < job.gpus_per_node]
    if bad or len(readings) < job.nodes:
        why = "; ".join(f"{r.get('host')}: {r.get('reason') or str(len(r.get('gpus') or [])) + ' GPUs'}" for r in bad)
        return Check("nvml", FAIL, why or f"{len(readings)} of {job.nodes} nodes read", f"{job.gpus_per_node} GPUs per node",
                     "install nvidia-ml-py in the job's environment; start the container with --nv")
    first = (readings[0].get("gpus") or [{}])[0]
    return Check("nvml", PASS, f"{sum(len(r['gpus']) for r in readings)} GPUs read; e.g. util {first.get('util_pct')}%, "
                 f"{(first.get('mem_used_bytes') or 0) / GIB:.1f} GiB used, {first.get('power_w')} W",
                 f"{job.gpus_per_node} per node")


def _communication(job: PreflightJob, facts: dict[str, Any], link_figures: dict[str, float]) -> list[Check]:
    comm = facts.get("comm")
    backend = facts.get("backend") or "none"
    if comm is None:
        return [Check("all-reduce", NOT_RUN, "one worker: no all-reduce to time")]
    if comm.get("error"):
        return [Check("all-reduce", FAIL, f"{backend}: {comm['error']}", "completes",
                      "check the network between the nodes (NCCL_DEBUG=INFO in [cluster.env] names the interface)")]
    out = []
    for kind, link in sorted((comm.get("links") or {}).items()):
        gbs = float(link.get("busbw_bytes_per_s") or 0.0) / 1e9
        site = link_figures.get(kind, 0.0)
        expected = f"site profile {site:g} GB/s" if site else "no site figure"
        verdict = WARN if site and backend == "nccl" and gbs < 0.5 * site else PASS
        out.append(Check(f"all-reduce {kind.replace('_', '-')}", verdict,
                         f"{backend} {link.get('ranks')} ranks: bus bandwidth {gbs:.3f} GB/s "
                         f"({comm.get('bytes', 0) / 2**20:.0f} MiB in {float(link.get('seconds') or 0) * 1e3:.1f} ms)",
                         expected, "below half the profile's figure: check NCCL's transport" if verdict == WARN else ""))
    return out


def _data(data: dict[str, Any], host: str) -> list[Check]:
    out = []
    for name, d in sorted(data.items()):
        where = f"[data.datasets].{name}"
        if d.get("error"):
            out.append(Check(f"data {name}", FAIL, str(d["error"]), "a readable PhysioNet-style folder",
                             f"fix {where}.path (a path on {host}) or its tokenizer table"))
        elif d.get("synthetic"):
            out.append(Check(f"data {name}", NOT_RUN, "synthetic: generated inside each job, nothing to read"))
        else:
            rate = f"; tokenized at {d['tokenized_fs']:g} Hz" if d.get("tokenized_fs") else ""
            out.append(Check(f"data {name}", PASS, f"{d.get('records')} records; {d.get('checked_record')}: "
                             f"{d.get('fs', 0):g} Hz{rate}", "readable, tokenizer valid"))
    return out


def _files(files: dict[str, Any], host: str) -> list[Check]:
    """The files a study's own script needs ([workload].command[0] and files), as the job found them."""
    return [Check(f"file {PurePosixPath(path).name}", PASS if f.get("readable") else FAIL, f"{f.get('path', path)} "
                  + ("readable" if f.get("readable") else "not found or not readable"), "readable",
                  "" if f.get("readable") else f"copy it to {host} or fix [workload].command / files")
            for path, f in sorted(files.items())]


def _storage(storage: dict[str, Any], need: Need) -> list[Check]:
    out = []
    for key, label in (("workdir", "[cluster].workdir"), ("token_cache", "[data].token_cache")):
        if storage.get(f"{key}_writable") is False:
            out.append(Check(f"storage {key}", FAIL, str(storage.get(f"{key}_error")), "writable",
                             f"set {label} to a directory you can write on the cluster"))
        elif storage.get(f"{key}_writable"):
            out.append(Check(f"storage {key}", PASS, f"{storage.get('dir') if key == 'workdir' else storage.get(key)} writable"))
    free = storage.get("free_bytes")
    if free is None:
        out.append(Check("free space", NOT_RUN, str(storage.get("free_error", "not measured"))))
    else:
        out.append(Check("free space", PASS if free >= need.bytes else FAIL,
                         f"{size_words(free)} free where the job ran", f"at least {need.words}",
                         "" if free >= need.bytes else FULL_FIX))
    return out


FULL_FIX = "free space in the work directory, or move [cluster].workdir (docs/long-study.md, a full work directory)"


@dataclass(frozen=True)
class Need:
    """The study's footprint in its work directory (cockpit.forecast.disk.footprint), as bytes and as the
    words that show its inputs."""

    bytes: int = 0
    words: str = "not estimated"


def space_check(need: Need, free_bytes: int | None, found: str) -> Check:
    """The work directory's space as the site's tool reads it (df, lfs quota, quota: cockpit.launch.storage;
    `found` says it, or why it was not read) against the study's footprint: a study that does not fit is
    refused before anything is submitted."""
    if free_bytes is None:
        return Check("work directory space", NOT_RUN, found, f"at least {need.words}")
    fits = free_bytes >= need.bytes
    return Check("work directory space", PASS if fits else FAIL, found, f"at least {need.words}",
                 "" if fits else FULL_FIX)


def _queue(scheduler: dict[str, Any]) -> Check:
    if not scheduler:
        return Check("queue wait", NOT_RUN, "no scheduler: the local executor starts jobs at once")
    if "queue_wait_s" not in scheduler:
        return Check("queue wait", NOT_RUN, str(scheduler.get("error", "scontrol gave no times")))
    return Check("queue wait", PASS, f"{scheduler['queue_wait_s']:.0f} s (job {scheduler.get('job_id')}, submitted "
                 f"{scheduler.get('submit_time')}, started {scheduler.get('start_time')})")


def parse_json(text: bytes, what: str) -> tuple[dict[str, Any] | None, str]:
    """A JSON object from a file's bytes, or None and why (an empty file is one the job never wrote)."""
    if not text.strip():
        return None, f"{what} not written"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"{what} is not valid JSON ({exc})"
    return (data, "") if isinstance(data, dict) else (None, f"{what} is not a JSON object")


@dataclass
class PreflightReport:
    """Every job's table of one preflight of one study file (its digest)."""

    study: str
    digest: str
    created_at: float
    jobs: list[JobOutcome]
    links: dict[str, float] = field(default_factory=dict)  # measured bus bandwidth per link kind, bytes/s
    shared_host: str = ""  # a host that carried several nodes of a job (their ranks share its cores), else ""

    @property
    def passed(self) -> bool:
        return bool(self.jobs) and all(j.passed for j in self.jobs)

    def failures(self) -> list[tuple[JobOutcome, Check]]:
        return [(j, c) for j in self.jobs for c in j.checks if c.verdict == FAIL]

    def to_json(self) -> dict[str, Any]:
        return {"study": self.study, "digest": self.digest, "created_at": self.created_at, "passed": self.passed,
                "links": self.links, "shared_host": self.shared_host, "jobs": [j.to_json() for j in self.jobs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PreflightReport:
        return cls(data["study"], data["digest"], float(data["created_at"]),
                   [JobOutcome.from_json(j) for j in data.get("jobs", [])], dict(data.get("links") or {}),
                   str(data.get("shared_host") or ""))
